"""A one-line progress bar on stderr: lines, lines/s, percent and ETA; silent when piped.

Percent and ETA come from bytes consumed of the inputs' on-disk size (compressed bytes for
archives), which is known up front, unlike the number of lines. Redraws are throttled so the
bar costs nothing measurable on a million-line run.
"""

from __future__ import annotations

import sys
import time
from typing import TextIO


def _clock(seconds: float) -> str:
    seconds = int(seconds)
    return f"{seconds // 3600}:{seconds % 3600 // 60:02d}:{seconds % 60:02d}"


class Progress:
    def __init__(self, total_bytes: int | None, stream: TextIO | None = None, enabled: bool | None = None) -> None:
        self.stream = stream or sys.stderr
        self.enabled = self.stream.isatty() if enabled is None else enabled
        self.total_bytes = total_bytes or None
        self.bytes = 0
        self.lines = 0
        self.started = time.monotonic()
        self._drawn = 0.0

    def add_bytes(self, count: int) -> None:
        self.bytes += count

    def add_lines(self, count: int) -> None:
        self.lines += count
        if self.enabled:
            now = time.monotonic()
            if now - self._drawn >= 0.2:
                self._drawn = now
                self._draw(now)

    def _draw(self, now: float) -> None:
        elapsed = max(now - self.started, 1e-6)
        rate = self.lines / elapsed
        text = f"\rexplainlog annotate: {self.lines:,} lines  {rate:,.0f} lines/s"
        if self.total_bytes:
            done = min(self.bytes / self.total_bytes, 1.0)
            width = 24
            filled = int(done * width)
            eta = elapsed * (1 - done) / done if done > 0 else 0
            text += f"  [{'#' * filled}{'.' * (width - filled)}] {done:5.1%}  ETA {_clock(eta)}"
        self.stream.write(text + "\x1b[K")
        self.stream.flush()

    def close(self) -> None:
        if not self.enabled:
            return
        elapsed = max(time.monotonic() - self.started, 1e-6)
        self.stream.write(
            f"\rexplainlog annotate: {self.lines:,} lines in {elapsed:.1f} s ({self.lines / elapsed:,.0f} lines/s)\x1b[K\n"
        )
        self.stream.flush()
