"""What the batch engine hands out: shared answers and a chunk's annotated lines.

An ``Answer`` is one distinct answer (everything but the line and its context), shared by the
many lines that have it; ``HeadTemplate`` fills an entry's texts per distinct field values
without the spine; ``Annotated`` is a chunk's lines with their answers, what every output
format renders. The engine (``engine``) makes them; formats (``formats``) only read them.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass, field
from typing import Any, Callable

import orjson

from indexer.calibration import REGEX_CONFIDENCE
from indexer.catalog.records import pattern_tier
from indexer.texts import (DECODED_SUFFIX, OPTIONAL, PLACEHOLDER, ends_twice, spaced_after, spaced_before, summary_text,
                           tight_after, tight_before, trimmed_after)
from service.batch.reader import Chunk
from service.batch.summary import Summary
from service.explainer import CONTRACT_KEYS  # one contract for every front-end
from service.presentation import SEVERITY_RANK

_HEAD_KEYS = CONTRACT_KEYS[1:CONTRACT_KEYS.index("fields")]  # known .. action: between "line" and "fields"
_RANK = SEVERITY_RANK
_FULL_STOP = "。".encode()
ESCAPED_LIMIT = 20_000  # JSON-escaped field values a HeadTemplate user keeps (cleared when full)


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

    def __init__(self, entry: Any, fields: tuple[str, ...], fired: tuple[int, ...] = (), blank: tuple[str, ...] = ()) -> None:
        """``fields``: the present fields and computed values; ``fired``: the verdicts that fire;
        ``blank``: those of them whose value is empty (an ``[[optional]]`` segment naming one is
        left out, as ``indexer.texts.given`` says)."""
        decodable = {name for name in fields if name in entry.fields}
        present = set(fields) | {name + DECODED_SUFFIX for name in decodable}
        shown = present - set(blank) - {name + DECODED_SUFFIX for name in blank}
        slots: list[tuple[str, int]] = []

        def resolve(text: str, lang: int) -> str:
            if "[[" in text:
                pieces = OPTIONAL.split(text)
                kept = [pieces[0]]
                for j in range(1, len(pieces), 2):
                    if all(name in shown for name in PLACEHOLDER.findall(pieces[j])):
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
            if lang and value[:1].isspace():
                value = trimmed_after(out[j - 1][-3:].decode("utf-8", "ignore"), value)
            after = out[j + 1]
            if value[-1:] == "." and (after[:1] == b"." or after[:3] == _FULL_STOP) and ends_twice(value, after[:3].decode("utf-8", "ignore"), lang):
                value = value[:-1]  # as indexer.texts.fill does
            piece = escaped.get(value)
            if piece is None:
                if len(escaped) >= ESCAPED_LIMIT:
                    escaped.clear()
                piece = escaped[value] = orjson.dumps(value)[1:-1]
            out[j] = piece
            if lang and after[:1] == b" " and tight_after(value, after[:5].decode("utf-8", "ignore")):
                out[j + 1] = after[1:]  # as indexer.texts.fill does
            before = out[j - 1]
            if lang and before[-1:] == b" " and tight_before(before[-5:].decode("utf-8", "ignore"), value):
                out[j - 1] = before[:-1]
            if lang and spaced_after(value, out[j + 1][:3].decode("utf-8", "ignore")):
                out[j + 1] = b" " + out[j + 1]
            if lang and spaced_before(out[j - 1][-3:].decode("utf-8", "ignore"), value):
                out[j - 1] = out[j - 1] + b" "
        return b"".join(out)


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
