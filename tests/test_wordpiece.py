"""indexer.wordpiece against the tokenizers package (the full install's reference): the same ids
for every line the KB, the eval sets and the index hold, and for generated text that mixes
scripts, accents, controls, unassigned code points and special tokens."""

from __future__ import annotations

import json
import random
from pathlib import Path

import pytest
from tokenizers import Tokenizer

from indexer import paths
from indexer.wordpiece import WordPiece, supports

REPO = Path(__file__).resolve().parent.parent


@pytest.fixture(scope="module")
def both() -> tuple[WordPiece, Tokenizer]:
    path = Path(paths.bundled_model_path()) / "tokenizer.json"
    config = json.loads(path.read_text(encoding="utf-8"))
    assert supports(config)
    reference = Tokenizer.from_file(str(path))
    reference.enable_truncation(max_length=256)
    reference.no_padding()
    return WordPiece(config, 256), reference


def _real_lines() -> list[str]:
    lines = []
    for path in sorted((REPO / "tests" / "data").rglob("*.jsonl")):
        for row in path.read_text(encoding="utf-8").splitlines():
            if row.strip():
                lines.append(str(json.loads(row).get("line", "")))
    for path in sorted(paths.kb_dir().glob("*.yaml")):
        lines += path.read_text(encoding="utf-8").splitlines()  # English, Chinese, YAML syntax
    return lines


def _generated(n: int) -> list[str]:
    rng = random.Random(20261202)
    code_points = (
        list(range(0, 0x250)) + list(range(0x300, 0x370)) + list(range(0x400, 0x450))
        + list(range(0x2000, 0x2070)) + list(range(0x3000, 0x3040)) + list(range(0x4E00, 0x4E80))
        + list(range(0xFF00, 0xFF60))
        + [0xFFFD, 0x1F600, 0x20000, 0x2B920, 0x2B830, 0xE000, 0xFEFF, 0x200B, 0x85, 0xA0, 0x2028, 0x130, 0x3A3]
    )
    alphabet = [chr(c) for c in code_points]
    out = []
    for _ in range(n):
        text = "".join(
            rng.choice(alphabet) if rng.random() < 0.5 else rng.choice("abcXYZ 0129[].,:_-")
            for _ in range(rng.randint(0, 60))
        )
        if rng.random() < 0.1:
            text += rng.choice(["[CLS]", "[UNK]", "[SEP]", "[PAD]", "[MASK]", "[cls]"]) + text
        out.append(text)
    return out + ["x" * 5000, " ".join(f"w{i}" for i in range(700)), "a" * 100, "a" * 101, "", "   "]


@pytest.mark.parametrize("kind", ["real", "generated"])
def test_same_ids_as_the_tokenizers_package(both, kind):
    ours, reference = both
    lines = _real_lines() if kind == "real" else _generated(20_000)
    assert len(lines) > 5_000
    theirs = [e.ids for e in reference.encode_batch(lines)]
    wrong = [(line, mine, ref) for line, mine, ref in zip(lines, map(ours.encode, lines), theirs) if mine != ref]
    assert not wrong, wrong[:3]


def test_other_tokenizer_layouts_are_not_claimed(both):
    config = json.loads((Path(paths.bundled_model_path()) / "tokenizer.json").read_text(encoding="utf-8"))
    for key, value in [("lowercase", False), ("handle_chinese_chars", False), ("strip_accents", False)]:
        edited = json.loads(json.dumps(config))
        edited["normalizer"][key] = value
        assert not supports(edited), key
    edited = json.loads(json.dumps(config))
    edited["pre_tokenizer"] = {"type": "Whitespace"}
    assert not supports(edited)
