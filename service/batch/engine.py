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

import re
from typing import Any

import orjson

from indexer.normalize import NormalizedLine, mask_message, normalize_line
from indexer.texts import decode_value, text_names, verdict_values
from indexer.verdicts import used_names
from service.batch import shape_keys, tally
from service.batch.answers import Annotated, Answer, HeadTemplate
from service.batch.proofs import ShapeProofs
from service.batch.reader import Chunk, decode_lines
from service.batch.shape_plan import BY_MESSAGE, FIELDS, FIXED, PENDING, SLOW, Shape, learn_normalization
from service.batch.summary import Summary

_DIGIT = re.compile(r"\d")

__all__ = ["Annotated", "Answer", "Engine"]  # Answer and Annotated live in answers; kept here for callers

# Cache bounds: each cache is simply cleared when full (cheap, and a training log's working set
# is small), so memory stays flat however large the input.
SHAPE_LIMIT = 50_000
MESSAGE_LIMIT = 20_000
TEXTS_LIMIT = 20_000
REMEMBERED_LIMIT = 200_000  # field value sets remembered over all shapes
DEFER_CHARS = 2000  # longest line whose semantic answer may be deferred (embedding_text's cut)


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
        self._texts: dict[tuple, Answer] = {}  # (entry, tail, used field values) -> shared answer
        self._verdict_reads: dict[int, tuple[str, ...]] = {}  # entry -> names its verdicts read
        self._verdict_memo: dict[tuple, tuple[dict, tuple]] = {}  # (entry, those values) -> verdict_values
        self._heads: dict[tuple, HeadTemplate] = {}  # (entry, present fields, fired, blank) -> template
        self._decoded: dict[tuple, tuple[str, str] | None] = {}  # (field spec, value) -> decoding
        self._escaped: dict[str, bytes] = {}  # field value -> its JSON string body
        self._field_answers: dict[tuple, tuple[Answer, dict]] = {}  # (entry, message) -> (answer, fields)
        self._facts: dict[int, tuple[bool, tuple[str, ...]]] = {}  # entry -> _entry_facts
        # the patterns and context rules come from the pattern set, so the engine's analyses do
        # not unpickle every catalogue entry (only the entries lines actually hit are read)
        self.proofs = ShapeProofs.of(explainer)  # shared by the engines of this explainer
        self._constraint_keys = self.proofs.constraint_keys

    # ---- shapes -----------------------------------------------------------------------------

    def _shape(self, key: bytes, text: str) -> Shape:
        """The shape of a key not yet in this engine: the peer's, where its answers depend on the
        regex tier alone (no template for the embedding tier), else learned from ``text``."""
        peer = self.peer
        shape = peer._shapes.get(key) if peer is not None else None
        if shape is None or shape.template is not None or shape.mode == PENDING:
            return self.new_shape(key, text)
        if len(self._shapes) >= self.shape_limit:
            self._shapes.clear()
            self._remembered = self._unchecked = 0
        self._shapes[key] = shape  # kept here too: this engine's _forget bounds what it adds to it
        self._unchecked += not shape.checked  # verified by whichever engine annotates it first
        return shape

    def new_shape(self, key: bytes, text: str) -> Shape:
        if len(self._shapes) >= self.shape_limit:
            self._shapes.clear()  # memory stays flat; shapes are relearned as they recur
            self._remembered = self._unchecked = 0
        normalized = normalize_line(text)
        shape = self._learn(text, normalized)
        if shape.runs_ok is not None and shape.template is None and self.proofs.pointer_blind(shape, normalized.message):
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
        curated_only = bool(hits) and hits[0] < self.explainer.curated_count and hits[0] in self.proofs.closed_entries
        relevant = self.proofs.relevant(normalized.message, curated_only)
        shape = learn_normalization(text, normalized, self.proofs.normalize_ok)
        if relevant:
            relevant = relevant - self.proofs.certain(relevant, normalized.message)
        if relevant:
            shape.checks = (relevant, self.proofs.outcomes(relevant, normalized.message, normalized.context))
            shape.checks_context = any(self.proofs.digit_specific[i] for i in relevant)
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
            shape.pointer_hits = self.proofs.pointer_hits(normalized.message)
        if hits and not self.proofs.source_stable(self.explainer.entries[hits[0]], normalized.message):
            shape.runs_ok = None  # BY_MESSAGE: lines of this shape may name different print sites
            return shape
        if hits:
            has_groups, used = self._entry_facts(hits[0])
            if not has_groups:
                answer = self.explainer.explain_many([text], semantic=False)[0]
                shape.mode, shape.answer = FIXED, Answer(answer, None)
            else:
                # Texts are filled per line (_values_answer); the shape keeps what does not
                # vary: candidates and source, as the spine's answer gives them.
                entry = self.explainer.entries[hits[0]]
                shape.mode, shape.entry, shape.used = FIELDS, hits[0], used
                shape.candidates = self.explainer.regex_candidates(hits)
                source = self.explainer.source(entry, normalized.message)
                shape.tail = orjson.dumps({"candidates": shape.candidates, "source": source})[1:-1]
                if hits[0] in self.proofs.closed_entries:
                    shape.regs = self.proofs.regs(hits[0], normalized.message)
                    if shape.regs is not None:
                        names = self.proofs.python_twin(hits[0]).groupindex
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

    def _entry_facts(self, index: int) -> tuple[bool, tuple[str, ...]]:
        """(whether entry ``index``'s pattern has groups, the fields its texts use), once per
        entry: a log's new shapes hit the same few hundred entries over and over."""
        facts = self._facts.get(index)
        if facts is None:
            has_groups = bool(self.explainer.patterns.group_names(index))
            used = tuple(sorted(text_names(self.explainer.entries[index]))) if has_groups else ()
            facts = self._facts[index] = (has_groups, used)
        return facts

    def _should_verify(self) -> bool:
        if self.verify == "all":
            return True
        if self.verify == "sample":
            return self._learned <= 256 or self._learned % 64 == 0
        return False

    # ---- answers ----------------------------------------------------------------------------

    def _message_key(self, message: str, context: dict) -> Any:
        if not self._constraint_keys:
            return message
        return (message,) + tuple(context.get(k) for k in self._constraint_keys)

    def resolve(self, texts: list[str], templates: list[str | None]) -> list[Answer]:
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

    def fields_answer(self, shape: Shape, message: str) -> tuple[Answer, dict]:
        """The spine's regex-tier answer for a line whose entry is known from its shape, as
        (shared answer, this line's fields): only the fields are read from the line; texts are
        filled once per distinct values of the fields they use, and fields are reused for
        repeated messages."""
        cache_key = (shape.entry, message)
        cached = self._field_answers.get(cache_key)
        if cached is not None:
            return cached
        compiled = self.proofs.python_twin(shape.entry)
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
        # The tail (candidates and source) is the shape's: an entry that links several printing
        # formats names the one that matches the message, so two shapes of one entry with the
        # same values may name different source lines.
        key = (shape.entry, shape.tail) + tuple(map(fields.get, shape.used))
        answer = self._texts.get(key)
        if answer is None:
            entry = self.explainer.entries[shape.entry]
            if len(self._texts) >= TEXTS_LIMIT:
                self._texts.clear()
            extra, fired = self._verdicts(shape.entry, entry, fields)
            values = {**fields, **extra} if extra else fields
            present = tuple(name for name in shape.used if name in values) + tuple(n for n in extra if n not in shape.used)
            blank = tuple(name for name in present if values[name] == "")
            template = self._heads.get((shape.entry, present, fired, blank))
            if template is None:
                template = self._heads[(shape.entry, present, fired, blank)] = HeadTemplate(entry, present, fired, blank)
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

    def settle(self, shape: Shape, answer: Answer) -> None:
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
        texts, undecodable, _ = decode_lines(chunk.data, lines)
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
        hazards = self.proofs.hazard_lines(chunk.data)
        for i in range(n):
            text = texts[i]
            if i in hazards:
                shape = SLOW
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
                    ok = self.proofs.runs_ok(shape, text, message)
                if not ok:
                    if context is None and constraint:
                        context = shape.ctx_build(text)  # the spine's cache key needs it
                    shape, answer = SLOW, None  # this line's pointers change the decision
            if shape.checks is not None:
                if context is None and shape.checks_context:
                    context = shape.ctx_build(text)
                relevant, expected = shape.checks
                if self.proofs.outcomes(relevant, message, context or {}) != expected:
                    if context is None and constraint:
                        context = shape.ctx_build(text)  # the spine's cache key needs it
                    shape, answer = SLOW, None  # this line's digits change the regex tier
            if answer is None and shape.mode == FIELDS:
                if shape.spans is not None:  # a digit-closed entry: its groups sit at fixed spans
                    stretch = text[shape.values_at[0]:shape.values_at[1]]  # equal stretch, equal groups
                    hit = shape.by_values.get(stretch)  # type: ignore[union-attr]
                    if hit is None:
                        hit = self._values_answer(shape, text, stretch)
                    answer, line_fields[i] = hit
                else:
                    answer, line_fields[i] = self.fields_answer(shape, message)
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
            resolved = self.resolve(
                [pending_text[k] for k in keys],
                [t.template if (t := pending_target[k]) is not None else None for k in keys],
            )
            if len(known_cache) + len(keys) > MESSAGE_LIMIT:
                known_cache.clear()
            for key, answer in zip(keys, resolved):
                target = pending_target[key]
                if target is not None:
                    self.settle(target, answer)
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
        annotated.summary = tally.tally_answers(chunk, texts, answers, undecodable)  # type: ignore[arg-type]
        return annotated

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
    def known_shape(self, key: bytes) -> Shape | None:
        """The shape learned for ``key``, if any (not the peer's: see ``_shape``)."""
        return self._shapes.get(key)

    def summarize(self, chunk: Chunk, counted: shape_keys.Tally | None = None) -> Summary:
        """The summary of a chunk without annotating each line (``tally.summarize``)."""
        return tally.summarize(self, chunk, counted)


_POINTER_TEXT = re.compile(r"0x[0-9a-f]{4,}")  # the pointers that shape keys fold
