"""One chunk in, one picklable result out: the unit of work for ``-j`` workers and Dask.

Workers do everything that is per line (annotation, JSON encoding, comments); what depends on
the order of chunks (runs of comments spanning chunks, the HTML answer table, the summary) is
left to the single writer in the parent, which receives results in input order.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import orjson

from service.batch.engine import Annotated, Answer, Engine
from service.batch.options import Options
from service.batch.reader import Chunk
from service.batch.summary import Summary
from service.batch.write_commented import Rendered, render_chunk
from service.batch.write_html import AnswerBlocks


@dataclass
class ChunkResult:
    source: int
    first_line: int
    n_lines: int
    payload: bytes = b""  # jsonl: the encoded records; html: the page's data blocks
    written: bool = False  # a worker already wrote the payload to the output
    rendered: Rendered | None = None  # commented: the chunk's text, but for runs at its edges
    undecodable: list[int] = field(default_factory=list)  # line indices within the chunk
    cut: dict[int, int] = field(default_factory=dict)
    summary: Summary = field(default_factory=Summary)


def process_chunk(engine: Engine, chunk: Chunk, source_name: str, options: Options,
                  blocks: AnswerBlocks | None = None) -> ChunkResult:
    """``blocks``: the run's (or worker's) answer numbering, for html."""
    result = ChunkResult(chunk.source, chunk.first_line, chunk.n_lines, cut=chunk.cut)
    budget = getattr(engine.explainer, "semantic_budget", None)
    skipped = budget.skipped_lines if budget is not None else 0
    if options.format == "summary":
        result.summary = engine.summarize(chunk)
    else:
        annotated = engine.annotate(chunk, need_context=options.format == "jsonl")
        result.summary = annotated.summary
    if budget is not None:
        result.summary.semantic_skipped += budget.skipped_lines - skipped
    if options.format == "summary":
        return result
    result.undecodable = annotated.undecodable
    if options.format == "jsonl":
        result.payload = encode_jsonl(annotated, source_name, options, result.undecodable)
    elif options.format == "commented":
        result.rendered = render_chunk(annotated, options)
    else:
        assert blocks is not None, "html needs the run's AnswerBlocks"
        result.payload = blocks.render(annotated, options)
    return result


def qualifies(answer: Answer, options: Options) -> bool:
    """Whether a line is explained in full under ``--only-known`` / ``--min-severity``."""
    return answer.rank >= options.min_rank


def encode_jsonl(annotated: Annotated, source_name: str, options: Options, undecodable: list[int]) -> bytes:
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
