"""The batch engine: the spine's answers for a million lines without a million spine calls.

A training log repeats a few hundred *shapes* (a line with its digits replaced by ``0``, and
the hex letters of ``0x`` pointers too) over and over. Everything the spine does before
choosing an answer is digit-closed (see ``digit_closure``): lines of one shape peel the same
prefixes at the same offsets, and hit the same KB patterns with their groups at the same spans,
unless a digit-sensitive pattern could match the shape (checked per line) or a line's pointer
values could change the decision (``pointer_blind`` proves per shape that they cannot; where it
cannot, each new value is checked once). So per shape the engine learns once, from the
first line, where the message, each context value and each field sit and which entry applies;
later lines of the shape cost slices and lookups.

Answers without fields come from ``Explainer.explain_many`` itself, cached by shape or by
message. Answers with fields are rebuilt from the entry (its texts filled from a JSON template
per present fields, ``HeadTemplate``), once per distinct field values. Lines the regex tier
cannot answer are sent to the spine in one batch per chunk, so the semantic tier embeds each
unknown template once (or, with ``defer_semantic``, are left to whoever merges the summaries). The first line of new shapes (all, or a sample) is compared with a full
``explain_many`` call; a shape whose fast answer differed is demoted to the slow path, counted
in ``mismatches``, and its chunk redone.
"""

from __future__ import annotations

import hashlib
import re
from collections import Counter
from dataclasses import dataclass, field
from typing import Any, Callable

import numpy as np
import orjson
import re2

from indexer.calibration import REGEX_CONFIDENCE
from indexer.catalog.records import pattern_tier
from indexer.derived import derived_map
from indexer.normalize import ANSI, CONTROL, MASKS, PREFIX_RULES, NormalizedLine, clean_text, mask_message, normalize_line
from indexer.patterns import FilteredSet, ShardedSet
from indexer.texts import DECODED_SUFFIX, OPTIONAL, PLACEHOLDER, decode_value, summary_text, text_names, verdict_values
from indexer.verdicts import used_names
from service.batch import shape_keys
from service.batch.digit_closure import ZERO_X_HAZARD, digit_closure, digit_hazard
from service.batch.pointer_blind import POINTER, marked, prefilter, probe
from service.batch.re_twin import python_twin
from service.batch.reader import Chunk
from service.batch.summary import Summary
from service.explainer import CONTRACT_KEYS  # one contract for every front-end
from service.presentation import SEVERITY_RANK

_SET_OPTIONS = re2.Options()
_SET_OPTIONS.max_mem = 1 << 30  # the whole KB and catalogue in one set (a budget, not an allocation)
_SET_OPTIONS.log_errors = False

_HEAD_KEYS = CONTRACT_KEYS[1:CONTRACT_KEYS.index("fields")]  # known .. action: between "line" and "fields"
_RANK = SEVERITY_RANK
_DIGIT = re.compile(r"\d")
_STR_SHAPE = str.maketrans("123456789", "000000000")
# Cache bounds: each cache is simply cleared when full (cheap, and a training log's working set
# is small), so memory stays flat however large the input.
SHAPE_LIMIT = 50_000
MESSAGE_LIMIT = 20_000
TEXTS_LIMIT = 20_000
RUNS_LIMIT = 4_096  # pointer values remembered per shape
REMEMBERED_LIMIT = 200_000  # field value sets remembered over all shapes
DEFER_CHARS = 2000  # longest line whose semantic answer may be deferred (embedding_text's cut)


class Answer:
    """One distinct answer (everything but the line and its context), shared by many lines.

    Lines of a shape whose KB entry has named groups share one ``Answer`` per distinct filled
    texts; their own fields travel beside it (``Annotated.fields``), so a million NCCL lines
    with a million comm pointers make a few answers per distinct texts, not a million. Such
    answers are born as JSON (``head``) and become a dict only if a writer asks for ``data``.
    """

    __slots__ = ("_data", "key", "template", "rank", "known", "role", "_uid", "_json", "head", "fields_json", "tail",
                 "deferred", "mark")

    def __init__(self, answer: dict, template: str | None, tail: bytes | None = None) -> None:
        self._data: dict | None = {k: answer[k] for k in CONTRACT_KEYS if k not in ("line", "context")}
        self.template = template
        self.known = answer["known"]
        self.role = answer["role"]
        # The summary groups known lines by entry and unknown ones by masked template.
        self.key = ("k", answer["pattern_id"]) if answer["known"] else ("u", template or "")
        self.rank = _RANK.get(answer["severity"], -1)
        self.head = orjson.dumps({k: answer[k] for k in _HEAD_KEYS})[1:-1]
        self.fields_json = orjson.dumps(answer["fields"])
        self.tail = tail if tail is not None else orjson.dumps(
            {"candidates": answer["candidates"], "source": answer["source"]})[1:-1]
        self._uid: bytes | None = None
        self._json: bytes | None = None
        self.deferred = False  # unknown, and the semantic tier is left to the summary's owner
        self.mark: Any = None  # a consumer's note on this answer (triage: what to read of its lines)

    @classmethod
    def per_line_fields(cls, head: bytes, pattern_id: str, severity: str, role: str, tail: bytes) -> "Answer":
        """A known answer whose fields vary by line (``head``: the encoded contract keys from
        known to action); its ``data["fields"]`` is empty, each line's fields are kept beside."""
        answer = cls.__new__(cls)
        answer._data = None
        answer.template = None
        answer.known = True
        answer.role = role
        answer.key = ("k", pattern_id)
        answer.rank = _RANK.get(severity, -1)
        answer.head = head
        answer.fields_json = b"{}"
        answer.tail = tail
        answer._uid = None
        answer._json = None
        answer.deferred = False
        answer.mark = None
        return answer

    @property
    def data(self) -> dict:
        """The contract keys but line and context (fields empty for per-line-fields answers)."""
        if self._data is None:
            self._data = orjson.loads(self.json)
        return self._data

    @property
    def json(self) -> bytes:
        """``data`` encoded (what writers embed), without building the dict."""
        if self._json is None:
            self._json = b"{%b,\"fields\":%b,%b}" % (self.head, self.fields_json, self.tail)
        return self._json

    @property
    def uid(self) -> bytes:
        """A digest of the answer, so writers can share one copy across chunks and workers."""
        if self._uid is None:
            self._uid = hashlib.blake2b(self.head + self.fields_json + self.tail, digest_size=12).digest()
        return self._uid

    def meta(self) -> dict:
        d = self.data
        return {"severity": d["severity"], "component": d["component"], "role": d["role"], "title": d["title"]}


class HeadTemplate:
    """An entry's encoded answer head (known .. action) with holes for field values.

    Which placeholders and ``[[optional]]`` segments appear depends only on which fields are
    present, so the texts are resolved and JSON-encoded once per (entry, present fields); a
    line's head is then its values (raw or decoded, JSON-escaped) joined between fixed byte
    pieces. The bytes equal ``orjson.dumps`` of the spine's ``fill_bilingual`` texts over
    ``field_values`` (the engine's verification and the tests compare them).
    """

    _HOLE = re.compile("\ue000(\\d+)\ue001".encode())

    def __init__(self, entry: Any, fields: tuple[str, ...], fired: tuple[int, ...] = ()) -> None:
        """``fields``: the present fields and computed values; ``fired``: the verdicts that fire."""
        decodable = {name for name in fields if name in entry.fields}
        present = set(fields) | {name + DECODED_SUFFIX for name in decodable}
        slots: list[tuple[str, int]] = []

        def resolve(text: str, lang: int) -> str:
            if "[[" in text:
                pieces = OPTIONAL.split(text)
                kept = [pieces[0]]
                for j in range(1, len(pieces), 2):
                    if all(name in present for name in PLACEHOLDER.findall(pieces[j])):
                        kept.append(pieces[j])
                    kept.append(pieces[j + 1])
                text = "".join(kept)
            parts = PLACEHOLDER.split(text)
            for j in range(1, len(parts), 2):
                if parts[j] in present:
                    slots.append((parts[j], lang))
                    parts[j] = f"\ue000{len(slots) - 1}\ue001"
                else:
                    parts[j] = f"<{parts[j]}>"
            return "".join(parts)

        def bilingual(text: Any) -> dict | None:
            return None if text is None else {"en": resolve(text.en, 0), "zh": resolve(text.zh, 1)}

        head = {
            "known": True, "confidence": round(REGEX_CONFIDENCE, 4), "pattern_id": entry.id, "tier": pattern_tier(entry),
            "component": entry.component.value, "severity": entry.severity.value, "role": entry.role.value,
            "title": bilingual(entry.title),
            "summary": bilingual(summary_text(entry, fired, set(fields))),
            "verdicts": [dict(when=entry.verdicts[i].when, **bilingual(entry.verdicts[i])) for i in fired],
            "explanation": bilingual(entry.explanation), "action": bilingual(entry.action),
        }
        self.pieces = self._HOLE.split(orjson.dumps(head)[1:-1])
        self.holes = []  # (piece index, field, its spec if the decoded value goes here, language)
        for j in range(1, len(self.pieces), 2):
            name, lang = slots[int(self.pieces[j])]
            if name in fields:
                self.holes.append((j, name, None, lang))
            else:
                field_name = name.removesuffix(DECODED_SUFFIX)
                self.holes.append((j, field_name, entry.fields[field_name], lang))

    def fill(self, fields: dict[str, str], decode: Callable[[Any, str], tuple[str, str] | None],
             escaped: dict[str, bytes]) -> bytes:
        """The head for these field values; ``escaped`` remembers JSON-escaped strings."""
        out = list(self.pieces)
        for j, name, spec, lang in self.holes:
            value = fields[name]
            if spec is not None:
                value = (decode(spec, value) or (value, value))[lang]
            piece = escaped.get(value)
            if piece is None:
                if len(escaped) >= TEXTS_LIMIT:
                    escaped.clear()
                piece = escaped[value] = orjson.dumps(value)[1:-1]
            out[j] = piece
        return b"".join(out)


# answer modes of a shape
FIXED = 0  # one answer for every line of the shape
BY_MESSAGE = 1  # answer depends on the message: cached per message
PENDING = 2  # one answer for the shape, not computed yet (unknown to the regex tier)
FIELDS = 3  # one KB entry for the shape, with named groups: fields (and texts) per line


@dataclass(eq=False)
class Shape:
    fast: bool  # message and context come from fixed slices (else: normalize_line per line)
    lead: int = 0
    end: int | None = None  # message = text[lead:end]
    ctx_items: tuple = ()  # (key, constant or None, start, end)
    ctx_const: dict | None = None  # the context when it has no per-line part
    mode: int = BY_MESSAGE
    answer: Answer | None = None
    template: str | None = None
    embedded: str | None = None  # the text the spine's semantic tier keys its answers by
    checked: bool = False
    # digit-specific KB entries that may match this shape, and which of them matched its first
    # line; a line with another outcome is answered by message, not by shape
    checks: tuple | None = None
    checks_context: bool = False
    # FIELDS: the winning entry, its constant candidates, and the fields its texts use (texts
    # are cached by those values: a comm pointer in the fields leaves the texts alone)
    entry: int = -1
    candidates: list | None = None
    used: tuple = ()
    sample: Answer | None = None  # FIELDS: one answer standing for the shape in summaries
    tail: bytes | None = None
    # pointers in the line: the stretch holding them, which of its values were checked (see
    # _runs_ok; None: no pointers), and what the check compares against
    runs_at: tuple = (0, 0)
    runs_ok: dict | None = None
    pointer_hits: frozenset = frozenset()
    spans: tuple | None = None  # FIELDS with a digit-closed entry: (group, start, end) in the line
    regs: tuple | None = None  # the first line's Match.regs of that entry, in the message
    values_at: tuple = (0, 0)  # the stretch of the line that holds every group
    by_values: dict | None = None  # FIELDS with spans: that stretch -> (answer, fields)
    ctx_build: Any = None  # text -> context, compiled from ctx_items
    ctx_json: Any = None  # text -> the context as JSON (what jsonl writes), compiled likewise


@dataclass
class Annotated:
    """One chunk's lines with their answers (and contexts, when asked for)."""

    chunk: Chunk
    texts: list[str]
    answers: list[Answer]
    contexts: list[dict | bytes] | None  # a dict, or (fast shapes) the same dict as JSON
    fields: list[dict | None]  # a line's own fields where its answer's vary by line, else None
    undecodable: list[int] = field(default_factory=list)  # lines whose bytes are not UTF-8
    summary: Summary = field(default_factory=Summary)
    messages: list[str] | None = None  # each line's message, when asked for
    shape_keys: list[bytes] | None = None  # the chunk's distinct shape keys (see shape_keys)
    key_ids: Any = None  # each line's index into shape_keys

    def record(self, i: int) -> dict:
        """Line ``i``'s answer as the spine's ``explain`` returns it (context when kept)."""
        record = dict(self.answers[i].data, line=self.texts[i])
        if self.fields[i] is not None:
            record["fields"] = self.fields[i]
        context = self.contexts[i] if self.contexts is not None else None
        record["context"] = orjson.loads(context) if isinstance(context, bytes) else context
        return {key: record[key] for key in CONTRACT_KEYS}


class Engine:
    """Annotate chunks with one ``Explainer``; one engine per process (it is not thread-safe)."""

    def __init__(self, explainer: Any, semantic: bool = True, verify: str = "sample", defer_semantic: bool = False) -> None:
        """``verify``: check the first line of each new shape against a full spine call
        ("all"), of the first 256 and then every 64th ("sample"), or never ("off").

        ``defer_semantic`` (summaries only): lines the regex tier cannot answer are counted
        per template in ``Summary.deferred`` instead of being embedded here, so ``-j`` workers
        do not each load the model; whoever merges the summaries asks the semantic tier once.
        Only lines of at most ``DEFER_CHARS`` are deferred: for those the embedded text is a
        function of the template, so one example answers for all.
        """
        self.explainer = explainer
        self.semantic = semantic
        self.defer_semantic = defer_semantic and semantic
        # the two bounds that decide the engine's memory on endless variety (see the constants)
        self.shape_limit = SHAPE_LIMIT
        self.remembered_limit = REMEMBERED_LIMIT
        self.verify = verify
        self.mismatches = 0
        self._learned = 0
        self._unchecked = 0  # learned shapes not yet compared with the spine
        self._remembered = 0
        self._shapes: dict[bytes, Shape] = {}
        # another engine of the same explainer in this process (at -j 1, the summary's engine for
        # triage's): the shapes it learned whose answers do not go through the semantic tier are
        # taken over instead of learned again (see ``_shape``)
        self.peer: Engine | None = None
        self._messages: dict[Any, Answer] = {}
        self._by_embedded: dict[str, Answer] = {}
        self._python_patterns: dict[int, Any] = {}  # entry index -> re twin, or False
        self._texts: dict[tuple, Answer] = {}  # (entry, used field values) -> shared answer
        self._verdict_reads: dict[int, tuple[str, ...]] = {}  # entry -> names its verdicts read
        self._verdict_memo: dict[tuple, tuple[dict, tuple]] = {}  # (entry, those values) -> verdict_values
        self._heads: dict[tuple, HeadTemplate] = {}  # (entry, present fields) -> template
        self._decoded: dict[tuple, tuple[str, str] | None] = {}  # (field spec, value) -> decoding
        self._escaped: dict[str, bytes] = {}  # field value -> its JSON string body
        self._field_answers: dict[tuple, tuple[Answer, dict]] = {}  # (entry, message) -> (answer, fields)
        # the patterns and context rules come from the pattern set, so the engine's analyses do
        # not unpickle every catalogue entry (only the entries lines actually hit are read)
        patterns, contexts = explainer.patterns.patterns_and_contexts()
        self._constraint_keys = tuple(sorted({k for rules in contexts.values() for k in rules}))
        self._normalize_ok = all(
            digit_closure(rx.pattern) == rx.pattern for rx in [ANSI, CONTROL] + [r for _, r in PREFIX_RULES]
        )
        # Lines with a non-zero digit before "x"+hex always take the slow path (the masks need
        # it, and it lets KB patterns' literal "0x" count as digit-closed: see digit_closure).
        self._hazard = _hazard([rx.pattern for rx, _ in MASKS])
        # Digit-specific KB entries (a literal digit, a class like [1-9], in the pattern or a
        # context rule): if the digit closure of the pattern can match a shape, lines of that
        # shape are checked one by one against the real pattern (one RE2 search), and a line
        # whose outcome differs from the shape's first line takes the per-message path.
        self._digit_specific: list[list[tuple[str, Any]]] = []  # context rules of each
        self._closures: list[str] = []
        self._guards = FilteredSet(_SET_OPTIONS)  # their digit closures, for shapes
        self._specific = FilteredSet(_SET_OPTIONS)  # the patterns themselves, for lines
        self._closed_entries: set[int] = set()  # digit-closed: same group spans on a whole shape
        self._specific_patterns: list[str] = []
        self._interiors: dict[int, Any] = {}  # digit-specific entry -> its digit-closed subset, or False
        closures = derived_map("closure", _zero_x_closure, list(patterns))
        for index, (pattern, closure) in enumerate(zip(patterns, closures)):
            rules = list(contexts.get(index, {}).items())
            if closure == pattern and all(digit_closure(rx, zero_x=True) == rx for _, rx in rules):
                self._closed_entries.add(index)
                continue
            self._closures.append(closure if closure is not None else "")  # "" matches every shape
            self._guards.Add(self._closures[-1], check=False)
            self._specific.Add(pattern, check=False)
            self._specific_patterns.append(pattern)
            self._digit_specific.append([(k, re2.compile(rx)) for k, rx in rules])
        # The digit-specific entries are numbered in entry order, curated ones first: a shape
        # whose first line a digit-closed curated entry answers needs only those (below).
        curated = explainer.curated_count
        self._curated_guards = FilteredSet(_SET_OPTIONS)
        for closure in self._closures[:sum(1 for i in range(curated) if i not in self._closed_entries)]:
            self._curated_guards.Add(closure, check=False)
        self._curated_guards.Compile()
        self._ruled = frozenset(i for i, rules in enumerate(self._digit_specific) if rules)  # with context rules
        self._subsets: dict[frozenset, Callable[[str], list[int]]] = {}  # relevant entries -> their small set
        if self._digit_specific:
            self._guards.Compile()
            self._specific.Compile()
        # For lines whose pointers differ from their shape's first line: every KB pattern and
        # every digit closure in one set, so one pass tells whether the decision could change
        # (a digit closure accepts all digits alike, so it may run on the raw message).
        self._pointer_patterns = list(patterns) + self._closures
        self._pointer_set = FilteredSet(_SET_OPTIONS)
        for pattern in self._pointer_patterns:
            self._pointer_set.Add(pattern, check=False)
        if patterns:
            self._pointer_set.Compile()
        self._blind_set: Any = None  # their pointer_blind prefilters, built on first need

    # ---- shapes -----------------------------------------------------------------------------
    def _shape(self, key: bytes, text: str) -> Shape:
        """The shape of a key not yet in this engine: the peer's, where its answers depend on the
        regex tier alone (no template for the embedding tier), else learned from ``text``."""
        peer = self.peer
        shape = peer._shapes.get(key) if peer is not None else None
        if shape is None or shape.template is not None or shape.mode == PENDING:
            return self._new_shape(key, text)
        if len(self._shapes) >= self.shape_limit:
            self._shapes.clear()
            self._remembered = self._unchecked = 0
        self._shapes[key] = shape  # kept here too: this engine's _forget bounds what it adds to it
        self._unchecked += not shape.checked  # verified by whichever engine annotates it first
        return shape

    def _new_shape(self, key: bytes, text: str) -> Shape:
        if len(self._shapes) >= self.shape_limit:
            self._shapes.clear()  # memory stays flat; shapes are relearned as they recur
            self._remembered = self._unchecked = 0
        normalized = normalize_line(text)
        shape = self._learn(text, normalized)
        if shape.runs_ok is not None and shape.template is None and self._pointer_blind(shape, normalized.message):
            shape.runs_ok = None  # no pointer value can change this shape's answer
        self._shapes[key] = shape
        self._learned += 1
        shape.checked = not self._should_verify()
        self._unchecked += not shape.checked
        return shape

    def _learn(self, text: str, normalized: NormalizedLine) -> Shape:
        """Everything about a shape that its first line can tell."""
        hits = self.explainer.regex_hits(normalized.message, normalized.context)
        # A digit-closed curated entry that matches this line matches every line of the shape;
        # curated entries outrank every record, so no record can change these lines' answers
        # or candidates: only curated digit-specific entries need watching.
        curated_only = bool(hits) and hits[0] < self.explainer.curated_count and hits[0] in self._closed_entries
        relevant = self._relevant(normalized.message, curated_only)
        shape = self._learn_normalization(text, normalized)
        if relevant:
            relevant = relevant - self._certain(relevant, normalized.message)
        if relevant:
            shape.checks = (relevant, self._outcomes(relevant, normalized.message, normalized.context))
            shape.checks_context = any(self._digit_specific[i] for i in relevant)
        if not shape.fast:
            return shape  # BY_MESSAGE
        runs = tuple(m.span() for m in _POINTER_TEXT.finditer(text))
        if runs and runs[0][0] < shape.lead:
            shape.fast = False  # a pointer inside the prefix: let the spine parse each line
            return shape
        if runs:
            # Lines of this shape may differ from this one in their pointers' letters, which
            # digit closure does not cover: each new set of pointer values is checked once.
            shape.runs_at = (runs[0][0], runs[-1][1])
            shape.runs_ok = {text[runs[0][0]:runs[-1][1]]: True}
            shape.pointer_hits = self._pointer_hits(normalized.message)
        if hits:
            if not self.explainer.patterns.group_names(hits[0]):
                answer = self.explainer.explain_many([text], semantic=False)[0]
                shape.mode, shape.answer = FIXED, Answer(answer, None)
            else:
                # Texts are filled per line (_values_answer); the shape keeps what does not
                # vary: candidates and source, as the spine's answer gives them.
                entry = self.explainer.entries[hits[0]]
                used = sorted(text_names(entry))
                shape.mode, shape.entry, shape.used = FIELDS, hits[0], tuple(used)
                shape.candidates = self.explainer.regex_candidates(hits)
                source = self.explainer.source(entry, normalized.message)
                shape.tail = orjson.dumps({"candidates": shape.candidates, "source": source})[1:-1]
                if hits[0] in self._closed_entries:
                    shape.regs = self._regs(hits[0], normalized.message)
                    if shape.regs is not None:
                        names = self._python_twin(hits[0]).groupindex
                        shape.spans = tuple(
                            (name, shape.lead + shape.regs[g][0], shape.lead + shape.regs[g][1])
                            for name, g in names.items() if shape.regs[g][0] >= 0
                        )
                        if shape.spans:
                            shape.values_at = (min(b for _, b, _ in shape.spans), max(e for _, _, e in shape.spans))
                        shape.by_values = {}
            return shape
        if not normalized.message:
            return shape
        template = mask_message(normalized.message)
        embedded = template[:512] if len(normalized.message) <= 2000 else mask_message(normalized.message[:2000])[:512]
        if _DIGIT.search(template) or _DIGIT.search(embedded):
            shape.runs_ok = None  # BY_MESSAGE: the spine answers each message itself
            return shape  # the template itself varies with the digits
        shape.template, shape.embedded = template, embedded
        known = self._by_embedded.get(embedded)
        if known is not None and known.template == template:
            shape.mode, shape.answer = FIXED, known  # the spine's answer is a function of this text
        else:
            shape.mode = PENDING
        return shape

    def _relevant(self, message: str, curated_only: bool = False) -> frozenset:
        """The digit-specific entries (only the curated ones, with ``curated_only``) whose digit
        closure matches this message's shape."""
        if not self._digit_specific:
            return frozenset()
        guards = self._curated_guards if curated_only else self._guards
        return frozenset(guards.Match(message.translate(_STR_SHAPE)) or ())

    def _certain(self, relevant: frozenset, message: str) -> frozenset:
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

    def _pointer_hits(self, message: str) -> frozenset:
        """Which KB patterns and digit closures occur in ``message`` (before context rules)."""
        return frozenset(self._pointer_set.Match(message) or ()) if self.explainer.entries else frozenset()

    def _pointer_blind(self, shape: Shape, message: str) -> bool:
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
                names = self._python_twin(index).groupindex
                if any(match.span(name) != shape.regs[g] for name, g in names.items()):  # type: ignore[union-attr, index]
                    return False
        return True

    def _runs_ok(self, shape: Shape, text: str, message: str) -> bool:
        """Whether a line whose pointers differ from its shape's first line still gets the same
        decision: same KB hits and digit closures, same unknown template, same group spans.
        Cached per stretch of the line holding the pointers (NCCL prints one pointer per rank
        and communicator, many times)."""
        stretch = text[shape.runs_at[0]:shape.runs_at[1]]
        ok = shape.runs_ok.get(stretch)  # type: ignore[union-attr]
        if ok is None:
            ok = (
                self._pointer_hits(message) == shape.pointer_hits
                and (shape.template is None or (len(message) <= 2000 and mask_message(message) == shape.template))
                and (shape.spans is None or self._regs(shape.entry, message) == shape.regs)
            )
            if len(shape.runs_ok) >= RUNS_LIMIT:  # type: ignore[arg-type]
                shape.runs_ok.clear()  # type: ignore[union-attr]
            shape.runs_ok[stretch] = ok  # type: ignore[index]
        return ok

    def _should_verify(self) -> bool:
        if self.verify == "all":
            return True
        if self.verify == "sample":
            return self._learned <= 256 or self._learned % 64 == 0
        return False

    def _learn_normalization(self, text: str, normalized: NormalizedLine) -> Shape:
        """Replay ``normalize_line`` on ``text`` recording spans; slices replace it later."""
        if not self._normalize_ok:
            return Shape(fast=False)
        stripped = text.strip()
        if clean_text(text) != stripped:
            return Shape(fast=False)  # ANSI codes or control bytes: let the spine clean each line
        offset = len(text) - len(text.lstrip())
        rest = stripped
        spans: dict[str, tuple[int, int]] = {}
        progress = True
        while progress and rest:
            progress = False
            for _, rule in PREFIX_RULES:
                match = rule.match(rest)
                if match and 0 < match.end() < len(rest):
                    for name in rule.groupindex:
                        if match.group(name) is not None:
                            start, end = match.span(name)
                            spans.setdefault(name, (offset + start, offset + end))
                    after = rest[match.end():]
                    rest = after.lstrip()
                    offset += match.end() + len(after) - len(rest)
                    progress = True
                    break
        trail = len(text) - len(text.rstrip())
        end = -trail if trail else None  # from the right: valid for lines of other lengths
        if text[offset:end] != normalized.message:
            return Shape(fast=False)
        items = []
        for key, value in normalized.context.items():
            if not _DIGIT.search(value):
                items.append((key, value, 0, 0))
                continue
            span = spans.get(key) or (spans.get("level2") if key == "level" else None)
            if span is None or text[span[0]:span[1]] != value:
                return Shape(fast=False)  # composed values (glog date + time): per line
            items.append((key, None, span[0], span[1]))
        const = {k: v for k, v, _, _ in items} if all(v is not None for _, v, _, _ in items) else None
        ctx_build, ctx_json = _context_builders(items)
        return Shape(fast=True, lead=offset, end=end, ctx_items=tuple(items), ctx_const=const,
                     ctx_build=ctx_build, ctx_json=ctx_json)

    # ---- answers ----------------------------------------------------------------------------
    def _message_key(self, message: str, context: dict) -> Any:
        if not self._constraint_keys:
            return message
        return (message,) + tuple(context.get(k) for k in self._constraint_keys)

    def _resolve(self, texts: list[str], templates: list[str | None]) -> list[Answer]:
        """Answers for distinct lines straight from the spine (one batch for the semantic tier)."""
        defer = [self.defer_semantic and len(text) <= DEFER_CHARS for text in texts]
        answers: list[dict] = [{}] * len(texts)
        for deferring in (False, True):
            chosen = [i for i, d in enumerate(defer) if d is deferring]
            if chosen:
                found = self.explainer.explain_many([texts[i] for i in chosen], semantic=self.semantic and not deferring)
                for i, a in zip(chosen, found):
                    answers[i] = a
        resolved = []
        for a, text, template, deferring in zip(answers, texts, templates, defer):
            answer = Answer(a, None if a["known"] else (template or self.explainer.template(text)))
            answer.deferred = deferring and not a["known"]
            resolved.append(answer)
        return resolved

    def _outcomes(self, relevant: frozenset, message: str, context: dict) -> frozenset:
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
            if all(k in context and rx.search(context[k]) is not None for k, rx in self._digit_specific[i])
        )

    def _regs(self, index: int, message: str) -> tuple | None:
        """Where entry ``index`` matches ``message`` and each of its groups sits (``re``'s
        ``Match.regs``); None when only RE2 can run the pattern."""
        compiled = self._python_twin(index)
        match = compiled.search(message) if compiled is not False else None
        return match.regs if match is not None else None

    def _python_twin(self, index: int) -> Any:
        compiled = self._python_patterns.get(index)
        if compiled is None:
            compiled = self._python_patterns[index] = python_twin(self.explainer.patterns.pattern_of(index))
        return compiled

    def _fields_answer(self, shape: Shape, message: str) -> tuple[Answer, dict]:
        """The spine's regex-tier answer for a line whose entry is known from its shape, as
        (shared answer, this line's fields): only the fields are read from the line; texts are
        filled once per distinct values of the fields they use, and fields are reused for
        repeated messages."""
        cache_key = (shape.entry, message)
        cached = self._field_answers.get(cache_key)
        if cached is not None:
            return cached
        compiled = self._python_twin(shape.entry)
        if compiled is False:
            fields = self.explainer.patterns.groups(shape.entry, message)
        else:
            match = compiled.search(message)
            fields = {k: v for k, v in match.groupdict().items() if v is not None} if match else {}
        if len(self._field_answers) >= MESSAGE_LIMIT:
            self._field_answers.clear()
        result = self._field_answers[cache_key] = (self._texts_answer(shape, fields), fields)
        return result

    def _values_answer(self, shape: Shape, text: str, stretch: str) -> tuple[Answer, dict]:
        """(answer, fields) for a FIELDS shape's group values, remembered on the shape: the
        same values recur (one NCCL channel line per rank and peer, printed again per comm)."""
        if self._remembered >= self.remembered_limit:
            self._forget()
        fields = {name: text[b:e] for name, b, e in shape.spans}  # type: ignore[union-attr]
        hit = shape.by_values[stretch] = (self._texts_answer(shape, fields), fields)  # type: ignore[index]
        self._remembered += 1
        return hit

    def _forget(self) -> None:
        """Drop every shape's remembered field values: memory stays flat on endless variety."""
        for shape in self._shapes.values():
            if shape.by_values is not None:
                shape.by_values.clear()
        self._remembered = 0

    def _texts_answer(self, shape: Shape, fields: dict) -> Answer:
        """The answer shared by lines of a FIELDS shape whose texts use the same values."""
        key = (shape.entry,) + tuple(map(fields.get, shape.used))
        answer = self._texts.get(key)
        if answer is None:
            entry = self.explainer.entries[shape.entry]
            if len(self._texts) >= TEXTS_LIMIT:
                self._texts.clear()
            extra, fired = self._verdicts(shape.entry, entry, fields)
            values = {**fields, **extra} if extra else fields
            present = tuple(name for name in shape.used if name in values) + tuple(n for n in extra if n not in shape.used)
            template = self._heads.get((shape.entry, present, fired))
            if template is None:
                template = self._heads[(shape.entry, present, fired)] = HeadTemplate(entry, present, fired)
            answer = self._texts[key] = Answer.per_line_fields(
                template.fill(values, self._decode, self._escaped), entry.id, entry.severity.value,
                entry.role.value, shape.tail,  # type: ignore[arg-type]
            )
        return answer

    def _verdicts(self, index: int, entry: Any, fields: dict) -> tuple[dict, tuple]:
        """``verdict_values``, remembered by the values of just the fields the entry's verdicts
        and computed values read: texts quote ranks and addresses that vary line by line, the
        conditions mostly read one or two fields that do not."""
        if not entry.compute and not entry.verdicts:
            return {}, ()
        reads = self._verdict_reads.get(index)
        if reads is None:
            reads = self._verdict_reads[index] = tuple(sorted(used_names(entry)))
        key = (index,) + tuple(map(fields.get, reads))
        found = self._verdict_memo.get(key)
        if found is None:
            if len(self._verdict_memo) >= TEXTS_LIMIT:
                self._verdict_memo.clear()
            found = self._verdict_memo[key] = verdict_values(entry, fields)
        return found

    def _decode(self, spec: Any, value: str) -> tuple[str, str] | None:
        """``decode_value``, remembered: bus ids and cpu masks recur on every rank's lines."""
        key = (id(spec), value)
        if key in self._decoded:
            return self._decoded[key]
        if len(self._decoded) >= TEXTS_LIMIT:
            self._decoded.clear()
        decoded = self._decoded[key] = decode_value(spec, value)
        return decoded

    def _settle(self, shape: Shape, answer: Answer) -> None:
        shape.mode, shape.answer = FIXED, answer
        if len(self._by_embedded) >= MESSAGE_LIMIT:
            self._by_embedded.clear()
        self._by_embedded[shape.embedded] = answer  # type: ignore[index]

    def annotate(self, chunk: Chunk, need_context: bool = True, context_dicts: bool = False,
                 keep_messages: bool = False) -> Annotated:
        """Every line's answer; contexts when ``need_context``: dicts, or for fast shapes JSON
        bytes unless ``context_dicts``; with ``keep_messages`` each line's message (the line
        without its prefixes) too. Triage asks for both."""
        lines = chunk.data.split(b"\n")
        distinct, _, first_of, _, key_ids, _ = shape_keys.tally(chunk.data)
        ids = memoryview(key_ids).cast("I")  # each line's index into distinct
        texts, undecodable, _ = _decode(chunk.data, lines)
        n = len(lines)
        answers: list[Answer | None] = [None] * n
        contexts: list[dict] | None = [None] * n if need_context else None  # type: ignore[list-item]
        line_fields: list[dict | None] = [None] * n
        messages: list[str] | None = [""] * n if keep_messages else None
        pending: dict[Any, list[int]] = {}  # cache key -> line indices waiting for the spine
        pending_text: dict[Any, str] = {}
        pending_target: dict[Any, Shape | None] = {}
        known_cache = self._messages
        shape_of = [self._shapes.get(key) for key in distinct]  # looked up once per distinct key
        constraint = bool(self._constraint_keys)
        hazards = self._hazard_lines(chunk.data)
        for i in range(n):
            text = texts[i]
            if i in hazards:
                shape = _SLOW
            else:
                shape = shape_of[ids[i]]
                if shape is None:
                    shape = shape_of[ids[i]] = self._shape(distinct[ids[i]], text)
            if shape.fast:
                message = text[shape.lead:shape.end]
                context = shape.ctx_const
                if need_context:  # as JSON straight from the slices; a dict only where needed
                    if context is None and context_dicts:
                        context = shape.ctx_build(text)
                    contexts[i] = context if context is not None else shape.ctx_json(text)  # type: ignore[index]
            else:
                normalized = normalize_line(text)
                message, context = normalized.message, normalized.context
                if need_context:
                    contexts[i] = context  # type: ignore[index]
            if messages is not None:
                messages[i] = message
            answer = shape.answer
            if shape.runs_ok is not None:
                ok = shape.runs_ok.get(text[shape.runs_at[0]:shape.runs_at[1]])
                if ok is None:
                    ok = self._runs_ok(shape, text, message)
                if not ok:
                    if context is None and constraint:
                        context = shape.ctx_build(text)  # the spine's cache key needs it
                    shape, answer = _SLOW, None  # this line's pointers change the decision
            if shape.checks is not None:
                if context is None and shape.checks_context:
                    context = shape.ctx_build(text)
                relevant, expected = shape.checks
                if self._outcomes(relevant, message, context or {}) != expected:
                    if context is None and constraint:
                        context = shape.ctx_build(text)  # the spine's cache key needs it
                    shape, answer = _SLOW, None  # this line's digits change the regex tier
            if answer is None and shape.mode == FIELDS:
                if shape.spans is not None:  # a digit-closed entry: its groups sit at fixed spans
                    stretch = text[shape.values_at[0]:shape.values_at[1]]  # equal stretch, equal groups
                    hit = shape.by_values.get(stretch)  # type: ignore[union-attr]
                    if hit is None:
                        hit = self._values_answer(shape, text, stretch)
                    answer, line_fields[i] = hit
                else:
                    answer, line_fields[i] = self._fields_answer(shape, message)
            if answer is None:
                if shape.mode == PENDING:
                    key: Any = shape
                else:
                    if constraint and context is None and shape.ctx_build is not None:
                        context = shape.ctx_build(text)
                    key = self._message_key(message, context or {}) if constraint else message
                    answer = known_cache.get(key)
                if answer is None:
                    waiting = pending.get(key)
                    if waiting is None:
                        pending[key] = [i]
                        pending_text[key] = text
                        pending_target[key] = shape if shape.mode == PENDING else None
                    else:
                        waiting.append(i)
                    continue
            answers[i] = answer
        if pending:
            keys = list(pending)
            resolved = self._resolve(
                [pending_text[k] for k in keys],
                [t.template if (t := pending_target[k]) is not None else None for k in keys],
            )
            if len(known_cache) + len(keys) > MESSAGE_LIMIT:
                known_cache.clear()
            for key, answer in zip(keys, resolved):
                target = pending_target[key]
                if target is not None:
                    self._settle(target, answer)
                else:
                    known_cache[key] = answer
                for i in pending[key]:
                    answers[i] = answer
        annotated = Annotated(chunk, texts, answers, contexts, line_fields, undecodable,  # type: ignore[arg-type]
                              messages=messages, shape_keys=distinct, key_ids=ids)
        if self.verify != "off" and self._unchecked:
            before = self.mismatches
            self._verify(annotated, distinct, first_of)
            if self.mismatches != before:
                # The demoted shapes now take the spine's path; redo the chunk so that no line
                # keeps an answer from the fast path that was just caught disagreeing.
                return self.annotate(chunk, need_context, context_dicts, keep_messages)
        annotated.summary = self._tally(chunk, texts, answers, undecodable)  # type: ignore[arg-type]
        return annotated

    def _hazard_lines(self, data: bytes) -> set[int]:
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

    def _verify(self, annotated: Annotated, keys: list[bytes], first_of: list[int]) -> None:
        """Compare the first line of each shape first seen in this chunk with the spine."""
        texts, contexts = annotated.texts, annotated.contexts
        for key, i in zip(keys, first_of):
            shape = self._shapes.get(key)
            if shape is None or shape.checked:
                continue
            shape.checked = True
            self._unchecked -= 1
            semantic = self.semantic and not annotated.answers[i].deferred  # its owner asks later
            expected = self.explainer.explain_many([texts[i]], semantic=semantic)[0]
            got = annotated.record(i)
            if contexts is None:
                got["context"] = expected["context"]
            if got != expected:
                self.mismatches += 1
                # Demote in place: every shape key sharing this object (siblings) goes slow too.
                shape.fast, shape.mode, shape.answer, shape.checks = False, BY_MESSAGE, None, None
                shape.runs_ok, shape.spans = None, None

    # ---- summaries --------------------------------------------------------------------------
    def _tally(self, chunk: Chunk, texts: list[str], answers: list[Answer], undecodable: list[int]) -> Summary:
        summary = Summary()
        summary.ensure_file(chunk.source, "")
        summary.lines_per_file[chunk.source] = chunk.n_lines
        counts = Counter(answers)
        last = dict(zip(answers, range(len(answers))))
        first = dict(zip(reversed(answers), range(len(answers) - 1, -1, -1)))
        # Answers of one entry (texts filled per line) are summed before reaching the summary.
        by_key: dict[tuple, list] = {}
        for answer, count in counts.items():  # in order of first appearance
            stat = by_key.get(answer.key)
            if stat is None:
                by_key[answer.key] = [answer, count, first[answer], last[answer]]
            else:
                stat[1] += count
                stat[3] = max(stat[3], last[answer])
        base = chunk.first_line
        for answer, count, first_i, last_i in by_key.values():
            _add(summary, chunk.source, answer, count, base + first_i, base + last_i, texts[first_i])
        _notes(summary, chunk, undecodable, texts)
        return summary

    def summarize(self, chunk: Chunk, counted: shape_keys.Tally | None = None) -> Summary:
        """The summary of a chunk without annotating each line.

        Lines are counted by shape in one native pass (``shape_keys.tally``, the GIL released;
        bytes methods and ``Counter`` where it was not built); Python then visits each
        distinct shape once (a few dozen per chunk however many lines): its answer stands for
        all its lines. Lines of shapes that digit-specific KB entries may split are checked per
        distinct message; only lines whose answer can differ within a shape otherwise
        (pointer-sensitive shapes, shapes the fast path cannot slice) are annotated one by one.
        ``counted``: the chunk's ``shape_keys.tally``, when the caller already has it.
        """
        data = chunk.data
        if self._hazard_lines(data):
            return self.annotate(chunk, need_context=False).summary
        keys, counts, first, last, ids, starts = counted or shape_keys.tally(data)
        lines: shape_keys.Lines | None = None

        def text_at(i: int) -> str:
            nonlocal lines
            if lines is None:
                lines = shape_keys.Lines(data, starts)
            return lines[i].decode("utf-8", "replace")

        tally: dict[Answer, list[int]] = {}  # answer -> [count, first, last] (chunk indices)
        per_line: list[int] = []  # key indices
        checked: dict[int, tuple[Shape, Answer]] = {}  # digit-specific entries may apply: per message
        waiting: dict[Shape, list[int]] = {}
        for k, key in enumerate(keys):
            shape = self._shapes.get(key)
            if shape is None:
                shape = self._new_shape(key, text_at(first[k]))
            if (not shape.fast or shape.mode == BY_MESSAGE or shape.runs_ok is not None
                    or (shape.checks is not None and (shape.checks_context or shape.mode == PENDING))):
                per_line.append(k)  # a digit-specific context rule or a pointer may split it, or no fixed slices
                continue
            answer = shape.answer
            if answer is None and shape.mode == FIELDS:
                # Fields vary, the entry does not: one answer stands for the shape's count.
                if shape.sample is None:
                    text = text_at(first[k])
                    shape.sample = self._fields_answer(shape, text[shape.lead:shape.end])[0]
                answer = shape.sample
            if answer is None:  # PENDING: unknown to the regex tier, resolved below in one batch
                waiting.setdefault(shape, []).append(k)
                continue
            if shape.checks is not None:
                checked[k] = (shape, answer)
                continue
            _count(tally, answer, counts[k], first[k], last[k])
        if waiting:
            shapes = list(waiting)
            resolved = self._resolve([text_at(first[waiting[s][0]]) for s in shapes], [s.template for s in shapes])
            for shape, answer in zip(shapes, resolved):
                self._settle(shape, answer)
                for k in waiting[shape]:
                    _count(tally, answer, counts[k], first[k], last[k])
        if per_line or checked:
            if lines is None:
                lines = shape_keys.Lines(data, starts)
            slow = self._check_lines(tally, np.frombuffer(ids, np.uint32), lines, per_line, checked)
            annotated = self.annotate(
                Chunk(chunk.source, 0, b"\n".join(lines[i] for i in slow), len(slow)), need_context=False
            )
            for i, answer in zip(slow, annotated.answers):
                _count(tally, answer, 1, i, i)
        summary = Summary()
        summary.ensure_file(chunk.source, "")
        summary.lines_per_file[chunk.source] = chunk.n_lines
        base = chunk.first_line
        for answer, (count, first_i, last_i) in sorted(tally.items(), key=lambda item: item[1][1]):
            example = text_at(first_i) if not answer.known else ""  # only unknown templates keep one
            _add(summary, chunk.source, answer, count, base + first_i, base + last_i, example)
        _notes(summary, chunk, _undecodable(data), None)
        return summary

    def _check_lines(self, tally: dict, ids: np.ndarray, lines: shape_keys.Lines, per_line: list[int],
                     checked: dict[int, tuple[Shape, Answer]]) -> list[int]:
        """Count the lines of ``checked`` shapes whose digit-specific entries match as on the
        shape's first line (one RE2 set pass per distinct message: NCCL repeats its messages on
        every rank); return the indices of the rest, and of ``per_line`` shapes, to annotate.
        ``ids`` holds each line's key index: a shape's lines are found by numpy compares."""
        slow = np.flatnonzero(np.isin(ids, per_line)).tolist() if per_line else []
        for k, (shape, answer) in checked.items():
            index = np.flatnonzero(ids == k).tolist()
            messages = [lines[i].decode("utf-8", "replace")[shape.lead:shape.end] for i in index]
            relevant, expected = shape.checks  # type: ignore[misc]
            ok = {m: self._outcomes(relevant, m, {}) == expected for m in set(messages)}
            if all(ok.values()):
                _count(tally, answer, len(index), index[0], index[-1])
                continue
            for i, message in zip(index, messages):
                if ok[message]:
                    _count(tally, answer, 1, i, i)
                else:
                    slow.append(i)
        slow.sort()
        return slow


FEW_RELEVANT = 16  # up to this many entries, a small set of just them beats a pass of the whole set
SUBSETS_LIMIT = 4096
_POINTER_TEXT = re.compile(r"0x[0-9a-f]{4,}")  # the pointers that shape keys fold
_SLOW = Shape(fast=False, mode=BY_MESSAGE, checked=True)
_ALWAYS = re.compile(b"")


_BUILDERS: dict[tuple, tuple[Any, Any]] = {}
BUILDERS_LIMIT = 4096


def _context_builders(items: list[tuple]) -> tuple[Any, Any]:
    """``(_context_builder, _context_json_builder)`` of these items, compiled once for every
    shape that has them: shapes of one log mostly share their prefixes' keys, constants and
    offsets, and compiling the two costs ~0.1 ms per shape (real logs learn a shape about every
    ten lines)."""
    key = tuple(items)
    built = _BUILDERS.get(key)
    if built is None:
        if len(_BUILDERS) >= BUILDERS_LIMIT:
            _BUILDERS.clear()
        built = _BUILDERS[key] = (_context_builder(items), _context_json_builder(items))
    return built


def _context_builder(items: list[tuple]) -> Any:
    """``text -> context`` for a shape: a dict display with constant keys and slice bounds,
    ~3x faster than a comprehension over the items. Every piece is a repr'd str or an int."""
    body = ", ".join(
        f"{key!r}: {const!r}" if const is not None else f"{key!r}: t[{b}:{e}]" for key, const, b, e in items
    )
    return eval(f"lambda t: {{{body}}}")  # noqa: S307 - built from repr() and ints only


def _context_json_builder(items: list[tuple]) -> Any:
    """``text -> orjson.dumps(context)`` without the dict: constant keys and values are encoded
    once into a %-format, each sliced value is encoded per line."""
    pieces, args = [], []
    for key, const, b, e in items:
        value = orjson.dumps(const).replace(b"%", b"%%") if const is not None else b"%b"
        pieces.append(orjson.dumps(key).replace(b"%", b"%%") + b":" + value)
        if const is None:
            args.append(f"d(t[{b}:{e}])")
    template = b"{" + b",".join(pieces) + b"}"
    return eval(f"lambda t, d=d: {template!r} % ({''.join(a + ', ' for a in args)})", {"d": orjson.dumps})  # noqa: S307


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
        self._set = ShardedSet(_SET_OPTIONS)

    def Compile(self) -> None:  # noqa: N802 - mirrors re2.Set
        self._unworded = list(self._words.by_words("")[1])
        for index in self._unworded:
            self._set.Add(self._text(index))
        self._set.Compile()

    def _text(self, index: int) -> str:
        text = self._texts[index]
        try:
            re2.Set.SearchSet(_SET_OPTIONS).Add(text)
        except re2.error:
            return ""  # a prefilter RE2 refuses matches everything: the rewrite decides
        return text

    def _check(self, index: int) -> Any:
        check = self._checks.get(index)
        if check is None:
            check = self._checks[index] = re2.Set.SearchSet(_SET_OPTIONS)
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


def _decode(data: bytes, lines: list[bytes]) -> tuple[list[str], list[int], str]:
    """Text of each line (and of the chunk); undecodable bytes become U+FFFD and are noted."""
    try:
        whole = data.decode("utf-8")
        return whole.split("\n"), [], whole
    except UnicodeDecodeError:
        pass
    texts, bad = [], []
    for i, raw in enumerate(lines):
        try:
            texts.append(raw.decode("utf-8"))
        except UnicodeDecodeError:
            texts.append(raw.decode("utf-8", "replace"))
            bad.append(i)
    return texts, bad, "\n".join(texts)


def _undecodable(data: bytes) -> list[int]:
    if data.isascii():  # the common case, ~20x faster than decoding to find out
        return []
    try:
        data.decode("utf-8")
        return []
    except UnicodeDecodeError:
        return _decode(data, data.split(b"\n"))[1]


def _count(tally: dict, answer: Answer, count: int, first: int, last: int) -> None:
    stat = tally.get(answer)
    if stat is None:
        tally[answer] = [count, first, last]
    else:
        stat[0] += count
        stat[1] = min(stat[1], first)
        stat[2] = max(stat[2], last)


def _add(summary: Summary, source: int, answer: Answer, count: int, first: int, last: int, example: str) -> None:
    if answer.deferred:
        summary.add_deferred(answer.template or "", count, (source, first), (source, last), example)
        return
    kind, key = answer.key
    if kind == "k":
        summary.add_known(key, count, (source, first), (source, last), answer.meta())
    else:
        summary.add_unknown(key, count, (source, first), (source, last), example)


def _notes(summary: Summary, chunk: Chunk, undecodable: list[int], texts: list[str] | None) -> None:
    base = chunk.first_line
    if undecodable:
        summary.add_note(chunk.source, "undecodable", base + undecodable[0], len(undecodable))
    if b"\0" in chunk.data:
        with_nul = [i for i, line in enumerate(chunk.data.split(b"\n")) if b"\0" in line]
        summary.add_note(chunk.source, "nul_bytes", base + with_nul[0], len(with_nul))
    if chunk.cut:
        summary.add_note(chunk.source, "long_line", base + min(chunk.cut), len(chunk.cut))
