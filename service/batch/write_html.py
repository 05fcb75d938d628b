"""``--format html``: one self-contained offline report, written while the log streams by.

The summary belongs at the top of the page but is known only at the end, so the file is
written in one pass as data blocks (``<script type="application/json">``: each distinct answer
once, then each chunk's lines with references to answers) followed by the summary and the page
script, which lays the summary out on top and pages through the lines. Nothing is held back
in memory but the table of answer ids, which is bounded. An interrupted run still closes the
page properly, marked as interrupted.
"""

from __future__ import annotations

from importlib import resources
from typing import BinaryIO

import orjson

from service.batch.options import Options
from service.batch.problems import Problem
from service.batch.process import ChunkResult
from service.batch.summary import Summary

ANSWER_TABLE_LIMIT = 200_000


def _json(value: object) -> bytes:
    # '<' only occurs inside JSON strings; escaping it keeps "</script>" and "<!--" inert.
    return orjson.dumps(value).replace(b"<", b"\\u003c")


def _asset(name: str) -> str:
    return resources.files("service.batch").joinpath(name).read_text(encoding="utf-8")


class HtmlWriter:
    def __init__(self, out: BinaryIO, options: Options, title: str = "explainlog report") -> None:
        self.out = out
        self.options = options
        self._ids: dict[bytes, int] = {}
        self._next_id = 0
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
        fresh = []
        if self._next_id + len(result.table) > ANSWER_TABLE_LIMIT and len(self._ids) > ANSWER_TABLE_LIMIT // 2:
            self._ids.clear()  # bounded memory: answers seen again are simply written again
        refs = []
        local = []
        for uid, _, _, answer_json in result.table:
            gid = self._ids.get(uid)
            if gid is None:
                gid = self._ids[uid] = self._next_id
                self._next_id += 1
                fresh.append(b"[%d,%b]" % (gid, answer_json))
            local.append(gid)
        refs = [local[r] if r >= 0 else -1 for r in result.refs]
        if fresh:
            # the answers arrive as JSON already; '<' is escaped as _json does
            answers = (b"[" + b",".join(fresh) + b"]").replace(b"<", b"\\u003c")
            self.out.write(b'<script type="application/json" class="answers">' + answers + b"</script>\n")
        texts = data.decode("utf-8", "replace").split("\n")
        notes = [[i, "this line has bytes that are not UTF-8"] for i in result.undecodable]
        notes += [[i, f"this line was {length:,} bytes; only the first part is kept"] for i, length in result.cut.items()]
        block = {"f": result.source, "s": result.first_line, "t": texts, "a": refs}
        if notes:
            block["n"] = notes
        self.out.write(b'<script type="application/json" class="chunk">' + _json(block) + b"</script>\n")

    def note(self, problem: Problem) -> None:
        pass  # problems are shown from the summary

    def close(self, summary: Summary) -> None:
        self.out.write(b'<script type="application/json" id="summary-data">' + _json(summary.to_json()) + b"</script>\n")
        self.out.write(b"<script>" + _asset("report.js").encode("utf-8") + b"</script>\n</body></html>\n")


def _escape(text: str) -> str:
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
