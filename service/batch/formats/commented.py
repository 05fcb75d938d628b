"""``--format commented``: the original log, byte for byte, with ``#`` explanations above.

This is what the seed did by hand for its training log. Lines are copied as read (CRLF, odd
bytes and all); only ``#`` lines are added. A run of consecutive lines explained by the same
entry gets one comment that says how many lines it covers, so 512 ranks printing the same NCCL
line read as one explanation, not 512. A run is buffered only up to ``RUN_BYTES``; a longer
one is flushed and its rest is announced as a continuation, so memory stays bounded.
"""

from __future__ import annotations

import functools
import re
import io
import textwrap
from typing import BinaryIO, Callable, Iterable

import orjson

from service.batch.answers import Annotated, Answer
from service.presentation import severity_name, wrap_display, wrap_source
from service.batch.options import Options
from service.batch.problems import Problem
from service.batch.result import ChunkResult, Rendered, Run
from service.batch.summary import Summary

ANNOTATES = True
NEEDS_CONTEXT = False

RUN_BYTES = 8 << 20
WIDTH = 100
COMMENT_CACHE_LIMIT = 50_000  # rendered comments kept per process (``_COMMENTS``)


_CJK = re.compile(r"[\u3000-\u303f\u4e00-\u9fff\uff00-\uffef]")


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
    # Chinese goes through the shared CJK-aware wrapper (display width, no closing punctuation
    # at a line start); the rest through the fast greedy twin of textwrap. Cached: answers of
    # one entry mostly share the title and action, and wrapping is most of this writer's time.
    lines = wrap_display(text, WIDTH) if _CJK.search(text) else wrap(text)
    return tuple(f"# {prefix}{line}" for line in lines) or (f"# {prefix}",)


def comment_lines(data: dict, langs: tuple[str, ...]) -> list[str]:
    """One answer as comment lines (without the run count): severity and id, then per language
    the title, the summary (what the line means here, when it says more than the title) and
    the action. The full explanation is the html report's (and ``jsonl``'s)."""
    lines = [f"# [{severity_name(data['severity'], langs[0])}] {data['pattern_id']}"]
    for lang in langs:
        lines += _wrapped("", data["title"][lang])
        summary = (data.get("summary") or {}).get(lang)
        if summary and summary != data["title"][lang]:
            lines += _wrapped("  ", summary)
        if data["action"]:
            lines += _wrapped("  → ", data["action"][lang])
    lines += [f"#   {line}" for line in wrap_source(data.get("source"), langs[0], WIDTH)]
    return lines


# Rendered comments by (answer uid, languages), per process: answers whose texts carry per-line
# values (progress lines, NCCL channels) are mostly distinct, so it is cleared when full and
# memory stays flat in the input size (~1 KB per entry).
_COMMENTS: dict[tuple[bytes, tuple[str, ...]], list[str]] = {}


def _comment(answer: Answer, langs: tuple[str, ...]) -> list[str]:
    key = (answer.uid, langs)
    comment = _COMMENTS.get(key)
    if comment is None:
        if len(_COMMENTS) >= COMMENT_CACHE_LIMIT:
            _COMMENTS.clear()
        # from the JSON, not ``answer.data``, which would keep a dict on every cached answer
        comment = _COMMENTS[key] = comment_lines(orjson.loads(answer.json), langs)
    return comment


def _notes(lines: list[bytes], undecodable: list[int], cut: dict[int, int]) -> dict[int, list[str]]:
    notes: dict[int, list[str]] = {}
    for i in undecodable:
        notes.setdefault(i, []).append("# explainlog: this line has bytes that are not UTF-8")
    for i, length in cut.items():
        notes.setdefault(i, []).append(
            f"# explainlog: this line was {length:,} bytes; only the first {len(lines[i]):,} are kept"
        )
    return notes


def render_chunk(annotated: Annotated, options: Options) -> Rendered:
    """The chunk's lines with their comments, as ``CommentedWriter`` would write them after a
    line that ends every run; its first and last runs are left open (see ``Rendered``)."""
    lines = annotated.chunk.data.split(b"\n")
    notes = _notes(lines, annotated.undecodable, annotated.chunk.cut)
    minimum, hide_context, langs = options.min_rank, options.hide_context, options.langs
    explained = [
        a if a.known and a.rank >= minimum and not (hide_context and a.role == "context") else None
        for a in annotated.answers
    ]
    head = None
    i, n = 0, len(lines)
    first = explained[0]
    if first is not None and 0 not in notes:
        key = first.key[1]
        while i < n and explained[i] is not None and i not in notes and explained[i].key[1] == key:
            i += 1
        head = Run(key, _comment(first, langs), lines[:i], sum(map(len, lines[:i])) + i)
    if i == n:
        return Rendered(head, broken=False)
    body = CommentedWriter(io.BytesIO(), options, multi_source=False)
    for j in range(i, n):
        answer = explained[j]
        if j in notes or answer is None:
            body.plain(lines[j], notes.get(j, ()), answer is None)
        if answer is not None:
            body.explained(lines[j], answer.key[1], lambda a=answer: _comment(a, langs))
    tail, body.run = body.run, None
    return Rendered(head, True, body.out.getvalue(), body.lines_written, tail)


class CommentedWriter:
    """Writes rendered chunks in order, joining runs across chunk boundaries; ``plain`` and
    ``explained`` are the per-line rules, used by ``render_chunk`` on a chunk's inner lines."""

    def __init__(self, out: BinaryIO, options: Options, multi_source: bool) -> None:
        self.out = out
        self.options = options
        self.multi_source = multi_source
        self.run: Run | None = None
        self.lines_written = 0

    def begin_source(self, name: str) -> None:
        self._flush()
        if self.multi_source:
            self.out.write(f"# ==> {name} <==\n".encode("utf-8"))

    def _flush(self) -> None:
        run, self.run = self.run, None
        if run is None:
            return
        header = list(run.comment)
        count = len(run.lines)
        if run.continued:
            header = [f"# (continued) {header[0][2:]}"]
        if count > 1:
            header[0] += f"  ({count} lines of this entry follow)"
        self.out.write(("\n".join(header) + "\n").encode("utf-8"))
        self.out.write(b"\n".join(run.lines) + b"\n")
        self.lines_written += count

    def plain(self, line: bytes, notes: Iterable[str], write_line: bool) -> None:
        """A line that ends any run: its notes, then the line itself unless it is explained
        (then ``explained`` starts a new run with it)."""
        self._flush()
        if notes:
            self.out.write(("\n".join(notes) + "\n").encode("utf-8"))
        if write_line:
            self.out.write(line + b"\n")
            self.lines_written += 1

    def explained(self, line: bytes, key: str, comment: Callable[[], list[str]]) -> None:
        """A line explained by entry ``key``: joins the open run of that entry, or starts one
        (a run cut at RUN_BYTES goes on as a "(continued)" one)."""
        run = self.run
        if run is not None and key == run.key and run.size < RUN_BYTES:
            run.lines.append(line)
            run.size += len(line) + 1
            return
        continued = run is not None and key == run.key
        self._flush()
        self.run = Run(key, comment(), [line], len(line) + 1, continued)

    def write(self, data: bytes, result: ChunkResult) -> None:
        rendered = result.rendered
        assert rendered is not None, "commented chunks are rendered by process_chunk"
        if rendered.head is not None:
            self._join(rendered.head)
        if rendered.broken:
            self._flush()
            self.out.write(rendered.body)
            self.lines_written += rendered.body_lines
            self.run = rendered.tail

    def _join(self, head: Run) -> None:
        """``explained`` for each line of ``head``, in bulk where no line can reach RUN_BYTES."""
        run = self.run
        if run is not None and run.key == head.key and run.size + head.size <= RUN_BYTES:
            run.lines += head.lines
            run.size += head.size
        elif (run is None or run.key != head.key) and head.size <= RUN_BYTES:
            self._flush()
            self.run = Run(head.key, head.comment, list(head.lines), head.size)
        else:
            for line in head.lines:
                self.explained(line, head.key, lambda: head.comment)

    def note(self, problem: Problem) -> None:
        self._flush()
        self.out.write(f"# explainlog: {problem}\n".encode("utf-8"))

    def close(self, summary: Summary) -> None:
        self._flush()
        if summary.interrupted:
            self.out.write(
                f"# explainlog: interrupted after {summary.total_lines:,} lines; everything above is complete\n".encode()
            )


class Renderer:
    """Worker side: each chunk as final text but for the runs at its edges (``render_chunk``)."""

    def __init__(self, slot: int = 0, stride: int = 1) -> None:
        pass  # runs across chunks are joined by the writer

    def render(self, annotated: Annotated, source_name: str, options: Options, result: ChunkResult) -> None:
        result.rendered = render_chunk(annotated, options)


def writer(out: BinaryIO, options: Options, multi_source: bool, as_json: bool = False) -> CommentedWriter:
    return CommentedWriter(out, options, multi_source)
