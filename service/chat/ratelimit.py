"""Per-user rate limiting: one person pasting in a loop must not starve everyone else.

A sliding window per key (platform and user id) kept in memory: the bot is one process, and a
restart forgetting the window is harmless.
"""

from __future__ import annotations

import threading
import time
from collections import deque
from typing import Callable

POLITE = {
    "en": "You're asking faster than I can keep up — please try again in {seconds} s. "
          "(At most {limit} requests a minute per person.)",
    "zh": "请求有点频繁，请 {seconds} 秒后再试。（每人每分钟最多 {limit} 次。）",
}


class RateLimiter:
    """At most ``limit`` requests per ``window`` seconds for each key."""

    def __init__(self, limit: int, window: float = 60.0, clock: Callable[[], float] = time.monotonic) -> None:
        if limit < 1:
            raise ValueError("rate limit must allow at least one request")
        self.limit = limit
        self.window = window
        self._clock = clock
        self._hits: dict[str, deque[float]] = {}
        self._lock = threading.Lock()

    def acquire(self, key: str) -> float | None:
        """Count a request and return None, or return how many seconds until one is allowed."""
        now = self._clock()
        with self._lock:
            hits = self._hits.setdefault(key, deque())
            while hits and now - hits[0] >= self.window:
                hits.popleft()
            if len(hits) >= self.limit:
                return self.window - (now - hits[0])
            hits.append(now)
            if len(self._hits) > 10000:  # forget idle users so the map cannot grow without bound
                for idle in [k for k, v in self._hits.items() if not v or now - v[-1] >= self.window]:
                    del self._hits[idle]
            return None

    def message(self, wait: float, lang: str) -> str:
        return POLITE[lang].format(seconds=max(1, round(wait)), limit=self.limit)
