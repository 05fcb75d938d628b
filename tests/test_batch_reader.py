"""The batch reader: every line comes out once, numbered, whatever the bytes and compression."""

from __future__ import annotations

import bz2
import gzip
import os
import random
import zlib
from pathlib import Path

import pytest
import zstandard

from service.batch.digit_closure import digit_closure, digit_hazard, line_shape
from service.batch.inputs import discover
from service.batch.reader import LineChunker, SourceReader

LINES = [f"[2024-09-10 14:27:{i % 60:02d},059] [INFO] [comm.py:637:init_distributed] cdb=None rank {i}" for i in range(5000)]
TEXT = ("\n".join(LINES) + "\n").encode()


def read_all(path: Path, **kwargs) -> tuple[list[bytes], list, list]:
    sources, problems = discover([str(path)])
    lines, chunks = [], []
    for index, source in enumerate(sources):
        for chunk in SourceReader(source, index, problems, **kwargs).chunks():
            chunks.append(chunk)
            assert chunk.first_line == len(lines) + 1
            part = chunk.data.split(b"\n")
            assert len(part) == chunk.n_lines
            lines.extend(part)
    return lines, chunks, problems


@pytest.mark.parametrize("compress", ["plain", "gzip", "zstd", "bzip2"])
def test_compression_is_detected_by_content_not_name(tmp_path, compress):
    data = {
        "plain": TEXT,
        "gzip": gzip.compress(TEXT),
        "zstd": zstandard.ZstdCompressor().compress(TEXT),
        "bzip2": bz2.compress(TEXT),
    }[compress]
    path = tmp_path / "rank0.log.1"  # rotated name, no telling extension
    path.write_bytes(data)
    lines, chunks, problems = read_all(path, chunk_bytes=64 << 10)
    assert [l.decode() for l in lines] == LINES
    assert chunks and not problems


def test_concatenated_gzip_members_are_all_read(tmp_path):
    path = tmp_path / "joined.gz"
    path.write_bytes(gzip.compress(b"a\nb\n") + gzip.compress(b"c\n"))
    lines, _, problems = read_all(path)
    assert lines == [b"a", b"b", b"c"] and not problems


def test_truncated_gzip_keeps_what_it_can_and_names_the_last_line(tmp_path):
    whole = gzip.compress(TEXT)
    path = tmp_path / "cut.log.gz"
    path.write_bytes(whole[: len(whole) * 2 // 3])
    lines, _, problems = read_all(path)
    assert 0 < len(lines) < len(LINES)
    assert [l.decode() for l in lines[:-1]] == LINES[: len(lines) - 1]  # last may be a partial line
    (problem,) = problems
    assert problem.kind == "truncated" and problem.lost_input
    assert problem.file == str(path) and problem.line == len(lines)
    assert "truncated gzip" in problem.message


def test_corrupt_zstd_is_reported_not_raised(tmp_path):
    data = bytearray(zstandard.ZstdCompressor().compress(TEXT))
    data[len(data) // 2:] = b"\xff" * (len(data) - len(data) // 2)
    path = tmp_path / "bad.zst"
    path.write_bytes(bytes(data))
    _, _, problems = read_all(path)
    assert problems and problems[0].kind == "truncated"


def test_crlf_last_line_without_newline_and_empty_lines(tmp_path):
    path = tmp_path / "win.log"
    path.write_bytes(b"one\r\n\r\ntwo\r\nlast")
    lines, _, _ = read_all(path)
    assert lines == [b"one\r", b"\r", b"two\r", b"last"]


def test_empty_file_is_reported_as_empty(tmp_path):
    path = tmp_path / "empty.log"
    path.write_bytes(b"")
    lines, _, problems = read_all(path)
    assert lines == [] and [p.kind for p in problems] == ["empty"] and not problems[0].lost_input


def test_a_50_mb_line_is_cut_and_the_lines_after_it_survive(tmp_path):
    path = tmp_path / "huge.log"
    with open(path, "wb") as handle:
        handle.write(b"before\n")
        handle.write(b"x" * (50 << 20) + b"\n")
        handle.write(b"after\n")
    lines, chunks, _ = read_all(path)
    assert len(lines) == 3 and lines[0] == b"before" and lines[2] == b"after"
    assert len(lines[1]) == 1 << 20
    cut = {c.first_line + i: n for c in chunks for i, n in c.cut.items()}
    assert cut == {2: (50 << 20)}


def test_chunker_cuts_lines_split_across_blocks():
    chunker = LineChunker(0, max_line=10, chunk_bytes=1 << 20)
    out = []
    for block in [b"short\n0123456", b"789ABCDEF\nok", b"\nend"]:
        out += list(chunker.feed(block))
    out += list(chunker.finish())
    lines = [l for c in out for l in c.data.split(b"\n")]
    assert lines == [b"short", b"0123456789", b"ok", b"end"]
    assert out[0].cut == {1: 16}


def test_discovery_recurses_sorts_and_reports_what_it_cannot_read(tmp_path):
    (tmp_path / "b").mkdir()
    (tmp_path / "b" / "rank1.log").write_text("x\n")
    (tmp_path / "a.log").write_text("y\n")
    (tmp_path / "gone.log").symlink_to(tmp_path / "missing")
    os.mkfifo(tmp_path / "pipe")
    sources, problems = discover([str(tmp_path), str(tmp_path / "nothing*.log"), str(tmp_path / "nope.log")])
    assert [Path(s.name).relative_to(tmp_path).as_posix() for s in sources] == ["a.log", "b/rank1.log"]
    kinds = sorted((Path(p.file).name, p.kind) for p in problems)
    assert kinds == [("gone.log", "unreadable"), ("nope.log", "unreadable"), ("nothing*.log", "unreadable"),
                     ("pipe", "not_a_file")]


def test_globs_expand_recursively(tmp_path):
    (tmp_path / "x" / "y").mkdir(parents=True)
    (tmp_path / "x" / "y" / "r.log").write_text("1\n")
    (tmp_path / "x" / "r.txt").write_text("2\n")
    sources, problems = discover([str(tmp_path / "**" / "*.log")])
    assert [Path(s.name).name for s in sources] == ["r.log"] and not problems


def test_digit_closure_and_hazards():
    assert digit_closure(r"^Setting affinity for GPU (?P<gpu>\d+) to (?P<mask>[0-9a-f,]+)$") is not None
    assert digit_closure(r"(?P<g1>\d+) [a-z0-9_]+ x{2,3}") == r"(?P<g1>\d+) [a-z0-9_]+ x{2,3}"  # already closed
    assert digit_closure("fp16") == r"fp\d\d"
    assert digit_closure(r"[1-9]x") == r"[1-90-9]x"
    assert digit_closure(r"[^1]") is None  # excludes some digits only: cannot reason
    assert digit_hazard(r"\b0x[0-9a-f]+") == r"(?:\b[123456789]x[0-9a-f]+)"
    assert digit_hazard(r"\d+") is None
    assert line_shape(b"rank 12 at 0x7f3a\n3") == b"rank 00 at 0x0f0a\n0"


@pytest.mark.parametrize("pattern,line,shape_mates", [
    # NCCL's optional 0x before a bus id, its null comm "0", a pointer: the subset keeps the pointer
    (r"^bus (?:0[xX])?[0-9a-f]+ comm (?:0x[0-9a-f]+|\(nil\)|0)$", "bus 1000 comm 0x7f3a", ["bus 9999 comm 0x7f3a"]),
    (r"^v(?P<v>\d+)\.\d+ ok", "v2.18 ok", ["v9.99 ok"]),
])
def test_digit_interior_is_a_closed_subset(pattern, line, shape_mates):
    """``interior=True``: no literal digit survives, so a match on one line is a match on every
    line of its shape, and every match is one of the pattern's own."""
    import re as re_module

    interior = digit_closure(pattern, zero_x=True, interior=True)
    assert interior is not None and re_module.search(interior, line)
    for mate in shape_mates:
        assert line_shape(mate.encode()) == line_shape(line.encode())
        assert re_module.search(interior, mate) and re_module.search(pattern, mate)


def test_digit_interior_drops_the_paths_through_a_digit():
    import re as re_module

    interior = digit_closure(r"^(?:0|\(nil\)) via P2P$", zero_x=True, interior=True)
    assert not re_module.search(interior, "0 via P2P")  # both need a literal digit
    assert digit_closure(r"0xyz", zero_x=True, interior=True) == r"[^\s\S]xyz"  # 0x kept only before hex
    assert digit_closure(r"0x[0-9a-f]+", zero_x=True, interior=True) == r"0x[0-9a-f]+"
    assert digit_closure(r"[1-9]0", zero_x=True, interior=True) is None  # some digits only: no subset


def test_normalizer_rules_are_digit_closed():
    """The engine's shape cache relies on this; if a rule changes, the engine must notice."""
    from indexer.normalize import ANSI, CONTROL, PREFIX_RULES

    for rule in [ANSI, CONTROL] + [r for _, r in PREFIX_RULES]:
        assert digit_closure(rule.pattern) == rule.pattern, rule.pattern


def test_zlib_raw_deflate_is_not_mistaken_for_gzip(tmp_path):
    path = tmp_path / "deflate.bin"
    path.write_bytes(zlib.compress(b"plain?\n"))  # zlib header, not gzip magic: read as bytes
    lines, _, problems = read_all(path)
    assert len(lines) >= 1 and not problems


@pytest.mark.parametrize("seed", range(20))
def test_chunker_cuts_exactly_the_long_lines_whatever_the_blocks(seed):
    """Lines just under, at and over the limit, fed in blocks of random sizes: every line comes
    out once, in order, cut to ``max_line`` exactly when it was longer (the fast path skips
    splitting blocks that cannot hold a long line)."""
    rng = random.Random(seed)
    max_line = 16
    lines = [b"x" * rng.choice([0, 1, 7, 15, 16, 17, 31, 32, 33, 64]) for _ in range(300)]
    data = b"\n".join(lines) + b"\n"
    chunker = LineChunker(0, max_line=max_line, chunk_bytes=rng.choice([8, 64, 1 << 20]))
    chunks, pos = [], 0
    while pos < len(data):
        size = rng.choice([1, 5, 16, 33, 100, 1000])
        chunks += list(chunker.feed(data[pos:pos + size]))
        pos += size
    chunks += list(chunker.finish())
    got, cut = [], {}
    for chunk in chunks:
        cut.update({chunk.first_line + i: n for i, n in chunk.cut.items()})
        got += chunk.data.split(b"\n")
    assert got == [line[:max_line] for line in lines]
    assert cut == {i + 1: len(line) for i, line in enumerate(lines) if len(line) > max_line}
