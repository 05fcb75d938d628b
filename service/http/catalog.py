"""Browse and search the KB entries a service process loaded (for ``/v1/patterns``).

Search is a case-insensitive AND of words over id, titles, explanations and example lines, in
both languages, precomputed once per process: a KB of a few thousand entries is searched in
well under a millisecond, so no search engine is needed.
"""

from __future__ import annotations

import re
from collections import Counter
from typing import Any, Sequence

from indexer.schema import PatternEntry, SOURCE_PATTERN

GITHUB_SOURCE = re.compile(r"^(?P<repo>[A-Za-z0-9][\w.-]*/[\w.-]+) (?P<path>\S+)")


def source_url(source: str) -> str | None:
    """``NVIDIA/nccl src/init.cc`` -> its GitHub URL; None for ``docs:``/``kernel:`` sources."""
    match = GITHUB_SOURCE.match(source)
    if not match or ":" in match.group("repo") or not SOURCE_PATTERN.match(source):
        return None
    return f"https://github.com/{match.group('repo')}/blob/HEAD/{match.group('path')}"


def summary(entry: PatternEntry) -> dict[str, Any]:
    return {
        "id": entry.id,
        "title": entry.title.model_dump(),
        "component": entry.component.value,
        "severity": entry.severity.value,
        "role": entry.role.value,
    }


def detail(entry: PatternEntry) -> dict[str, Any]:
    return entry.model_dump(mode="json") | {"source_url": source_url(entry.source)}


class Catalog:
    def __init__(self, entries: Sequence[PatternEntry]) -> None:
        self.entries = sorted(entries, key=lambda e: e.id)
        self.by_id = {e.id: e for e in self.entries}
        self._haystacks = [self._haystack(e) for e in self.entries]

    @staticmethod
    def _haystack(entry: PatternEntry) -> str:
        parts = [entry.id, entry.title.en, entry.title.zh, entry.explanation.en, entry.explanation.zh, entry.source]
        parts += [example.line for example in entry.examples]
        return "\n".join(parts).lower()

    def search(
        self, query: str = "", component: str | None = None, severity: str | None = None, role: str | None = None
    ) -> dict[str, Any]:
        words = query.lower().split()
        hits = [
            entry
            for entry, haystack in zip(self.entries, self._haystacks)
            if (component is None or entry.component.value == component)
            and (severity is None or entry.severity.value == severity)
            and (role is None or entry.role.value == role)
            and all(word in haystack for word in words)
        ]
        return {
            "total": len(hits),
            "patterns": [summary(e) for e in hits],
            "facets": {
                "component": dict(sorted(Counter(e.component.value for e in self.entries).items())),
                "severity": dict(Counter(e.severity.value for e in self.entries)),
            },
        }
