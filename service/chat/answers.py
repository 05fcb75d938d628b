"""Explain pasted lines for a chat reply: group repeats, most severe first, remember what was said.

A pasted tail of a log repeats a few messages many times and hides the one line that matters
among INFO chatter. A chat reply therefore groups lines by KB entry (unknown lines by masked
template), puts fatal/error/warning first, then lines the KB does not know (they may be the
cause), then informational ones; within a severity, root causes come before knock-on errors and
wrappers. Every group is stored with an id so feedback buttons and the Feishu language switch
can refer back to exactly the answer that was shown.

A paste of more than ``TRIAGE_MIN_LINES`` lines is also read as one log (``service/triage.py``):
the reply then opens with the root cause and the cascade folded into one section. That verdict
is stored with the reply as one more answer row (count 0, ``{"triage": ...}``, never given a
button) so the language switch shows it again without re-reading the log.
"""

from __future__ import annotations

import logging
import secrets
from dataclasses import dataclass
from urllib.parse import urlencode

from indexer.texts import decode_value
from service.chat.store import ChatStore, StoredAnswer, StoredReply

SEVERITY_ORDER = {"fatal": 0, "error": 1, "warning": 2, None: 3, "info": 4}
ROLE_ORDER = {"root_cause": 0, "cascade": 1, "wrapper": 2, "advice": 3, "context": 4, "progress": 5}
LINK_LINE_CHARS = 1500  # keeps the link under common URL length limits
TRIAGE_MIN_LINES = 3  # more lines than this are also triaged as one log
log = logging.getLogger("explainlog.chat.answers")


@dataclass(frozen=True)
class Group:
    """One distinct answer in a reply and how many pasted lines it covers."""

    id: str
    count: int
    answer: dict

    @property
    def severity(self) -> str:
        return self.answer["severity"] if self.answer["known"] else "unknown"


@dataclass(frozen=True)
class Reply:
    id: str
    total: int
    skipped: int
    groups: list[Group]
    triage: dict | None = None  # see ``compact_triage``; None for short pastes (or a failed triage)

    def severity_counts(self) -> dict[str, int]:
        """Lines per severity, most severe first, only severities that occur."""
        counts: dict[str, int] = {}
        for group in self.groups:
            counts[group.severity] = counts.get(group.severity, 0) + group.count
        order = ["fatal", "error", "warning", "unknown", "info"]
        return {k: counts[k] for k in order if k in counts}


@dataclass(frozen=True)
class FieldNote:
    """A matched field as a reader needs it: its value, what it is, and what the value means."""

    name: str
    value: str
    meaning: str
    decoded: str | None


@dataclass(frozen=True)
class Candidate:
    pattern_id: str
    title: str
    confidence: float


def _new_id() -> str:
    return secrets.token_hex(8)


def _group_key(explainer, answer: dict) -> str:
    if answer["known"]:
        return "id:" + answer["pattern_id"]
    return "tpl:" + explainer.template(answer["line"])


def _sort_key(item: tuple[int, dict]) -> tuple[int, int, int]:
    first, answer = item
    return (SEVERITY_ORDER.get(answer["severity"], 3), ROLE_ORDER.get(answer["role"] or "", 6), first)


def compact_triage(result: dict) -> dict:
    """What a chat reply shows of ``triage_lines``' verdict: the root cause (title, line, why,
    action) or None, the cascade groups (title, first sample line, count, ranks, hosts), the summary."""
    root = result.get("root_cause")
    if root is not None:
        root = {k: root.get(k) for k in ("line_number", "line", "pattern_id", "kind", "title", "why", "action")}
    cascade = [{"pattern_id": g.get("pattern_id"), "role": g.get("role"), "title": g.get("title"),
                "count": g.get("count", 1), "first_line": g.get("first_line"),
                "ranks": list(g.get("ranks") or []), "hosts": list(g.get("hosts") or []),
                "sample": (g.get("sample_lines") or [""])[0]}
               for g in result.get("cascade") or []]
    return {"root_cause": root, "cascade": cascade, "summary": result.get("summary")}


class Answerer:
    """Shared by both bots: explainer + store, plus the link to the web page."""

    def __init__(self, explainer, store: ChatStore, web_url: str | None = None) -> None:
        self.explainer = explainer
        self.store = store
        self.web_url = web_url.rstrip("/") if web_url else None

    def explain(self, lines: list[str], platform: str, skipped: int = 0,
                indented: list[str] | None = None) -> Reply:
        """Group the answers to ``lines``; a paste of more than TRIAGE_MIN_LINES lines is also
        triaged, from ``indented`` (the same lines as pasted, ``ChatRequest.pasted``) when given."""
        answers = self.explainer.explain_many(lines)
        first_seen: dict[str, tuple[int, dict]] = {}
        counts: dict[str, int] = {}
        for i, answer in enumerate(answers):
            key = _group_key(self.explainer, answer)
            first_seen.setdefault(key, (i, answer))
            counts[key] = counts.get(key, 0) + 1
        ordered = sorted(first_seen.items(), key=lambda kv: _sort_key(kv[1]))
        groups = [Group(_new_id(), counts[key], answer) for key, (_, answer) in ordered]
        triage = self._triage(indented if indented and len(indented) == len(lines) else lines)
        reply = Reply(_new_id(), len(lines), skipped, groups, triage)
        stored = [StoredAnswer(g.id, g.count, g.answer) for g in groups]
        if triage is not None:
            root = triage["root_cause"]
            stored.append(StoredAnswer(_new_id(), 0, {"line": root["line"] if root else "", "triage": triage}))
        self.store.save_reply(reply.id, platform, reply.total, reply.skipped, stored)
        return reply

    def question(self, lines: list[str], lang: str) -> dict | None:
        """The ``ask`` answer when the message is a question in words, else None (explain it).
        One line, worded as a question, that the regex tier does not know as a log line."""
        from service.ask import asker_for, looks_like_question

        if len(lines) != 1 or not looks_like_question(lines[0]):
            return None
        try:
            if self.explainer.explain_many(lines, semantic=False)[0]["known"]:
                return None
            return asker_for(self.explainer).ask(lines[0], lang=lang)
        except AttributeError:  # an explainer without a KB directory (a test double): explain
            return None

    def _triage(self, lines: list[str]) -> dict | None:
        """The whole-log verdict for a long paste; a failure costs only this section of the reply."""
        if len(lines) <= TRIAGE_MIN_LINES:
            return None
        from service.triage import triage_lines

        try:
            return compact_triage(triage_lines(self.explainer, [("<chat>", line) for line in lines]))
        except Exception:
            log.exception("triage of %d pasted line(s) failed; answering line by line only", len(lines))
            return None

    def language_for(self, user: str, explicit: str | None, default: str) -> str:
        """An explicit ``--zh``/``--en`` wins and is remembered; else the remembered choice;
        else ``default`` (the language the message was written in, or zh on Feishu)."""
        if explicit:
            self.store.set_language(user, explicit)
            return explicit
        return self.store.language(user) or default

    def reload(self, reply_id: str) -> Reply:
        """A reply exactly as first given (for re-rendering it in the other language)."""
        stored: StoredReply = self.store.reply(reply_id)
        triage = next((a.answer["triage"] for a in stored.answers if "triage" in a.answer), None)
        return Reply(stored.id, stored.total, stored.skipped,
                     [Group(a.id, a.count, a.answer) for a in stored.answers if "triage" not in a.answer], triage)

    def field_notes(self, answer: dict, lang: str) -> list[FieldNote]:
        """Each matched field with its curated meaning and, where the KB decodes it, the decoding."""
        entry = self.explainer.by_id.get(answer["pattern_id"]) if answer["known"] else None
        if entry is None:
            return []
        notes = []
        for name, value in answer["fields"].items():
            spec = entry.fields.get(name)
            if spec is None or value is None:
                continue
            decoded = decode_value(spec, value)
            notes.append(FieldNote(name, value.strip(), getattr(spec, lang),
                                   decoded[0 if lang == "en" else 1] if decoded else None))
        return notes

    def nearest(self, answer: dict, lang: str) -> list[Candidate]:
        """Candidates of an unknown line, with titles so a reader can judge them."""
        out = []
        for c in answer["candidates"]:
            entry = self.explainer.by_id.get(c["pattern_id"])
            if entry is not None:
                out.append(Candidate(c["pattern_id"], getattr(entry.title, lang), c["confidence"]))
        return out

    def link(self, answer: dict) -> str | None:
        """The web page's permalink for this line (``/#q=...``, the form service/http's page
        reads), when ``EXPLAINLOG_WEB_URL`` names the service."""
        if not self.web_url:
            return None
        return f"{self.web_url}/#{urlencode({'q': answer['line'][:LINK_LINE_CHARS]})}"
