"""Feishu/Lark interactive cards for a reply: the same answers as the Slack blocks, as a card.

Text that comes from a log line or the KB is always ``plain_text``: ``lark_md`` would read the
``*``, ``_`` and ``<...>`` common in log lines as markup. Buttons carry small JSON values that
the card-action callback (``feishu.py``) routes on: ``feedback`` with the stored answer id, and
``lang`` with the stored reply id, so switching language re-renders the card that was shown
without explaining anything again, and ``details`` re-renders it with one answer's long form
(explanation, fields, source) unfolded. A triaged paste (more than three lines) has the root cause in
the header, its line, why and action first, and the cascade folded into one section.
"""

from __future__ import annotations

from service.chat.answers import Answerer, Group, Reply
from service.chat.labels import label, severity_counts_text, spread_text
from service.presentation import source_line
from service.chat.messages import displayable

SEVERITY_EMOJI = {"fatal": "🚨", "error": "❌", "warning": "⚠️", "info": "ℹ️", "unknown": "❔"}
HEADER_COLOUR = {"fatal": "carmine", "error": "red", "warning": "orange", "info": "blue", "unknown": "grey"}
DETAILED = 3
LINE_CHARS = 300


def _plain(text: str) -> dict:
    return {"tag": "div", "text": {"tag": "plain_text", "content": text}}


def _bold(text: str) -> dict:
    """Only for the bots' own fixed labels, which contain no markup characters."""
    return {"tag": "div", "text": {"tag": "lark_md", "content": f"**{text}**"}}


def _note(text: str) -> dict:
    return {"tag": "note", "elements": [{"tag": "plain_text", "content": text}]}


def _clip(text: str, limit: int = LINE_CHARS) -> str:
    text = displayable(text)
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _button(text: str, value: dict, kind: str = "default") -> dict:
    return {"tag": "button", "text": {"tag": "plain_text", "content": text}, "type": kind, "value": value}


def _title(group: Group, lang: str) -> str:
    answer = group.answer
    title = answer["title"][lang] if answer["known"] else label(lang, "unknown_title")
    return f"{SEVERITY_EMOJI[group.severity]} [{label(lang, group.severity)}] {title}"


def detail_elements(answerer: Answerer, answer: dict, lang: str) -> list[dict]:
    """The long form of a known answer: explanation, fields with meanings, where it is printed."""
    elements = [_bold(label(lang, "details")), _plain(answer["explanation"][lang])]
    notes = answerer.field_notes(answer, lang)
    if notes:
        elements.append(_bold(label(lang, "fields")))
        elements.append(_plain("\n".join(
            f"• {n.name} = {_clip(n.value, 120)} — {n.meaning}" + (f" → {n.decoded}" if n.decoded else "")
            for n in notes
        )))
    where = source_line(answer.get("source"), lang)
    if where:
        elements.append(_note(where))
    return elements


def group_elements(answerer: Answerer, group: Group, lang: str, with_title: bool, reply_id: str | None = None,
                   expanded: frozenset = frozenset()) -> list[dict]:
    """One answer's body: line, summary, action (the details when ``expanded`` holds its id),
    footer, buttons."""
    answer = group.answer
    elements: list[dict] = [_plain(_title(group, lang))] if with_title else []
    line = _clip(answer["line"])
    if group.count > 1:
        line += "\n" + label(lang, "more_like", n=group.count - 1)
    elements.append(_note(line))
    if answer["known"]:
        # what the line means here, then what to do; the long form comes with "details"
        if answer["summary"][lang] != answer["title"][lang]:  # the title says it already otherwise
            elements.append(_plain(answer["summary"][lang]))
        if answer["action"]:
            elements.append(_bold(label(lang, "action")))
            elements.append(_plain(answer["action"][lang]))
        if group.id in expanded:
            elements += detail_elements(answerer, answer, lang)
    else:
        elements.append(_plain(label(lang, "unknown_body")))
        nearest = answerer.nearest(answer, lang)
        elements.append(_bold(label(lang, "nearest")))
        elements.append(_plain("\n".join(f"• {c.title} ({c.pattern_id}, {c.confidence:.2f})" for c in nearest)
                               if nearest else label(lang, "no_nearest")))
    footer = f"{label(lang, 'confidence')} {answer['confidence']:.2f}"
    if answer["known"]:
        footer += f" · {answer['pattern_id']}"
    elements.append(_note(footer))
    actions = [
        _button(label(lang, "helped"), {"action": "feedback", "verdict": "helped", "answer": group.id}, "primary"),
        _button(label(lang, "wrong"), {"action": "feedback", "verdict": "wrong", "answer": group.id}, "danger"),
    ]
    if answer["known"] and group.id not in expanded and reply_id:
        actions.append(_button(label(lang, "details"), {"action": "details", "answer": group.id, "reply": reply_id}))
    link = answerer.link(answer)
    if link:
        actions.append({"tag": "button", "text": {"tag": "plain_text", "content": label(lang, "open")},
                        "type": "default", "url": link})
    elements.append({"tag": "action", "actions": actions})
    return elements


def triage_elements(reply: Reply, lang: str) -> list[dict]:
    """The root cause's line, why and action (its title is the card's header), then the cascade
    folded into one section: one row per group with its count and ranks."""
    triage = reply.triage
    if triage is None:
        return []
    root = triage["root_cause"]
    if root is None:
        elements = [_bold(label(lang, "no_failure"))]
    else:
        elements = [_note(_clip(root["line"])), _bold(label(lang, "why")), _plain(root["why"][lang])]
        if root.get("action"):
            elements += [_bold(label(lang, "action")), _plain(root["action"][lang])]
    cascade = triage["cascade"]
    if cascade:
        rows = []
        for group in cascade:
            title = (group.get("title") or {}).get(lang)
            count = f" ×{group['count']}{spread_text(group, lang)}"
            rows.append(f"• {title}{count} — {_clip(group['sample'], 80)}" if title
                        else f"• {_clip(group['sample'], 120)}{count}")
        n = sum(group["count"] for group in cascade)
        elements += [_bold(label(lang, "cascade", n=n, g=len(cascade))), _plain("\n".join(rows))]
    return elements + [{"tag": "hr"}]


def reply_card(answerer: Answerer, reply: Reply, lang: str, expanded: frozenset = frozenset()) -> dict:
    """The whole card. Its last row switches the card to the other language; ``expanded``: the
    answers whose details were asked for."""
    other = "en" if lang == "zh" else "zh"
    first = reply.groups[0]
    colour = HEADER_COLOUR[first.severity]
    if reply.total == 1 and len(reply.groups) == 1:
        title = _title(first, lang)
        elements = group_elements(answerer, first, lang, with_title=False, reply_id=reply.id, expanded=expanded)
    else:
        title = label(lang, "summary", total=reply.total, distinct=len(reply.groups),
                      counts=severity_counts_text(reply.severity_counts(), lang))
        elements = triage_elements(reply, lang)
        root = reply.triage and reply.triage["root_cause"]
        if root:
            # the root cause heads the card; the count of lines heads the per-line answers
            elements.append(_bold(title))
            title = "🎯 " + label(lang, "root_cause", title=(root.get("title") or {}).get(lang) or root["line"])
            colour = "red"
        for group in reply.groups[:DETAILED]:
            elements += group_elements(answerer, group, lang, with_title=True, reply_id=reply.id, expanded=expanded)
            elements.append({"tag": "hr"})
        rest = reply.groups[DETAILED:]
        if rest:
            elements.append(_bold(label(lang, "others")))
            elements.append(_plain("\n".join(
                f"• {_title(g, lang)}" + (f" ×{g.count}" if g.count > 1 else "") + f" — {_clip(g.answer['line'], 80)}"
                for g in rest
            )))
        if reply.skipped:
            elements.append(_note(label(lang, "skipped", max=reply.total, skipped=reply.skipped)))
    elements.append({"tag": "action", "actions": [
        _button(label(lang, "switch"), {"action": "lang", "lang": other, "reply": reply.id}),
    ]})
    return {
        "config": {"wide_screen_mode": True, "update_multi": True},
        "header": {"template": colour, "title": {"tag": "plain_text", "content": _clip(title, 120)}},
        "elements": elements,
    }


def text_content(text: str) -> dict:
    """A plain text message (help, rate limit, language set)."""
    return {"text": text}
