"""Read an uploaded log (raw body or multipart, plain or gzip) as lines, in bounded memory.

A training log can be gigabytes; the service must never hold it whole. Each stage here works
on chunks: the request body stream, an optional multipart parser, an optional gunzip with a
cap on how much one chunk may expand (a gzip bomb is only a few KB), and a line splitter that
keeps at most one line — cut at ``max_line_bytes`` — in memory. Problems become
``UploadError``s that the route turns into an error status or a final JSONL error line.
"""

from __future__ import annotations

import zlib
from dataclasses import dataclass
from typing import AsyncIterator, Iterator

from python_multipart.multipart import MultipartParser, parse_options_header
from starlette.requests import ClientDisconnect, Request

GZIP_MAGIC = b"\x1f\x8b"
INFLATE_STEP = 1 << 20  # most bytes one decompress call may produce


class UploadError(Exception):
    def __init__(self, status: int, code: str, detail: str, limit: int | None = None) -> None:
        super().__init__(detail)
        self.status = status
        self.code = code
        self.detail = detail
        self.limit = limit


@dataclass(frozen=True)
class UploadedLine:
    number: int
    text: str
    truncated: bool


async def limited_body(request: Request, limit: int) -> AsyncIterator[bytes]:
    received = 0
    try:
        async for chunk in request.stream():
            received += len(chunk)
            if received > limit:
                raise UploadError(413, "upload_too_large", f"upload exceeds the limit of {limit} bytes", limit)
            if chunk:
                yield chunk
    except ClientDisconnect:
        return


class _FilePart:
    """python-multipart callbacks that keep the data of the first file part (a part with a
    filename, or named ``file``) and drop every other part."""

    def __init__(self) -> None:
        self.pending: list[bytes] = []
        self.seen = False  # a file part has started
        self.complete = False  # ... and ended
        self._in_file = False
        self._field = self._value = self._disposition = b""

    def callbacks(self) -> dict:
        return {
            "on_part_begin": self._part_begin, "on_header_field": self._header_field,
            "on_header_value": self._header_value, "on_header_end": self._header_end,
            "on_headers_finished": self._headers_finished, "on_part_data": self._data, "on_part_end": self._part_end,
        }

    def _part_begin(self) -> None:
        self._disposition = b""

    def _header_field(self, data: bytes, start: int, end: int) -> None:
        self._field += data[start:end]

    def _header_value(self, data: bytes, start: int, end: int) -> None:
        self._value += data[start:end]

    def _header_end(self) -> None:
        if self._field.strip().lower() == b"content-disposition":
            self._disposition = self._value
        self._field = self._value = b""

    def _headers_finished(self) -> None:
        _, params = parse_options_header(self._disposition)
        is_file = b"filename" in params or params.get(b"name") == b"file"
        self._in_file = is_file and not self.seen
        self.seen = self.seen or is_file

    def _data(self, data: bytes, start: int, end: int) -> None:
        if self._in_file:
            self.pending.append(data[start:end])

    def _part_end(self) -> None:
        if self._in_file:
            self.complete = True
            self._in_file = False


async def multipart_file(chunks: AsyncIterator[bytes], boundary: bytes) -> AsyncIterator[bytes]:
    """The bytes of the uploaded file inside a multipart/form-data body, as they arrive."""
    part = _FilePart()
    parser = MultipartParser(boundary, part.callbacks())
    async for chunk in chunks:
        try:
            parser.write(chunk)
        except Exception as exc:  # python-multipart raises its own hierarchy; all mean "bad form"
            raise UploadError(400, "malformed_multipart", f"the multipart body cannot be parsed: {exc}") from None
        for piece in part.pending:
            yield piece
        part.pending.clear()
    if not part.seen:
        raise UploadError(422, "no_file", "the multipart upload has no file part (send the log as form field 'file')")
    if not part.complete:
        raise UploadError(400, "truncated_upload", "the multipart body ended before the file part was complete")


class Inflater:
    """Gunzip when the data starts with the gzip magic, else pass through; concatenated gzip
    members (``cat a.gz b.gz``, bgzip) are read as one stream."""

    def __init__(self) -> None:
        self._head = b""
        self._gzip: bool | None = None
        self._inflater = zlib.decompressobj(16 + zlib.MAX_WBITS)
        self._member_fed = False  # has the current gzip member received any bytes?

    def feed(self, data: bytes) -> Iterator[bytes]:
        if self._gzip is None:
            self._head += data
            if len(self._head) < 2:
                return
            self._gzip = self._head.startswith(GZIP_MAGIC)
            data, self._head = self._head, b""
        if self._gzip:
            yield from self._inflate(data)
        elif data:
            yield data

    def _inflate(self, data: bytes) -> Iterator[bytes]:
        while data:
            self._member_fed = True
            try:
                out = self._inflater.decompress(data, INFLATE_STEP)
            except zlib.error as exc:
                raise UploadError(400, "corrupt_gzip", f"the gzip data is corrupt: {exc}") from None
            if out:
                yield out
            if self._inflater.eof:
                rest = self._inflater.unused_data
                self._inflater = zlib.decompressobj(16 + zlib.MAX_WBITS)
                self._member_fed = False
                data = rest if rest.strip(b"\x00") else b""
            else:
                data = self._inflater.unconsumed_tail

    def finish(self) -> tuple[bytes, UploadError | None]:
        """What is left to hand out, and the error to report after it (a truncated stream)."""
        if not self._gzip:
            head, self._head = self._head, b""
            return head, None
        if not self._member_fed:
            return b"", None
        try:
            tail = self._inflater.flush()
        except zlib.error:
            tail = b""
        return tail, UploadError(
            400, "truncated_gzip",
            "the gzip stream ends early: the upload is truncated; every line before the cut was annotated",
        )


class LineSplitter:
    """Split bytes on LF, holding at most ``max_line_bytes`` of the current line; the rest of
    an over-long line is dropped and the line marked truncated."""

    def __init__(self, max_line_bytes: int) -> None:
        self.max_line_bytes = max_line_bytes
        self._buffer = bytearray()
        self._truncated = False
        self.number = 0

    def feed(self, data: bytes) -> Iterator[UploadedLine]:
        start = 0
        while True:
            newline = data.find(b"\n", start)
            end = len(data) if newline < 0 else newline
            room = self.max_line_bytes - len(self._buffer)
            piece = data[start:end]
            if len(piece) > room:
                piece = piece[:max(room, 0)]
                self._truncated = True
            self._buffer += piece
            if newline < 0:
                return
            yield self._emit()
            start = newline + 1

    def finish(self) -> Iterator[UploadedLine]:
        if self._buffer or self._truncated:
            yield self._emit()

    def _emit(self) -> UploadedLine:
        self.number += 1
        text = bytes(self._buffer).decode("utf-8", errors="replace").removesuffix("\r")
        line = UploadedLine(self.number, text, self._truncated)
        self._buffer.clear()
        self._truncated = False
        return line


async def upload_lines(request: Request, max_bytes: int, max_line_bytes: int) -> AsyncIterator[UploadedLine]:
    """Every line of the uploaded file, numbered from 1, in order."""
    declared = request.headers.get("content-length")
    if declared and declared.isdigit() and int(declared) > max_bytes:
        raise UploadError(413, "upload_too_large", f"upload is {int(declared)} bytes; the limit is {max_bytes} bytes", max_bytes)
    chunks = limited_body(request, max_bytes)
    content_type, params = parse_options_header(request.headers.get("content-type"))
    if content_type == b"multipart/form-data":
        if not params.get(b"boundary"):
            raise UploadError(400, "malformed_multipart", "multipart/form-data without a boundary")
        chunks = multipart_file(chunks, params[b"boundary"])
    inflater = Inflater()
    splitter = LineSplitter(max_line_bytes)
    inflated = 0
    async for chunk in chunks:
        for data in inflater.feed(chunk):
            inflated += len(data)
            if inflated > max_bytes:
                raise UploadError(413, "upload_too_large", f"upload exceeds the limit of {max_bytes} bytes after gunzip", max_bytes)
            for line in splitter.feed(data):
                yield line
    tail, error = inflater.finish()
    for line in splitter.feed(tail):
        yield line
    for line in splitter.finish():
        yield line
    if error is not None:
        raise error
