"""Plain files cut into byte ranges that summaries read whole (``-j`` workers: themselves).

A summary sends no line back to the parent, so for an uncompressed regular file the parent
only picks range boundaries (the first newline after every ``RANGE_BYTES``) and each worker
reads, chunks and counts its own range. Before, every byte went through the parent: read,
chunked, pickled into a pipe and copied out again, which kept two workers waiting on one core.
Lines are numbered from 1 within a range; the parent merges results in input order and shifts
them by the lines of the ranges before (``Summary.shift_lines``).

Without workers, ranges are read in-process the same way, which saves the streaming
chunker's copies. Compressed files, standard input and anything that is not a regular file
keep the streaming path (``reader.SourceReader``).

A range that ends in a newline and holds no over-long line is read with one ``pread`` and is
one chunk (per-chunk costs are paid ~8 times less often than with 1 MiB chunks). Any other
range goes through the same ``LineChunker`` in blocks of at most ``RANGE_BYTES``, so long
lines are cut the same way and memory stays flat.
"""

from __future__ import annotations

import os
import stat
from dataclasses import dataclass, field

from service.batch import shape_keys
from service.batch.engine import Engine
from service.batch.inputs import Source
from service.batch.problems import Problem
from service.batch.reader import Chunk, LineChunker, detect_compression, may_hold_long_line
from service.batch.summary import Summary

RANGE_BYTES = 8 << 20
_PROBE_BYTES = 1 << 16


@dataclass(frozen=True)
class Range:
    """Bytes ``[start, end)`` of one source; ``end`` is just past a newline, or the file size."""

    source: int
    name: str
    path: str
    start: int
    end: int


@dataclass
class RangeResult:
    summary: Summary
    n_lines: int
    problems: list[Problem] = field(default_factory=list)  # lines counted from the range's start


def split(source: Source, index: int, range_bytes: int = RANGE_BYTES) -> list[Range] | None:
    """The ranges of ``source``, or None when it must be streamed instead: standard input, not
    a regular file, empty (the streaming reader reports that), compressed, or unreadable (the
    streaming reader reports why)."""
    if source.path is None:
        return None
    try:
        with open(source.path, "rb") as handle:
            info = os.fstat(handle.fileno())
            if not stat.S_ISREG(info.st_mode) or info.st_size == 0:
                return None
            if detect_compression(handle.read(4)):
                return None
            size, fd = info.st_size, handle.fileno()
            ranges, start = [], 0
            while start < size:
                end = _line_end(fd, start + range_bytes, size)
                ranges.append(Range(index, source.name, str(source.path), start, end))
                start = end
            return ranges
    except OSError:
        return None


def _line_end(fd: int, at: int, size: int) -> int:
    """The offset just past the first newline at or after ``at``; ``size`` if there is none."""
    while at < size:
        block = os.pread(fd, _PROBE_BYTES, at)
        if not block:
            break
        newline = block.find(b"\n")
        if newline != -1:
            return at + newline + 1
        at += len(block)
    return size


def summarize_range(engine: Engine, part: Range, max_line: int, range_bytes: int = RANGE_BYTES) -> RangeResult:
    """Read, chunk and summarize one range (in a worker). A read error stops this range only,
    and is reported at the last line read, like the streaming reader does for a whole file."""
    budget = getattr(engine.explainer, "semantic_budget", None)
    skipped = budget.skipped_lines if budget is not None else 0
    body = _whole(part, max_line, range_bytes)
    if body is not None:
        counted = shape_keys.tally(body)  # which also counts the lines, so no count() here
        chunk = Chunk(part.source, 1, body, len(counted[4]) // 4)
        whole = engine.summarize(chunk, counted)
        if budget is not None:
            whole.semantic_skipped += budget.skipped_lines - skipped
        return RangeResult(whole, chunk.n_lines)
    chunker = LineChunker(part.source, max_line, range_bytes)
    summary = Summary()
    problems: list[Problem] = []
    failed: OSError | None = None
    try:
        with open(part.path, "rb") as handle:
            handle.seek(part.start)
            left = part.end - part.start
            while left > 0:
                block = handle.read(min(range_bytes, left))
                if not block:  # the file shrank since it was split: what is there was read
                    break
                left -= len(block)
                for chunk in chunker.feed(block):
                    summary.merge(engine.summarize(chunk))
    except OSError as exc:
        failed = exc
    for chunk in chunker.finish():
        summary.merge(engine.summarize(chunk))
    if failed is not None:
        problems.append(Problem(part.name, chunker.lines_seen, "unreadable",
                                f"read error after this line: {failed.strerror or failed}", True))
    if budget is not None:
        summary.semantic_skipped += budget.skipped_lines - skipped
    return RangeResult(summary, chunker.lines_seen, problems)


def _whole(part: Range, max_line: int, range_bytes: int) -> bytes | None:
    """The range's lines as one chunk's data, read with a single copy, when that is what
    ``LineChunker`` would make of it: it ends in a newline, is not much larger than
    ``range_bytes`` and has no line longer than ``max_line``. Otherwise (and on any read
    error) None: the caller streams it."""
    length = part.end - part.start
    if length > 2 * range_bytes:
        return None
    try:
        with open(part.path, "rb") as handle:
            body = os.pread(handle.fileno(), length - 1, part.start)  # all but the final newline
            end = os.pread(handle.fileno(), 1, part.end - 1)
    except OSError:
        return None
    if len(body) != length - 1 or end != b"\n" or may_hold_long_line(body, max_line):
        return None
    return body
