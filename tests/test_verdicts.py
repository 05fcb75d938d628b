"""Verdicts: the safe evaluator, the kb check rules, and what a user gets for the OOM cases
(issue 22): a summary that says which case the line is, in both languages, the same from the
explainer and from batch annotation."""

from __future__ import annotations

import copy
import io
import json

import pytest

from batch_helpers import annotate
from indexer.kb_check import run_checks
from indexer.verdicts import VerdictError, as_seconds, as_size, evaluate, holds, parse
from test_kb_check import VALID, write_kb

# ------------------------------------------------------------------ the evaluator


@pytest.mark.parametrize("text,expected", [
    ("818.67 MiB", 818.67 * 2**20), ("1.5GB", 1.5e9), ("4096 bytes", 4096), ("2 GiB", 2 * 2**30), ("0 bytes", 0),
])
def test_sizes(text, expected):
    assert as_size(text) == pytest.approx(expected)


@pytest.mark.parametrize("text,expected", [
    ("600061 ms", 600.061), ("30s", 30), ("1:30:00", 5400), ("2-00:00:00", 172800), ("5 minutes", 300), ("00:10", 10),
])
def test_durations(text, expected):
    assert as_seconds(text) == pytest.approx(expected)


def test_conditions_over_fields():
    fields = {"ran_for": "600061", "timeout": "600000", "op": "ALLREDUCE", "code": "0x1f", "pid": ""}
    assert holds("num(ran_for) > num(timeout)", fields)
    assert holds("ran_for - timeout == 61", fields)
    assert holds("op in ('ALLREDUCE', 'REDUCE_SCATTER') and code == 31", fields)
    assert holds("1 < 2 < 3", {}) and not holds("1 < 3 < 2", {})
    assert holds("not has(pid) and has(op)", fields)
    assert holds("matches(op, '^ALL')", fields)
    assert evaluate("human_size(size('1536 MiB'))", {}) == "1.50 GiB"


def test_a_condition_that_cannot_be_evaluated_does_not_fire():
    assert not holds("num(missing) > 1", {})  # a field the line did not supply
    assert not holds("op > 3", {"op": "ALLREDUCE"})  # text against a number
    assert not holds("size(op) > 0", {"op": "ALLREDUCE"})  # not a size
    assert not holds("1 / (x - x) > 0", {"x": "5"})  # division by zero
    # "or": a side that cannot be evaluated is false, the other still decides
    assert holds("num(missing) > 1 or 2 > 1", {})


def _outcome(run, values):
    try:
        value = run(values)
    except VerdictError as exc:
        return ("error", type(exc).__name__)
    return ("value", type(value).__name__, repr(value))


def _kb_expressions() -> list[str]:
    from indexer import paths
    from indexer.kb_loader import load_kb

    sources = set()
    for loaded in load_kb(paths.kb_dir()).entries:
        entry = loaded.entry
        sources.update(v.when for v in entry.verdicts or ())
        sources.update((entry.compute or {}).values())
    return sorted(sources)


def test_compiled_conditions_equal_the_tree_walk_on_every_kb_condition():
    """``evaluate`` runs a condition as closures compiled once; ``_eval`` walks the tree. On
    every condition and computed value of the KB, over values of every kind a field can hold
    (numbers, hex, sizes, durations, words, empty, missing), both give the same value of the
    same type, or both refuse."""
    import random

    from indexer.verdicts import _eval

    sources = _kb_expressions() + [
        "1 < 2 < 3", "not x", "-x", "+x", "x + y", "x / y", "x // y", "x % y", "x in ('a', 1)",
        "x not in y", "x == y != z", "x if y else z", "len(x) > 3 or upper(y) == 'A'", "round(x, 1)",
        "min(x, y) <= max(y, z)", "abs(x) and has(y)", "x or y or z", "startswith(x, 'N') and contains(y, x)",
    ]
    assert len(sources) > 40  # the KB's own conditions are most of them
    pool = ["0", "1", "3", "-2", "0x1f", "1,024", "2.5", "nan", "inf", "", "600061 ms", "30s", "1:30:00",
            "818.67 MiB", "1.5GB", "ALLREDUCE", "a", "N", "yes", "True", "1e400", 7, 0.0, 2.5, True, None]
    rng = random.Random(17)
    compared = 0
    for source in sources:
        expression = parse(source)
        names = sorted(expression.names) + ["x", "y", "z"]
        for _ in range(60):
            values = {n: rng.choice(pool) for n in names if rng.random() < 0.9}
            assert _outcome(expression.run, values) == _outcome(lambda v: _eval(expression.tree, v), values), (
                source, values)
            compared += 1
    assert compared == 60 * len(sources)


@pytest.mark.parametrize("source", [
    "__import__('os').system('true')", "x.__class__", "x[0]", "lambda: 1", "open('f')", "[i for i in x]",
    "f'{x}'", "x := 1", "'a\\d'",
])
def test_only_the_whitelist_parses(source):
    with pytest.raises(ValueError):
        parse(source)


# ------------------------------------------------------------------ kb check


def _with(**changes) -> dict:
    entry = copy.deepcopy(VALID)
    entry.update(changes)
    return entry


def _checks(tmp_path, entry) -> list:
    return [f for f in run_checks(write_kb(tmp_path, entry))[1]]


GOOD_VERDICTS = [
    {"when": "gpu >= 4", "en": "GPU {gpu} is on the second socket half", "zh": "GPU {gpu} 在后半部分",
     "tests": ["h:1:2 [2] NCCL INFO Setting affinity for GPU 6 to ff000000"]},
    {"when": "gpu < 4", "en": "GPU {gpu} is in the first half", "zh": "GPU {gpu} 在前半部分"},
]


def test_verdicts_that_fire_pass(tmp_path):
    entry = _with(verdicts=GOOD_VERDICTS, summary={"en": "GPU {gpu} pinned", "zh": "GPU {gpu} 已绑核"})
    assert _checks(tmp_path, entry) == []


@pytest.mark.parametrize("change,check,fragment", [
    (lambda e: e["verdicts"][0].update(when="gpu >= 40"), "verdict", "does not fire on its own test line"),
    (lambda e: e["verdicts"][1].update(when="gpu > 100"), "verdict", "fires on no example"),
    (lambda e: e["verdicts"][0].update(when="num(rank) > 1"), "verdict", "reads 'rank'"),
    (lambda e: e["verdicts"][0]["tests"].__setitem__(0, "something else"), "verdict", "does not match"),
    (lambda e: e["verdicts"][1].update(en="GPU {device} first"), "verdict", "uses {device}"),
    (lambda e: e.update(summary={"en": "x" * 141, "zh": "很短"}, verdicts=[]), "render", "at most 140"),
    (lambda e: e["verdicts"][1].update(zh="很长" * 71), "render", "at most 140"),
    (lambda e: e.update(explanation={"en": "pinned (empty if none: {gpu})", "zh": "绑核 {gpu}"}), "render", "authoring note"),
    (lambda e: e.update(compute={"half": "gpu // 4 + cores"}), "verdict", "reads 'cores'"),
])
def test_each_verdict_rule_fails_by_entry_id(tmp_path, change, check, fragment):
    entry = _with(verdicts=copy.deepcopy(GOOD_VERDICTS))
    change(entry)
    found = _checks(tmp_path, entry)
    assert any(f.check == check and fragment in f.message and f.entry_id == "demo.affinity" for f in found), found


def test_a_placeholder_left_unfilled_is_a_render_finding(tmp_path):
    entry = _with(pattern=r"^Setting affinity for GPU (?P<gpu>\d+)(?: to (?P<mask>[0-9a-f,]+))?$",
                  examples=["h:1:2 [2] NCCL INFO Setting affinity for GPU 2"])
    found = _checks(tmp_path, entry)
    assert any(f.check == "render" and "<mask_decoded>" in f.message for f in found), found
    entry["explanation"] = {"en": "GPU {gpu}[[: {mask_decoded}]]", "zh": "GPU {gpu}[[ 的亲和性：{mask_decoded}]]"}
    assert [f for f in _checks(tmp_path, entry) if f.check == "render"] == []


def test_a_bad_condition_is_reported_at_its_line(tmp_path):
    entry = _with(verdicts=[{"when": "gpu.real > 1", "en": "x", "zh": "中文"}])
    found = _checks(tmp_path, entry)
    assert any(f.check == "schema" and "not allowed" in f.message and f.line > 1 for f in found), found


# ------------------------------------------------------------------ the real KB: OOM


FRAGMENTED = (
    "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 64.00 MiB. GPU 3 has a total capacity of "
    "79.15 GiB of which 21.50 MiB is free. Including non-PyTorch memory, this process has 79.12 GiB memory in "
    "use. Of the allocated memory 70.02 GiB is allocated by PyTorch, and 8.48 GiB is reserved by PyTorch but "
    "unallocated. If reserved but unallocated memory is large try setting PYTORCH_CUDA_ALLOC_CONF="
    "expandable_segments:True to avoid fragmentation."
)
FULL = FRAGMENTED.replace("Tried to allocate 64.00 MiB", "Tried to allocate 2.50 GiB").replace(
    "8.48 GiB is reserved", "2.00 MiB is reserved")


def test_oom_summaries_tell_fragmentation_from_a_full_card(explainer):
    fragmented, full = explainer.explain_many([FRAGMENTED, FULL], semantic=False)
    assert fragmented["pattern_id"] == full["pattern_id"] == "cuda.oom.torch"
    for answer in (fragmented, full):
        assert answer["summary"]["en"] and answer["summary"]["zh"]
        assert len(answer["summary"]["en"]) <= 140 and len(answer["summary"]["zh"]) <= 140
        assert answer["verdicts"] and answer["summary"]["en"] == answer["verdicts"][0]["en"]
    assert "fragmentation" in fragmented["summary"]["en"].lower() and "8.48 GiB" in fragmented["summary"]["en"]
    assert "碎片化" in fragmented["summary"]["zh"]
    assert full["summary"]["en"].startswith("Not fragmentation") and "2.50 GiB" in full["summary"]["en"]
    assert fragmented["summary"] != full["summary"]


def test_batch_annotation_gives_each_line_its_own_verdict(explainer, tmp_path):
    """Lines of one shape whose numbers decide different verdicts: the engine's per-shape text
    cache must not hand one line's verdict to the other."""
    lines = [FRAGMENTED, FULL, FRAGMENTED.replace("8.48 GiB", "6.00 GiB"), FULL.replace("2.50 GiB", "3.50 GiB")] * 3
    path = tmp_path / "oom.log"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    out, _ = annotate(explainer, [str(path)], "jsonl", semantic=False)
    records = [json.loads(r) for r in io.BytesIO(out).read().splitlines()]
    expected = explainer.explain_many(lines, semantic=False)
    assert [r["summary"] for r in records] == [e["summary"] for e in expected]
    assert [r["verdicts"] for r in records] == [e["verdicts"] for e in expected]
    assert len({r["summary"]["en"] for r in records}) == 4


def test_unknown_lines_have_a_summary_too(explainer):
    answer = explainer.explain_many(["completely unrelated words here zzz"], semantic=False)[0]
    assert not answer["known"] and answer["summary"]["en"] and answer["summary"]["zh"] and answer["verdicts"] == []


def test_every_seed_answer_has_a_summary_in_both_languages(explainer):
    from batch_helpers import SEED_LOG

    lines = [l for l in SEED_LOG.read_text(encoding="utf-8").splitlines() if l.strip()]
    for answer in explainer.explain_many(lines, semantic=False):
        summary = answer["summary"]
        assert summary["en"].strip() and summary["zh"].strip(), answer["line"]
        assert len(summary["en"]) <= 140 and len(summary["zh"]) <= 140
        assert "<" not in summary["en"] or answer["line"].count("<"), summary  # no unfilled placeholder
