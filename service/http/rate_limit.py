"""Per-client rate limit on ``/v1/*``: a token bucket per client, 429 with Retry-After.

A client is its peer address, or the first value of a header a trusted proxy sets
(``--client-header X-Forwarded-For``); the same key names the client to the encode scheduler,
so one busy client neither starves the others of requests nor of the embedding model.
The table of buckets is bounded: a bucket that has refilled is the same as no bucket, so
full ones are dropped first when the table grows past ``max_clients``.
"""

from __future__ import annotations

import math
import threading
import time
from collections import OrderedDict

from fastapi import Request

from service.http.errors import ApiError


def client_key(request: Request) -> str:
    header = request.app.state.service.settings.client_header
    if header:
        value = request.headers.get(header, "").split(",")[0].strip()
        if value:
            return value
    peer = request.client
    return peer.host if peer else "-"


class RateLimiter:
    """``take(key)`` spends one token or returns the seconds until one is there."""

    def __init__(self, rate: float, burst: int, max_clients: int = 10_000, clock=time.monotonic) -> None:
        self.rate = rate
        self.burst = burst
        self.max_clients = max_clients
        self._clock = clock
        self._buckets: OrderedDict[str, tuple[float, float]] = OrderedDict()  # key -> (tokens, at)
        self._lock = threading.Lock()

    def take(self, key: str) -> float:
        """0.0 when the request may go ahead, else seconds to wait."""
        if self.rate <= 0:
            return 0.0
        now = self._clock()
        with self._lock:
            tokens, at = self._buckets.pop(key, (float(self.burst), now))
            tokens = min(float(self.burst), tokens + (now - at) * self.rate)
            if tokens >= 1.0:
                self._buckets[key] = (tokens - 1.0, now)
                wait = 0.0
            else:
                self._buckets[key] = (tokens, now)
                wait = (1.0 - tokens) / self.rate
            if len(self._buckets) > self.max_clients:
                self._shrink(now)
            return wait

    def _shrink(self, now: float) -> None:
        """Drop the buckets that have refilled (they hold nothing), oldest first; if all are
        in use, the least recently seen go (they get a full bucket when they come back)."""
        full_after = self.burst / self.rate
        for key, (_, at) in list(self._buckets.items()):
            if len(self._buckets) <= self.max_clients // 2:
                return
            if now - at >= full_after:
                del self._buckets[key]
        while len(self._buckets) > self.max_clients:
            self._buckets.popitem(last=False)


async def rate_limited(request: Request) -> None:
    """FastAPI dependency on the ``/v1`` routers (after the token check)."""
    limiter: RateLimiter = request.app.state.rate_limiter
    wait = limiter.take(client_key(request))
    if wait > 0:
        retry = max(1, math.ceil(wait))
        raise ApiError(
            429, "rate_limited",
            f"too many requests from this client: the limit is {limiter.rate:g} per second "
            f"(bursts of {limiter.burst}); retry in {retry} s",
            headers={"Retry-After": str(retry)},
        )
