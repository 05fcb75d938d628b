"""`explainlog explain --json -`: the JSON contract, in order, for any input bytes."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from service.explainer import CONTRACT_KEYS

IB_LINE = (
    "cc0af148112143078d5c88b5e68679fd-task0-0:133:202 [0] NCCL INFO NET/IB : Using [0]mlx5_0:1/IB "
    "[1]mlx5_1:1/IB [2]mlx5_2:1/IB [3]mlx5_3:1/IB [RO]; OOB eth0:10.244.174.137<0>"
)
AFFINITY_LINE = "cc0af148112143078d5c88b5e68679fd-task0-0:135:208 [2] NCCL INFO Setting affinity for GPU 2 to ff0000"
UNRELATED = "2024/03/11 09:12:44 [notice] 2231#2231: signal process started"


def run_cli(index_dir, args, stdin: bytes = b"") -> subprocess.CompletedProcess:
    cmd = [sys.executable, "-m", "service.cli", "--index", str(index_dir), "--index-policy", "refuse", *args]
    return subprocess.run(cmd, input=stdin, capture_output=True, timeout=300)


def jsonl(out: bytes) -> list[dict]:
    return [json.loads(line) for line in out.decode("utf-8").splitlines()]


def test_contract_for_each_line_in_order(index_dir):
    stdin = "\n".join([AFFINITY_LINE, UNRELATED, "", IB_LINE]).encode() + b"\n"
    result = run_cli(index_dir, ["explain", "--json", "-"], stdin)
    assert result.returncode == 0, result.stderr.decode()
    answers = jsonl(result.stdout)
    assert [a["line"] for a in answers] == [AFFINITY_LINE, UNRELATED, "", IB_LINE]
    for answer in answers:
        assert tuple(answer) == CONTRACT_KEYS
        assert 0.0 <= answer["confidence"] <= 1.0
        assert len(answer["candidates"]) <= 3
    affinity, unrelated, empty, ib = answers
    assert affinity["known"] and affinity["tier"] == "regex" and affinity["pattern_id"] == "nccl.init.affinity"
    assert affinity["fields"]["mask"] == "ff0000" and affinity["context"]["device"] == "2"
    assert set(affinity["title"]) == {"en", "zh"} and set(affinity["explanation"]) == {"en", "zh"}
    assert ib["pattern_id"] == "nccl.net.ib_devices" and "Relaxed Ordering" in ib["explanation"]["en"]
    assert unrelated["known"] is False and unrelated["pattern_id"] is None and unrelated["tier"] is None
    assert unrelated["candidates"], "unknown lines still list their nearest candidates"
    assert empty["known"] is False and empty["candidates"] == []


HOSTILE = {
    "binary": bytes(range(256)) * 4,
    "invalid utf-8": b"NCCL INFO \xff\xfe\xfa Using network IB",
    "nul bytes": b"abc\x00\x00def",
    "one megabyte": b"x" * (1 << 20),
    "ansi and crlf": b"\x1b[31m" + AFFINITY_LINE.encode() + b"\x1b[0m\r",
}


@pytest.mark.parametrize("name", sorted(HOSTILE))
def test_hostile_input_gets_valid_answers(index_dir, name):
    payload = HOSTILE[name]
    expected_lines = payload.count(b"\n") + 1
    result = run_cli(index_dir, ["explain", "--json", "-"], payload + b"\n")
    assert result.returncode == 0, result.stderr.decode()[-2000:]
    assert b"Traceback" not in result.stderr
    answers = jsonl(result.stdout)
    assert len(answers) == expected_lines
    if name == "ansi and crlf":
        assert answers[0]["pattern_id"] == "nccl.init.affinity"
    if name == "one megabyte":
        assert len(answers[0]["line"]) == 1 << 20


def test_empty_input_is_empty_output(index_dir):
    result = run_cli(index_dir, ["explain", "--json", "-"], b"")
    assert result.returncode == 0 and result.stdout == b""


def test_readable_output_in_one_language(index_dir):
    result = run_cli(index_dir, ["explain", "--lang", "zh", AFFINITY_LINE])
    text = result.stdout.decode()
    assert result.returncode == 0
    assert "16-23" in text and "号核" in text
    assert "EN " not in text


def test_missing_file_is_a_clear_error(index_dir, tmp_path):
    result = run_cli(index_dir, ["explain", "--file", str(tmp_path / "nope.log")])
    assert result.returncode == 1
    assert b"nope.log" in result.stderr and b"Traceback" not in result.stderr


def test_regex_tier_does_not_import_torch(kb_dir):
    code = (
        "import sys\n"
        "from service.explainer import Explainer\n"
        f"e = Explainer(kb_dir={str(kb_dir)!r}, index_policy='refuse')\n"
        f"a = e.explain({AFFINITY_LINE!r})\n"
        "assert a['tier'] == 'regex', a\n"
        "heavy = [m for m in ('torch', 'sentence_transformers', 'faiss') if m in sys.modules]\n"
        "print(heavy)\n"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "[]"
