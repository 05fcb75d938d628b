"""Stream an input as chunks of whole lines, never holding a whole file in memory.

Compression is recognised by magic bytes (gzip, zstd, bzip2), not by file name: rotated logs
are often renamed ``.1`` and pipes have no name at all. Output of every decompressor is bounded
per call, so a highly compressed archive cannot balloon memory. A line longer than
``max_line`` bytes keeps its first ``max_line`` bytes and records its real length; the rest of
it is skipped as it streams by. A truncated or corrupt archive yields every line that could be
recovered, then a ``Problem`` naming the file and the last good line.
"""

from __future__ import annotations

import bz2
import sys
import zlib
from dataclasses import dataclass, field
from typing import BinaryIO, Callable, Iterator

from service.batch.inputs import Source
from service.batch.problems import Problem

READ_BYTES = 1 << 20
CHUNK_BYTES = 1 << 20
MAX_LINE_BYTES = 1 << 20
_OUT_LIMIT = 4 << 20  # bound on one decompressor call's output

GZIP_MAGIC = b"\x1f\x8b"
ZSTD_MAGIC = b"\x28\xb5\x2f\xfd"
BZIP2_MAGIC = b"BZh"


@dataclass
class Chunk:
    """Consecutive lines of one source: ``data.split(b"\\n")`` gives exactly ``n_lines`` lines.

    ``cut`` maps a line's index within the chunk to its original length in bytes, for lines
    that were longer than the reader's limit and were kept only in part.
    """

    source: int
    first_line: int
    data: bytes
    n_lines: int
    cut: dict[int, int] = field(default_factory=dict)


class CompressionError(Exception):
    """The compressed stream is corrupt or ends early; carries how it failed."""


def detect_compression(head: bytes) -> str | None:
    if head.startswith(GZIP_MAGIC):
        return "gzip"
    if head.startswith(ZSTD_MAGIC):
        return "zstd"
    if head.startswith(BZIP2_MAGIC) and len(head) >= 4 and head[3:4] in b"123456789":
        return "bzip2"
    return None


class _Decompressor:
    """Feed compressed bytes, get decompressed blocks; handles concatenated members/frames."""

    def __init__(self, kind: str) -> None:
        self.kind = kind
        self._new()

    def _new(self) -> None:
        if self.kind == "gzip":
            self._d = zlib.decompressobj(wbits=31)
        elif self.kind == "bzip2":
            self._d = bz2.BZ2Decompressor()
        else:
            import zstandard  # only needed when a zstd input shows up

            self._d = zstandard.ZstdDecompressor().decompressobj()
        self._in_member = False

    def feed(self, data: bytes) -> Iterator[bytes]:
        try:
            yield from self._feed(data)
        except (zlib.error, OSError, EOFError, ValueError) as exc:
            raise CompressionError(f"corrupt {self.kind} data ({exc})") from exc
        except Exception as exc:  # zstandard.ZstdError has no common base with the above
            raise CompressionError(f"corrupt {self.kind} data ({exc})") from exc

    def _feed(self, data: bytes) -> Iterator[bytes]:
        while data:
            self._in_member = True
            if self.kind == "gzip":
                out = self._d.decompress(data, _OUT_LIMIT)
                if out:
                    yield out
                while not self._d.eof and self._d.unconsumed_tail:
                    out = self._d.decompress(self._d.unconsumed_tail, _OUT_LIMIT)
                    if out:
                        yield out
                while not self._d.eof and len(out) == _OUT_LIMIT:  # output still pending
                    out = self._d.decompress(b"", _OUT_LIMIT)
                    if out:
                        yield out
            elif self.kind == "bzip2":
                out = self._d.decompress(data, _OUT_LIMIT)
                if out:
                    yield out
                while not self._d.eof and not self._d.needs_input:
                    out = self._d.decompress(b"", _OUT_LIMIT)
                    if out:
                        yield out
            else:
                # zstandard's decompressobj has no output bound; feed it small slices.
                for start in range(0, len(data), 64 << 10):
                    out = self._d.decompress(data[start:start + (64 << 10)])
                    if out:
                        yield out
                    if self._d.eof:
                        data = data[start + (64 << 10):]
                        break
                else:
                    data = b""
                if not self._d.eof:
                    return
                rest = self._d.unused_data + data
                self._new()
                data = rest.lstrip(b"\0")
                continue
            if not self._d.eof:
                return
            rest = self._d.unused_data
            self._new()
            # Padding after the last member (tar, some rotators) is not another member.
            data = rest.lstrip(b"\0")

    def finish(self) -> None:
        if self._in_member:
            raise CompressionError(f"truncated {self.kind} stream: the input ends inside compressed data")


def may_hold_long_line(segment: bytes, max_line: int) -> bool:
    """Whether some line of ``segment`` may exceed ``max_line``: such a line covers a whole
    aligned window of half that size (inside the segment) with no newline, which a few
    ``find`` calls rule out."""
    if len(segment) <= max_line:
        return False
    half = max(1, max_line // 2)
    return any(segment.find(b"\n", start, start + half) == -1 for start in range(0, len(segment) - half + 1, half))


class LineChunker:
    """Cut a stream of byte blocks into ``Chunk``s of complete lines."""

    def __init__(self, source: int, max_line: int = MAX_LINE_BYTES, chunk_bytes: int = CHUNK_BYTES) -> None:
        self.source = source
        self.max_line = max_line
        self.chunk_bytes = chunk_bytes
        self.next_line = 1  # number the next emitted line will get
        self._parts: list[bytes] = []  # segments of complete lines, each without trailing \n
        self._size = 0
        self._count = 0
        self._cut: dict[int, int] = {}
        self._tail = b""
        self._skipping = False  # inside a line longer than max_line
        self._skipped = 0

    @property
    def lines_seen(self) -> int:
        """Lines completed so far, including those not yet emitted in a chunk."""
        return self.next_line - 1 + self._count

    def _add_segment(self, segment: bytes) -> None:
        if may_hold_long_line(segment, self.max_line):
            lines = segment.split(b"\n")
            for i, line in enumerate(lines):
                if len(line) > self.max_line:
                    self._cut[self._count + i] = len(line)
                    lines[i] = line[: self.max_line]
            segment = b"\n".join(lines)
            count = len(lines)
        else:
            count = segment.count(b"\n") + 1
        self._parts.append(segment)
        self._size += len(segment) + 1
        self._count += count

    def _add_cut_line(self, head: bytes, length: int) -> None:
        self._cut[self._count] = length
        self._parts.append(head)
        self._size += len(head) + 1
        self._count += 1

    def _emit(self) -> Chunk | None:
        if not self._count:
            return None
        chunk = Chunk(self.source, self.next_line, b"\n".join(self._parts), self._count, self._cut)
        self.next_line += self._count
        self._parts, self._size, self._count, self._cut = [], 0, 0, {}
        return chunk

    def feed(self, block: bytes) -> Iterator[Chunk]:
        pos = 0
        if self._skipping:
            newline = block.find(b"\n")
            if newline == -1:
                self._skipped += len(block)
                return
            self._skipped += newline
            self._add_cut_line(self._tail, len(self._tail) + self._skipped)
            self._tail, self._skipping, self._skipped = b"", False, 0
            pos = newline + 1
        last = block.rfind(b"\n", pos)
        if last == -1:
            self._tail += block[pos:]
        else:
            self._add_segment(self._tail + block[pos:last])
            self._tail = block[last + 1:]
        if len(self._tail) > self.max_line:
            self._skipped = len(self._tail) - self.max_line
            self._tail = self._tail[: self.max_line]
            self._skipping = True
        if self._size >= self.chunk_bytes:
            chunk = self._emit()
            if chunk:
                yield chunk

    def finish(self) -> Iterator[Chunk]:
        """Emit what is left; a last line without a newline is still a line."""
        if self._skipping:
            self._add_cut_line(self._tail, len(self._tail) + self._skipped)
        elif self._tail:
            self._add_segment(self._tail)
        self._tail, self._skipping, self._skipped = b"", False, 0
        chunk = self._emit()
        if chunk:
            yield chunk


class SourceReader:
    """Read one source into chunks; problems are appended to ``problems`` as they happen."""

    def __init__(
        self,
        source: Source,
        index: int,
        problems: list[Problem],
        max_line: int = MAX_LINE_BYTES,
        chunk_bytes: int = CHUNK_BYTES,
        on_bytes: Callable[[int], None] | None = None,
    ) -> None:
        self.source = source
        self.index = index
        self.problems = problems
        self.chunker = LineChunker(index, max_line, chunk_bytes)
        self.on_bytes = on_bytes or (lambda n: None)
        self.compression: str | None = None

    def _open(self) -> BinaryIO | None:
        if self.source.is_stdin:
            return sys.stdin.buffer
        try:
            return open(self.source.path, "rb")  # type: ignore[arg-type]
        except OSError as exc:
            self.problems.append(
                Problem(self.source.name, 0, "unreadable", f"cannot read: {exc.strerror or exc}", True)
            )
            return None

    def _blocks(self, stream: BinaryIO) -> Iterator[bytes]:
        read = getattr(stream, "read1", stream.read)  # read1: return what a pipe has now
        while True:
            block = read(READ_BYTES)
            if not block:
                return
            self.on_bytes(len(block))
            yield block

    def chunks(self) -> Iterator[Chunk]:
        stream = self._open()
        if stream is None:
            return
        name = self.source.name
        try:
            blocks = self._blocks(stream)
            first = b""
            try:
                for first in blocks:
                    break
            except OSError as exc:
                self.problems.append(Problem(name, 0, "unreadable", f"read error: {exc.strerror or exc}", True))
                return
            if not first:
                self.problems.append(Problem(name, 0, "empty", "empty input: no lines", False))
                return
            self.compression = detect_compression(first)
            try:
                decompressor = _Decompressor(self.compression) if self.compression else None
            except ImportError:
                self.problems.append(
                    Problem(name, 0, "unreadable",
                            "zstd-compressed, and the zstandard package is not installed "
                            "(pip install 'explainlog[batch]' or zstandard); nothing was read", True)
                )
                return

            def decoded() -> Iterator[bytes]:
                for block in _chain(first, blocks):
                    if decompressor is None:
                        yield block
                    else:
                        yield from decompressor.feed(block)
                if decompressor is not None:
                    decompressor.finish()

            try:
                for block in decoded():
                    yield from self.chunker.feed(block)
            except CompressionError as exc:
                yield from self.chunker.finish()
                self.problems.append(
                    Problem(name, self.chunker.lines_seen, "truncated",
                            f"{exc}; lines up to here were annotated, the rest is lost", True)
                )
                return
            except OSError as exc:
                yield from self.chunker.finish()
                self.problems.append(
                    Problem(name, self.chunker.lines_seen, "unreadable",
                            f"read error after this line: {exc.strerror or exc}", True)
                )
                return
            yield from self.chunker.finish()
        finally:
            if stream is not sys.stdin.buffer:
                stream.close()


def _chain(first: bytes, rest: Iterator[bytes]) -> Iterator[bytes]:
    yield first
    yield from rest


def decode_lines(data: bytes, lines: list[bytes]) -> tuple[list[str], list[int], str]:
    """Text of each line (and of the chunk); undecodable bytes become U+FFFD and are noted."""
    try:
        whole = data.decode("utf-8")
        return whole.split("\n"), [], whole
    except UnicodeDecodeError:
        pass
    texts, bad = [], []
    for i, raw in enumerate(lines):
        try:
            texts.append(raw.decode("utf-8"))
        except UnicodeDecodeError:
            texts.append(raw.decode("utf-8", "replace"))
            bad.append(i)
    return texts, bad, "\n".join(texts)


def undecodable_lines(data: bytes) -> list[int]:
    """Indices of the lines of ``data`` that are not UTF-8."""
    if data.isascii():  # the common case, ~20x faster than decoding to find out
        return []
    try:
        data.decode("utf-8")
        return []
    except UnicodeDecodeError:
        return decode_lines(data, data.split(b"\n"))[1]
