"""``--format commented``: the original log, byte for byte, with ``#`` explanations above.

This is what the seed did by hand for its training log. Lines are copied as read (CRLF, odd
bytes and all); only ``#`` lines are added. A run of consecutive lines explained by the same
entry gets one comment that says how many lines it covers, so 512 ranks printing the same NCCL
line read as one explanation, not 512. A run is buffered only up to ``RUN_BYTES``; a longer
one is flushed and its rest is announced as a continuation, so memory stays bounded.
"""

from __future__ import annotations

import functools
import textwrap
from typing import BinaryIO

import orjson

from service.batch.options import Options
from service.batch.problems import Problem
from service.batch.process import ChunkResult
from service.batch.summary import Summary

RUN_BYTES = 8 << 20
WIDTH = 100
# Rendered comments kept by answer uid. Answers whose texts carry per-line values (progress
# lines, NCCL channels) are mostly distinct, so the cache is cleared when full: memory stays
# flat in the input size (~1 KB per entry).
COMMENT_CACHE_LIMIT = 50_000


def wrap(text: str, width: int = WIDTH) -> list[str]:
    """``textwrap.wrap(text, width, break_on_hyphens=False)``, line for line, ~10x faster.

    Comments are most of ``commented``'s time, and texts filled with per-line values are wrapped
    afresh for many lines. For printable text (no tabs, newlines or non-ASCII spaces, which
    textwrap first rewrites) this finds each line's end with a few string searches instead of
    textwrap's loop over every word: the greedy fill takes whole chunks (words and runs of
    spaces) up to ``width``; a chunk longer than a whole line fills the rest of the current one;
    a line drops its trailing run of spaces and, after the first line, its leading one.
    """
    if not text.isprintable():
        return textwrap.wrap(text, width, break_on_hyphens=False)
    lines: list[str] = []
    pos, n = 0, len(text)
    while pos < n:
        if lines and text[pos] == " ":
            pos = _chunk_end(text, pos)
            continue
        end = pos + width
        if end >= n:
            line, pos = text[pos:].rstrip(" "), n
        else:
            taken = end if (text[end - 1] == " ") != (text[end] == " ") else _chunk_start(text, end, pos)
            if _chunk_end(text, taken) - taken > width:
                # The next chunk cannot fit any line: its head fills this one. Only that head is
                # dropped if it is spaces (or empty, when the line was full already).
                head = text[taken:end]
                line, pos = (text[pos:taken] if head[:1] in ("", " ") else text[pos:end]), end
            else:
                line, pos = text[pos:taken].rstrip(" "), taken
        if line:
            lines.append(line)
    return lines


def _chunk_end(text: str, start: int) -> int:
    """End of the word or run of spaces that begins at ``start``."""
    if text[start] == " ":
        end = start
        while end < len(text) and text[end] == " ":
            end += 1
        return end
    end = text.find(" ", start)
    return len(text) if end == -1 else end


def _chunk_start(text: str, at: int, floor: int) -> int:
    """Start (not before ``floor``) of the word or run of spaces that holds ``at``."""
    if text[at] != " ":
        return text.rfind(" ", floor, at) + 1 or floor
    start = at
    while start > floor and text[start - 1] == " ":
        start -= 1
    return start


@functools.lru_cache(maxsize=4096)
def _wrapped(prefix: str, text: str) -> tuple[str, ...]:
    # Chinese has no spaces; textwrap still breaks long runs, which reads fine in a comment.
    # Cached: answers of one entry whose explanation varies by line mostly share the title
    # and action, and wrapping is most of this writer's time.
    return tuple(f"# {prefix}{line}" for line in wrap(text)) or (f"# {prefix}",)


def comment_lines(data: dict, langs: tuple[str, ...]) -> list[str]:
    """The explanation of one answer as comment lines (without the run count)."""
    lines = [f"# [{data['severity']}] {data['pattern_id']}"]
    for lang in langs:
        lines += _wrapped("", data["title"][lang])
        lines += _wrapped("  ", data["explanation"][lang])
        if data["action"]:
            lines += _wrapped("  → ", data["action"][lang])
    return lines


class CommentedWriter:
    def __init__(self, out: BinaryIO, options: Options, multi_source: bool) -> None:
        self.out = out
        self.options = options
        self.multi_source = multi_source
        self._cache: dict[bytes, list[str]] = {}
        self._run_key: bytes | None = None
        self._run_comment: list[str] = []
        self._run_lines: list[bytes] = []
        self._run_bytes = 0
        self._continued = False
        self.lines_written = 0

    def begin_source(self, name: str) -> None:
        self._flush()
        if self.multi_source:
            self.out.write(f"# ==> {name} <==\n".encode("utf-8"))

    def _flush(self) -> None:
        if not self._run_lines:
            self._run_key = None
            return
        header = list(self._run_comment)
        count = len(self._run_lines)
        if self._continued:
            header = [f"# (continued) {header[0][2:]}"]
        if count > 1:
            header[0] += f"  ({count} lines of this entry follow)"
        self.out.write(("\n".join(header) + "\n").encode("utf-8"))
        self.out.write(b"\n".join(self._run_lines) + b"\n")
        self.lines_written += count
        self._run_lines, self._run_bytes = [], 0

    def write(self, data: bytes, result: ChunkResult) -> None:
        lines = data.split(b"\n")
        notes: dict[int, list[str]] = {}
        for i in result.undecodable:
            notes.setdefault(i, []).append("# explainlog: this line has bytes that are not UTF-8")
        for i, length in result.cut.items():
            notes.setdefault(i, []).append(
                f"# explainlog: this line was {length:,} bytes; only the first {len(lines[i]):,} are kept"
            )
        hide_context = self.options.hide_context
        langs = self.options.langs
        for i, (line, ref) in enumerate(zip(lines, result.refs)):
            if ref >= 0:
                uid, pattern_id, role, answer_json = result.table[ref]
                if hide_context and role == "context":
                    ref = -1
            if i in notes or ref < 0:
                self._flush()
                self._run_key = None
                if i in notes:
                    self.out.write(("\n".join(notes[i]) + "\n").encode("utf-8"))
                if ref < 0:
                    self.out.write(line + b"\n")
                    self.lines_written += 1
                    continue
            key = pattern_id.encode()
            if key == self._run_key and self._run_bytes < RUN_BYTES:
                self._run_lines.append(line)
                self._run_bytes += len(line) + 1
                continue
            continued = key == self._run_key
            self._flush()
            comment = self._cache.get(uid)
            if comment is None:
                if len(self._cache) >= COMMENT_CACHE_LIMIT:
                    self._cache.clear()
                comment = self._cache[uid] = comment_lines(orjson.loads(answer_json), langs)
            self._run_key, self._run_comment, self._continued = key, comment, continued
            self._run_lines, self._run_bytes = [line], len(line) + 1

    def note(self, problem: Problem) -> None:
        self._flush()
        self.out.write(f"# explainlog: {problem}\n".encode("utf-8"))

    def close(self, summary: Summary) -> None:
        self._flush()
        if summary.interrupted:
            self.out.write(
                f"# explainlog: interrupted after {summary.total_lines:,} lines; everything above is complete\n".encode()
            )
