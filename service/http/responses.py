"""Response classes: orjson-encoded JSON, and JSONL streamed while the upload is still read."""

from __future__ import annotations

from typing import Any

import orjson
from starlette.responses import Response, StreamingResponse
from starlette.types import Receive, Scope, Send


class JSONBytes(Response):
    """JSON via orjson: several times faster than the stdlib for answer lists, and it keeps
    non-ASCII (Chinese) text as UTF-8 instead of escapes."""

    media_type = "application/json"

    def render(self, content: Any) -> bytes:
        return orjson.dumps(content)


class JSONLinesStream(StreamingResponse):
    """A streaming response that does not listen for disconnects on ``receive``.

    Starlette's ``StreamingResponse`` (on uvicorn's ASGI 2.3) reads ``receive`` in a side task
    to notice disconnects, which would steal the request-body chunks that the annotate stream
    is still reading. Here the body stream itself reports a disconnect.
    """

    media_type = "application/x-ndjson"

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        await self.stream_response(send)
