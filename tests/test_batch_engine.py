"""The batch engine's shortcuts (shapes, folded pointers, fixed spans, shared answers) give the
spine's answer on every line, including lines built to break each shortcut."""

from __future__ import annotations

import io
import json
import subprocess
import sys

import pytest
import yaml

from batch_helpers import REPO, annotate, seed_style_lines
from service.batch.engine import Engine
from service.batch.pipeline import settle_deferred
from service.batch.reader import Chunk
from service.explainer import Explainer

PREFIX = "node-{n}:11:22 [0] NCCL INFO "


def demo_entry(entry_id: str, pattern: str, example: str, **extra) -> dict:
    """A valid KB entry (schema and kb check) around ``pattern``; ``extra`` overrides fields."""
    return {
        "id": entry_id,
        "title": {"en": "Handle", "zh": "任意 handle"},
        "component": "nccl", "severity": "info", "role": "context",
        "pattern": pattern,
        "explanation": {"en": "Any handle.", "zh": "任意 handle。"},
        "examples": [PREFIX.format(n=1) + example],
        "negatives": [example + "?"],
        "source": "NVIDIA/nccl src/init.cc", "references": ["https://github.com/NVIDIA/nccl"],
        **extra,
    }


# Entries that tell a pointer's letters from its digits: folding pointers into one shape must
# not hide that. "handle" lines go to the digits-only entry only if the pointer has no letter;
# "ptr" lines split the pointer into groups at its first letter (spans differ per line).
POINTER_KB = [
    demo_entry("demo.handle_digits", r"^handle 0x\d+ ready$", "handle 0x12345678 ready",
               title={"en": "Handle of digits", "zh": "纯数字 handle"}, severity="warning", role="root_cause",
               priority=10, explanation={"en": "Digits only.", "zh": "只有数字。"}),
    demo_entry("demo.handle_hex", r"^handle 0x[0-9a-f]+ ready$", "handle 0x1234abcd ready"),
    demo_entry("demo.ptr_split", r"^ptr 0x(?P<digits>\d*)(?P<rest>[0-9a-f]*) done$", "ptr 0x12ab34cd done",
               title={"en": "Pointer {digits}", "zh": "指针 {digits}"},
               fields={"digits": {"en": "leading digits", "zh": "开头的数字"},
                       "rest": {"en": "the rest", "zh": "其余部分"}},
               explanation={"en": "Starts with {digits}, then {rest}.", "zh": "以 {digits} 开头，然后是 {rest}。"}),
]
POINTERS = ["0x12345678", "0x1234abcd", "0x9abc1234", "0x55555555", "0xabcdef01", "0x12ab34cd", "0x1a2b3c4d"]


@pytest.fixture(scope="module")
def pointer_explainer(tmp_path_factory):
    kb = tmp_path_factory.mktemp("pointer-kb")
    (kb / "demo.yaml").write_text(yaml.safe_dump(POINTER_KB, allow_unicode=True, sort_keys=False), encoding="utf-8")
    explainer = Explainer(kb_dir=kb, index_dir=kb / "index", index_policy="refuse")
    assert not explainer.kb.findings
    return explainer


def pointer_lines() -> list[str]:
    lines = []
    for n in range(3):
        for pointer in POINTERS * 2:
            lines.append(PREFIX.format(n=n) + f"handle {pointer} ready")
            lines.append(PREFIX.format(n=n) + f"ptr {pointer} done")
    return lines


def test_pointer_letters_that_change_the_answer_are_not_folded_away(pointer_explainer):
    lines = pointer_lines()
    engine = Engine(pointer_explainer, semantic=False, verify="off")  # no safety net: the checks alone
    data = "\n".join(lines).encode()
    annotated = engine.annotate(Chunk(0, 1, data, len(lines)))
    expected = pointer_explainer.explain_many(lines, semantic=False)
    ids = {record["pattern_id"] for record in expected}
    assert ids == {"demo.handle_digits", "demo.handle_hex", "demo.ptr_split"}  # the log really splits
    for i, want in enumerate(expected):
        assert annotated.record(i) == want, lines[i]
    summary = Engine(pointer_explainer, semantic=False, verify="off").summarize(Chunk(0, 1, data, len(lines)))
    assert summary.to_json() == annotated.summary.to_json()
    assert summary.entries["demo.handle_digits"].count == 3 * 2 * 2  # 0x12345678 and 0x55555555


def test_a_nonzero_digit_before_x_is_not_taken_for_a_pointer(explainer):
    """``1x7f3a5c00b2d0`` has the shape of ``0x7f3a5c00b2d0`` but is no pointer to the KB or
    the masks, and the shape is pointer-blind: only the ``[1-9]x`` hazard sends such lines down
    the slow path, in annotate and in summary alike."""
    lines = [PREFIX.format(n=n) + f"comm {lead}x7f3a5c00b2d0 rank {n} nranks 16 cudaDev {n} busId {n}000 - Init COMPLETE"
             for n in range(4) for lead in "0170"]
    expected = explainer.explain_many(lines, semantic=False)
    assert [record["known"] for record in expected[:4]] == [True, False, False, True]
    data = "\n".join(lines).encode()
    annotated = Engine(explainer, semantic=False, verify="off").annotate(Chunk(0, 1, data, len(lines)))
    assert [annotated.record(i) for i in range(len(lines))] == expected
    summary = Engine(explainer, semantic=False, verify="off").summarize(Chunk(0, 1, data, len(lines)))
    assert summary.to_json() == annotated.summary.to_json()
    assert summary.entries[expected[0]["pattern_id"]].count == 8


def test_pointer_sensitive_shapes_keep_their_per_value_check(pointer_explainer):
    engine = Engine(pointer_explainer, semantic=False, verify="off")
    lines = pointer_lines()
    engine.summarize(Chunk(0, 1, "\n".join(lines).encode(), len(lines)))
    with_pointers = [shape for shape in engine._shapes.values() if shape.runs_at != (0, 0)]
    assert with_pointers and all(shape.runs_ok is not None for shape in with_pointers)


@pytest.fixture(scope="module")
def generated_log(tmp_path_factory):
    path = tmp_path_factory.mktemp("generated") / "train.log"
    subprocess.run([sys.executable, str(REPO / "bench" / "generate_log.py"), "-n", "30000", "-o", str(path)],
                   check=True)
    return path


def test_generated_training_log_gets_the_spine_answer_on_every_line(explainer, generated_log):
    """30k lines from the benchmark's generator (many ranks, a pointer per comm, progress lines
    with timestamps): every JSONL record equals ``explain`` of its line."""
    out, summary = annotate(explainer, [str(generated_log)], "jsonl", semantic=False)
    lines = generated_log.read_text(encoding="utf-8").splitlines()
    records = [json.loads(r) for r in io.BytesIO(out).read().splitlines()]
    assert len(records) == len(lines) == summary.total_lines
    expected = explainer.explain_many(lines, semantic=False)
    mismatched = [r["line_number"] for r, want in zip(records, expected)
                  if {k: v for k, v in r.items() if k not in ("file", "line_number")} != want]
    assert mismatched == []
    _, fast = annotate(explainer, [str(generated_log)], "summary", semantic=False)
    assert fast.to_json() == summary.to_json()


def test_nccl_pointer_shapes_are_settled_once_for_every_pointer(explainer, generated_log):
    """The comm pointers of the generated log change no KB decision, and the engine proves it
    per shape (``pointer_blind``) instead of checking each new pointer value."""
    lines = generated_log.read_text(encoding="utf-8").splitlines()
    engine = Engine(explainer, semantic=False, verify="off")
    engine.summarize(Chunk(0, 1, "\n".join(lines).encode(), len(lines)))
    with_pointers = [shape for shape in engine._shapes.values() if shape.runs_at != (0, 0)]
    blind = [shape for shape in with_pointers if shape.runs_ok is None]
    assert len(with_pointers) >= 10 and len(blind) == len(with_pointers)


def test_compiled_context_builders_equal_the_dict_and_its_json_for_awkward_values():
    """Shapes build contexts with code compiled from their items: constants with quotes,
    backslashes, '%', non-ASCII and braces must come out as orjson would write them."""
    import orjson

    from service.batch.shape_plan import _context_builder, _context_json_builder

    text = 'r7 "q" 50%b \\x 节点{a} tail'
    items = [
        ("rank", None, 0, 2),
        ("format", 'srun+"odd"\\%b%%', 0, 0),
        ("host", None, 3, 6),
        ("level", "节点 {a} \n", 0, 0),
        ("pct", None, 7, 10),
        ("k\"ey", None, 12, 14),
        ("zh", None, 15, 20),
    ]
    context = _context_builder(items)(text)
    assert context == {"rank": "r7", "format": 'srun+"odd"\\%b%%', "host": '"q"', "level": "节点 {a} \n",
                       "pct": "50%", "k\"ey": "\\x", "zh": "节点{a}"}
    assert _context_json_builder(items)(text) == orjson.dumps(context)


# Lines the regex tier does not know and the semantic tier does (KB examples, cut short).
SEMANTIC_ONLY = [
    "The following values were not passed to `accelerate launch` and had defaults used",
    "More than one GPU was found, enabling multi-GPU",
]


def test_deferred_semantic_answers_are_filed_as_the_engine_would_have(explainer, monkeypatch):
    """With ``defer_semantic`` a summary names the unknown templates instead of embedding them
    (no model in the worker); ``settle_deferred`` then gives the summary of a plain engine."""
    lines = seed_style_lines() + [f"[rank{r}]: {line}" for r in range(3) for line in SEMANTIC_ONLY]
    chunk = Chunk(0, 1, "\n".join(lines).encode(), len(lines))
    plain = Engine(explainer, semantic=True).summarize(chunk)
    assert {"accelerate.launch.defaults_header", "accelerate.launch.multi_gpu_enabled"} <= set(plain.entries)

    def no_model(*args, **kwargs):
        raise AssertionError("a deferring engine asked the semantic tier")

    with monkeypatch.context() as patched:
        patched.setattr(explainer, "_semantic_answers", no_model)
        deferred = Engine(explainer, semantic=True, defer_semantic=True).summarize(chunk)
    assert len(deferred.deferred) >= 3 and not deferred.templates
    settle_deferred(deferred, explainer)
    assert not deferred.deferred
    assert deferred.to_json() == plain.to_json()


def test_j2_summary_equals_j1_with_the_semantic_tier(explainer, tmp_path):
    path = tmp_path / "train.log"
    lines = seed_style_lines() * 20 + [f"[rank{r}]: {line}" for r in range(40) for line in SEMANTIC_ONLY]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    _, one = annotate(explainer, [str(path)], "summary", jobs=1)
    _, two = annotate(explainer, [str(path)], "summary", jobs=2)
    assert one.entries["accelerate.launch.multi_gpu_enabled"].count == 40
    assert two.to_json() == one.to_json()


def test_summary_checks_digit_specific_entries_per_message(explainer):
    """``p2p`` is a literal in the KB pattern: ``p3p`` lines have the same shape but no entry,
    so the summary checks each distinct message rather than trusting the shape."""
    lines = [f"host-{n}:11:22 [{n % 8}] NCCL INFO 4 coll channels, 4 p{p}p channels, 1 p2p channels per peer"
             for n in range(30) for p in ("2", "2", "3")]
    chunk = Chunk(0, 1, "\n".join(lines).encode(), len(lines))
    engine = Engine(explainer, semantic=False, verify="off")
    fast = engine.summarize(chunk)
    assert any(shape.checks is not None for shape in engine._shapes.values())  # the path under test
    tally = Engine(explainer, semantic=False, verify="off").annotate(chunk).summary
    assert fast.to_json() == tally.to_json()
    assert fast.known_lines == 60 and sum(t.count for t in fast.templates.values()) == 30


VERDICT_KB = [
    demo_entry("demo.pinned", r"^rank (?P<rank>\d+) pinned to gpu (?P<gpu>\d+)$", "rank 3 pinned to gpu 7",
               title={"en": "Rank {rank} on GPU {gpu}", "zh": "rank {rank} 绑定 GPU {gpu}"},
               fields={"rank": {"en": "global rank", "zh": "全局 rank"}, "gpu": {"en": "device", "zh": "设备号"}},
               summary={"en": "Rank {rank} on GPU {gpu}", "zh": "rank {rank} 在 GPU {gpu} 上"},
               compute={"node_gpu": "gpu % 8"},
               verdicts=[{"when": "gpu >= 8", "en": "GPU {gpu} is past the eight of a node",
                          "zh": "GPU {gpu} 超出了单机 8 卡", "tests": ["rank 3 pinned to gpu 9"]},
                         {"when": "gpu < 8", "en": "GPU {gpu} of rank {rank}", "zh": "rank {rank} 的 GPU {gpu}",
                          "tests": ["rank 3 pinned to gpu 7"]}]),
]


def test_verdicts_remembered_by_the_fields_they_read_give_the_spine_answer(tmp_path):
    """Verdicts read ``gpu`` only, the texts quote ``rank`` too: the engine evaluates them once
    per ``gpu`` value, and every line still gets the spine's answer (both verdicts fire in turn)."""
    (tmp_path / "demo.yaml").write_text(yaml.safe_dump(VERDICT_KB, allow_unicode=True, sort_keys=False), encoding="utf-8")
    explainer = Explainer(kb_dir=tmp_path, index_dir=tmp_path / "index", index_policy="refuse")
    assert not explainer.kb.findings
    lines = [PREFIX.format(n=1) + f"rank {rank} pinned to gpu {gpu}" for rank in range(40) for gpu in (3, 9, 12)]
    engine = Engine(explainer, semantic=False, verify="off")
    calls = []
    import service.batch.engine as engine_module
    real = engine_module.verdict_values

    def counting(entry, fields):
        calls.append(dict(fields))
        return real(entry, fields)

    engine_module.verdict_values = counting
    try:
        annotated = engine.annotate(Chunk(0, 1, "\n".join(lines).encode(), len(lines)))
    finally:
        engine_module.verdict_values = real
    expected = explainer.explain_many(lines, semantic=False)
    assert {r["summary"]["en"].split(" ")[-1] for r in expected} >= {"node", "3"}  # both verdicts fire
    assert [annotated.record(i) for i in range(len(lines))] == expected
    assert sorted(c["gpu"] for c in calls) == ["12", "3", "9"]  # once per value read, not per rank


DIGIT_KB = [
    demo_entry("demo.bus_comm", r"^dev (?P<bus>(?:0[xX])?[0-9a-f]+) comm (?P<comm>0x[0-9a-f]+|\(nil\)|0) up$",
               "dev 1000 comm 0x7f3a up", title={"en": "Bus {bus}", "zh": "总线 {bus}"},
               fields={"bus": {"en": "bus id", "zh": "总线号"}, "comm": {"en": "comm", "zh": "通信器"}},
               severity="warning", role="root_cause", priority=10),
    demo_entry("demo.any_dev", r"^dev \S+ comm \S+ up$", "dev zz comm yy up",
               title={"en": "Any device", "zh": "任意设备"}),
]


def test_shapes_whose_digit_specific_entries_match_anyway_skip_the_per_line_check(tmp_path):
    """A digit-specific entry whose digit-free paths match a shape's first line matches all of
    that shape (``_certain``): no per-line check. Where only a digit path matched (a null comm
    ``0``, an ``0X`` bus id) lines are still checked one by one, and ``comm 5`` / ``5X10``
    lines, same shape, get the other entry, as the spine says."""
    (tmp_path / "demo.yaml").write_text(yaml.safe_dump(DIGIT_KB, allow_unicode=True, sort_keys=False), encoding="utf-8")
    explainer = Explainer(kb_dir=tmp_path, index_dir=tmp_path / "index", index_policy="refuse")
    assert not explainer.kb.findings
    lines = []
    for n in range(1, 6):
        lines += [PREFIX.format(n=n) + f"dev {n}000 comm 0x7f3a up", PREFIX.format(n=n) + f"dev {n}000 comm {n - 1} up",
                  PREFIX.format(n=n) + f"dev {n - 1}X10 comm (nil) up"]
    engine = Engine(explainer, semantic=False, verify="off")
    annotated = engine.annotate(Chunk(0, 1, "\n".join(lines).encode(), len(lines)))
    expected = explainer.explain_many(lines, semantic=False)
    assert {r["pattern_id"] for r in expected} == {"demo.bus_comm", "demo.any_dev"}
    assert [annotated.record(i) for i in range(len(lines))] == expected
    checks = {key.split(b"INFO ")[1]: shape.checks is not None for key, shape in engine._shapes.items()}
    assert checks[next(k for k in checks if b"comm 0x" in k)] is False  # certain: no line of it is checked
    assert checks[b"dev 0000 comm 0 up"] is True and checks[b"dev 0X00 comm (nil) up"] is True
    summary = Engine(explainer, semantic=False, verify="off").summarize(Chunk(0, 1, "\n".join(lines).encode(), len(lines)))
    assert summary.to_json() == annotated.summary.to_json()


def _record(rid: str, pattern: str, example: str) -> dict:
    return {
        "id": rid, "component": "nccl", "repo": "NVIDIA/nccl", "file": "src/init.cc", "line": 1,
        "function": "ncclInit", "level": "WARN", "call": "WARN", "format": example, "pattern": pattern,
        "groups": {"x": "x"}, "versions": ["v2.19.3-1"], "matchable": True, "severity": "warning",
        "role": "root_cause", "title": {"en": "Gadget {x}", "zh": "部件 {x}"},
        "explanation": {"en": "Printed for gadget {x}.", "zh": "部件 {x} 时打印。"},
        "action": {"en": "Check it.", "zh": "检查一下。"}, "example": {"line": example, "constructed": True},
    }


def test_records_are_watched_unless_a_digit_closed_curated_entry_holds_the_whole_shape(tmp_path):
    """A shape whose first line a digit-closed curated entry answers watches only the curated
    digit-specific entries: ``rank 7`` lines, same shape as ``rank 3``, still get the curated
    entry that names 7. A shape a catalogue record answers first watches every digit-specific
    entry: ``gadget 7`` lines, same shape as ``gadget 3``, get the record that names 7."""
    import json

    kb = [
        demo_entry("demo.rank_any", r"^rank (?P<rank>\d+) failed$", "rank 3 failed",
                   title={"en": "Rank {rank} failed", "zh": "rank {rank} 失败"},
                   fields={"rank": {"en": "rank", "zh": "rank 编号"}}),
        demo_entry("demo.rank_seven", r"^rank 7 failed$", "rank 7 failed", priority=10,
                   title={"en": "Rank seven", "zh": "第七个 rank"}),
    ]
    (tmp_path / "demo.yaml").write_text(yaml.safe_dump(kb, allow_unicode=True, sort_keys=False), encoding="utf-8")
    (tmp_path / "catalog").mkdir()
    records = [_record("nccl.init.00000001", r"^gadget \d+ is (?P<x>\S+)\s*$", "gadget 3 is foo"),
               _record("nccl.init.00000002", r"^gadget 7 is (?P<x>\S+)\s*$", "gadget 7 is foo")]
    (tmp_path / "catalog" / "nccl.jsonl").write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    explainer = Explainer(kb_dir=tmp_path, index_dir=tmp_path / "index", index_policy="refuse")
    assert not explainer.kb.findings
    lines = []
    for n in range(1, 4):
        for k in (3, 7, 5):
            lines += [PREFIX.format(n=n) + f"rank {k} failed", PREFIX.format(n=n) + f"gadget {k} is bar{n}"]
    engine = Engine(explainer, semantic=False, verify="off")
    annotated = engine.annotate(Chunk(0, 1, "\n".join(lines).encode(), len(lines)))
    expected = explainer.explain_many(lines, semantic=False)
    assert {r["pattern_id"] for r in expected} == {
        "demo.rank_any", "demo.rank_seven", "nccl.init.00000001", "nccl.init.00000002"}
    assert [annotated.record(i) for i in range(len(lines))] == expected


def test_the_allocator_is_tuned_where_glibc_allows_and_left_alone_elsewhere(monkeypatch):
    """On glibc Linux ``tune_malloc`` sets both thresholds; without a C library that has
    ``mallopt`` (or on another OS) it changes nothing and says so."""
    import ctypes

    from service.batch import memory

    if sys.platform.startswith("linux"):
        assert memory.tune_malloc() is True
    monkeypatch.setattr(ctypes, "CDLL", lambda *a, **k: (_ for _ in ()).throw(OSError("no libc")))
    assert memory.tune_malloc() is False
    monkeypatch.setattr(memory.sys, "platform", "darwin")
    assert memory.tune_malloc() is False


def test_an_engine_takes_its_peers_shapes_and_gives_the_same_answers(explainer, generated_log):
    """At ``-j 1`` triage's engine reads the lines the summary's engine has learned: it takes
    those shapes (none it must answer through the embedding tier) instead of learning them
    again, and its records equal the spine's and those of an engine of its own."""
    lines = generated_log.read_text(encoding="utf-8").splitlines()[:8000]
    chunk = Chunk(0, 1, "\n".join(lines).encode(), len(lines))
    owner = Engine(explainer, semantic=False, verify="off")
    owner.summarize(chunk)
    borrower = Engine(explainer, semantic=False)
    borrower.peer = owner
    got = borrower.annotate(chunk, need_context=True, context_dicts=True, keep_messages=True)
    taken = [key for key, shape in borrower._shapes.items() if owner._shapes.get(key) is shape]
    assert len(taken) >= 50 and borrower._learned < len(borrower._shapes) / 4
    assert borrower.mismatches == 0  # it verified the shapes it took, against the spine
    alone = Engine(explainer, semantic=False).annotate(chunk, need_context=True, context_dicts=True, keep_messages=True)
    assert [got.record(i) for i in range(len(lines))] == [alone.record(i) for i in range(len(lines))]
    assert got.record(0) == explainer.explain_many([lines[0]], semantic=False)[0]


def test_shapes_of_one_entry_name_their_own_printing_format(tmp_path):
    """A curated entry that links two printing formats names, per line, the one whose pattern
    matches (``Explainer.source``). Lines of two shapes with the same field values share their
    texts, but not their source: the ``beta`` line must not name the ``alpha`` format."""
    import json

    kb = [demo_entry("demo.gadget", r"^(?:alpha|beta) gadget (?P<x>\S+)$", "alpha gadget foo",
                     title={"en": "Gadget {x}", "zh": "部件 {x}"}, fields={"x": {"en": "name", "zh": "名字"}},
                     formats=["nccl.init.0000000a", "nccl.init.0000000b"])]
    (tmp_path / "demo.yaml").write_text(yaml.safe_dump(kb, allow_unicode=True, sort_keys=False), encoding="utf-8")
    (tmp_path / "catalog").mkdir()
    records = [_record("nccl.init.0000000a", r"^alpha gadget (?P<x>\S+)\s*$", "alpha gadget foo"),
               _record("nccl.init.0000000b", r"^beta gadget (?P<x>\S+)\s*$", "beta gadget foo")]
    records[1]["line"] = 2
    (tmp_path / "catalog" / "nccl.jsonl").write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    explainer = Explainer(kb_dir=tmp_path, index_dir=tmp_path / "index", index_policy="refuse")
    lines = [PREFIX.format(n=n) + f"{word} gadget foo" for n in (1, 2) for word in ("alpha", "beta")]
    expected = explainer.explain_many(lines, semantic=False)
    assert [r["source"]["record"] for r in expected] == ["nccl.init.0000000a", "nccl.init.0000000b"] * 2
    engine = Engine(explainer, semantic=False, verify="off")
    annotated = engine.annotate(Chunk(0, 1, "\n".join(lines).encode(), len(lines)))
    assert [annotated.record(i) for i in range(len(lines))] == expected


def test_joined_values_are_spaced_and_stopped_as_the_spine_does(tmp_path):
    """Values that end in Chinese, full-width punctuation or a period, before a space, "。" or
    ".": the engine's HeadTemplate joins them exactly as the spine's ``fill`` does."""
    kb = [demo_entry("demo.said", r"^driver said (?P<msg>.+)$", "driver said reset gpu to activate.",
                     title={"en": "Driver: {msg}.", "zh": "驱动：{msg}。"},
                     fields={"msg": {"en": "message", "zh": "原文", "values": {"ok": {"en": "fine (ok)", "zh": "正常（ok）"}}}},
                     explanation={"en": "It said {msg}. Then {msg_decoded} here.", "zh": "原文 {msg} 之后；值 {msg_decoded} 切到 RTR；用于{msg_decoded}的。"})]
    (tmp_path / "demo.yaml").write_text(yaml.safe_dump(kb, allow_unicode=True, sort_keys=False), encoding="utf-8")
    explainer = Explainer(kb_dir=tmp_path, index_dir=tmp_path / "index", index_policy="refuse")
    assert not explainer.kb.findings
    messages = ["reset gpu to activate.", "ok", "已初始化", "INIT（已初始化）", "wait..", "x. y", "完成。", "a.b", "  lead"]
    lines = [PREFIX.format(n=n) + f"driver said {m}" for n in (1, 2) for m in messages]
    expected = explainer.explain_many(lines, semantic=False)
    assert expected[0]["title"]["zh"] == "驱动：reset gpu to activate。"
    assert "原文已初始化之后" in expected[2]["explanation"]["zh"]  # no space on either side
    assert "用于 a.b 的" in expected[7]["explanation"]["zh"]  # an English value between Chinese words is spaced
    assert "用于正常（ok）的" in expected[1]["explanation"]["zh"]
    assert expected[8]["title"]["zh"] == "驱动：lead。"  # a captured leading space goes after "："
    engine = Engine(explainer, semantic=False, verify="off")
    annotated = engine.annotate(Chunk(0, 1, "\n".join(lines).encode(), len(lines)))
    assert [annotated.record(i) for i in range(len(lines))] == expected


def test_lines_of_one_shape_name_the_format_their_digits_select(tmp_path):
    """NCCL tries ``ncclNetPlugin_v6`` then ``_v5``: one shape, two printing formats told apart by
    a digit. The curated entry is digit-closed, so the shape is answered as one, but each line's
    source is the record its own digits match, as the spine names it."""
    import json

    kb = [demo_entry("demo.plugin_symbol", r"^NET/Plugin: Failed to find ncclNetPlugin_v\d+ symbol\.$",
                     "NET/Plugin: Failed to find ncclNetPlugin_v6 symbol.",
                     formats=["nccl.net.0000000a", "nccl.net.0000000b"])]
    (tmp_path / "demo.yaml").write_text(yaml.safe_dump(kb, allow_unicode=True, sort_keys=False), encoding="utf-8")
    (tmp_path / "catalog").mkdir()
    records = [_record("nccl.net.0000000a", r"^NET/Plugin: Failed to find ncclNetPlugin_v6 symbol\.\s*$",
                       "NET/Plugin: Failed to find ncclNetPlugin_v6 symbol."),
               _record("nccl.net.0000000b", r"^NET/Plugin: Failed to find ncclNetPlugin_v5 symbol\.\s*$",
                       "NET/Plugin: Failed to find ncclNetPlugin_v5 symbol.")]
    for r in records:
        r["groups"] = {}
        r["title"] = {"en": "Plugin symbol", "zh": "插件符号"}
        r["explanation"] = {"en": "No such symbol.", "zh": "没有这个符号。"}
    records[1]["line"] = 2
    (tmp_path / "catalog" / "nccl.jsonl").write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    explainer = Explainer(kb_dir=tmp_path, index_dir=tmp_path / "index", index_policy="refuse")
    assert not explainer.kb.findings
    lines = [PREFIX.format(n=n) + f"NET/Plugin: Failed to find ncclNetPlugin_v{v} symbol." for n in (1, 2) for v in (6, 5, 4)]
    expected = explainer.explain_many(lines, semantic=False)
    assert [r["pattern_id"] for r in expected] == ["demo.plugin_symbol"] * 6
    assert [r["source"]["record"] for r in expected][:3] == ["nccl.net.0000000a", "nccl.net.0000000b", "nccl.net.0000000a"]
    engine = Engine(explainer, semantic=False, verify="off")
    annotated = engine.annotate(Chunk(0, 1, "\n".join(lines).encode(), len(lines)))
    assert [annotated.record(i) for i in range(len(lines))] == expected


def test_an_optional_segment_whose_value_is_empty_is_left_out(tmp_path):
    """``[[ Text on this line: {text}.]]`` with a group that matched nothing printed "Text on
    this line: ." (a reviewer's poor grade, twice): an empty value leaves its segment out, in
    the spine and in the engine alike, while a placeholder outside a segment still prints it."""
    kb = [demo_entry("demo.last_error", r"^Last error:\s*(?P<text>.*)$", "Last error: boom",
                     title={"en": "Last error[[: {text}]]", "zh": "最后的错误[[：{text}]]"},
                     fields={"text": {"en": "text", "zh": "文字"}},
                     explanation={"en": "Next line.[[ Text on this line: {text}.]] Raw <{text}>.",
                                  "zh": "看下一行。[[本行文字：{text}。]]原文 <{text}>。"})]
    (tmp_path / "demo.yaml").write_text(yaml.safe_dump(kb, allow_unicode=True, sort_keys=False), encoding="utf-8")
    explainer = Explainer(kb_dir=tmp_path, index_dir=tmp_path / "index", index_policy="refuse")
    assert not explainer.kb.findings
    lines = [PREFIX.format(n=n) + text for n in (1, 2) for text in ("Last error:", "Last error: boom", "Last error: ")]
    expected = explainer.explain_many(lines, semantic=False)
    assert expected[0]["explanation"] == {"en": "Next line. Raw <>.", "zh": "看下一行。原文 <>。"}
    assert expected[0]["title"]["en"] == "Last error"
    assert expected[1]["explanation"]["en"] == "Next line. Text on this line: boom. Raw <boom>."
    engine = Engine(explainer, semantic=False, verify="off")
    annotated = engine.annotate(Chunk(0, 1, "\n".join(lines).encode(), len(lines)))
    assert [annotated.record(i) for i in range(len(lines))] == expected
