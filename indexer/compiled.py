"""The KB entries whose patterns compile, for the passes that build one pattern set of them.

Its own module so that ``kb_check``, ``kb_cache`` and ``catalog.unrelated`` can all use it:
``kb_check`` imports ``catalog.unrelated``, and ``kb_loader`` cannot import ``patterns``
(``patterns -> derived -> paths -> kb_loader``)."""

from __future__ import annotations

from indexer.kb_loader import KnowledgeBase, LoadedEntry
from indexer.patterns import compile_pattern


def compilable(kb: KnowledgeBase, catalog: bool = True, keep: dict | None = None) -> list[LoadedEntry]:
    """Entries whose patterns compile: curated ones, then (by default) catalogue records.
    ``keep``: filled with pattern -> compiled regex, for a caller that uses them next (kb check)."""
    out = []
    for loaded in (kb.all_entries if catalog else kb.entries):
        try:
            rx = compile_pattern(loaded.entry.pattern)
            if keep is not None:
                keep[loaded.entry.pattern] = rx
            for rx in loaded.entry.context.values():
                compile_pattern(rx)
        except Exception:
            continue
        out.append(loaded)
    return out
