"""The native shape tally and -j summaries over byte ranges: same answers as the streaming path."""

from __future__ import annotations

import gzip
import io
import random
import subprocess
import sys

import pytest

from batch_helpers import REPO, annotate, seed_style_lines
from seed_lines import AFFINITY_LINE
from service.batch import pipeline, shape_keys
from service.batch.cli import make_writer
from service.batch.engine import Engine
from service.batch.inputs import Source, discover
from service.batch.options import Options
from service.batch.pipeline import Limits, annotate_sources
from service.batch.progress import Progress
from service.batch.ranges import split, summarize_range
from service.batch.summary import Summary

ALPHABET = b"0x123abcdefgX\n \xff\x00"


def random_buffers(seed: int, count: int, longest: int):
    rng = random.Random(seed)
    for _ in range(count):
        yield bytes(rng.choice(ALPHABET) for _ in range(rng.randrange(0, longest)))


def test_the_native_module_was_built():
    """CI installs with a C compiler: the fast path must be the one under test."""
    assert shape_keys.NATIVE


def test_native_tally_equals_the_python_definition():
    """Keys, counts, first and last lines, per-line ids and line starts, on buffers dense in
    pointer look-alikes (``0x12`` too short, ``0x0xabcd`` overlapping, ``1x...``), NUL bytes,
    invalid UTF-8 and empty lines."""
    edge = [b"", b"\n", b"\n\n\n", b"0x", b"0x12", b"flag 0x12 set", b"0x0xabcd", b"0x00000x0000",
            b"a 0xdeadbeef\nb 0xDEADBEEF\nc 0xfeedface", b"1x7f3a5c00", b"x" * 5000 + b"\n" + b"0xabcd" * 900]
    for data in [*edge, *random_buffers(1, 20000, 80), *random_buffers(2, 300, 3000)]:
        native = shape_keys.tally(data)
        assert native == shape_keys.tally_python(data), data
        lines = shape_keys.Lines(data, native[5])
        assert [lines[i] for i in range(len(native[4]) // 4)] == data.split(b"\n")


def test_tally_keys_are_the_line_keys():
    data = b"rank 3 comm 0x7f3a5c00b2d0 ok\nrank 12 comm 0x55aa00001111 ok\nflag 0x12 set"
    keys, counts, first, last, _, _ = shape_keys.tally(data)
    assert keys == [b"rank 0 comm 0x000000000000 ok", b"rank 00 comm 0x000000000000 ok", b"flag 0x00 set"]
    assert keys == list(dict.fromkeys(shape_keys.line_keys(data)))
    assert counts == [1, 1, 1] and first == [0, 1, 2] and last == [0, 1, 2]


def test_digit_before_x_native_equals_numpy():
    for data in [b"", b"x", b"1x", b"0x", b"a1", b"9x", b"x9x", *random_buffers(3, 20000, 40)]:
        assert shape_keys.digit_before_x(data) == shape_keys.digit_before_x_python(data), data


def test_a_line_with_0x_but_no_pointer_is_summarized(explainer, tmp_path):
    """``0x12`` has ``0x`` but is too short for a pointer: the fold used to crash on it."""
    path = tmp_path / "flags.log"
    path.write_text("flag 0x12 set\nrank 3 ok\n" + AFFINITY_LINE + "\n", encoding="utf-8")
    for fmt in ("summary", "jsonl"):
        _, summary = annotate(explainer, [str(path)], fmt)
        assert summary.total_lines == 3 and summary.known_lines == 1


def test_ranges_cover_the_file_and_end_at_newlines(tmp_path):
    rng = random.Random(4)
    data = b"".join(b"x" * rng.randrange(0, 300) + b"\n" for _ in range(2000)) + b"no newline at the end"
    path = tmp_path / "train.log"
    path.write_bytes(data)
    parts = split(Source("train.log", path, len(data)), 3, range_bytes=4096)
    assert len(parts) > 20 and all(p.source == 3 for p in parts)
    assert [p.start for p in parts] == [0] + [p.end for p in parts[:-1]] and parts[-1].end == len(data)
    assert all(data[p.end - 1:p.end] == b"\n" for p in parts[:-1])
    assert all(p.end - p.start >= 4096 for p in parts[:-1])


def test_what_cannot_be_split_is_streamed(tmp_path):
    (tmp_path / "empty.log").write_bytes(b"")
    (tmp_path / "train.log.1").write_bytes(gzip.compress(b"line\n" * 100))
    for name in ("empty.log", "train.log.1", "missing.log"):
        assert split(Source(name, tmp_path / name, None), 0) is None
    assert split(Source("-", None, None), 0) is None
    assert split(Source("dir", tmp_path, None), 0) is None


def test_shift_lines_moves_every_location():
    summary = Summary()
    summary.add_known("a", 2, (0, 1), (0, 5), {"severity": "info", "component": "x", "role": "context", "title": {}})
    summary.add_unknown("t <NUM>", 1, (0, 3), (0, 3), "t 1")
    summary.add_deferred("d", 1, (0, 4), (0, 4), "d")
    summary.add_note(0, "undecodable", 2)
    summary.shift_lines(100)
    assert (summary.entries["a"].first, summary.entries["a"].last) == ((0, 101), (0, 105))
    assert summary.templates["t <NUM>"].first == (0, 103) and summary.deferred["d"].last == (0, 104)
    assert summary.notes[(0, "undecodable")] == [1, 102]


def _summary(explainer, paths, jobs, limits):
    sources, problems = discover([str(p) for p in paths])
    options = Options(format="summary")
    writer = make_writer("summary", io.BytesIO(), options, multi=len(sources) > 1)
    return annotate_sources(sources, explainer, options, writer, jobs=jobs, limits=limits,
                            on_problem=lambda p: None, problems=problems)


def test_range_summaries_equal_the_streaming_summary(explainer, tmp_path, monkeypatch):
    """Many small ranges, read whole or streamed (a range holding a line over ``max_line``,
    one over twice ``range_bytes``), CRLF, NUL, invalid UTF-8, pointers, unknown lines for the
    semantic tier and no final newline: counts, first and last lines and notes all match."""
    rng = random.Random(5)
    lines = seed_style_lines()
    body = []
    for i in range(3000):
        line = rng.choice(lines).encode()
        roll = rng.random()
        if roll < 0.01:
            line = b"L" * rng.choice([2500, 9000])  # over max_line / over 2 * range_bytes
        elif roll < 0.02:
            line += b"\r"
        elif roll < 0.03:
            line = b"bad \xff\xfe bytes and NUL \x00 here"
        elif roll < 0.05:
            line = f"worker {i} reached checkpoint barrier zzqv".encode()
        body.append(line)
    first = tmp_path / "a.log"
    first.write_bytes(b"\n".join(body) + b"\n")
    second = tmp_path / "b.log"
    second.write_bytes(b"\n".join(reversed(body)))  # no final newline
    limits = Limits(max_line=2000, range_bytes=4096)
    assert len(split(Source("a", first, None), 0, limits.range_bytes)) > 50
    in_one, in_two = _summary(explainer, [first, second], 1, limits), _summary(explainer, [first, second], 2, limits)
    with monkeypatch.context() as streaming:
        streaming.setattr(pipeline, "split", lambda *args: None)  # every file through SourceReader
        streamed = _summary(explainer, [first, second], 1, limits)
    assert streamed.total_lines == 2 * len(body) and streamed.templates and streamed.notes
    assert {kind for _, kind in streamed.notes} == {"undecodable", "nul_bytes", "long_line"}
    assert in_one.to_json() == streamed.to_json()
    assert in_two.to_json() == streamed.to_json()


def test_a_range_of_a_file_that_shrank_reads_what_is_there(explainer, tmp_path):
    path = tmp_path / "train.log"
    path.write_bytes(("\n".join(seed_style_lines()) + "\n").encode() * 4)
    parts = split(Source("train.log", path, None), 0, range_bytes=2048)
    path.write_bytes(path.read_bytes()[: parts[1].start + 100])  # the log was rotated meanwhile
    engine = Engine(explainer, semantic=False)
    cut = summarize_range(engine, parts[1], 1 << 20, 2048)
    assert cut.n_lines == path.read_bytes()[parts[1].start:].count(b"\n") + 1 and not cut.problems
    assert summarize_range(engine, parts[3], 1 << 20, 2048).n_lines == 0


def test_the_console_entry_flushes_and_keeps_the_exit_code(kb_dir, index_dir, tmp_path):
    """``run`` skips the interpreter's teardown: what was printed must still arrive, and
    ``--fail-on`` must still fail."""
    log = tmp_path / "train.log"
    log.write_text("\n".join(seed_style_lines()) + "\n", encoding="utf-8")
    cmd = [sys.executable, "-c", "from service.cli import run; run()", "--kb", str(kb_dir), "--index",
           str(index_dir), "--index-policy", "refuse", "annotate", str(log), "--format", "jsonl", "--regex-only"]
    done = subprocess.run(cmd, capture_output=True, timeout=300, cwd=REPO)
    assert done.returncode == 0, done.stderr.decode()
    assert done.stdout.count(b"\n") == len(seed_style_lines())
    failing = subprocess.run([*cmd, "--fail-on", "warning"], capture_output=True, timeout=300, cwd=REPO)
    assert failing.returncode == 1 and failing.stdout.count(b"\n") == len(seed_style_lines())


class _StopAfter(Progress):
    """Ctrl-C after ``n`` results: raised where a SIGINT would surface, between merges."""

    def __init__(self, n: int) -> None:
        super().__init__(None, enabled=False)
        self.left = n

    def add_lines(self, count: int) -> None:
        super().add_lines(count)
        self.left -= 1
        if self.left == 0:
            raise KeyboardInterrupt


def test_an_interrupted_range_summary_is_whole_up_to_where_it_stopped(explainer, tmp_path):
    path = tmp_path / "train.log"
    path.write_text(("\n".join(seed_style_lines()) + "\n") * 40, encoding="utf-8")
    sources, _ = discover([str(path)])
    options = Options(format="summary", semantic=False)
    out = io.BytesIO()
    writer = make_writer("summary", out, options, multi=False)
    limits = Limits(range_bytes=4096)
    assert len(split(sources[0], 0, limits.range_bytes)) > 10
    summary = annotate_sources(sources, explainer, options, writer, jobs=2, limits=limits,
                               progress=_StopAfter(3), on_problem=lambda p: None)
    assert summary.interrupted
    merged = summary.total_lines
    assert 0 < merged < 40 * len(seed_style_lines())
    assert summary.known_lines + summary.untracked_unknown + sum(t.count for t in summary.templates.values()) == merged
    assert max(stat.last[1] for stat in summary.entries.values()) <= merged
    assert b"interrupted" in out.getvalue()
