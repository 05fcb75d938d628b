"""Records whose patterns take messages of unrelated software answer nothing (kb/unrelated/)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from indexer.catalog.records import CatalogRecord
from indexer.catalog.unrelated import load_corpus, mark
from indexer.kb_check import run_checks

ROOT = Path(__file__).resolve().parents[1]


def _record(rid: str, fmt: str, pattern: str, example: str) -> dict:
    return {
        "id": rid, "component": "other", "repo": "pytorch/pytorch", "file": "torch/x.py", "line": 1,
        "function": "f", "level": "raise ValueError", "call": "raise", "format": fmt, "pattern": pattern,
        "groups": {}, "versions": ["v2.6.0"], "matchable": True, "severity": "error", "role": "root_cause",
        "title": {"en": "t", "zh": "标题"}, "explanation": {"en": "e", "zh": "说明"},
        "action": {"en": "a", "zh": "处理"}, "example": {"line": example, "constructed": True},
    }


def _kb(tmp_path: Path) -> Path:
    kb = tmp_path / "kb"
    (kb / "catalog").mkdir(parents=True)
    shutil.copy(ROOT / "kb" / "structure.yaml", kb / "structure.yaml")  # a KB has curated entries
    (kb / "unrelated").mkdir()
    rows = [
        _record("other.x.generic", "{device_name} does not support {dtype}",
                r"(?P<device_name>.*?)\s+does\s+not\s+support\s+(?P<dtype>.+?)\s*$", "cuda does not support dtype"),
        _record("other.x.specific", "NCCL_IB_HCA {hca} matches no device of {n}",
                r"NCCL_IB_HCA\s+(?P<hca>\S+)\s+matches\s+no\s+device\s+of\s+(?P<n>\S+)\s*$",
                "NCCL_IB_HCA mlx5_9 matches no device of 8"),
    ]
    (kb / "catalog" / "other.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    (kb / "unrelated" / "python.tsv").write_text("pip\turl does not support range requests\n", encoding="utf-8")
    return kb


def _silent_but_behind_its_logger(row: dict, line: str) -> bool:
    """A marked record answers nothing on the bare line; a Python record of PyTorch still
    answers behind its package's logger name (``records.OWN_LOGGER_BY_REPO``)."""
    from indexer.catalog.records import as_entry, own_head
    from indexer.normalize import normalize_line
    from indexer.patterns import PatternSet

    rec = CatalogRecord.model_validate(row)
    if not rec.answers:
        return True
    head = own_head(rec.component.value, rec.repo, rec.file)
    assert head is not None and head[0] == "logger"
    patterns = PatternSet([as_entry(rec)])
    bare, logged = normalize_line(line), normalize_line(head[2] + line)
    return not patterns.matching(bare.message, bare.context) and bool(patterns.matching(logged.message, logged.context))


def _rows(kb: Path) -> dict[str, dict]:
    return {r["id"]: r for r in map(json.loads, (kb / "catalog" / "other.jsonl").read_text().splitlines())}


def test_a_record_taking_another_programs_message_is_marked_and_answers_nothing(tmp_path):
    kb = _kb(tmp_path)
    _, findings = run_checks(kb)
    assert [(f.entry_id, f.check) for f in findings if f.check == "unrelated"] == [("other.x.generic", "unrelated")]
    assert mark(kb) == (1, 1, 0)
    rows = _rows(kb)
    assert rows["other.x.generic"]["unrelated"] == "pip: url does not support range requests"
    assert "unrelated" not in rows["other.x.specific"]
    assert _silent_but_behind_its_logger(rows["other.x.generic"], "url does not support range requests")
    assert CatalogRecord.model_validate(rows["other.x.specific"]).answers
    _, findings = run_checks(kb)
    assert not [f for f in findings if f.check == "unrelated"]
    assert mark(kb) == (1, 0, 0)  # a mark whose pattern still takes its line stays


def test_a_mark_whose_pattern_no_longer_takes_its_line_is_reported_and_dropped(tmp_path):
    kb = _kb(tmp_path)
    mark(kb)
    rows = _rows(kb)
    rows["other.x.generic"]["pattern"] = r"^(?P<device_name>\S+)\s+device\s+does\s+not\s+support\s+(?P<dtype>\S+)\s*$"
    rows["other.x.generic"]["example"]["line"] = "cuda device does not support bf16"
    (kb / "catalog" / "other.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows.values()), encoding="utf-8")
    _, findings = run_checks(kb)
    assert [(f.entry_id, "no longer takes" in f.message) for f in findings if f.check == "unrelated"] == \
        [("other.x.generic", True)]
    assert mark(kb) == (1, 0, 1)
    assert "unrelated" not in _rows(kb)["other.x.generic"]


def test_the_shipped_corpus_silences_generic_phrases():
    """kb/unrelated/ holds the messages of well-known Python packages and the standard library;
    PyTorch's '{device_name} does not support {dtype}' took pip's and pytest's lines before."""
    corpus = load_corpus(ROOT / "kb")
    assert len(corpus) > 10_000 and {s for s, _ in corpus} >= {"pip", "pandas", "python3.11"}
    rows = {}
    for line in (ROOT / "kb" / "catalog" / "other.jsonl").read_text(encoding="utf-8").splitlines():
        r = json.loads(line)
        if r["format"] == "{device_name} does not support {dtype}":
            rows[r["id"]] = r
    assert rows and all(r.get("unrelated") for r in rows.values())
    assert all(_silent_but_behind_its_logger(r, "url does not support range requests") for r in rows.values())


def test_a_mark_goes_when_the_corpus_no_longer_holds_a_line_its_record_takes(tmp_path):
    kb = _kb(tmp_path)
    mark(kb)
    (kb / "unrelated" / "python.tsv").write_text("pip\tsome other message entirely\n", encoding="utf-8")
    assert mark(kb) == (1, 0, 1)
    assert "unrelated" not in _rows(kb)["other.x.generic"]


def test_one_printed_line_of_a_multi_line_message_is_marked_alone(tmp_path):
    """FSDP's "`params` were not found in `module`'s tree<params>\\nmodule: <module>": its second
    line, "module: ...", is what setuptools prints too; its first line still answers."""
    from indexer.catalog.records import load_catalog

    kb = _kb(tmp_path)
    row = _record("torch_distributed.flat_param.x", "`params` were not found in `module`'s treeparams: {params}\nmodule: {module}",
                  r"`params`\s+were\s+not\s+found\s+in\s+`module`'s\s+treeparams:\s+(?P<params>.*?)\s*module:\s*(?P<module>.*)\s*$",
                  "`params` were not found in `module`'s treeparams: [w] module: Linear")
    row["groups"] = {"params": "params", "module": "module"}
    (kb / "catalog" / "other.jsonl").write_text(json.dumps(row) + "\n", encoding="utf-8")
    (kb / "unrelated" / "python.tsv").write_text("setuptools\tmodule: module MAY be using inspect.bad\n", encoding="utf-8")
    assert mark(kb) == (1, 1, 0)
    stored = _rows(kb)["torch_distributed.flat_param.x"]
    assert "unrelated" not in stored and list(stored["unrelated_lines"]) == ["line2"]
    answering = {rec.id: (rec.answers, rec.own_head) for rec, _, _ in load_catalog(kb)[0]}
    # the second line answers only behind PyTorch's logger name
    assert answering == {"torch_distributed.flat_param.x": (True, None), "torch_distributed.flat_param.x.line1": (True, None),
                         "torch_distributed.flat_param.x.line2": (True, r"^torch(?:\.|$)")}
    _, findings = run_checks(kb)
    assert not [f for f in findings if f.check == "unrelated"]


def test_a_marked_nccl_record_still_answers_behind_nccls_own_head():
    """'Call to bind failed: Address already in use' is anyone's (busctl prints 'Call to ...
    failed: ...'); behind 'host:pid:tid [dev] NCCL WARN' it is NCCL's SYSCHECK."""
    from indexer.catalog.records import as_entry
    from indexer.normalize import normalize_line
    from indexer.patterns import PatternSet

    row = _record("nccl.checks.x", "Call to {macro} failed: {strerror(errno)}",
                  r"Call\s+to\s+(?P<macro>.*?)\s+failed:\s+(?P<strerror>.*?)\s*$", "Call to macro failed: strerror")
    row.update(component="nccl", repo="NVIDIA/nccl", unrelated="busctl: Call to a0 failed: a1")
    rec = CatalogRecord.model_validate(row)
    assert rec.answers and rec.own_head
    patterns = PatternSet([as_entry(rec)])
    for line, hit in (("gpu1:123:456 [0] NCCL WARN Call to bind failed: Address already in use", True),
                      ("include/socket.h:42 NCCL WARN Call to bind failed: Address already in use", True),
                      ("Call to org.freedesktop.DBus failed: Access denied", False),
                      ("[rank0]: Call to bind failed: Address already in use", False)):
        n = normalize_line(line)
        assert bool(patterns.matching(n.message, n.context)) is hit, line
    row.update(component="slurm", repo="SchedMD/slurm")
    assert not CatalogRecord.model_validate(row).answers  # no head of its own: silent


def test_other_programs_own_heads_and_python_records_without_one():
    """UCX's, libfabric's and c10's heads prove the program as NCCL's does, and for a Python
    record the name of its package's logger; a project with neither stays silent."""
    from indexer.catalog.records import as_entry
    from indexer.normalize import normalize_line
    from indexer.patterns import PatternSet

    base = _record("infiniband.x.y", "Failed to allocate memory", r"Failed\s+to\s+allocate\s+memory\s*$",
                   "Failed to allocate memory")
    cases = [
        ("openucx/ucx", "src/uct/ib/base/ib_iface.c",
         "[1612345678.123456] [gpu-7:5567:0]     ib_iface.c:99   UCX  ERROR Failed to allocate memory"),
        ("ofiwg/libfabric", "prov/efa/src/efa_mr.c",
         "libfabric:5567:1612345678::efa:mr:efa_mr_reg():210<warn> Failed to allocate memory"),
        ("pytorch/pytorch", "torch/csrc/distributed/c10d/socket.cpp", "[W socket.cpp:531] Failed to allocate memory"),
    ]
    for repo, file, line in cases:
        row = dict(base, repo=repo, file=file, unrelated="node: Failed to allocate memory")
        rec = CatalogRecord.model_validate(row)
        patterns = PatternSet([as_entry(rec)])
        n = normalize_line(line)
        assert rec.answers and patterns.matching(n.message, n.context), repo
        bare = normalize_line("Failed to allocate memory")
        assert not patterns.matching(bare.message, bare.context), repo
    # a Python record's own head is its package's logger name (``logging.getLogger(__name__)``),
    # as Python's basic logging format shows it; bare, or under another package's logger, silent
    for repo, file, logger in (("pytorch/pytorch", "torch/cuda/memory.py", "torch.cuda.memory"),
                               ("NVIDIA/Megatron-LM", "megatron/core/datasets/indexed_dataset.py",
                                "megatron.core.datasets.indexed_dataset")):
        python = CatalogRecord.model_validate(dict(base, repo=repo, file=file, unrelated="node: Failed to allocate memory"))
        assert python.answers and python.own_head, repo
        patterns = PatternSet([as_entry(python)])
        for line, hit in ((f"WARNING:{logger}:Failed to allocate memory", True),
                          ("Failed to allocate memory", False),
                          ("WARNING:urllib3.connectionpool:Failed to allocate memory", False),
                          (f"WARNING:{logger.split('.')[0]}vision.io:Failed to allocate memory", False)):
            n = normalize_line(line)
            assert bool(patterns.matching(n.message, n.context)) is hit, (repo, line)
    # a record of a project with no head of any kind stays silent once marked
    silent = CatalogRecord.model_validate(dict(base, repo="SchedMD/slurm", file="src/common/x.c",
                                               unrelated="node: Failed to allocate memory"))
    assert not silent.answers and silent.own_head is None
