"""One chunk in, one picklable result out: the unit of work for ``-j`` workers and Dask.

Workers do everything that is per line (annotation, then the format's ``Renderer``: JSON
records, comments, page blocks); what depends on the order of chunks (runs of comments spanning
chunks, the summary) is left to the format's single writer in the parent, which receives
results in input order. Formats are known only through ``formats.get``.
"""

from __future__ import annotations

from typing import Any

from service.batch import formats
from service.batch.engine import Engine
from service.batch.options import Options
from service.batch.reader import Chunk
from service.batch.result import ChunkResult


def renderer(options: Options, slot: int = 0, stride: int = 1) -> Any:
    """The worker side of the run's format: one per run and process."""
    return formats.get(options.format).Renderer(slot, stride)


def process_chunk(engine: Engine, chunk: Chunk, source_name: str, options: Options, render: Any) -> ChunkResult:
    """``render``: the run's (or worker's) ``renderer``, which keeps what spans chunks (the
    html page's answer numbering)."""
    fmt = formats.get(options.format)
    result = ChunkResult(chunk.source, chunk.first_line, chunk.n_lines, cut=chunk.cut)
    budget = getattr(engine.explainer, "semantic_budget", None)
    skipped = budget.skipped_lines if budget is not None else 0
    annotated = None
    if fmt.ANNOTATES:
        annotated = engine.annotate(chunk, need_context=fmt.NEEDS_CONTEXT)
        result.summary = annotated.summary
        result.undecodable = annotated.undecodable
    else:
        result.summary = engine.summarize(chunk)
    if budget is not None:
        result.summary.semantic_skipped += budget.skipped_lines - skipped
    if annotated is not None:
        render.render(annotated, source_name, options, result)
    return result
