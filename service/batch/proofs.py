"""What may a shape's first line decide for all its lines? The proofs, once per KB.

The batch engine answers a shape's lines from its first line (``shape_plan``). That is sound
because the normaliser is digit-closed and most KB patterns are; this module holds what the
engine needs for the rest, built once per explainer and shared by every engine of a process
(at ``-j 1`` the summary's and triage's):

- **digit-specific entries** (a literal digit, ``[1-9]``): their digit closures as one set
  (``relevant``: may one match this shape?), the patterns themselves for per-line checks
  (``outcomes``), and the subset of them that match every line of a shape (``certain``);
- **pointers** (``0x`` + hex, folded in shape keys): every pattern and closure as one set
  (``pointer_hits``), the per-shape proof that no pointer value can change the decision
  (``pointer_blind``) and, where it cannot be proven, a check per new pointer value
  (``runs_ok``);
- **hazards**: lines whose digits a mask rule treats apart from their shape-mates take the
  slow path (``hazard_lines``).
The regex analyses themselves live in ``digit_closure`` and ``pointer_blind``.
"""

from __future__ import annotations

import re
from typing import Any, Callable

import re2

from indexer.derived import derived_map
from indexer.normalize import ANSI, CONTROL, MASKS, PREFIX_RULES, mask_message
from indexer.patterns import FilteredSet, ShardedSet
from service.batch import shape_keys
from service.batch.digit_closure import ZERO_X_HAZARD, digit_closure, digit_hazard
from service.batch.pointer_blind import POINTER, marked, prefilter, probe
from service.batch.re_twin import python_twin
from service.batch.shape_plan import Shape

SET_OPTIONS = re2.Options()
SET_OPTIONS.max_mem = 1 << 30  # the whole KB and catalogue in one set (a budget, not an allocation)
SET_OPTIONS.log_errors = False

FEW_RELEVANT = 16  # up to this many entries, a small set of just them beats a pass of the whole set
SUBSETS_LIMIT = 4096
RUNS_LIMIT = 4_096  # pointer values remembered per shape
_STR_SHAPE = str.maketrans("123456789", "000000000")
_ALWAYS = re.compile(b"")


class ShapeProofs:
    """The KB-level analyses behind the shape cache; one per explainer (``of``)."""

    @classmethod
    def of(cls, explainer: Any) -> "ShapeProofs":
        """The explainer's proofs, built on first use: they depend on its patterns only."""
        proofs = getattr(explainer, "_shape_proofs", None)
        if proofs is None:
            proofs = cls(explainer)
            try:
                explainer._shape_proofs = proofs
            except AttributeError:  # an explainer that takes no attributes: not shared
                pass
        return proofs

    def __init__(self, explainer: Any) -> None:
        self.explainer = explainer
        self._python_patterns: dict[int, Any] = {}  # entry index -> re twin, or False
        patterns, contexts = explainer.patterns.patterns_and_contexts()
        self.constraint_keys = tuple(sorted({k for rules in contexts.values() for k in rules}))
        self.normalize_ok = all(
            digit_closure(rx.pattern) == rx.pattern for rx in [ANSI, CONTROL] + [r for _, r in PREFIX_RULES]
        )
        # Lines with a non-zero digit before "x"+hex always take the slow path (the masks need
        # it, and it lets KB patterns' literal "0x" count as digit-closed: see digit_closure).
        self._hazard = _hazard([rx.pattern for rx, _ in MASKS])
        # Digit-specific KB entries (a literal digit, a class like [1-9], in the pattern or a
        # context rule): if the digit closure of the pattern can match a shape, lines of that
        # shape are checked one by one against the real pattern (one RE2 search), and a line
        # whose outcome differs from the shape's first line takes the per-message path.
        self.digit_specific: list[list[tuple[str, Any]]] = []  # context rules of each
        self._closures: list[str] = []
        self._guards = FilteredSet(SET_OPTIONS)  # their digit closures, for shapes
        self._specific = FilteredSet(SET_OPTIONS)  # the patterns themselves, for lines
        self.closed_entries: set[int] = set()  # digit-closed: same group spans on a whole shape
        self._specific_patterns: list[str] = []
        self._interiors: dict[int, Any] = {}  # digit-specific entry -> its digit-closed subset, or False
        closures = derived_map("closure", _zero_x_closure, list(patterns))
        for index, (pattern, closure) in enumerate(zip(patterns, closures)):
            rules = list(contexts.get(index, {}).items())
            if closure == pattern and all(digit_closure(rx, zero_x=True) == rx for _, rx in rules):
                self.closed_entries.add(index)
                continue
            self._closures.append(closure if closure is not None else "")  # "" matches every shape
            self._guards.Add(self._closures[-1], check=False)
            self._specific.Add(pattern, check=False)
            self._specific_patterns.append(pattern)
            self.digit_specific.append([(k, re2.compile(rx)) for k, rx in rules])
        # The digit-specific entries are numbered in entry order, curated ones first: a shape
        # whose first line a digit-closed curated entry answers needs only those (below).
        curated = explainer.curated_count
        self._curated_guards = FilteredSet(SET_OPTIONS)
        for closure in self._closures[:sum(1 for i in range(curated) if i not in self.closed_entries)]:
            self._curated_guards.Add(closure, check=False)
        self._curated_guards.Compile()
        self._ruled = frozenset(i for i, rules in enumerate(self.digit_specific) if rules)  # with context rules
        self._subsets: dict[frozenset, Callable[[str], list[int]]] = {}  # relevant entries -> their small set
        if self.digit_specific:
            self._guards.Compile()
            self._specific.Compile()
        # For lines whose pointers differ from their shape's first line: every KB pattern and
        # every digit closure in one set, so one pass tells whether the decision could change
        # (a digit closure accepts all digits alike, so it may run on the raw message).
        self._pointer_patterns = list(patterns) + self._closures
        self._pointer_set = FilteredSet(SET_OPTIONS)
        for pattern in self._pointer_patterns:
            self._pointer_set.Add(pattern, check=False)
        if patterns:
            self._pointer_set.Compile()
        self._blind_set: Any = None  # their pointer_blind prefilters, built on first need
        self._format_checks: dict[str, Any] = {}  # linked record id -> source_stable's regexes


    def relevant(self, message: str, curated_only: bool = False) -> frozenset:
        """The digit-specific entries (only the curated ones, with ``curated_only``) whose digit
        closure matches this message's shape."""
        if not self.digit_specific:
            return frozenset()
        guards = self._curated_guards if curated_only else self._guards
        return frozenset(guards.Match(message.translate(_STR_SHAPE)) or ())

    def certain(self, relevant: frozenset, message: str) -> frozenset:
        """The ``relevant`` entries that match every line of this message's shape: their
        digit-closed subset (``digit_closure(interior=True)``: NCCL's optional ``0x`` before a
        bus id and its ``0`` for a null comm cannot take part) matches this message. Entries
        with context rules stay per line."""
        if len(relevant) > FEW_RELEVANT:
            return frozenset()
        certain = []
        for i in relevant:
            if i in self._ruled:
                continue
            interior = self._interiors.get(i)
            if interior is None:
                made = digit_closure(self._specific_patterns[i], zero_x=True, interior=True)
                try:
                    interior = re2.compile(made) if made is not None else False
                except re2.error:
                    interior = False
                self._interiors[i] = interior
            if interior is not False and interior.search(message) is not None:
                certain.append(i)
        return frozenset(certain)

    def source_stable(self, entry: Any, message: str) -> bool:
        """Whether every line of this message's shape names the same printing format as this
        one (``Explainer.source``: the first of the entry's linked records whose pattern
        matches, else the first linked). A digit-closed record matches all lines of a shape or
        none; a digit-specific one (``_v5`` against ``_v6``) is settled for the shape only if its
        digit-closed subset matches this message or its digit closure does not."""
        formats = entry.formats
        if len(formats) <= 1:
            return True
        for fid in formats:
            checks = self._format_checks.get(fid)
            if checks is None:
                checks = self._format_checks[fid] = self._format_check(fid)
            if checks is False:
                return False  # a linked record this analysis cannot read
            if checks == ():
                continue  # not in the KB: source() skips it too
            pattern, closure, interior = checks
            if pattern.search(message) is not None:
                return closure is pattern or (interior is not None and interior.search(message) is not None)
            if closure is not pattern and (closure is None or closure.search(message) is not None):
                return False  # another line of the shape may match it
        return True

    def _format_check(self, fid: str) -> Any:
        """(pattern, its digit closure or the pattern itself when closed, its digit-closed
        subset) of a linked record, compiled; () if there is no such record; False if unreadable."""
        record = self.explainer.kb.record_for(fid, [])
        if record is None:
            return ()
        try:
            pattern = re2.compile(record.pattern)
            closed = _zero_x_closure(record.pattern)
            if closed == record.pattern:
                return pattern, pattern, None
            interior = digit_closure(record.pattern, zero_x=True, interior=True)
            return (pattern, re2.compile(closed) if closed is not None else None,
                    re2.compile(interior) if interior is not None else None)
        except re2.error:
            return False

    def outcomes(self, relevant: frozenset, message: str, context: dict) -> frozenset:
        """Which of the ``relevant`` digit-specific entries match a line: one pass of a small set
        of just them when they are few (the usual case: NCCL's channel lines have six), else one
        pass of the whole set."""
        if len(relevant) <= FEW_RELEVANT:
            matcher = self._subsets.get(relevant)
            if matcher is None:
                if len(self._subsets) >= SUBSETS_LIMIT:
                    self._subsets.clear()
                matcher = self._subsets[relevant] = self._specific.subset(relevant)
            hits = matcher(message)
        else:
            hits = relevant.intersection(self._specific.Match(message) or ())
        ruled = self._ruled
        if not ruled or ruled.isdisjoint(hits):
            return frozenset(hits)
        return frozenset(
            i for i in hits
            if all(k in context and rx.search(context[k]) is not None for k, rx in self.digit_specific[i])
        )

    def pointer_hits(self, message: str) -> frozenset:
        """Which KB patterns and digit closures occur in ``message`` (before context rules)."""
        return frozenset(self._pointer_set.Match(message) or ()) if self.explainer.entries else frozenset()

    def pointer_blind(self, shape: Shape, message: str) -> bool:
        """Whether every line of the shape gets its first line's decision whatever its
        pointers (see ``pointer_blind``): same KB hits and digit closures, same group spans."""
        made = probe(message)
        if made is None:
            return False
        w, text = made
        if self._blind_set is None:
            self._blind_set = _prefilter_set(self._pointer_patterns, self._pointer_set)
        if self._blind_set is False:
            return False
        candidates = set(self._blind_set.Match(text) or ())
        if not shape.pointer_hits <= candidates:
            return False  # RE2 and the prefilter disagree: leave it to the per-value check
        for index in candidates:
            rewrite = marked(self._pointer_patterns[index], w)
            match = rewrite.match_on(text) if rewrite is not None else False
            if match is False or (match is not None) != (index in shape.pointer_hits):
                return False
            if index == shape.entry and shape.spans is not None:
                names = self.python_twin(index).groupindex
                if any(match.span(name) != shape.regs[g] for name, g in names.items()):  # type: ignore[union-attr, index]
                    return False
        return True

    def runs_ok(self, shape: Shape, text: str, message: str) -> bool:
        """Whether a line whose pointers differ from its shape's first line still gets the same
        decision: same KB hits and digit closures, same unknown template, same group spans.
        Cached per stretch of the line holding the pointers (NCCL prints one pointer per rank
        and communicator, many times)."""
        stretch = text[shape.runs_at[0]:shape.runs_at[1]]
        ok = shape.runs_ok.get(stretch)  # type: ignore[union-attr]
        if ok is None:
            ok = (
                self.pointer_hits(message) == shape.pointer_hits
                and (shape.template is None or (len(message) <= 2000 and mask_message(message) == shape.template))
                and (shape.spans is None or self.regs(shape.entry, message) == shape.regs)
            )
            if len(shape.runs_ok) >= RUNS_LIMIT:  # type: ignore[arg-type]
                shape.runs_ok.clear()  # type: ignore[union-attr]
            shape.runs_ok[stretch] = ok  # type: ignore[index]
        return ok

    def regs(self, index: int, message: str) -> tuple | None:
        """Where entry ``index`` matches ``message`` and each of its groups sits (``re``'s
        ``Match.regs``); None when only RE2 can run the pattern."""
        compiled = self.python_twin(index)
        match = compiled.search(message) if compiled is not False else None
        return match.regs if match is not None else None

    def python_twin(self, index: int) -> Any:
        compiled = self._python_patterns.get(index)
        if compiled is None:
            compiled = self._python_patterns[index] = python_twin(self.explainer.patterns.pattern_of(index))
        return compiled

    def hazard_lines(self, data: bytes) -> set[int]:
        """Lines whose digits a digit-specific mask rule could treat unlike their shape-mates,
        or with a non-zero digit before ``x`` and a hex digit (``ZERO_X_HAZARD``); they take
        the slow path and never teach a shape."""
        found: set[int] = set()
        if self._hazard is _ALWAYS:
            return set(range(data.count(b"\n") + 1))
        scans = [self._hazard] if self._hazard is not None else []
        if shape_keys.digit_before_x(data):
            scans.append(_ZERO_X)
        for scan in scans:
            for match in scan.finditer(data):
                found.add(data.count(b"\n", 0, match.start()))
        return found


_ZERO_X = re2.compile(ZERO_X_HAZARD.encode())
# A hazard that starts with ZERO_X_HAZARD's three atoms and has no alternation is found
# wherever ZERO_X_HAZARD is (the hex mask's own hazard is one).
_IMPLIED_BY_ZERO_X = re.compile(r"\(\?:\[123456789\]x\[0-9a-fA-F\][^|]*\)")


def _zero_x_closure(pattern: str) -> str | None:
    return digit_closure(pattern, zero_x=True)


def _pointer_prefilter(pattern: str) -> str | None:
    try:
        return prefilter(pattern)
    except re2.error:
        return None


class _BlindPrefilter:
    """Which KB patterns' ``pointer_blind.prefilter`` match a probe: ``re2.Set``'s contract
    for those prefilters, without compiling 30,000 of them.

    The prefilters put an alternative on every hex-capable atom, so they have no required words
    of their own and a set of them all cost ~4 s to build in every process. But a probe differs
    from its line only inside pointers (``0x`` and four or more hex digits), and no pattern
    requires a word that holds a pointer (checked here: such patterns are always tested), so a
    pattern's own required words are in every line of the shape it can match and in the probe
    alike. Candidates come from the pointer set's word buckets; each candidate's prefilter is
    compiled the first time it is one. Patterns without a required word share one sharded set.
    """

    def __init__(self, patterns: list[str], words: FilteredSet) -> None:
        self._texts = [t if t is not None else "" for t in derived_map("pointer-prefilter", _pointer_prefilter, patterns)]
        self._words = words
        required = words.state()[0]
        # a required word that can hold a pointer would be rewritten in the probe: always test
        self._always = [i for i, ws in enumerate(required) if any(POINTER.search(w) for w in ws)]
        self._checks: dict[int, Any] = {}
        self._unworded: list[int] = []
        self._set = ShardedSet(SET_OPTIONS)

    def Compile(self) -> None:  # noqa: N802 - mirrors re2.Set
        self._unworded = list(self._words.by_words("")[1])
        for index in self._unworded:
            self._set.Add(self._text(index))
        self._set.Compile()

    def _text(self, index: int) -> str:
        text = self._texts[index]
        try:
            re2.Set.SearchSet(SET_OPTIONS).Add(text)
        except re2.error:
            return ""  # a prefilter RE2 refuses matches everything: the rewrite decides
        return text

    def _check(self, index: int) -> Any:
        check = self._checks.get(index)
        if check is None:
            check = self._checks[index] = re2.Set.SearchSet(SET_OPTIONS)
            check.Add(self._text(index))
            check.Compile()
        return check

    def Match(self, text: str) -> list[int]:  # noqa: N802
        unworded = self._unworded
        hits = [unworded[h] for h in self._set.Match(text) or ()]
        worded, _ = self._words.by_words(text)
        for index in (*worded, *self._always):
            if self._check(index).Match(text):
                hits.append(index)
        return hits


def _prefilter_set(patterns: list[str], words: FilteredSet) -> Any:
    """The ``pointer_blind.prefilter`` of each pattern as one set (``_BlindPrefilter``), by
    index. False when it cannot be built: then no shape is proven pointer-blind, and every
    pointer value is checked."""
    found = _BlindPrefilter(patterns, words)
    try:
        found.Compile()
    except re2.error:
        return False
    return found


def _hazard(patterns: list[str]) -> Any:
    """One bytes regex over all digit-specific patterns' hazards (None: nothing to fear) but
    those that ``ZERO_X_HAZARD``, always scanned for, implies.

    Word-boundary assertions are dropped: the masks see a message whose neighbours may have
    been replaced already, so the hazard must not depend on them (dropping only widens it).
    """
    variants = []
    for pattern in patterns:
        hazard = digit_hazard(pattern)
        if hazard == "":
            return _ALWAYS
        if hazard and not _IMPLIED_BY_ZERO_X.fullmatch(hazard.replace("\\b", "")):
            variants.append(hazard.replace("\\b", ""))
    if not variants:
        return None
    joined = "|".join(variants).encode()
    try:
        return re2.compile(joined)  # a DFA scan: ~10x faster than re over a whole chunk
    except Exception:
        try:
            return re.compile(joined)
        except re.error:
            return _ALWAYS
