"""What both chat HTTP routes do before a request reaches a bot.

- ``read_body``: the body is read as a stream and refused (413) as soon as it passes the limit
  (or its Content-Length says it will), so an unsigned 400 MB POST costs at most the limit in
  memory, not 400 MB; the signature is then checked on the raw bytes before anything parses
  them.
- ``ReplayGuard``: a signed request is good for 5 minutes, and a captured one can be re-sent
  inside that window. Each (signature, timestamp) and each event id is acted on once; a repeat
  gets a 200 with nothing done, which is also what the platforms want for their own retries.
"""

from __future__ import annotations

import threading
import time
from collections import OrderedDict

from starlette.requests import Request

REPLAY_WINDOW_S = 600  # longer than the 5-minute signature window, so no replay outlives it


class BodyTooLarge(Exception):
    pass


async def read_body(request: Request, limit: int) -> bytes:
    declared = request.headers.get("content-length")
    if declared is not None:
        try:
            if int(declared) > limit:
                raise BodyTooLarge()
        except ValueError:
            raise BodyTooLarge() from None  # a length that is no number: refuse rather than guess
    chunks: list[bytes] = []
    size = 0
    async for chunk in request.stream():
        size += len(chunk)
        if size > limit:
            raise BodyTooLarge()
        chunks.append(chunk)
    return b"".join(chunks)


class ReplayGuard:
    """Keys seen in the last ``window`` seconds; at most ``max_keys`` of them (oldest dropped)."""

    def __init__(self, window: float = REPLAY_WINDOW_S, max_keys: int = 100_000) -> None:
        self.window = window
        self.max_keys = max_keys
        self._seen: OrderedDict[str, float] = OrderedDict()
        self._lock = threading.Lock()

    def first_time(self, *keys: str | None) -> bool:
        """Record the keys; False if any of them was seen within the window."""
        now = time.monotonic()
        keys = tuple(k for k in keys if k)
        with self._lock:
            while self._seen and (next(iter(self._seen.values())) < now - self.window or len(self._seen) > self.max_keys):
                self._seen.popitem(last=False)
            if any(k in self._seen for k in keys):
                return False
            for k in keys:
                self._seen[k] = now
            return True
