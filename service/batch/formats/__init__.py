"""Output formats of ``explainlog annotate``: one module per format, holding both halves.

Each module (``jsonl``, ``commented``, ``html``, ``summary``) provides:

- ``ANNOTATES``: whether lines are annotated one by one (``Engine.annotate``) or only counted
  per shape (``Engine.summarize``, the ``summary`` format);
- ``NEEDS_CONTEXT``: whether each line's context must be kept for the output;
- ``Renderer(slot, stride)``: the worker side, one per run and process; ``render(annotated,
  source_name, options, result)`` puts the chunk's payload into its ``ChunkResult``, where the
  chunk was annotated (a ``-j`` worker), so per-line work stays out of the parent;
- ``writer(out, options, multi_source, as_json)``: the parent side, which receives results
  in input order (``begin_source``, ``write``, ``note``, ``close``).

``process.process_chunk`` and the pipeline know formats only through this registry.
"""

from __future__ import annotations

import importlib
from types import ModuleType

NAMES = ("jsonl", "commented", "html", "summary")


def get(name: str) -> ModuleType:
    """The module of format ``name`` (imported on first use: a run loads only its own)."""
    if name not in NAMES:
        raise ValueError(f"unknown output format {name!r} (one of {', '.join(NAMES)})")
    return importlib.import_module(f"{__name__}.{name}")
