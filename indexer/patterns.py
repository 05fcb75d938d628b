"""All KB regexes compiled once into a linear-time multi-pattern matcher.

google-re2 guarantees no catastrophic backtracking (it rejects backreferences and
lookaround outright), and ``re2.Set`` tells in one pass over a line which of hundreds of
patterns match, so only the winners are re-run to extract their named groups.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Sequence

import re2

from indexer.schema import PatternEntry

_OPTIONS = re2.Options()
_OPTIONS.max_mem = 256 << 20
_OPTIONS.log_errors = False  # errors reach the user as findings, not as stderr noise


class PatternCompileError(ValueError):
    def __init__(self, index: int, message: str) -> None:
        super().__init__(message)
        self.index = index


def compile_pattern(pattern: str):
    """Compile one KB regex with RE2; raises ``re2.error`` on syntax RE2 cannot run linearly."""
    return re2.compile(pattern, _OPTIONS)


@dataclass(frozen=True)
class RegexHit:
    index: int
    fields: dict[str, str]


# A leading "(?P<name>.*?)" (or "^(?P<name>.*)") only says "whatever comes first": for telling
# whether a pattern occurs in a line it changes nothing, and left in, every such pattern keeps
# a thread alive at every position. Lines carry no newline, so the two forms match alike.
_LEADING_ANY = re.compile(r"^\^?\(\?P<\w+>\.\*\??\)")
# RE2 builds its DFA lazily, one state per new stretch of input; a state of one set of 13,000
# patterns holds thousands of threads, and a line never seen cost ~9 ms. Sets of a few
# thousand patterns each cost ~2 ms for all of them, and microseconds on lines seen before.
SHARD = 2000


def set_form(pattern: str) -> str:
    """The pattern as the set scans for it (same lines match); groups come from the original."""
    m = _LEADING_ANY.match(pattern)
    if m is None or pattern[m.end():] in ("", r"\s*$"):
        return pattern
    return pattern[m.end():]


class ShardedSet:
    """An RE2 search set in shards of ``SHARD`` patterns, answering indices over all of them.

    One set of 13,000 patterns builds enormous DFA states (a never-seen line cost ~9 ms), and
    RE2 may refuse to compile such a set at all (its prefilters are too deep to coalesce)."""

    def __init__(self, options=None, shard: int = SHARD) -> None:
        self._options = options or _OPTIONS
        self._shard = shard
        self._sets: list = []  # (first index, RE2 set)
        self._count = 0

    def Add(self, pattern: str) -> int:  # noqa: N802 - mirrors re2.Set
        if self._count % self._shard == 0:
            self._sets.append((self._count, re2.Set.SearchSet(self._options)))
        first, shard = self._sets[-1]
        added = shard.Add(pattern)
        assert added == self._count - first
        self._count += 1
        return self._count - 1

    def Compile(self) -> None:  # noqa: N802
        for _, shard in self._sets:
            shard.Compile()

    def Match(self, text: str) -> list[int]:  # noqa: N802
        return [first + h for first, shard in self._sets for h in (shard.Match(text) or ())]

    def __len__(self) -> int:
        return self._count


class PatternSet:
    """Match a message against every entry at once; the highest-priority match wins."""

    def __init__(self, entries: Sequence[PatternEntry]) -> None:
        self.entries = list(entries)
        # Single regexes are compiled when first needed (group extraction): thousands of
        # catalogue patterns would otherwise cost a start-up that most runs never use.
        self._compiled: list = [None] * len(self.entries)
        self._context_rules: dict[int, list[tuple[str, object]]] = {}
        self._set = ShardedSet()
        for index, entry in enumerate(self.entries):
            try:
                added = self._set.Add(set_form(entry.pattern))
            except Exception as exc:  # re2.error and the Set's own ValueError
                raise PatternCompileError(index, f"{entry.id}: {exc}") from exc
            assert added == index
            if entry.context:
                try:
                    self._context_rules[index] = [
                        (key, compile_pattern(rx)) for key, rx in entry.context.items()
                    ]
                except Exception as exc:
                    raise PatternCompileError(index, f"{entry.id}: context: {exc}") from exc
        self._set.Compile()
        # Earlier entries win ties; kb check forbids ties that any example can hit.
        self._order = {i: (-e.priority, i) for i, e in enumerate(self.entries)}

    def matching(self, message: str, context: dict[str, str] | None = None) -> list[int]:
        """Indices of all entries whose pattern occurs in ``message`` (and whose context
        constraints, if any, hold for ``context``), best first."""
        if not self.entries:
            return []
        hits = self._set.Match(message)
        if self._context_rules:
            ctx = context or {}
            hits = [h for h in hits if self._context_ok(h, ctx)]
        return sorted(hits, key=self._order.__getitem__)

    def _context_ok(self, index: int, context: dict[str, str]) -> bool:
        rules = self._context_rules.get(index)
        if not rules:
            return True
        return all(key in context and rx.search(context[key]) for key, rx in rules)

    def compiled(self, index: int):
        rx = self._compiled[index]
        if rx is None:
            rx = self._compiled[index] = compile_pattern(self.entries[index].pattern)
        return rx

    def groups(self, index: int, message: str) -> dict[str, str]:
        match = self.compiled(index).search(message)
        if match is None:  # the Set and the single regex disagree only on engine bugs
            return {}
        return {k: v for k, v in match.groupdict().items() if v is not None}

    def group_names(self, index: int) -> set[str]:
        return set(self.compiled(index).groupindex)

    def best(self, message: str, context: dict[str, str] | None = None) -> RegexHit | None:
        hits = self.matching(message, context)
        if not hits:
            return None
        return RegexHit(hits[0], self.groups(hits[0], message))
