"""The seed log, line by line: every distinct log line is answered by the regex tier with the
right entry, and the explanation carries the facts the errata established (and not the seed's
mistakes). See tests/data/seed/errata.md for the source of each fact."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from service.explainer import Explainer

SEED = Path(__file__).parent / "data" / "seed" / "annotated_training_log.txt"

# (substring identifying the line, expected id, facts the en text must contain, claims it must not make)
EXPECTED = [
    ("Setting ds_accelerator to cuda (auto detect)", "deepspeed.accelerator.selected", ["DS_ACCELERATOR", "unconditionally before v0.14.1"], []),
    ("torch.distributed.run: [WARNING] Setting OMP_NUM_THREADS", "torch_elastic.launcher.omp_num_threads", ["nproc_per_node"], []),
    ("UserWarning: Setting MKL_NUM_THREADS", "mmengine.setup_env.mkl_num_threads", ["not from MKL"], []),
    ("cdb=None", "deepspeed.comm.cdb_none", ["communication backend"], ["coordination service"]),
    ("Initializing TorchBackend in DeepSpeed", "deepspeed.comm.torch_backend_init", ["RCCL"], []),
    ("ProcessGroupNCCL initialization options:", "torch_distributed.pgnccl.init_options_v21", ["TearDown", "30 min"], []),
    ("Bootstrap : Using eth0", "nccl.bootstrap.using_interface", ["bootstrap", "eth0"], []),
    ("NET/Plugin : No plugin found", "nccl.net.plugin_not_found", ["librccl-net.so"], []),
    ("RCCL version 2.13.4+hip5.7", "rccl.version", ["ROCm Communication Collectives Library", "5.7"], ["Radeon"]),
    ("NCCL_IB_DISABLE set by environment to 0.", "nccl.env.param_set", ["IB_DISABLE"], []),
    ("NET/IB : Using [0]mlx5_0:1/IB", "nccl.net.ib_devices", ["Relaxed Ordering"], ["read-only", "read only"]),
    ("Using network IB", "nccl.net.using_network", ["IB"], []),
    ("rocm_smi_lib: version 2.8.0.0", "rccl.rocm_smi.version", ["topology", "2.8.0.0"], []),
    ("Setting affinity for GPU 2 to ff0000", "nccl.init.affinity", ["16-23"], []),
    ("Setting affinity for GPU 1 to ff00", "nccl.init.affinity", ["8-15"], []),
    ("Setting affinity for GPU 3 to ff000000", "nccl.init.affinity", ["24-31"], []),
    ("Setting affinity for GPU 0 to ff", "nccl.init.affinity", ["0-7"], []),
    ("Channel 00/04 :", "nccl.graph.ring_channel", ["20"], []),
    ("Trees [0] 1/16/-1->0->-1", "nccl.graph.trees", ["root"], []),
    ("Channel 02/0 : 0[4000] -> 4[4000] [send] via NET/IB/0", "nccl.transport.net_channel", ["04:00.0", "GDRDMA"], []),
    ("Channel 00/0 : 16[4000] -> 0[4000] [receive]", "nccl.transport.net_channel", ["04:00.0"], []),
    ("Connected all trees", "nccl.init.connected_all_trees", [], []),
    ("Using tuning table 0 with LL128 disabled", "rccl.tuning.table_ll128", ["protocol"], ["linked list"]),
    ("threadThresholds 8/8/64 | 192/8/64 | 8/8/256", "nccl.tuning.thread_thresholds", ["bytes per thread"], []),
    ("4 coll channels, 4 p2p channels, 1 p2p channels per peer", "nccl.init.channel_counts", [], []),
    ("localSize 136 used 72800 bytes - Init COMPLETE", "rccl.init.complete_localsize", ["per-thread"], []),
    ("Special tokens have been added in the vocabulary", "transformers.tokenizer.special_tokens_added", ["does not mean that anything was added"], []),
    ("xtuner_dataset_timeout = 0:30:00", "xtuner.dataset.timeout", ["XTUNER_DATASET_TIMEOUT", "rank 0"], []),
    ("Dataset Dataset has no metainfo", "mmengine.loops.dataset_no_metainfo", ["class name", "harmless"], []),
    ("finished initializing model - num_params = 291", "deepspeed.zero3.model_initialized", ["tensors"], []),
    ("7 pytorch allocator cache flushes since last step", "deepspeed.zero3.allocator_cache_flushes", ["num_alloc_retries"], []),
]

ZH_FORBIDDEN = {"nccl.net.ib_devices": ["只读"], "rccl.tuning.table_ll128": ["链表"], "deepspeed.comm.cdb_none": ["协调服务"]}


NEGATION = re.compile(r"\b(not|never|no|isn't|rather than|nothing to do with|instead of|nor)\b[^.;]*$", re.I)


def claims(text: str, claim: str) -> bool:
    """True if ``text`` states ``claim`` rather than denying it ("not read-only" denies)."""
    lowered = text.lower()
    start = lowered.find(claim.lower())
    while start >= 0:
        if not NEGATION.search(lowered[max(0, start - 40):start]):
            return True
        start = lowered.find(claim.lower(), start + 1)
    return False


def claims_zh(text: str, claim: str) -> bool:
    """Chinese counterpart of ``claims``: a 不是/并非/而非/不 shortly before denies it."""
    return any(
        not re.search(r"不是|并非|而非|不", text[max(0, m.start() - 10):m.start()])
        for m in re.finditer(re.escape(claim), text)
    )


def seed_log_lines() -> list[str]:
    """The log lines of the seed: not the GitHub page around it, not the # annotations."""
    lines = SEED.read_text(encoding="utf-8").splitlines()
    start = next(i for i, l in enumerate(lines) if l.startswith("[2024-09-10 14:26:40"))
    end = max(i for i, l in enumerate(lines) if "stage3.py:1998" in l and not l.startswith("#"))
    return [
        l for l in lines[start : end + 1]
        if l.strip() and not l.lstrip().startswith("#") and not l.startswith("ID：")
    ]


@pytest.fixture(scope="module")
def regex_explainer(kb_dir) -> Explainer:
    return Explainer(kb_dir=kb_dir, index_policy="refuse")


def test_seed_has_the_expected_number_of_log_lines():
    assert len(seed_log_lines()) == 40


def test_every_seed_line_is_known_by_the_regex_tier(regex_explainer):
    lines = seed_log_lines()
    answers = regex_explainer.explain_many(lines, semantic=False)
    missed = [a["line"][:100] for a in answers if a["tier"] != "regex"]
    assert not missed


def _find(lines: list[str], needle: str) -> str:
    hits = [l for l in lines if needle in l]
    assert hits, needle
    return hits[0]


@pytest.mark.parametrize("needle,entry_id,facts,wrong", EXPECTED, ids=[e[1] + ":" + e[0][:24] for e in EXPECTED])
def test_seed_line_entry_and_facts(regex_explainer, needle, entry_id, facts, wrong):
    answer = regex_explainer.explain_many([_find(seed_log_lines(), needle)], semantic=False)[0]
    assert answer["pattern_id"] == entry_id
    assert answer["tier"] == "regex" and answer["known"]
    en = answer["explanation"]["en"]
    for fact in facts:
        assert fact.lower() in en.lower(), f"{entry_id}: missing {fact!r} in: {en}"
    for claim in wrong:
        assert not claims(en, claim), f"{entry_id}: repeats the seed's error {claim!r}: {en}"
    zh = answer["explanation"]["zh"]
    assert re.search(r"[\u4e00-\u9fff]", zh)
    for claim in ZH_FORBIDDEN.get(entry_id, []):
        assert not claims_zh(zh, claim), f"{entry_id}: {zh}"
    groups = set(regex_explainer.by_id[entry_id].fields)
    unfilled = [g for g in groups | {g + "_decoded" for g in groups} if f"<{g}>" in en]
    assert not unfilled, f"unfilled placeholders {unfilled} in {en}"


def test_every_distinct_seed_format_is_covered_by_the_table():
    ids = {e[1] for e in EXPECTED}
    assert len(ids) == 27
