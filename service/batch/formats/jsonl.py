"""``--format jsonl``: one JSON object per input line, in input order.

Records are encoded where the lines are annotated (``Renderer``, in the workers); the writer
only appends each chunk's bytes in order, which keeps the parent process nearly idle.
"""

from __future__ import annotations

import orjson

from service.batch.answers import Annotated
from service.batch.options import Options
from service.batch.result import ChunkResult
from service.batch.summary import Summary

ANNOTATES = True  # lines are annotated one by one (not only counted)
NEEDS_CONTEXT = True  # each record carries its line's context


class Renderer:
    """Worker side: each chunk's records, encoded where the chunk was annotated."""

    def __init__(self, slot: int = 0, stride: int = 1) -> None:
        pass  # no state across chunks

    def render(self, annotated: Annotated, source_name: str, options: Options, result: ChunkResult) -> None:
        result.payload = encode(annotated, source_name, options, result.undecodable)




class JsonlWriter:
    """Records are encoded by the workers; this only puts them in order."""

    def __init__(self, out) -> None:
        self.out = out

    def begin_source(self, name: str) -> None:
        pass

    def write(self, data: bytes, result) -> None:
        if not result.written:  # -j workers write their payloads themselves, in order
            self.out.write(result.payload)

    def note(self, problem) -> None:
        pass  # JSONL stays one object per input line; problems go to stderr and the exit code

    def close(self, summary: Summary) -> None:
        pass


def writer(out, options: Options, multi_source: bool, as_json: bool = False) -> JsonlWriter:
    return JsonlWriter(out)


def encode(annotated: Annotated, source_name: str, options: Options, undecodable: list[int]) -> bytes:
    """One JSON object per line: file, line_number, then the spine's contract keys in order.

    Lines filtered out by ``--only-known`` / ``--min-severity`` keep a compact record (file,
    line_number, line, known, and pattern_id/severity when known) so lines in = lines out.
    """
    dumps = orjson.dumps
    file_json = dumps(source_name)
    base = annotated.chunk.first_line
    contexts = annotated.contexts or [{}] * len(annotated.texts)
    minimum = options.min_rank
    out: list[bytes] = []
    append = out.append
    # The engine hands out one dict per distinct set of field values, shared by the lines that
    # have it (NCCL prints the same channel line on every comm); each is encoded once per chunk.
    encoded: dict[int, bytes] = {}
    line_number = base - 1
    for text, answer, context, fields in zip(annotated.texts, annotated.answers, contexts, annotated.fields):
        line_number += 1
        if answer.rank >= minimum:
            if fields is None:
                fields_json = answer.fields_json
            else:
                fields_json = encoded.get(id(fields))
                if fields_json is None:
                    fields_json = encoded[id(fields)] = dumps(fields)
            append(b'{"file":%b,"line_number":%d,"line":%b,%b,"fields":%b,"context":%b,%b}\n'
                   % (file_json, line_number, dumps(text), answer.head, fields_json,
                      context if context.__class__ is bytes else dumps(context), answer.tail))
        elif answer.known:
            append(b'{"file":%b,"line_number":%d,"line":%b,"known":true,"pattern_id":%b,"severity":%b}\n'
                   % (file_json, line_number, dumps(text), dumps(answer.data["pattern_id"]), dumps(answer.data["severity"])))
        else:
            append(b'{"file":%b,"line_number":%d,"line":%b,"known":false}\n' % (file_json, line_number, dumps(text)))
    marks = {i: b',"undecodable":true' for i in undecodable}
    for i, length in annotated.chunk.cut.items():
        marks[i] = marks.get(i, b"") + b',"cut_from_bytes":%d' % length
    for i, mark in marks.items():
        out[i] = out[i][:-2] + mark + b"}\n"
    return b"".join(out)
