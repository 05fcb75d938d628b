"""Every rule of `explainlog kb check` can fail, names file, line and entry, and exits 1."""

from __future__ import annotations

import copy
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from indexer.kb_check import run_checks

VALID = {
    "id": "demo.affinity",
    "title": {"en": "NCCL pinned helper threads", "zh": "NCCL 设置了 CPU 亲和性"},
    "component": "nccl",
    "severity": "info",
    "role": "context",
    "pattern": r"^Setting affinity for GPU (?P<gpu>\d+) to (?P<mask>[0-9a-f,]+)$",
    "fields": {
        "gpu": {"en": "local GPU", "zh": "本机 GPU"},
        "mask": {"en": "CPU mask", "zh": "CPU 掩码", "decode": "cpumask"},
    },
    "explanation": {"en": "GPU {gpu}: {mask_decoded}", "zh": "GPU {gpu} 的亲和性：{mask_decoded}"},
    "examples": ["h:1:2 [2] NCCL INFO Setting affinity for GPU 2 to ff0000"],
    "negatives": ["h:1:2 [2] NCCL WARN Set CPU affinity : unable to find GPU/CPU for rank 3"],
    "source": "NVIDIA/nccl src/graph/topo.cc",
    "references": ["https://github.com/NVIDIA/nccl"],
    "verified": [{"repo": "NVIDIA/nccl", "ref": "v2.21.5-1", "file": "src/graph/topo.cc", "line": 736,
                  "what": "prints the affinity mask of this GPU"}],
}


def write_kb(tmp_path: Path, *entries: dict, name: str = "demo.yaml") -> Path:
    kb = tmp_path / "kb"
    kb.mkdir(parents=True, exist_ok=True)
    (kb / name).write_text(yaml.safe_dump(list(entries), allow_unicode=True, sort_keys=False), encoding="utf-8")
    return kb


def mutated(**changes) -> dict:
    entry = copy.deepcopy(VALID)
    for key, value in changes.items():
        if value is None:
            entry.pop(key, None)
        else:
            entry[key] = value
    return entry


def findings_for(kb: Path) -> list:
    return run_checks(kb)[1]


def test_valid_entry_passes(tmp_path):
    assert findings_for(write_kb(tmp_path, VALID)) == []


BROKEN = {
    "schema: unknown component": (mutated(component="tensorflow"), "schema", "component"),
    "schema: missing zh": (mutated(title={"en": "x"}), "schema", "title.zh"),
    "schema: zh not Chinese": (mutated(title={"en": "x", "zh": "not chinese"}), "schema", "no Chinese"),
    "schema: bad id": (mutated(id="Demo Affinity"), "schema", "id"),
    "schema: no examples": (mutated(examples=[]), "schema", "examples"),
    "schema: bad source": (mutated(source="somewhere"), "schema", "source"),
    "schema: reference not a URL": (mutated(references=["see the docs"]), "schema", "URL"),
    "schema: unknown key": (mutated(levle="info"), "schema", "levle"),
    "regex: backreference": (mutated(pattern=r"(a)\1", fields={}), "regex", "RE2"),
    "regex: lookahead": (mutated(pattern=r"(?=Setting)Setting", fields={}), "regex", "RE2"),
    "fields: undocumented group": (mutated(fields={"gpu": VALID["fields"]["gpu"]}), "fields", "'mask'"),
    "fields: unknown decoder": (
        mutated(fields={"gpu": VALID["fields"]["gpu"], "mask": {"en": "m", "zh": "掩码", "decode": "nope"}}),
        "fields",
        "unknown decoder",
    ),
    "placeholder: no such group": (
        mutated(explanation={"en": "GPU {gpus}", "zh": "本机 GPU {gpu}"}), "placeholder", "{gpus}"
    ),
    "action: warning without action": (mutated(severity="warning"), "action", "needs an action"),
    "example: does not match": (mutated(examples=["h:1:2 [2] NCCL INFO Using network IB"]), "example", "does not match"),
    "example: wrong field value": (
        mutated(examples=[{"line": "h:1:2 [2] NCCL INFO Setting affinity for GPU 2 to ff0000", "fields": {"gpu": "3"}}]),
        "example",
        "expects '3'",
    ),
    "verified: missing": (mutated(verified=None), "verified", "no 'verified:' evidence"),
    "verified: a document with a tag": (
        mutated(verified=[{"repo": "docs", "ref": "v2.21.5-1", "file": "https://docs.nvidia.com/x", "what": "w"}]),
        "verified", "ref: docs",
    ),
    "verified: no line": (
        mutated(verified=[{"repo": "NVIDIA/nccl", "ref": "v2.21.5-1", "file": "src/graph/topo.cc", "what": "w"}]),
        "verified", "needs the line",
    ),
    "schema: verified without what": (
        mutated(verified=[{"repo": "NVIDIA/nccl", "ref": "v2.21.5-1", "file": "src/graph/topo.cc", "line": 3}]),
        "schema", "what",
    ),
    "zh-value: zh leaves a field out": (
        mutated(explanation={"en": "GPU {gpu}: {mask_decoded}", "zh": "亲和性：{mask_decoded}"}), "zh-value",
        "explanation.zh leaves out {gpu}",
    ),
    "zh-value: a default hides the value": (
        mutated(fields={"gpu": VALID["fields"]["gpu"],
                        "mask": {"en": "CPU mask", "zh": "CPU 掩码", "values": {"ff": {"en": "CPUs 0-7", "zh": "第 0-7 号 CPU"}},
                                 "default": {"en": "a CPU mask", "zh": "一个 CPU 掩码"}}}),
        "zh-value", "fields.mask.default",
    ),
    "zh-value: an English phrase in a Chinese sentence": (
        mutated(pattern=r"^Setting affinity for GPU (?P<gpu>\d+) to (?P<mask>[a-z ]+)$",
                fields={"gpu": VALID["fields"]["gpu"], "mask": {"en": "CPU mask", "zh": "CPU 掩码"}},
                explanation={"en": "GPU {gpu}: {mask}", "zh": "GPU {gpu} 绑定到 {mask} 上"},
                examples=["h:1:2 [2] NCCL INFO Setting affinity for GPU 2 to all cores"],
                negatives=["h:1:2 [2] NCCL WARN Set CPU affinity : unable to find GPU/CPU for rank 3"]),
        "zh-value", "mask='all cores'",
    ),
    "zh-value: a condition with the value in it": (
        mutated(explanation={"en": "GPU {gpu}: {mask_decoded}", "zh": "{gpu} > 1 时，亲和性：{mask_decoded}"}), "zh-value",
        "condition with the value in it",
    ),
    "negative: matches": (
        mutated(negatives=["h:1:2 [5] NCCL INFO Setting affinity for GPU 5 to ff"]), "negative", "matches the pattern"
    ),
}


@pytest.mark.parametrize("case", sorted(BROKEN))
def test_each_check_can_fail(tmp_path, case):
    entry, check, needle = BROKEN[case]
    findings = findings_for(write_kb(tmp_path, entry))
    assert findings, case
    hit = [f for f in findings if f.check == check and needle in f.message]
    assert hit, [str(f) for f in findings]
    assert hit[0].file.endswith("demo.yaml") and hit[0].line >= 1


def test_duplicate_ids_across_files(tmp_path):
    write_kb(tmp_path, VALID, name="a.yaml")
    other = mutated(pattern=r"^Using network (?P<gpu>\S+)(?P<mask>)$", examples=["h:1:2 [0] NCCL INFO Using network IB"])
    kb = write_kb(tmp_path, other, name="b.yaml")
    findings = findings_for(kb)
    assert any(f.check == "duplicate-id" and "already used at" in f.message for f in findings)


def test_example_matched_by_another_entry_of_equal_priority(tmp_path):
    rival = mutated(id="demo.rival", pattern=r"Setting affinity for GPU (?P<gpu>\d+) to (?P<mask>\S+)", examples=["x: Setting affinity for GPU 1 to 1"])
    findings = findings_for(write_kb(tmp_path, VALID, rival))
    assert any(f.check == "example" and "demo.rival" in f.message and f.entry_id == "demo.affinity" for f in findings)


def test_higher_priority_rival_steals_the_example(tmp_path):
    rival = mutated(id="demo.rival", priority=5, pattern=r"Setting affinity for GPU (?P<gpu>\d+) to (?P<mask>\S+)", examples=["x: Setting affinity for GPU 1 to 1"])
    findings = findings_for(write_kb(tmp_path, VALID, rival))
    assert any("answered by 'demo.rival'" in f.message for f in findings)


def test_context_constraint_separates_identical_messages(tmp_path):
    torchrun = mutated(
        id="demo.torchrun", pattern=r"^Setting OMP_NUM_THREADS(?P<gpu>)(?P<mask>)", priority=1,
        context={"logger": r"torch\.distributed"},
        examples=["[2024-01-01 00:00:00,000] torch.distributed.run: [WARNING] Setting OMP_NUM_THREADS"],
        negatives=["/x/mmengine/setup_env.py:1: UserWarning: Setting OMP_NUM_THREADS"],
    )
    mmengine = mutated(
        id="demo.mmengine", pattern=r"^Setting OMP_NUM_THREADS(?P<gpu>)(?P<mask>)", priority=1,
        context={"source_location": "mmengine/"},
        examples=["/x/mmengine/setup_env.py:1: UserWarning: Setting OMP_NUM_THREADS"],
        negatives=["[2024-01-01 00:00:00,000] torch.distributed.run: [WARNING] Setting OMP_NUM_THREADS"],
    )
    assert findings_for(write_kb(tmp_path, torchrun, mmengine)) == []


def test_yaml_syntax_error_reports_line(tmp_path):
    kb = tmp_path / "kb"
    kb.mkdir()
    (kb / "bad.yaml").write_text("- id: x\n  title: [unclosed\n", encoding="utf-8")
    findings = findings_for(kb)
    assert findings[0].check == "yaml" and findings[0].file.endswith("bad.yaml") and findings[0].line >= 2


def test_cli_exit_codes_and_messages(tmp_path):
    good = write_kb(tmp_path / "good", VALID)
    bad = write_kb(tmp_path / "bad", mutated(severity="error"))
    ok = subprocess.run([sys.executable, "-m", "service.cli", "--kb", str(good), "kb", "check"], capture_output=True, text=True)
    assert ok.returncode == 0 and "kb check: OK" in ok.stdout
    fail = subprocess.run([sys.executable, "-m", "service.cli", "--kb", str(bad), "kb", "check"], capture_output=True, text=True)
    assert fail.returncode == 1
    assert "demo.yaml:" in fail.stdout and "[demo.affinity] action:" in fail.stdout
    missing = subprocess.run([sys.executable, "-m", "service.cli", "--kb", str(tmp_path / "nope"), "kb", "check"], capture_output=True, text=True)
    assert missing.returncode == 2 and "not found" in missing.stderr


def test_catalogue_record_chinese_follows_the_house_style(tmp_path):
    """Record texts answer lines like entries do: kb check lints their Chinese, at the record's
    file and line, and a line part (which carries its record's text) is not reported twice."""
    import json

    from indexer.catalog.build import Merged, to_record
    from indexer.catalog.extract import torch_cpp_file

    kb = write_kb(tmp_path, VALID)
    occ = torch_cpp_file("torch/csrc/distributed/c10d/ProcessGroupNCCL.cpp",
                         'void f() { LOG(ERROR) << "Watchdog caught collective operation timeout"'
                         ' << "\\nWatchdog will abort the communicator " << rank_; }')[0]
    good = to_record(Merged("torch_distributed", "pytorch/pytorch", occ.level, occ.pieces, True, occ.kind, occ,
                            ["v2.6.0"]), {})
    good.update(title={"en": "Watchdog timeout", "zh": "watchdog 检测到集合通信超时"},
                explanation={"en": "The watchdog found a timed-out collective.", "zh": "watchdog 发现集合通信超时。"},
                action={"en": "Find the slow rank.", "zh": "找出慢的 rank。"}, severity="error")
    bad = dict(good, id=good["id"][:-8] + "00000000",
               explanation={"en": "The watchdog found a timed-out collective.", "zh": "看门狗发现集合通信挂起。"})
    (kb / "catalog").mkdir()
    (kb / "catalog" / "torch_distributed.jsonl").write_text(json.dumps(good) + "\n" + json.dumps(bad) + "\n")
    zh = [f for f in findings_for(kb) if f.check == "zh"]
    assert {(Path(f.file).name, f.line, f.entry_id) for f in zh} == {("torch_distributed.jsonl", 2, bad["id"])}
    assert any("watchdog" in f.message for f in zh) and any("卡住" in f.message for f in zh)


def test_every_kb_file_parses_the_same_without_libyaml(kb_dir):
    """The loader prefers libyaml, but a PyYAML built without it falls back to the pure-Python
    parser, which rejects some plain scalars libyaml accepts (a '?' inside a flow mapping): the
    KB must read the same under both."""
    import yaml

    from indexer.kb_loader import kb_files

    for path in kb_files(Path(kb_dir)):
        text = path.read_text(encoding="utf-8")
        pure = yaml.load(text, Loader=yaml.SafeLoader)
        fast = yaml.load(text, Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))
        assert pure == fast, path


def test_asked_phrases_name_one_entry_and_no_concept(tmp_path):
    """An `asked:` phrase that two entries claim, or that is already a concept's name, is
    reported at its line."""
    first = mutated(asked=["NCCL 超时", "LL128"])
    second = mutated(id="demo.other", asked=["nccl 超时"], pattern=r"^Using network (?P<gpu>\S+)(?P<mask>)$",
                     examples=["h:1:2 [0] NCCL INFO Using network IB"], negatives=[])
    kb = write_kb(tmp_path, first, second)
    (kb / "concepts").mkdir()
    concept = {"id": "concept.nccl_proto_ll128", "names": ["LL128"], "component": "nccl",
               "title": {"en": "LL128 protocol", "zh": "LL128 协议"},
               "text": {"en": "128-byte lines with a flag.", "zh": "以 128 字节为单位、带标志的协议。"},
               "verified": [{"repo": "NVIDIA/nccl", "ref": "v2.21.5-1", "file": "src/include/device.h", "line": 60,
                             "what": "line layout"}]}
    (kb / "concepts" / "c.yaml").write_text(yaml.safe_dump([concept], allow_unicode=True), encoding="utf-8")
    asked = [f for f in findings_for(kb) if f.check == "asked"]
    assert sorted(f.message for f in asked) == [
        "asked phrase 'LL128' is the name of concept concept.nccl_proto_ll128",
        "asked phrase 'nccl 超时' already names demo.affinity",
    ]
    assert all(f.file.endswith("demo.yaml") and f.line > 1 for f in asked)


@pytest.mark.parametrize("flow", [None, False], ids=["flow-list", "block-list"])
def test_catalog_link_rewrites_an_entry_s_span_and_keeps_its_detail(tmp_path, flow):
    """When a newer read widens a linked record's versions, `catalog link` rewrites the span at
    the start of the entry's `versions:` and keeps the detail written after it; `formats:`
    written as a block list is replaced whole (its items too), as a one-line list is."""
    import json

    from indexer.catalog.build import Merged, to_record
    from indexer.catalog.extract import nccl_file
    from indexer.catalog.link import write_links

    occ = nccl_file("src/graph/topo.cc", 'void f() { INFO(NCCL_INIT, "Setting affinity for GPU %d to %s", gpu, mask); }')[0]
    rec = to_record(Merged("nccl", "NVIDIA/nccl", occ.level, occ.pieces, True, occ.kind, occ,
                           ["v2.3.5-5", "v2.30.7-1"]), {})
    entry = mutated(formats=[rec["id"]], versions="NCCL v2.4.2-1–v2.30.7-1 (the mask's grouping from v2.12.7-1, 'it''s' kept)")
    kb = tmp_path / "kb"
    (kb / "catalog").mkdir(parents=True)
    (kb / "demo.yaml").write_text(yaml.safe_dump([entry], allow_unicode=True, sort_keys=False, width=200,
                                                 default_flow_style=flow), encoding="utf-8")
    (kb / "catalog" / "nccl.jsonl").write_text(json.dumps(rec) + "\n")
    write_links(kb)
    loaded = yaml.safe_load((kb / "demo.yaml").read_text(encoding="utf-8"))[0]
    # v2.3.5-5 is the oldest NCCL read (2.0-2.2 were closed source): the span may start earlier
    assert loaded["versions"] == "NCCL ≤v2.3.5-5–v2.30.7-1 (the mask's grouping from v2.12.7-1, 'it''s' kept)"
    assert loaded["formats"] == [rec["id"]] and loaded["examples"] == entry["examples"]
    assert not [f for f in findings_for(kb) if f.check == "versions"]


def test_catalog_link_reads_the_message_after_an_exception_type_as_the_explainer_does(tmp_path):
    """An entry's example "RuntimeError: [file:line] Read error ..." is linked to the record of
    the message after the exception type (Gloo's errors reach the log inside PyTorch's
    RuntimeError), as the explainer answers such a line; a message no record knows links nothing."""
    import json

    from indexer.catalog.build import Merged, to_record
    from indexer.catalog.extract import gloo_file
    from indexer.catalog.link import compute_links

    occ = gloo_file("gloo/transport/tcp/pair.cc",
                    'bool Pair::read() { signalException(GLOO_ERROR_MSG("Read error ", peer_.str(), ": ", strerror(errno))); }')[0]
    rec = to_record(Merged("torch_distributed", "facebookincubator/gloo", occ.level, occ.pieces, True, occ.kind, occ,
                           ["gloo-2024-12-03"]), {})
    entry = mutated(id="demo.gloo_read", component="torch_distributed", verified=None, source="facebookincubator/gloo gloo/transport/tcp/pair.cc",
                    pattern=r"Read error \[(?P<peer>[^\]]+)\]:(?P<port>\d+): (?P<err>.+)$",
                    fields={}, explanation={"en": "recv failed", "zh": "recv 失败"},
                    examples=["RuntimeError: [../third_party/gloo/gloo/transport/tcp/pair.cc:589] Read error [10.0.0.2]:25266: Connection reset by peer"],
                    negatives=["RuntimeError: Read error somewhere else entirely"])
    other = mutated(id="demo.other", examples=["ValueError: h:1:2 [2] NCCL INFO Setting affinity for GPU 2 to ff0000"])
    kb = write_kb(tmp_path, entry, other)
    (kb / "catalog").mkdir()
    (kb / "catalog" / "torch_distributed.jsonl").write_text(json.dumps(rec) + "\n")
    links, _ = compute_links(kb)
    assert links == {"demo.gloo_read": [rec["id"]]}


def test_a_record_of_the_same_message_in_other_releases_must_be_linked(tmp_path):
    """Two records print one message (the same format, read in older releases from another
    file): an entry that links only the newer one states versions that start too late, and
    kb check names the other record; linked, with the span it adds, the entry passes. A record
    whose placeholder names another value (a bus id, not a device index) is another message."""
    import json

    from indexer.catalog.build import Merged, to_record
    from indexer.catalog.extract import nccl_file

    def record(path, text, versions):
        occ = nccl_file(path, 'void f() { INFO(NCCL_INIT, "' + text + '", gpu, mask); }')[0]
        return to_record(Merged("nccl", "NVIDIA/nccl", occ.level, occ.pieces, True, occ.kind, occ, versions), {})

    new = record("src/graph/topo.cc", "Setting affinity for GPU %d to %s", ["v2.4.2-1", "v2.30.7-1"])
    old = record("src/init.cc", "Setting affinity for GPU %d to %s", ["v2.3.5-5"])
    assert new["id"] != old["id"]
    old["example"] = {"line": "Setting affinity for GPU 3 to ff", "constructed": True}
    kb = tmp_path / "kb"
    (kb / "catalog").mkdir(parents=True)
    (kb / "catalog" / "nccl.jsonl").write_text(json.dumps(new) + "\n" + json.dumps(old) + "\n")

    def findings(entry):
        (kb / "demo.yaml").write_text(yaml.safe_dump([entry], allow_unicode=True, sort_keys=False, width=200), encoding="utf-8")
        return [f for f in findings_for(kb) if f.check == "formats"]

    late = findings(mutated(formats=[new["id"]], versions="NCCL v2.4.2-1–v2.30.7-1"))
    # a constructed example with stand-in values the entry's pattern refuses ("GPU 3 to mask")
    # does not hide the older record: its own pattern takes the entry's example
    old["example"] = {"line": "Setting affinity for GPU 3 to mask", "constructed": True}
    (kb / "catalog" / "nccl.jsonl").write_text(json.dumps(new) + "\n" + json.dumps(old) + "\n")
    assert [f.message for f in findings(mutated(formats=[new["id"]], versions="NCCL v2.4.2-1–v2.30.7-1"))] == [late[0].message]
    old["example"] = {"line": "Setting affinity for GPU 3 to ff", "constructed": True}
    (kb / "catalog" / "nccl.jsonl").write_text(json.dumps(new) + "\n" + json.dumps(old) + "\n")
    assert len(late) == 1 and old["id"] in late[0].message and "NCCL ≤v2.3.5-5–v2.30.7-1" in late[0].message
    assert late[0].file.endswith("demo.yaml") and late[0].line > 1
    assert findings(mutated(formats=[new["id"], old["id"]], versions="NCCL ≤v2.3.5-5–v2.30.7-1")) == []
    # the same words around another value: not the entry's message in an older release
    other = record("src/init.cc", "Setting affinity for GPU %d to %s", ["v2.3.5-5"])
    other["format"] = other["format"].replace("{gpu}", "{busId}")
    (kb / "catalog" / "nccl.jsonl").write_text(json.dumps(new) + "\n" + json.dumps(other) + "\n")
    assert findings(mutated(formats=[new["id"]], versions="NCCL v2.4.2-1–v2.30.7-1")) == []


def test_a_held_out_line_in_an_example_or_negative_is_a_finding(tmp_path):
    """The checkout's held-out set (tests/data/heldout next to kb/) stays out of the KB: an
    example or negative containing one of its lines (over 30 characters) is named with its file
    and line; short lines and a KB without a held-out set pass."""
    import json

    held = tmp_path / "tests" / "data" / "heldout"
    held.mkdir(parents=True)
    line = "h:1:2 [2] NCCL INFO Setting affinity for GPU 5 to 0f,ffff0000"
    (held / "part9.jsonl").write_text(json.dumps({"line": line, "component": "nccl"}) + "\n"
                                      + json.dumps({"line": "Setting affinity"}) + "\n", encoding="utf-8")
    leaky = mutated(examples=[VALID["examples"][0], "[rank5]: " + line])
    found = [f for f in findings_for(write_kb(tmp_path, leaky)) if f.check == "heldout"]
    assert len(found) == 1 and found[0].entry_id == "demo.affinity" and "held-out" in found[0].message
    assert found[0].file.endswith("demo.yaml") and found[0].line > 1
    neg = mutated(negatives=[line.replace("INFO Setting", "WARN Setting")[:20] + " x", line.replace("NCCL INFO", "NCCL WARN")])
    assert [f for f in findings_for(write_kb(tmp_path, neg)) if f.check == "heldout"] == []
    neg = mutated(negatives=[line])
    assert [f.check for f in findings_for(write_kb(tmp_path, neg))] == ["negative", "heldout"]
    assert [f for f in findings_for(write_kb(tmp_path / "elsewhere", leaky)) if f.check == "heldout"] == []


def test_an_example_that_is_a_line_of_a_labelled_eval_set_is_a_finding(tmp_path):
    """tests/test_eval.py forbids examples equal to a line of tests/data/eval_*.jsonl; kb check
    says so first (a helper once added a constructed NVRM example that was an eval line word for
    word). A line that only contains the eval line, and a negative, pass."""
    import json

    data = tmp_path / "tests" / "data"
    data.mkdir(parents=True)
    line = "h:1:2 [2] NCCL INFO Setting affinity for GPU 5 to 0f,ffff0000"
    (data / "eval_demo.jsonl").write_text(json.dumps({"line": line, "expected": "demo.affinity"}) + "\n", encoding="utf-8")
    found = [f for f in findings_for(write_kb(tmp_path, mutated(examples=[VALID["examples"][0], line + "  "])))
             if f.check == "heldout"]
    assert len(found) == 1 and "eval set" in found[0].message
    assert [f for f in findings_for(write_kb(tmp_path, mutated(examples=[VALID["examples"][0], "[rank2]: " + line])))
            if f.check == "heldout"] == []


def test_a_span_starting_at_the_oldest_release_read_says_it_may_start_earlier(tmp_path):
    """A project not read from its first release (OLDEST_READ) shows a span that starts at its
    oldest release read as '≤<tag>'; a later start, or a project read from its first release
    (Slurm from 1.0), shows the tag itself. kb check holds OLDEST_READ to the records: when
    the oldest release among a project's records is another, it says so."""
    import json

    from indexer.catalog.records import OLDEST_READ, version_span

    assert version_span(["v1.9.0", "v2.14.1"], "pytorch/pytorch") == "≤v1.9.0–v2.14.1"
    assert version_span(["v1.10.2", "v2.14.1"], "pytorch/pytorch") == "v1.10.2–v2.14.1"
    assert version_span(["slurm-1-0-17-1", "slurm-26-05-3-1"], "SchedMD/slurm") == "slurm-1-0-17-1–slurm-26-05-3-1"
    assert version_span(["v1.9.0"], "pytorch/pytorch") == "≤v1.9.0"
    assert version_span(["v1.9.0", "v2.14.1"]) == "v1.9.0–v2.14.1"  # no project named: no claim either way

    from indexer.catalog.build import Merged, to_record
    from indexer.catalog.extract import nccl_file

    occ = nccl_file("src/graph/topo.cc", 'void f() { INFO(NCCL_INIT, "Setting affinity for GPU %d to %s", gpu, mask); }')[0]
    later = OLDEST_READ["NVIDIA/nccl"].replace("2.3.5-5", "2.4.2-1")
    rec = to_record(Merged("nccl", "NVIDIA/nccl", occ.level, occ.pieces, True, occ.kind, occ, [later, "v2.30.7-1"]), {})
    kb = write_kb(tmp_path, mutated(formats=[rec["id"]], versions="NCCL v2.4.2-1–v2.30.7-1"))
    (kb / "catalog").mkdir()
    (kb / "catalog" / "nccl.jsonl").write_text(json.dumps(rec) + "\n")
    found = [f for f in findings_for(kb) if f.check == "versions"]
    assert [f.message for f in found] == [
        "OLDEST_READ['NVIDIA/nccl'] is 'v2.3.5-5' but the oldest release among its records is 'v2.4.2-1'"]


def test_a_pattern_that_answers_another_print_site_must_link_it_or_leave_it(tmp_path):
    """An entry's pattern that takes the example line of a catalogue record it does not link
    speaks for a print site its text was not read against (the fifth acceptance sample: NCCL
    2.28's Data Direct probe, Slurm 15.08.0's line without 'ON'). kb check names the entry and
    the record; anchoring the pattern clears it; and where another entry links the record, that
    entry has to be the one answering its line."""
    import json

    from indexer.catalog.build import Merged, to_record
    from indexer.catalog.extract import nccl_file

    occ = nccl_file("src/misc/affinity.cc", 'void f() { INFO(NCCL_INIT, "Proxy: Setting affinity for GPU %d to %s", gpu, mask); }')[0]
    rec = to_record(Merged("nccl", "NVIDIA/nccl", occ.level, occ.pieces, True, occ.kind, occ, ["v2.20.3-1"]), {})
    rec["example"] = {"line": "Proxy: Setting affinity for GPU 3 to ff", "constructed": True}
    kb = tmp_path / "kb"
    (kb / "catalog").mkdir(parents=True)
    (kb / "catalog" / "nccl.jsonl").write_text(json.dumps(rec) + "\n")

    def findings(*entries):
        (kb / "demo.yaml").write_text(yaml.safe_dump(list(entries), allow_unicode=True, sort_keys=False, width=200), encoding="utf-8")
        return [f for f in findings_for(kb) if f.check == "unlinked-site"]

    loose = mutated(pattern=VALID["pattern"].lstrip("^"))
    found = findings(loose)
    assert len(found) == 1 and found[0].entry_id == "demo.affinity" and rec["id"] in found[0].message
    assert found[0].file.endswith("demo.yaml") and found[0].line > 1
    assert findings(mutated(negatives=VALID["negatives"] + ["Proxy: Setting affinity for GPU 3 to ff"])) == []
    owner = mutated(id="demo.reset", pattern=r"^Proxy: Setting affinity for GPU (?P<gpu>\d+) to (?P<mask>[0-9a-f,]+)$",
                    examples=["h:1:2 [2] NCCL INFO Proxy: Setting affinity for GPU 3 to ff"], negatives=[],
                    formats=[rec["id"]], versions="NCCL v2.20.3-1")
    taken = findings(loose, owner)
    assert len(taken) == 1 and taken[0].entry_id == "demo.affinity" and "demo.reset" in taken[0].message
    assert findings(mutated(), owner) == []
    # a record too loose to answer on its own (not matchable) still prints a message with words
    rec["matchable"] = False
    (kb / "catalog" / "nccl.jsonl").write_text(json.dumps(rec) + "\n")
    assert len(findings(loose)) == 1
    # ... but a rule or bare placeholders are no message
    rule = dict(rec, id="nccl.affinity.rule", format="{gpu}: {mask}", pattern=r"^(?P<gpu>\d+): (?P<mask>.*)$",
                example={"line": "3: ff", "constructed": True})
    (kb / "catalog" / "nccl.jsonl").write_text(json.dumps(rule) + "\n")
    assert findings(mutated(pattern=r"(?P<gpu>\d+): (?P<mask>[0-9a-f,]+)$", negatives=[])) == []
