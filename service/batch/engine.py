"""The batch engine: the spine's answers for a million lines without a million spine calls.

A training log repeats a few hundred *shapes* (a line with its digits replaced by ``0``) over
and over. Everything the spine does before choosing an answer is digit-closed (see
``digit_closure``): lines of one shape peel the same prefixes at the same offsets, and hit the
same KB patterns unless a digit-sensitive pattern could match the shape. So per shape the
engine learns once, from the first line, where the message and each context value sit and
which answer applies; later lines of the shape cost a slice, a dict build and a lookup.

Answers come from ``Explainer.explain_many`` itself (never rebuilt here), cached by shape when
they cannot vary within it, else by message. Lines the regex tier cannot answer are sent to the
spine in one batch per chunk, so the semantic tier embeds each unknown template once. The
first line of every new shape is checked against a full ``explain_many`` call; a shape whose
fast answer differed is demoted to the slow path and counted in ``mismatches``.
"""

from __future__ import annotations

import hashlib
import re
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

import orjson

from indexer.calibration import REGEX_CONFIDENCE
from indexer.normalize import ANSI, CONTROL, MASKS, PREFIX_RULES, NormalizedLine, clean_text, mask_message, normalize_line
from indexer.texts import DECODED_SUFFIX, field_values, fill_bilingual, placeholders
from service.batch.digit_closure import ZERO_X_HAZARD, digit_closure, digit_hazard, line_shape
from service.batch.reader import Chunk
from service.batch.summary import Summary

CONTRACT_KEYS = (
    "line", "known", "confidence", "pattern_id", "tier", "component", "severity", "role",
    "title", "explanation", "action", "fields", "context", "candidates",
)
_MID_KEYS = CONTRACT_KEYS[1:12]
_RANK = {"info": 0, "warning": 1, "error": 2, "fatal": 3}  # known .. fields: what comes between "line" and "context"
_DIGIT = re.compile(r"\d")
_STR_SHAPE = str.maketrans("123456789", "000000000")
# Cache bounds: each cache is simply cleared when full (cheap, and a training log's working set
# is small), so memory stays flat however large the input.
SHAPE_LIMIT = 50_000
MESSAGE_LIMIT = 20_000
TEXTS_LIMIT = 20_000


class Answer:
    """One distinct answer (everything but the line and its context), shared by many lines."""

    __slots__ = ("data", "key", "template", "rank", "_uid", "mid", "tail")

    def __init__(self, answer: dict, template: str | None, tail: bytes | None = None) -> None:
        self.data = {k: answer[k] for k in CONTRACT_KEYS if k not in ("line", "context")}
        self.template = template
        # The summary groups known lines by entry and unknown ones by masked template.
        self.key = ("k", answer["pattern_id"]) if answer["known"] else ("u", template or "")
        self.rank = _RANK.get(answer["severity"], -1)
        self.mid = orjson.dumps({k: answer[k] for k in _MID_KEYS})[1:-1]
        self.tail = tail if tail is not None else orjson.dumps({"candidates": answer["candidates"]})[1:-1]
        self._uid: bytes | None = None

    @classmethod
    def from_parts(cls, mid: dict, candidates: list, tail: bytes) -> "Answer":
        """A known answer from its parts (``mid``: the contract keys from known to fields)."""
        answer = cls.__new__(cls)
        answer.data = dict(mid, candidates=candidates)
        answer.template = None
        answer.key = ("k", mid["pattern_id"])
        answer.rank = _RANK.get(mid["severity"], -1)
        answer.mid = orjson.dumps(mid)[1:-1]
        answer.tail = tail
        answer._uid = None
        return answer

    @property
    def uid(self) -> bytes:
        """A digest of the answer, so writers can share one copy across chunks and workers."""
        if self._uid is None:
            self._uid = hashlib.blake2b(self.mid + self.tail, digest_size=12).digest()
        return self._uid

    @property
    def known(self) -> bool:
        return self.data["known"]

    def meta(self) -> dict:
        d = self.data
        return {"severity": d["severity"], "component": d["component"], "role": d["role"], "title": d["title"]}


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
    hits: list | None = None  # the regex tier's hits on the first line (for siblings)
    sample: Answer | None = None  # FIELDS: one answer standing for the shape in summaries
    tail: bytes | None = None


@dataclass
class Annotated:
    """One chunk's lines with their answers (and contexts, when asked for)."""

    chunk: Chunk
    texts: list[str]
    answers: list[Answer]
    contexts: list[dict] | None
    undecodable: list[int] = field(default_factory=list)  # lines whose bytes are not UTF-8
    summary: Summary = field(default_factory=Summary)


class Engine:
    """Annotate chunks with one ``Explainer``; one engine per process (it is not thread-safe)."""

    def __init__(self, explainer: Any, semantic: bool = True, verify: str = "sample") -> None:
        """``verify``: check the first line of each new shape against a full spine call
        ("all"), of the first 256 and then every 64th ("sample"), or never ("off")."""
        self.explainer = explainer
        self.semantic = semantic
        self.verify = verify
        self.mismatches = 0
        self._learned = 0
        self._shapes: dict[bytes, Shape] = {}
        self._siblings: dict[bytes, Shape] = {}  # shape with 0x pointers folded -> learned shape
        self._messages: dict[Any, Answer] = {}
        self._by_embedded: dict[str, Answer] = {}
        self._python_patterns: dict[int, Any] = {}  # entry index -> re twin, or False
        self._texts: dict[tuple, tuple] = {}  # (entry, used field values) -> filled texts
        self._field_answers: dict[tuple, Answer] = {}  # (entry, message) -> answer
        self._constraint_keys = tuple(sorted({k for e in explainer.entries for k in e.context}))
        self._normalize_ok = all(
            digit_closure(rx.pattern) == rx.pattern for rx in [ANSI, CONTROL] + [r for _, r in PREFIX_RULES]
        )
        # Lines with a non-zero digit before "x"+hex always take the slow path (the masks need
        # it, and it lets KB patterns' literal "0x" count as digit-closed: see digit_closure).
        self._hazard = _hazard([rx.pattern for rx, _ in MASKS], extra=[ZERO_X_HAZARD])
        # Digit-specific KB entries (a literal digit, a class like [1-9], in the pattern or a
        # context rule): if the digit closure of the pattern can match a shape, lines of that
        # shape are checked one by one against the real pattern (one RE2 search), and a line
        # whose outcome differs from the shape's first line takes the per-message path.
        import re2

        self._digit_specific: list[list[tuple[str, Any]]] = []  # context rules of each
        self._guards = re2.Set.SearchSet(re2.Options())  # their digit closures, for shapes
        self._specific = re2.Set.SearchSet(re2.Options())  # the patterns themselves, for lines
        for entry in explainer.entries:
            rules = list(entry.context.items())
            if all(digit_closure(rx, zero_x=True) == rx for rx in [entry.pattern] + [rx for _, rx in rules]):
                continue
            closure = digit_closure(entry.pattern, zero_x=True)
            self._guards.Add(closure if closure is not None else "")  # "" matches every shape
            self._specific.Add(entry.pattern)
            self._digit_specific.append([(k, re2.compile(rx)) for k, rx in rules])
        if self._digit_specific:
            self._guards.Compile()
            self._specific.Compile()

    # ---- shapes -----------------------------------------------------------------------------
    def _new_shape(self, key: bytes, text: str) -> Shape:
        if len(self._shapes) >= SHAPE_LIMIT:
            self._shapes.clear()  # memory stays flat; shapes are relearned as they recur
            self._siblings.clear()
        normalized = normalize_line(text)
        shaped = normalized.message.translate(_STR_SHAPE)
        relevant = frozenset((self._guards.Match(shaped) or []) if self._digit_specific else [])
        folded = _POINTER.sub(b"0x", key)
        sibling = self._siblings.get(folded)
        if sibling is not None and not relevant and self._same_decision(sibling, text, normalized):
            self._shapes[key] = sibling
            return sibling
        shape = self._learn_normalization(text, normalized)
        self._shapes[key] = shape
        self._learned += 1
        shape.checked = not self._should_verify()
        if shape.fast and not relevant:
            self._siblings[folded] = shape
        if relevant:
            shape.checks = (relevant, self._outcomes(relevant, normalized.message, normalized.context))
            shape.checks_context = any(self._digit_specific[i] for i in relevant)
        if not shape.fast:
            return shape  # BY_MESSAGE
        hits = self.explainer.patterns.matching(normalized.message, normalized.context)
        shape.hits = hits
        if hits:
            answer = self.explainer.explain_many([text], semantic=False)[0]
            if not self.explainer.patterns.group_names(hits[0]):
                shape.mode, shape.answer = FIXED, Answer(answer, None)
            else:
                entry = self.explainer.entries[hits[0]]
                texts = [t for b in (entry.title, entry.explanation, entry.action) if b for t in (b.en, b.zh)]
                used = sorted({name.removesuffix(DECODED_SUFFIX) for t in texts for name in placeholders(t)})
                shape.mode, shape.entry, shape.used = FIELDS, hits[0], tuple(used)
                shape.candidates = answer["candidates"]
                shape.tail = Answer(answer, None).tail
            return shape
        if not normalized.message:
            return shape
        template = mask_message(normalized.message)
        embedded = template[:512] if len(normalized.message) <= 2000 else mask_message(normalized.message[:2000])[:512]
        if _DIGIT.search(template) or _DIGIT.search(embedded):
            return shape  # the template itself varies with the digits
        shape.template, shape.embedded = template, embedded
        known = self._by_embedded.get(embedded)
        if known is not None and known.template == template:
            shape.mode, shape.answer = FIXED, known  # the spine's answer is a function of this text
        else:
            shape.mode = PENDING
        return shape

    def _same_decision(self, sibling: Shape, text: str, normalized: NormalizedLine) -> bool:
        """Whether a shape that differs from ``sibling`` only inside ``0x`` pointers (NCCL
        prints a fresh one per rank and communicator) can share everything it learned: same
        slices give the spine's message and context, same KB hits, same unknown template."""
        if not sibling.fast or sibling.mode == BY_MESSAGE or sibling.checks is not None:
            return False
        if text[sibling.lead:sibling.end] != normalized.message:
            return False
        context = sibling.ctx_const
        if context is None:
            context = {k: (c if c is not None else text[b:e]) for k, c, b, e in sibling.ctx_items}
        if context != normalized.context or list(context) != list(normalized.context):
            return False
        if self.explainer.patterns.matching(normalized.message, normalized.context) != sibling.hits:
            return False
        if sibling.template is not None:  # unknown to the regex tier: the template must agree
            return mask_message(normalized.message) == sibling.template and len(normalized.message) <= 2000
        return True

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
        return Shape(fast=True, lead=offset, end=end, ctx_items=tuple(items), ctx_const=const)

    # ---- answers ----------------------------------------------------------------------------
    def _message_key(self, message: str, context: dict) -> Any:
        if not self._constraint_keys:
            return message
        return (message,) + tuple(context.get(k) for k in self._constraint_keys)

    def _resolve(self, texts: list[str], templates: list[str | None]) -> list[Answer]:
        """Answers for distinct lines straight from the spine (one batch for the semantic tier)."""
        answers = self.explainer.explain_many(texts, semantic=self.semantic)
        return [
            Answer(a, None if a["known"] else (template or self.explainer.template(text)))
            for a, text, template in zip(answers, texts, templates)
        ]

    def _outcomes(self, relevant: frozenset, message: str, context: dict) -> frozenset:
        """Which of the ``relevant`` digit-specific entries match a line (one RE2 set pass)."""
        hits = relevant.intersection(self._specific.Match(message) or ())
        return frozenset(
            i for i in hits
            if all(k in context and rx.search(context[k]) is not None for k, rx in self._digit_specific[i])
        )

    def _fields_answer(self, shape: Shape, message: str) -> Answer:
        """The spine's regex-tier answer for a line whose entry is known from its shape: only
        the fields are read from the line; texts are filled once per distinct used values,
        and whole answers are reused for repeated messages."""
        cache_key = (shape.entry, message)
        cached = self._field_answers.get(cache_key)
        if cached is not None:
            return cached
        entry = self.explainer.entries[shape.entry]
        compiled = self._python_patterns.get(shape.entry)
        if compiled is None:
            compiled = self._python_patterns[shape.entry] = _python_twin(entry.pattern)
        if compiled is False:
            fields = self.explainer.patterns.groups(shape.entry, message)
        else:
            match = compiled.search(message)
            fields = {k: v for k, v in match.groupdict().items() if v is not None} if match else {}
        key = (shape.entry,) + tuple(map(fields.get, shape.used))
        texts = self._texts.get(key)
        if texts is None:
            if len(self._texts) >= TEXTS_LIMIT:
                self._texts.clear()
            values = field_values(entry, {k: v for k, v in fields.items() if k in shape.used})
            texts = self._texts[key] = tuple(
                fill_bilingual(text, values) for text in (entry.title, entry.explanation, entry.action)
            )
        mid = {
            "known": True, "confidence": round(REGEX_CONFIDENCE, 4), "pattern_id": entry.id, "tier": "regex",
            "component": entry.component.value, "severity": entry.severity.value, "role": entry.role.value,
            "title": texts[0], "explanation": texts[1], "action": texts[2], "fields": fields,
        }
        answer = Answer.from_parts(mid, shape.candidates, shape.tail)  # type: ignore[arg-type]
        if len(self._field_answers) >= MESSAGE_LIMIT:
            self._field_answers.clear()
        self._field_answers[cache_key] = answer
        return answer

    def _settle(self, shape: Shape, answer: Answer) -> None:
        shape.mode, shape.answer = FIXED, answer
        if len(self._by_embedded) >= MESSAGE_LIMIT:
            self._by_embedded.clear()
        self._by_embedded[shape.embedded] = answer  # type: ignore[index]

    def annotate(self, chunk: Chunk, need_context: bool = True) -> Annotated:
        lines = chunk.data.split(b"\n")
        shapes = line_shape(chunk.data).split(b"\n")
        texts, undecodable, _ = _decode(chunk.data, lines)
        n = len(lines)
        answers: list[Answer | None] = [None] * n
        contexts: list[dict] | None = [None] * n if need_context else None  # type: ignore[list-item]
        pending: dict[Any, list[int]] = {}  # cache key -> line indices waiting for the spine
        pending_text: dict[Any, str] = {}
        pending_target: dict[Any, Shape | None] = {}
        known_cache = self._messages
        shape_cache = self._shapes
        constraint = bool(self._constraint_keys)
        hazards = self._hazard_lines(chunk.data)
        for i in range(n):
            text = texts[i]
            shape = _SLOW if i in hazards else shape_cache.get(shapes[i])
            if shape is None:
                shape = self._new_shape(shapes[i], text)
            if shape.fast:
                message = text[shape.lead:shape.end]
                context = shape.ctx_const
                if context is None and (need_context or constraint):
                    context = {k: (c if c is not None else text[b:e]) for k, c, b, e in shape.ctx_items}
            else:
                normalized = normalize_line(text)
                message, context = normalized.message, normalized.context
            if need_context:
                contexts[i] = context if context is not None else {}  # type: ignore[index]
            answer = shape.answer
            if shape.checks is not None:
                if context is None and shape.checks_context:
                    context = {k: (c if c is not None else text[b:e]) for k, c, b, e in shape.ctx_items}
                relevant, expected = shape.checks
                if self._outcomes(relevant, message, context or {}) != expected:
                    shape, answer = _SLOW, None  # this line's digits change the regex tier
            if answer is None and shape.mode == FIELDS:
                answer = self._fields_answer(shape, message)
            if answer is None:
                if shape.mode == PENDING:
                    key: Any = shape
                else:
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
        if self.verify != "off":
            before = self.mismatches
            self._verify(texts, shapes, answers, contexts)
            if self.mismatches != before:
                # The demoted shapes now take the spine's path; redo the chunk so that no line
                # keeps an answer from the fast path that was just caught disagreeing.
                return self.annotate(chunk, need_context)
        annotated = Annotated(chunk, texts, answers, contexts, undecodable)  # type: ignore[arg-type]
        annotated.summary = self._tally(chunk, texts, answers, undecodable)  # type: ignore[arg-type]
        return annotated

    def _settle_checked(self, summary: Summary, chunk: Chunk, index: list[int], shape_list: list[bytes], text_at) -> list[int]:
        """Count lines of shapes with digit checks whose outcome matches their shape's first
        line (one RE2 set pass each, no annotation); return the lines that still need one."""
        rest: list[int] = []
        groups: dict[Shape, list[int]] = {}
        for i in index:
            shape = self._shapes.get(shape_list[i])
            if shape is None or not shape.fast or shape.checks is None or shape.checks_context or shape.mode == BY_MESSAGE:
                rest.append(i)
                continue
            text = text_at(i)
            relevant, expected = shape.checks
            if self._outcomes(relevant, text[shape.lead:shape.end], {}) != expected:
                rest.append(i)
                continue
            groups.setdefault(shape, []).append(i)
        base = chunk.first_line
        for shape, members in groups.items():
            first, last = members[0], members[-1]
            if shape.answer is None and shape.mode == PENDING:
                rest.extend(members)  # not resolved yet: let annotate do it (rare, once)
                continue
            if shape.answer is None and shape.sample is None:
                shape.sample = self._fields_answer(shape, text_at(first)[shape.lead:shape.end])
            sample = shape.answer or shape.sample
            _add(summary, chunk.source, sample, len(members), base + first, base + last, text_at(first))
        rest.sort()
        return rest

    def _hazard_lines(self, data: bytes) -> set[int]:
        """Lines whose digits a digit-specific mask rule could treat unlike their shape-mates;
        they take the slow path and never teach a shape."""
        found: set[int] = set()
        if self._hazard is _ALWAYS:
            return set(range(data.count(b"\n") + 1))
        if self._hazard is not None:
            for match in self._hazard.finditer(data):
                found.add(data.count(b"\n", 0, match.start()))
        return found

    def _verify(self, texts: list[str], shapes: list[bytes], answers: list, contexts: list | None) -> None:
        """Compare the first line of each shape first seen in this chunk with the spine."""
        seen: set[bytes] = set()
        for i, key in enumerate(shapes):
            shape = self._shapes.get(key)
            if shape is None or shape.checked or key in seen:
                continue
            seen.add(key)
            shape.checked = True
            expected = self.explainer.explain_many([texts[i]], semantic=self.semantic)[0]
            got = dict(answers[i].data, line=texts[i])
            got["context"] = contexts[i] if contexts is not None else expected["context"]
            if got != expected:
                self.mismatches += 1
                # Demote in place: every shape key sharing this object (siblings) goes slow too.
                shape.fast, shape.mode, shape.answer, shape.checks = False, BY_MESSAGE, None, None

    # ---- summaries --------------------------------------------------------------------------
    def _tally(self, chunk: Chunk, texts: list[str], answers: list[Answer], undecodable: list[int]) -> Summary:
        summary = Summary()
        summary.ensure_file(chunk.source, "")
        summary.lines_per_file[chunk.source] = chunk.n_lines
        counts = Counter(answers)
        last = dict(zip(answers, range(len(answers))))
        first = dict(zip(reversed(answers), range(len(answers) - 1, -1, -1)))
        base = chunk.first_line
        for answer, count in counts.items():
            _add(summary, chunk.source, answer, count, base + first[answer], base + last[answer], texts[first[answer]])
        _notes(summary, chunk, undecodable, texts)
        return summary

    def summarize(self, chunk: Chunk) -> Summary:
        """The summary of a chunk without annotating each line: shapes are counted in bulk, and
        only lines whose answer can differ within their shape are looked at one by one."""
        data = chunk.data
        if self._hazard_lines(data):
            return self.annotate(chunk, need_context=False).summary
        shape_list = line_shape(data).split(b"\n")
        counts = Counter(shape_list)
        n = len(shape_list)
        last = dict(zip(shape_list, range(n)))
        first = dict(zip(reversed(shape_list), range(n - 1, -1, -1)))
        lines: list[bytes] | None = None
        texts_cache: dict[int, str] = {}
        summary = Summary()
        summary.ensure_file(chunk.source, "")
        summary.lines_per_file[chunk.source] = chunk.n_lines
        base = chunk.first_line
        per_line: set[bytes] = set()
        waiting: dict[Shape, list[bytes]] = {}

        def text_at(i: int) -> str:
            nonlocal lines
            if i not in texts_cache:
                if lines is None:
                    lines = data.split(b"\n")
                texts_cache[i] = lines[i].decode("utf-8", "replace")
            return texts_cache[i]

        for key, count in counts.items():
            shape = self._shapes.get(key)
            if shape is None:
                shape = self._new_shape(key, text_at(first[key]))
            if shape.checks is not None or not shape.fast:
                per_line.add(key)  # a digit-specific pattern may split this shape
            elif shape.answer is not None:
                _add(summary, chunk.source, shape.answer, count, base + first[key], base + last[key], text_at(first[key]))
            elif shape.mode == FIELDS:
                # Fields vary, the entry does not: one answer stands for the shape's count.
                if shape.sample is None:
                    shape.sample = self._fields_answer(shape, text_at(first[key])[shape.lead:shape.end])
                sample = shape.sample
                _add(summary, chunk.source, sample, count, base + first[key], base + last[key], text_at(first[key]))
            elif shape.mode == PENDING:
                waiting.setdefault(shape, []).append(key)
            else:
                per_line.add(key)
        if waiting:
            shapes = list(waiting)
            resolved = self._resolve([text_at(first[waiting[s][0]]) for s in shapes], [s.template for s in shapes])
            for shape, answer in zip(shapes, resolved):
                self._settle(shape, answer)
                for key in waiting[shape]:
                    _add(summary, chunk.source, answer, counts[key], base + first[key], base + last[key], text_at(first[key]))
        if per_line:
            if lines is None:
                lines = data.split(b"\n")
            index = [i for i, key in enumerate(shape_list) if key in per_line]
            index = self._settle_checked(summary, chunk, index, shape_list, text_at)
        if per_line and index:
            annotated = self.annotate(
                Chunk(chunk.source, 0, b"\n".join(lines[i] for i in index), len(index)), need_context=False
            )
            answers = annotated.answers
            counts_a = Counter(answers)
            last_a = dict(zip(answers, index))
            first_a = dict(zip(reversed(answers), reversed(index)))
            for answer, count in counts_a.items():
                _add(summary, chunk.source, answer, count, base + first_a[answer], base + last_a[answer], text_at(first_a[answer]))
        undecodable = _undecodable(data)
        _notes(summary, chunk, undecodable, None)
        return summary


_POINTER = re.compile(rb"0x[0-9a-f]+")
_SLOW = Shape(fast=False, mode=BY_MESSAGE, checked=True)
_ALWAYS = re.compile(b"")


def _hazard(patterns: list[str], extra: list[str] = ()) -> Any:
    """One bytes regex over all digit-specific patterns' hazards (None: nothing to fear).

    Word-boundary assertions are dropped: the masks see a message whose neighbours may have
    been replaced already, so the hazard must not depend on them (dropping only widens it).
    """
    variants = list(extra)
    for pattern in patterns:
        hazard = digit_hazard(pattern)
        if hazard == "":
            return _ALWAYS
        if hazard:
            variants.append(hazard.replace("\\b", ""))
    if not variants:
        return None
    import re2

    joined = "|".join(variants).encode()
    try:
        return re2.compile(joined)  # a DFA scan: ~10x faster than re over a whole chunk
    except Exception:
        try:
            return re.compile(joined)
        except re.error:
            return _ALWAYS


_RE2_ONLY = re.compile(r"\[:|\\[pPCzQE]|\(\?[a-zA-Z]*U")


def _python_twin(pattern: str) -> Any:
    """The KB pattern compiled by Python's ``re`` (ASCII classes, as RE2 has them), for
    extracting fields with less per-call overhead; False when the syntax is RE2-only (POSIX
    classes, Unicode classes, \\C, \\z, \\Q, ungreedy flag) or does not compile. Sampled
    verification against the spine (``Engine.verify``) and the tests guard the equivalence."""
    if _RE2_ONLY.search(pattern):
        return False
    try:
        return re.compile(pattern, re.ASCII)
    except re.error:
        return False


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
    try:
        data.decode("utf-8")
        return []
    except UnicodeDecodeError:
        return _decode(data, data.split(b"\n"))[1]


def _add(summary: Summary, source: int, answer: Answer, count: int, first: int, last: int, example: str) -> None:
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
