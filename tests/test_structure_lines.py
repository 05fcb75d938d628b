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


# Progress bars and per-step metric lines of the usual front-ends (issue 17): a training log
# prints thousands of them; each is answered as progress by the regex tier, so none waits for
# the embedding tier and none is explained as something else. These are the real renderings
# (the ANSI colours of Keras 3 and rich included: the normalizer strips them).
PROGRESS = [
    " 10%|█         | 100/1000 [00:10<01:30,  9.99it/s]",
    "Epoch 0:  45%|████▌     | 450/1000 [01:23<01:41,  5.42it/s, v_num=0, train_loss=0.234]",
    "  1/100 [..............................] - ETA: 3:20 - loss: 2.3026",
    "469/469 [==============================] - 3s 6ms/step - loss: 0.2950 - accuracy: 0.9153",
    "\x1b[1m100/100\x1b[0m \x1b[32m━━━━━━━━━━━━━━━━━━━━\x1b[0m\x1b[37m\x1b[0m \x1b[1m5s\x1b[0m 50ms/step - loss: 0.1234",
    "Epoch 3/9  ━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━ 250/500 0:01:23 • 0:01:24 3.01it/s v_num: 0 train_loss: 0.231",
    "\x1b[35mDownloading\x1b[0m \x1b[38;5;197m━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━\x1b[0m \x1b[35m100%\x1b[0m \x1b[36m0:00:00\x1b[0m",
    "{'loss': 2.3456, 'grad_norm': 1.234, 'learning_rate': 4.9e-05, 'epoch': 0.01}",
    "{'eval_loss': 2.1043, 'eval_runtime': 12.3456, 'eval_samples_per_second': 81.004, 'eval_steps_per_second': 10.125, 'epoch': 1.0}",
]


@pytest.mark.parametrize("line", PROGRESS)
def test_progress_and_metric_lines_are_progress_from_the_regex_tier(explainer, line):
    answer = explainer.explain(line)
    assert answer["known"] and answer["tier"] == "regex", answer
    assert answer["role"] == "progress", answer["pattern_id"]
