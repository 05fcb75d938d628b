"""`explainlog eval` on the shipped labelled sets, and the hygiene of those sets."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

from indexer.kb_loader import load_kb
from service.evaluate import evaluate, load_labelled

DATA = Path(__file__).parent / "data"
EVAL_FILES = sorted(DATA.glob("eval_*.jsonl"))


def test_labelled_sets_are_big_enough():
    records = load_labelled(EVAL_FILES)
    unrelated = load_labelled([DATA / "eval_unrelated.jsonl"])
    assert len(records) >= 150
    assert len(unrelated) >= 30 and all(r.expected is None for r in unrelated)


def test_eval_lines_are_not_kb_examples(kb_dir):
    examples = {e.line.strip() for l in load_kb(kb_dir).entries for e in l.entry.examples}
    leaked = [r.where for r in load_labelled(EVAL_FILES) if r.line.strip() in examples]
    assert not leaked, f"eval lines copied into KB examples: {leaked[:5]}"


def test_eval_expectations_name_real_entries(kb_dir):
    """An expectation names a curated entry, or a catalogue record that can answer (text
    written, enough fixed text): lines no curated entry knows are answered by their record."""
    kb = load_kb(kb_dir)
    ids = {l.entry.id for l in kb.entries} | {l.entry.id for l in kb.catalog}
    unknown = [(r.where, r.expected) for r in load_labelled(EVAL_FILES) if r.expected and r.expected not in ids]
    assert not unknown


def test_unrelated_software_is_not_confidently_matched(explainer):
    report = evaluate(explainer, load_labelled([DATA / "eval_unrelated.jsonl"]))
    assert report.false_matches == 0, report.errors
    assert report.abstention_recall == 1.0


def test_eval_cli_prints_the_four_numbers(index_dir):
    result = subprocess.run(
        [sys.executable, "-m", "service.cli", "--index", str(index_dir), "--index-policy", "refuse", "eval", *map(str, EVAL_FILES)],
        capture_output=True, text=True, timeout=600,
    )
    assert result.returncode == 0, result.stderr
    for label in ("top-1 accuracy", "abstention precision", "abstention recall", "calibration error"):
        assert re.search(rf"{label}[^:]*: \d\.\d{{3}}", result.stdout), (label, result.stdout)


def test_eval_rejects_a_malformed_set(tmp_path, index_dir):
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"line": "x"}\nnot json\n')
    result = subprocess.run(
        [sys.executable, "-m", "service.cli", "--index", str(index_dir), "eval", str(bad)], capture_output=True, text=True
    )
    assert result.returncode == 2 and "bad.jsonl:2" in result.stderr


def test_top1_accuracy_on_the_shipped_sets(explainer):
    report = evaluate(explainer, load_labelled(EVAL_FILES))
    assert report.top1_accuracy >= 0.9, report.errors[:10]
    assert report.ece < 0.1


def test_semantic_tier_alone_is_useful_and_abstains_on_unrelated_lines(explainer):
    """The fallback, measured on lines the regex tier would have answered: it should still find
    the right entry most of the time, and never claim unrelated software."""
    report = evaluate(explainer, load_labelled(EVAL_FILES), tier="semantic")
    assert report.top1_accuracy >= 0.7
    unrelated = evaluate(explainer, load_labelled([DATA / "eval_unrelated.jsonl"]), tier="semantic")
    assert unrelated.false_matches == 0
