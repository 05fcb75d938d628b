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


def test_empty_input_is_empty_output_and_a_usage_exit(index_dir):
    # Nothing on stdout, and not a silent success: a script that fed no lines hears about it.
    result = run_cli(index_dir, ["explain", "--json", "-"], b"")
    assert result.returncode == 2 and result.stdout == b"" and b"no lines" in result.stderr


def test_readable_output_in_one_language(index_dir):
    result = run_cli(index_dir, ["explain", "--lang", "zh", AFFINITY_LINE])
    text = result.stdout.decode()
    assert result.returncode == 0
    assert "[信息]" in text and "（详情：--verbose）" in text and "EN " not in text
    long = run_cli(index_dir, ["explain", "--lang", "zh", "--verbose", AFFINITY_LINE]).stdout.decode()
    assert "16-23" in long and "号核" in long and "字段" in long  # the explanation, on demand


def test_missing_file_is_a_clear_error(index_dir, tmp_path):
    result = run_cli(index_dir, ["explain", "--file", str(tmp_path / "nope.log")])
    assert result.returncode == 3  # README, "Exit codes": some input was lost
    assert b"nope.log" in result.stderr and b"Traceback" not in result.stderr


def test_explain_reads_what_annotate_reads_and_says_what_it_lost(index_dir, tmp_path):
    import gzip

    lines = [AFFINITY_LINE, IB_LINE] * 500
    (tmp_path / "ok.log.gz").write_bytes(gzip.compress(("\n".join(lines) + "\n").encode()))
    whole = gzip.compress(("\n".join(lines * 40) + "\n").encode())
    (tmp_path / "cut.log.gz").write_bytes(whole[: len(whole) // 2])
    result = run_cli(index_dir, ["explain", "--json", "--regex-only", "--file", str(tmp_path / "ok.log.gz")])
    assert result.returncode == 0 and [a["line"] for a in jsonl(result.stdout)] == lines
    cut = run_cli(index_dir, ["explain", "--json", "--regex-only", "--file", str(tmp_path / "cut.log.gz"),
                              "--file", str(tmp_path), "--file", str(tmp_path / "ok.log.gz")])
    answers = jsonl(cut.stdout)
    assert cut.returncode == 3 and b"the rest is lost" in cut.stderr and b"is a directory" in cut.stderr
    assert answers[-len(lines):] == jsonl(result.stdout) and len(answers) > len(lines)
    assert b"Traceback" not in cut.stderr


def test_explain_caps_a_huge_line_and_handles_no_input(index_dir, tmp_path):
    (tmp_path / "huge.log").write_bytes(b"A" * (8 << 20) + b"\n" + IB_LINE.encode() + b"\n")
    result = run_cli(index_dir, ["explain", "--json", "--regex-only", "--max-line-bytes", "4096",
                                 "--file", str(tmp_path / "huge.log")])
    answers = jsonl(result.stdout)
    assert result.returncode == 0 and len(answers) == 2 and len(answers[0]["line"]) == 4096
    assert answers[1]["line"] == IB_LINE and b"cut to its first 4,096 bytes" in result.stderr
    empty = run_cli(index_dir, ["explain", "--json", "-"], b"")
    assert empty.returncode == 2 and b"no lines" in empty.stderr
    cmd = [sys.executable, "-m", "service.cli", "--index", str(index_dir), "--index-policy", "refuse",
           "explain", "--json", "-"]
    closed_in = subprocess.run(cmd, stdin=subprocess.DEVNULL, capture_output=True, timeout=300,
                               preexec_fn=lambda: __import__("os").close(0))
    assert closed_in.returncode == 2 and b"stdin is closed" in closed_in.stderr
    closed_out = subprocess.run(cmd[:-2] + [IB_LINE], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                                timeout=300, preexec_fn=lambda: __import__("os").close(1))
    assert closed_out.returncode == 2 and b"stdout is closed" in closed_out.stderr
    assert b"Traceback" not in closed_in.stderr + closed_out.stderr


def test_every_subcommand_has_examples_in_its_help():
    import argparse

    from service.cli import build_parser

    def walk(parser, name):
        for action in parser._actions:
            if isinstance(action, argparse._SubParsersAction):
                for sub_name, sub in action.choices.items():
                    yield f"{name} {sub_name}", sub
                    yield from walk(sub, f"{name} {sub_name}")

    commands = dict(walk(build_parser(), "explainlog"))
    assert {"explainlog explain", "explainlog triage", "explainlog annotate", "explainlog kb check"} <= set(commands)
    missing = [name for name, sub in commands.items() if "example" not in sub.format_help()]
    assert missing == []
    assert "exit codes" in build_parser().format_help()


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
