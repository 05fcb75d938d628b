"""All KB regexes, and which of them occur in a line, fast.

google-re2 guarantees no catastrophic backtracking (it rejects backreferences and
lookaround outright). With tens of thousands of catalogue patterns one ``re2.Set`` pass costs
tens of microseconds a shard, so ``PatternSet`` first narrows the patterns by the words a line
holds (``required_words``: a word every match of the pattern must contain as a whole token) and
runs only the few candidates; patterns with no such word stay in one small RE2 set.
"""

from __future__ import annotations

import re
import re._constants as _c
import re._parser as _parser
from dataclasses import dataclass
from typing import Callable, Sequence

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


_WORD_CHAR = re.compile(r"\w")
_TOKEN = re.compile(r"[a-z0-9_]+")
_NON_WORD_CATEGORIES = {_c.CATEGORY_SPACE, _c.CATEGORY_NOT_WORD}


def _non_word_class(items) -> bool:
    """A character class all of whose members are non-word characters (``\\s``, ``[:=]``)."""
    for op, av in items:
        if op is _c.LITERAL:
            if _WORD_CHAR.match(chr(av)):
                return False
        elif op is _c.CATEGORY:
            if av not in _NON_WORD_CATEGORIES:
                return False
        elif op is _c.RANGE:
            if any(_WORD_CHAR.match(chr(c)) for c in range(av[0], av[1] + 1)):
                return False
        else:  # NEGATE and anything else: could be a word character
            return False
    return True


# atoms of a linearised pattern: a known character, a stretch of one or more non-word
# characters, an edge (start, end, \b) that a token cannot cross, or a gap (anything, maybe empty)
_GAP, _NONWORD, _EDGE = object(), object(), object()
_IGNORE_CASE = re.compile(r"\(\?[a-zA-Z]*i[a-zA-Z]*[:)]")


def _atoms(items, out: list, words: set) -> None:
    for op, av in items:
        if op is _c.LITERAL:
            out.append(chr(av))
        elif op is _c.SUBPATTERN:
            _atoms(av[3], out, words)  # a group matches exactly its own sequence
        elif op is _c.IN:
            out.append(_NONWORD if _non_word_class(av) else _GAP)
        elif op is _c.AT and av in (_c.AT_BEGINNING, _c.AT_BEGINNING_STRING, _c.AT_END, _c.AT_END_STRING,
                                    _c.AT_BOUNDARY):
            out.append(_EDGE)
        elif op in (_c.MAX_REPEAT, _c.MIN_REPEAT):
            low, _high, item = av
            if low >= 1:
                if len(item) == 1 and item[0][0] is _c.IN and _non_word_class(item[0][1]):
                    out.append(_NONWORD)
                    continue
                inner: list = [_GAP]
                _atoms(item, inner, words)  # at least one copy: its own bounded words occur
                inner.append(_GAP)
                words.update(_bounded_words(inner))
            out.append(_GAP)
        else:  # ANY, BRANCH, NOT_LITERAL, CATEGORY, other anchors: unknown text
            out.append(_GAP)


def _is_word(atom) -> bool:
    return isinstance(atom, str) and _WORD_CHAR.match(atom) is not None


def _bounded_words(atoms: list) -> set[str]:
    """Runs of literal word characters with a known non-word neighbour on both sides."""
    found: set[str] = set()
    start = None
    for i, atom in enumerate(atoms):
        if _is_word(atom):
            if start is None:
                start = i
            continue
        if start is not None:
            before = atoms[start - 1] if start > 0 else _GAP
            if before is not _GAP and atom is not _GAP:
                word = "".join(atoms[start:i])
                if word.isascii():
                    found.add(word.lower())
            start = None
    return found


def _literal_runs(atoms: list) -> list[str]:
    runs, run = [], []
    for atom in atoms:
        if isinstance(atom, str):
            run.append(atom)
        elif run:
            runs.append("".join(run))
            run = []
    if run:
        runs.append("".join(run))
    return runs


def prefilter(pattern: str) -> tuple[frozenset[str], str]:
    """What every line matching ``pattern`` holds: its ``required_words`` (lower-case), and the
    longest literal stretch of its mandatory part, lower-cased where the pattern ignores case
    (the empty string when there is none or the pattern cannot be read this way)."""
    try:
        tree = _parser.parse(pattern)
    except Exception:  # RE2-only syntax: no prefilter, the pattern stays in the set
        return frozenset(), ""
    words: set[str] = set()
    atoms: list = [_GAP]
    _atoms(tree, atoms, words)
    atoms.append(_GAP)
    runs = _literal_runs(atoms)
    literal = max(runs, key=len) if runs else ""
    if _IGNORE_CASE.search(pattern):  # a case-insensitive flag anywhere: compare lower-cased
        literal = literal.lower()
    return frozenset(words | _bounded_words(atoms)), literal


def required_words(pattern: str) -> set[str]:
    """Lower-case ASCII words that every line matching ``pattern`` holds as whole ``\\w+``
    tokens: literal words of the pattern's mandatory part with a non-word character, a line
    edge or ``\\b`` on both sides. Empty when the pattern cannot be read this way."""
    return set(prefilter(pattern)[0])


def prefilters(patterns: list[str]) -> list[tuple[frozenset[str], str]]:
    """``prefilter`` of every pattern, computed once per KB (``indexer.derived``)."""
    from indexer.derived import derived_map

    return derived_map("prefilter", prefilter, patterns)


def _filtered_state(patterns: list[str]) -> tuple:
    """``FilteredSet.state()`` for these patterns: each pattern's required words (tuples that
    share one string per word) and longest literal, the buckets (a pattern filed under its
    rarest required word) and the patterns without one."""
    found = prefilters([set_form(p) for p in patterns])
    shared: dict[str, str] = {}
    required = [tuple(shared.setdefault(w, w) for w in sorted(words)) for words, _ in found]
    literal = [lit for _, lit in found]
    seen: dict[str, int] = {}
    for words in required:
        for w in words:
            seen[w] = seen.get(w, 0) + 1
    buckets: dict[str, list[int]] = {}
    in_set: list[int] = []
    for index, words in enumerate(required):
        if words:
            rarest = min(words, key=lambda w: (seen[w], w))
            buckets.setdefault(rarest, []).append(index)
        else:
            in_set.append(index)
    return required, literal, buckets, in_set


class FilteredSet:
    """Which of many patterns occur in a text: ``re2.Set``'s contract (``Add``, ``Compile``,
    ``Match`` → indices) without one big automaton.

    Every pattern is filed under its rarest required word; a text's tokens pick the buckets,
    and a candidate runs (as a one-pattern RE2 set: a test without groups) only if all its
    required words and its longest literal occur in the text. Patterns without a required word
    share one sharded set. The result is the same as running every pattern
    (tests/test_patterns.py holds them equal on the KB's examples and mutants)."""

    def __init__(self, options=None) -> None:
        self._options = options or _OPTIONS
        self._patterns: list[str] = []
        self._required: list[frozenset[str] | tuple[str, ...]] = []
        self._literal: list[str] = []
        self._checks: list = []
        self._buckets: dict[str, list[int]] = {}
        self._set = ShardedSet(self._options)
        self._in_set: list[int] = []
        self._parser = None

    def Add(self, pattern: str, check: bool = True) -> int:  # noqa: N802 - mirrors re2.Set
        """``check=False`` for patterns known to compile (a KB's, checked by ``kb check``):
        parsing 20,000 of them to find no error costs a second."""
        if check:
            if self._parser is None:
                self._parser = re2.Set.SearchSet(self._options)
            self._parser.Add(pattern)  # a syntax error now, as re2.Set.Add gives it (a parse, no compile)
        self._patterns.append(pattern)
        return len(self._patterns) - 1

    def Compile(self, state: tuple | None = None) -> None:  # noqa: N802
        """``state``: what ``state()`` gave for these same patterns (a KB cache keeps it), so
        the prefilters and buckets are not worked out again."""
        if state is None:
            from indexer.derived import derived_value

            state = derived_value("filtered-state", _filtered_state, self._patterns)
        self._required, self._literal, self._buckets, self._in_set = state
        if len(self._required) != len(self._patterns):
            raise ValueError("FilteredSet state is for another pattern list")
        for index in self._in_set:
            self._set.Add(set_form(self._patterns[index]))
        self._checks = [None] * len(self._patterns)
        self._set.Compile()
        self._parser = None

    def state(self) -> tuple:
        """The compiled prefilters and buckets, plain data for ``Compile(state=...)``. The
        required words go as tuples sharing one string object per word: unpickled, 20,000
        frozensets cost ~75 ms of a process's start, these tuples ~7 ms. ``Compile`` keeps them in
        that form (``_filtered_state``, or a state given), so this copies nothing."""
        return self._required, self._literal, self._buckets, self._in_set

    def _check(self, index: int):
        check = re2.Set.SearchSet(self._options)
        check.Add(set_form(self._patterns[index]))
        check.Compile()
        self._checks[index] = check
        return check

    def matching(self, indices, text: str) -> list[int]:
        """Those of ``indices`` whose pattern occurs in ``text``, each tested alone: for a
        caller that already knows the few patterns in question, cheaper than ``Match``."""
        checks = self._checks
        return [i for i in indices if (checks[i] or self._check(i)).Match(text)]

    def subset(self, indices) -> Callable[[str], list[int]]:
        """A matcher for just these patterns (one small RE2 set): text -> the indices among
        them that occur in it. For a caller that asks about the same few patterns many times."""
        order = sorted(indices)
        if not order:
            return lambda text: []
        found = re2.Set.SearchSet(self._options)
        for index in order:
            found.Add(set_form(self._patterns[index]))
        found.Compile()
        match = found.Match
        return lambda text: [order[h] for h in match(text) or ()]

    def by_words(self, text: str) -> tuple[list[int], list[int]]:
        """The patterns whose required words all occur as tokens of ``text`` (no literal and
        no regex test: a superset of ``Match``'s bucketed hits), and the patterns that have
        no required word. For a caller that tests other regexes derived from these patterns,
        valid wherever those match only lines holding the same required words."""
        tokens = set(_TOKEN.findall(text.lower()))
        required = self._required
        found = []
        for token in tokens:
            for index in self._buckets.get(token, ()):
                if tokens.issuperset(required[index]):
                    found.append(index)
        return found, self._in_set

    def Match(self, text: str) -> list[int]:  # noqa: N802
        in_set = self._in_set
        hits = [in_set[h] for h in self._set.Match(text)] if in_set else []
        lower = text.lower()
        tokens = set(_TOKEN.findall(lower))
        buckets = self._buckets
        required = self._required
        literal = self._literal
        checks = self._checks
        for token in tokens:
            bucket = buckets.get(token)
            if bucket is None:
                continue
            for index in bucket:
                if (tokens.issuperset(required[index]) and (literal[index] in text or literal[index] in lower)
                        and (checks[index] or self._check(index)).Match(text)):
                    hits.append(index)
        return hits

    def __len__(self) -> int:
        return len(self._patterns)


@dataclass
class MatchColumns:
    """A pattern set's inputs as plain lists: entry ids, patterns, the context rules of the
    entries that have any (by index), priorities, and ``FilteredSet.state()`` (None: work it out)."""

    ids: list[str]
    patterns: list[str]
    contexts: dict[int, dict[str, str]]
    priorities: list[int]
    state: tuple | None = None

    @classmethod
    def of(cls, entries: Sequence[PatternEntry]) -> "MatchColumns":
        return cls(
            [e.id for e in entries], [e.pattern for e in entries],
            {i: dict(e.context) for i, e in enumerate(entries) if e.context}, [e.priority for e in entries],
        )


class PatternSet:
    """Match a message against every entry at once; the highest-priority match wins."""

    def __init__(self, entries: Sequence[PatternEntry], columns: "MatchColumns | None" = None) -> None:
        """``columns``: the entries' patterns, context rules, priorities and prefilter state,
        when a KB cache holds them: then no entry is read here (a catalogue of 20,000 stays
        in its pickled bytes until a line needs one), and ``entries`` may be any sequence."""
        self.entries = entries if columns is not None else list(entries)
        if columns is None:
            columns = MatchColumns.of(self.entries)
        self._ids = columns.ids
        self._patterns = columns.patterns
        # Single regexes are compiled when first needed (group extraction): thousands of
        # catalogue patterns would otherwise cost a start-up that most runs never use.
        self._compiled: list = [None] * len(self._patterns)
        self._context_rules: dict[int, list[tuple[str, object]]] = {}
        self._context_sources: dict[int, dict[str, str]] = {i: dict(rules) for i, rules in columns.contexts.items()}
        self._set = FilteredSet()
        self._set._patterns = list(self._patterns)  # compiled when first a candidate (kb check compiles them all)
        for index, rules in columns.contexts.items():
            try:
                self._context_rules[index] = [(key, compile_pattern(rx)) for key, rx in rules.items()]
            except Exception as exc:
                raise PatternCompileError(index, f"{columns.ids[index]}: context: {exc}") from exc
        try:
            self._set.Compile(columns.state)
        except Exception as exc:  # re2.error and the Set's own ValueError, from the shared set
            raise PatternCompileError(-1, str(exc)) from exc
        # Earlier entries win ties; kb check forbids ties that any example can hit.
        self._priorities = columns.priorities
        self._order = (lambda i: (-self._priorities[i], i))

    def pattern_of(self, index: int) -> str:
        return self._patterns[index]

    def patterns_and_contexts(self) -> tuple[list[str], dict[int, dict[str, str]]]:
        """Every entry's pattern, and the context rules (key -> regex source) of those that have
        any, by index: what a caller needs to analyse the patterns without reading the entries
        (a KB cache keeps 20,000 catalogue entries pickled until one is used)."""
        return self._patterns, self._context_sources

    def columns(self) -> "MatchColumns":
        """What rebuilds this set without reading its entries (for a KB cache)."""
        contexts = {i: dict(rules) for i, rules in self._context_sources.items()}
        return MatchColumns(list(self._ids), list(self._patterns), contexts, list(self._priorities), self._set.state())

    def matching(self, message: str, context: dict[str, str] | None = None) -> list[int]:
        """Indices of all entries whose pattern occurs in ``message`` (and whose context
        constraints, if any, hold for ``context``), best first."""
        if not self.entries:
            return []
        hits = self._set.Match(message)
        if self._context_rules:
            ctx = context or {}
            hits = [h for h in hits if self._context_ok(h, ctx)]
        return sorted(hits, key=self._order)

    def _context_ok(self, index: int, context: dict[str, str]) -> bool:
        rules = self._context_rules.get(index)
        if not rules:
            return True
        return all(key in context and rx.search(context[key]) for key, rx in rules)

    def adopt_compiled(self, regexes: dict) -> None:
        """Take regexes already compiled elsewhere (pattern -> regex) instead of compiling
        them again on first use."""
        for index, pattern in enumerate(self._patterns):
            rx = regexes.get(pattern)
            if rx is not None and self._compiled[index] is None:
                self._compiled[index] = rx

    def compiled(self, index: int):
        rx = self._compiled[index]
        if rx is None:
            rx = self._compiled[index] = compile_pattern(self._patterns[index])
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
