"""Lines that are no message: separators, box borders, the placeholder in torchrun's report and
a prefix with nothing after it are answered as context, by the regex tier, never as anything
else (before, the embedding tier answered '=====' lines at 0.99 as NCCL or error lines)."""

from __future__ import annotations

import pytest

from indexer.normalize import normalize_line

STRUCTURAL = [
    "=" * 60,
    "-" * 60,
    "_" * 40,
    "~" * 18,
    "#" * 20,
    "# " + "-" * 34,
    "+" + "-" * 77 + "+",
    "|" + "=" * 29 + "+" + "=" * 22 + "+" + "=" * 22 + "|",
    "╒══════════╤══════════╕",
    "│          │          │",
    "╘══════════╧══════════╛",
    "[rank0]: " + "=" * 60,
    "  <NO_OTHER_FAILURES>",
    "[rank0]: ",
    "[rank12]:[E1002 12:00:00.000000 123 ProcessGroupNCCL.cpp:1250] ",
    "2024-05-01 10:00:00,123 - INFO - ",
    "node1:2345:2399 [0] NCCL INFO ",
]


@pytest.mark.parametrize("line", STRUCTURAL)
def test_structural_lines_are_context_from_the_regex_tier(explainer, line):
    answer = explainer.explain(line)
    assert answer["known"] and answer["tier"] == "regex", answer
    assert answer["role"] == "context" and answer["severity"] == "info", answer["pattern_id"]


@pytest.mark.parametrize("line", ["===== Epoch 3 =====", "[rank0]: step 10 loss 2.31", "-> 3"])
def test_lines_with_words_or_numbers_are_not_separators(explainer, line):
    assert explainer.explain(line)["pattern_id"] not in ("structure.separator", "structure.prefix_only")


def test_a_bare_prefix_is_peeled_and_marked():
    line = normalize_line("[rank3]:[W1002 12:00:00.000000 123 ProcessGroupNCCL.cpp:1250] ")
    assert line.message == "" and line.context["prefix_only"] == "1"
    assert line.context["rank"] == "3" and line.context["source_location"] == "ProcessGroupNCCL.cpp:1250"
    for plain in ("", "   ", "Failures:", "E:", "rank 0:"):
        assert "prefix_only" not in normalize_line(plain).context, plain
