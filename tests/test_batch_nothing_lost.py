"""Nothing lost: every kind of bad input is annotated or reported, in every format."""

from __future__ import annotations

import gzip
import json
import os
import pty
import signal
import subprocess
import sys
import time
import zlib

import pytest

from batch_helpers import annotate, page_rows, seed_style_lines
from seed_lines import AFFINITY_LINE

FORMATS = ("jsonl", "commented", "html", "summary")


@pytest.fixture(scope="module")
def bad_tree(tmp_path_factory):
    """A directory such as a crashed job leaves: odd bytes, a huge line, a cut archive ..."""
    root = tmp_path_factory.mktemp("bad")
    (root / "binary.log").write_bytes(b"ok line\n\xff\xfe\x00junk\x00 \x80\x81\nNUL\x00inside\n" + AFFINITY_LINE.encode() + b"\n")
    (root / "crlf.log").write_bytes(b"first\r\n" + AFFINITY_LINE.encode() + b"\r\nlast without newline")
    (root / "empty.log").write_bytes(b"")
    with open(root / "huge.log", "wb") as handle:
        handle.write(b"before\n" + b"A" * (50 << 20) + b"\nafter\n")
    whole = gzip.compress(("\n".join(seed_style_lines()) + "\n").encode() * 40)
    (root / "cut.log.gz").write_bytes(whole[: len(whole) // 2])
    (root / "dangling.log").symlink_to(root / "missing-target")
    os.mkfifo(root / "fifo")
    return root


def lines_in(root) -> int:
    """Lines the reader can recover: every file read fully, the cut archive as far as it goes."""
    total = 0
    for name in ("binary.log", "crlf.log", "huge.log"):
        data = (root / name).read_bytes()
        total += data.count(b"\n") + (0 if data.endswith(b"\n") else 1)
    # What zlib can recover from the cut archive, its partial last line included.
    recovered = zlib.decompressobj(wbits=31).decompress((root / "cut.log.gz").read_bytes())
    return total + recovered.count(b"\n") + (0 if recovered.endswith(b"\n") else 1)


@pytest.mark.parametrize("fmt", FORMATS)
def test_every_line_is_accounted_for_and_every_problem_reported(explainer, bad_tree, fmt):
    out, summary = annotate(explainer, [str(bad_tree)], fmt)
    assert summary.total_lines == lines_in(bad_tree)
    problems = {(os.path.basename(p.file), p.kind) for p in summary.all_problems()}
    assert {("dangling.log", "unreadable"), ("fifo", "not_a_file"), ("empty.log", "empty"),
            ("cut.log.gz", "truncated"), ("binary.log", "undecodable"), ("binary.log", "nul_bytes"),
            ("huge.log", "long_line")} <= problems
    cut = next(p for p in summary.all_problems() if p.kind == "truncated")
    assert cut.line > 0 and "truncated gzip" in cut.message
    huge = next(p for p in summary.all_problems() if p.kind == "long_line")
    assert huge.line == 2
    text = out.decode("utf-8", "replace")
    if fmt == "jsonl":
        records = [json.loads(r) for r in out.splitlines()]
        assert len(records) == summary.total_lines
        flagged = [r for r in records if r.get("undecodable")]
        assert [(os.path.basename(r["file"]), r["line_number"]) for r in flagged] == [("binary.log", 2)]
        long = [r for r in records if "cut_from_bytes" in r]
        assert [(r["line_number"], r["cut_from_bytes"], len(r["line"])) for r in long] == [(2, 50 << 20, 1 << 20)]
        crlf = [r for r in records if r["file"].endswith("crlf.log")]
        assert [r["known"] for r in crlf] == [False, True, False]
        assert crlf[1]["pattern_id"] == "nccl.init.affinity"
    elif fmt == "commented":
        body = [l for l in out.split(b"\n") if not l.startswith(b"# ")]
        assert len(body) - 1 == summary.total_lines  # the split leaves one empty tail
        assert b"first\r" in body  # CRLF kept byte for byte
        assert b"\xff\xfe\x00junk\x00 \x80\x81" in body
        assert "# explainlog: this line was 52,428,800 bytes" in text
        assert "truncated gzip" in text
    elif fmt == "html":
        assert text.rstrip().endswith("</html>")
    else:
        assert "truncated gzip" in text and "dangling.log" in text


def _wait_for(path, predicate, timeout=120.0) -> None:
    deadline = time.time() + timeout
    while time.time() < deadline:
        if path.exists() and predicate(path.read_bytes()):
            return
        time.sleep(0.2)
    raise AssertionError(f"{path} never reached the expected state")


def _temp_of(out: Path) -> Path:
    """The file a run into ``out`` writes until it completes (service.batch.output)."""
    deadline = time.time() + 120
    while time.time() < deadline:
        found = list(out.parent.glob(f".{out.name}.explainlog-*.tmp"))
        if found:
            return found[0]
        time.sleep(0.1)
    raise AssertionError(f"no temporary file beside {out}")


def _annotate_stdin(kb_dir, index_dir, out: Path, fmt: str, jobs: str) -> subprocess.Popen:
    """A run reading stdin that cannot finish while stdin stays open: the signal always comes
    in the middle, however fast or slow the machine."""
    cmd = [sys.executable, "-m", "service.cli", "--kb", str(kb_dir), "--index", str(index_dir),
           "--index-policy", "refuse", "annotate", "-", "--format", fmt, "--regex-only", "-j", jobs,
           "-o", str(out)]
    proc = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    block = ("\n".join(seed_style_lines()) + "\n").encode() * 200
    proc.stdin.write(block * 20)  # ~4 MB: at least one chunk is written before the signal
    proc.stdin.flush()
    return proc


STOPS = [(fmt, jobs, signal.SIGINT) for fmt in ("jsonl", "html", "commented") for jobs in ("1", "2")] + [
    (fmt, "2", sig) for fmt in ("jsonl", "html", "commented") for sig in (signal.SIGTERM, signal.SIGHUP)
]


@pytest.mark.parametrize("fmt,jobs,sig", STOPS, ids=[f"{f}-j{j}-{s.name}" for f, j, s in STOPS])
def test_a_stop_signal_leaves_a_valid_partial_output_and_the_previous_one(kb_dir, index_dir, tmp_path, fmt, jobs, sig):
    """Ctrl-C, SIGTERM or SIGHUP while lines are still arriving on stdin: exit 128 + signal, the
    previous output untouched, and the run's own output complete and valid as OUT.partial
    (with -j 2, workers write JSONL themselves: still whole records, no gap in line numbers)."""
    out = tmp_path / f"out.{fmt}"
    out.write_bytes(b"the previous, good output\n")
    proc = _annotate_stdin(kb_dir, index_dir, out, fmt, jobs)
    _wait_for(_temp_of(out), lambda data: data.count(b"\n") > 1000 or data.count(b"class=\"chunk\"") > 1)
    proc.send_signal(sig)
    _, stderr = proc.communicate(timeout=120)
    assert proc.returncode == 128 + sig, stderr.decode()
    assert out.read_bytes() == b"the previous, good output\n"
    assert list(tmp_path.glob(".out.*")) == []  # no temporary file, no lock left behind
    data = (tmp_path / f"out.{fmt}.partial").read_bytes()
    assert f"kept as {out}.partial".encode() in stderr
    if fmt == "jsonl":
        records = [json.loads(line) for line in data.splitlines()]
        assert [r["line_number"] for r in records] == list(range(1, len(records) + 1))
    elif fmt == "html":
        assert data.rstrip().endswith(b"</html>") and b'"interrupted":true' in data
        rows = page_rows(data.decode("utf-8"))  # every id a line refers to was written before the stop
        assert [row[1] for row in rows] == list(range(1, len(rows) + 1))
    else:
        assert b"# explainlog: interrupted after" in data


def test_sigkill_leaves_the_previous_output_and_the_next_run_cleans_up(kb_dir, index_dir, tmp_path):
    out = tmp_path / "out.jsonl"
    out.write_bytes(b"previous\n")
    proc = _annotate_stdin(kb_dir, index_dir, out, "jsonl", "2")
    _wait_for(_temp_of(out), lambda data: data.count(b"\n") > 1000)
    proc.kill()
    proc.communicate(timeout=60)
    assert out.read_bytes() == b"previous\n"
    assert list(tmp_path.glob(".out.jsonl.explainlog-*.tmp"))  # what SIGKILL leaves
    source = tmp_path / "in.log"
    source.write_text("\n".join(seed_style_lines()) + "\n", encoding="utf-8")
    done = subprocess.run([sys.executable, "-m", "service.cli", "--kb", str(kb_dir), "--index", str(index_dir),
                           "--index-policy", "refuse", "annotate", str(source), "--format", "jsonl",
                           "--regex-only", "-o", str(out)], capture_output=True, timeout=120)
    assert done.returncode == 0, done.stderr.decode()
    assert len(out.read_bytes().splitlines()) == len(seed_style_lines())
    assert list(tmp_path.glob(".out.*")) == []


def test_a_second_run_into_the_same_output_is_refused(kb_dir, index_dir, tmp_path):
    out = tmp_path / "out.jsonl"
    first = _annotate_stdin(kb_dir, index_dir, out, "jsonl", "1")
    _temp_of(out)  # the first run holds the lock from before its temporary file exists
    source = tmp_path / "in.log"
    source.write_text("\n".join(seed_style_lines()) + "\n", encoding="utf-8")
    second = subprocess.run([sys.executable, "-m", "service.cli", "--kb", str(kb_dir), "--index", str(index_dir),
                             "--index-policy", "refuse", "annotate", str(source), "--format", "jsonl",
                             "--regex-only", "-o", str(out)], capture_output=True, timeout=120)
    assert second.returncode == 4 and b"is writing" in second.stderr and str(first.pid).encode() in second.stderr
    _, stderr = first.communicate(timeout=120)  # closes stdin: the first run completes, alone
    assert first.returncode == 0, stderr.decode()
    records = [json.loads(line) for line in out.read_bytes().splitlines()]
    assert [r["line_number"] for r in records] == list(range(1, len(records) + 1))


def test_outputs_that_are_not_regular_files(kb_dir, index_dir, tmp_path):
    source = tmp_path / "in.log"
    source.write_text("\n".join(seed_style_lines()) + "\n", encoding="utf-8")
    base = [sys.executable, "-m", "service.cli", "--kb", str(kb_dir), "--index", str(index_dir),
            "--index-policy", "refuse", "annotate", str(source), "--format", "jsonl", "--regex-only", "-o"]
    to_null = subprocess.run(base + [os.devnull], capture_output=True, timeout=120)
    assert to_null.returncode == 0 and os.path.exists(os.devnull)
    to_dir = subprocess.run(base + [str(tmp_path)], capture_output=True, timeout=120)
    assert to_dir.returncode == 2 and b"is a directory" in to_dir.stderr
    nowhere = subprocess.run(base + [str(tmp_path / "missing" / "out.jsonl")], capture_output=True, timeout=120)
    assert nowhere.returncode == 2 and b"no directory" in nowhere.stderr


def test_progress_bar_only_on_a_terminal(kb_dir, index_dir, tmp_path):
    log = tmp_path / "train.log"
    log.write_text(("\n".join(seed_style_lines()) + "\n") * 300, encoding="utf-8")
    cmd = [sys.executable, "-m", "service.cli", "--kb", str(kb_dir), "--index", str(index_dir),
           "--index-policy", "refuse", "annotate", str(log), "--format", "jsonl", "--regex-only",
           "-o", str(tmp_path / "out.jsonl")]
    piped = subprocess.run(cmd, capture_output=True, timeout=300)
    assert piped.returncode == 0 and b"lines/s" not in piped.stderr
    controller, terminal = pty.openpty()
    proc = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=terminal)
    os.close(terminal)
    seen = b""
    while True:
        try:
            piece = os.read(controller, 4096)
        except OSError:
            break
        if not piece:
            break
        seen += piece
    proc.wait(timeout=300)
    os.close(controller)
    assert proc.returncode == 0
    assert b"lines/s" in seen and b"explainlog annotate:" in seen
