"""``/v1/annotate``: a whole log file in, one JSONL record per line out, streamed both ways.

Lines are explained in batches of ``BATCH_LINES`` as the upload arrives (each batch is one
embedding call for its unknown templates), so memory stays bounded by one batch whatever the
file size. Problems found before the first line (empty upload, oversized Content-Length, a
non-file form) get an error status; problems found later — a truncated gzip, the size limit —
arrive as a final ``{"error": ..., "detail": ...}`` line after every line read before them.
"""

from __future__ import annotations

from typing import AsyncIterator

import orjson
from fastapi import APIRouter, Query, Request

from service.http.errors import ApiError, error_body
from service.http.explain_body import Lang, in_language
from service.http.rate_limit import client_key
from service.http.responses import JSONLinesStream
from service.http.state import ServiceState
from service.http.upload_stream import UploadedLine, UploadError, upload_lines

router = APIRouter(prefix="/v1", tags=["annotate"])

BATCH_LINES = 512


async def _records(state: ServiceState, batch: list[UploadedLine], lang: Lang, client: str) -> bytes:
    # No per-request budget: a whole log is expected here; the scheduler still shares the model.
    answers = await state.explain([line.text for line in batch], client=client, budget=False)
    return b"".join(
        orjson.dumps({"line_number": line.number, "truncated": line.truncated} | in_language(answer, lang)) + b"\n"
        for line, answer in zip(batch, answers)
    )


async def _annotated(
    state: ServiceState, first: UploadedLine, rest: AsyncIterator[UploadedLine], lang: Lang, client: str
) -> AsyncIterator[bytes]:
    batch = [first]
    last_number = first.number
    try:
        async for line in rest:
            batch.append(line)
            last_number = line.number
            if len(batch) >= BATCH_LINES:
                yield await _records(state, batch, lang, client)
                batch = []
        if batch:
            yield await _records(state, batch, lang, client)
    except (UploadError, ApiError) as exc:
        if batch and isinstance(exc, UploadError):
            yield await _records(state, batch, lang, client)
        yield orjson.dumps(error_body(exc.code, exc.detail, exc.limit, after_line=last_number)) + b"\n"


@router.post(
    "/annotate",
    summary="Annotate a whole log file (plain or gzip) as JSONL",
    description=(
        "Upload the file as the raw body (`curl --data-binary @train.log.gz`) or as form field `file` "
        "(`curl -F file=@train.log`). Gzip is detected by its magic bytes. The answer streams as "
        "`application/x-ndjson`: one `{\"line_number\", \"truncated\", ...contract fields}` per line, every "
        "line in order (lines longer than the line limit are cut and marked `truncated`). An error "
        "found mid-stream (truncated gzip, size limit) is the last line: `{\"error\", \"detail\", \"after_line\"}`."
    ),
    response_class=JSONLinesStream,
    openapi_extra={
        "requestBody": {
            "required": True,
            "content": {
                "application/octet-stream": {"schema": {"type": "string", "format": "binary"}},
                "multipart/form-data": {
                    "schema": {"type": "object", "properties": {"file": {"type": "string", "format": "binary"}}}
                },
            },
        }
    },
)
async def annotate(request: Request, lang: Lang = Query("both", description="en, zh or both")) -> JSONLinesStream:
    state: ServiceState = request.app.state.service
    settings = state.settings
    lines = upload_lines(request, settings.max_upload_bytes, settings.max_line_chars)
    try:
        first = await lines.__anext__()
    except StopAsyncIteration:
        raise ApiError(422, "no_lines", "the upload is empty") from None
    except UploadError as exc:
        raise ApiError(exc.status, exc.code, exc.detail, exc.limit) from None
    return JSONLinesStream(_annotated(state, first, lines, lang, client_key(request)))
