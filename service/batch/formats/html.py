"""``--format html``: one self-contained offline report, written while the log streams by.

The summary belongs at the top of the page but is known only at the end, so the file is
written in one pass as data blocks (``<script type="application/json">``: each distinct answer
once, then each chunk's lines with references to answers) followed by the summary and the page
script, which lays the summary out on top and pages through the lines. The blocks are rendered
where the chunk was annotated (``AnswerBlocks``; with ``-j``, each worker writes its own, in
chunk order). Nothing is held back in memory but the table of answer ids, which is bounded.
An interrupted run still closes the page properly, marked as interrupted.
"""

from __future__ import annotations

from importlib import resources
from typing import BinaryIO

import orjson

from service.batch.answers import Annotated
from service.batch.options import Options
from service.batch.problems import Problem
from service.batch.result import ChunkResult
from service.batch.summary import Summary


ANSWER_TABLE_LIMIT = 200_000


def _json(value: object) -> bytes:
    # '<' only occurs inside JSON strings; escaping it keeps "</script>" and "<!--" inert.
    return orjson.dumps(value).replace(b"<", b"\\u003c")


def _asset(name: str) -> str:
    return resources.files("service.batch.formats").joinpath(name).read_text(encoding="utf-8")


ANNOTATES = True
NEEDS_CONTEXT = False


class AnswerBlocks:
    """Renders chunks as the page's data blocks: each distinct answer once (an ``answers``
    block before the first chunk that uses it), then the chunk's lines with answer ids.

    One per run and process. Ids are ``slot + stride * n``: ``-j`` workers (``slot`` = worker,
    ``stride`` = jobs) number their answers apart without talking to each other, so each can
    write its blocks to the page itself, in chunk order, like ``jsonl``; an answer met by two
    workers is written by both. The table of ids is bounded: answers seen again after it was
    cleared are simply written again.
    """

    def __init__(self, slot: int = 0, stride: int = 1) -> None:
        self.slot = slot
        self.stride = stride
        self._ids: dict[bytes, int] = {}
        self._next = 0

    def render(self, annotated: Annotated, source_name: str, options: Options, result: ChunkResult) -> None:
        result.payload = self.blocks(annotated, options)

    def blocks(self, annotated: Annotated, options: Options) -> bytes:
        """The chunk's data blocks, after the blocks of the answers it is the first to use."""
        refs, table = _references(annotated, options)
        if self._next + len(table) > ANSWER_TABLE_LIMIT and len(self._ids) > ANSWER_TABLE_LIMIT // 2:
            self._ids.clear()
        fresh = []
        local = []
        for uid, answer_json in table:
            gid = self._ids.get(uid)
            if gid is None:
                gid = self._ids[uid] = self.slot + self.stride * self._next
                self._next += 1
                fresh.append(b"[%d,%b]" % (gid, answer_json))
            local.append(gid)
        out = []
        if fresh:
            # the answers are JSON already; '<' is escaped as _json does
            answers = (b"[" + b",".join(fresh) + b"]").replace(b"<", b"\\u003c")
            out.append(b'<script type="application/json" class="answers">' + answers + b"</script>\n")
        chunk = annotated.chunk
        texts = chunk.data.decode("utf-8", "replace").split("\n")
        notes = [[i, "this line has bytes that are not UTF-8"] for i in annotated.undecodable]
        notes += [[i, f"this line was {length:,} bytes; only the first part is kept"] for i, length in chunk.cut.items()]
        block = {"f": chunk.source, "s": chunk.first_line, "t": texts, "a": [local[r] if r >= 0 else -1 for r in refs]}
        if notes:
            block["n"] = notes
        out.append(b'<script type="application/json" class="chunk">' + _json(block) + b"</script>\n")
        return b"".join(out)


def _references(annotated: Annotated, options: Options) -> tuple[list[int], list[tuple[bytes, bytes]]]:
    """Per line, the index of its answer in the chunk's table of (uid, JSON), or -1 for lines
    shown without an explanation (unknown, or under ``--min-severity``)."""
    index: dict[int, int] = {}
    table: list[tuple[bytes, bytes]] = []
    refs: list[int] = []
    minimum = options.min_rank
    for answer in annotated.answers:
        if answer.rank < minimum or not answer.known:
            refs.append(-1)
            continue
        position = index.get(id(answer))
        if position is None:
            position = index[id(answer)] = len(table)
            table.append((answer.uid, answer.json))
        refs.append(position)
    return refs, table


class HtmlWriter:
    def __init__(self, out: BinaryIO, options: Options, title: str = "explainlog report") -> None:
        self.out = out
        self.options = options
        lang = "zh" if options.lang == "zh" else "en"
        head = (
            f'<!doctype html>\n<html lang="{lang}"><head><meta charset="utf-8">'
            f'<meta name="viewport" content="width=device-width, initial-scale=1">'
            f"<title>{_escape(title)}</title><style>{_asset('report.css')}</style></head>\n<body>\n"
            f'<header><h1>{_escape(title)}</h1><div id="summary"></div></header>\n'
            f'<nav id="controls"></nav>\n<main id="log"></main>\n'
        )
        self.out.write(head.encode("utf-8"))

    def begin_source(self, name: str) -> None:
        pass  # file names travel in the summary; lines carry their source index

    def write(self, data: bytes, result: ChunkResult) -> None:
        if not result.written:  # -j workers may have written their blocks themselves
            self.out.write(result.payload)

    def note(self, problem: Problem) -> None:
        pass  # problems are shown from the summary

    def close(self, summary: Summary) -> None:
        self.out.write(b'<script type="application/json" id="summary-data">' + _json(summary.to_json()) + b"</script>\n")
        self.out.write(b"<script>" + _asset("report.js").encode("utf-8") + b"</script>\n</body></html>\n")


def _escape(text: str) -> str:
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


Renderer = AnswerBlocks  # worker side: one per run and process (its ids must not collide)


def writer(out: BinaryIO, options: Options, multi_source: bool, as_json: bool = False) -> HtmlWriter:
    return HtmlWriter(out, options)
