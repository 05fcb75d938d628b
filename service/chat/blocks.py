"""Slack Block Kit rendering of a reply: one answer in full, or a summary of many.

Slack caps a message at 50 blocks and a text object at 3000 characters, so a long paste shows
its first ``DETAILED`` groups (most severe first) in full and the rest as one list. Every
detailed answer carries the "This helped" / "Wrong answer" buttons, whose value is the stored
answer id (``store.py``) so a click can be tied to exactly what was shown. A triaged paste
(more than three lines) opens with the root cause and one folded section for the cascade.
"""

from __future__ import annotations

from service.chat.answers import Answerer, Group, Reply
from service.chat.labels import label, severity_counts_text, spread_text
from service.presentation import source_line
from service.chat.messages import displayable

SEVERITY_EMOJI = {
    "fatal": ":rotating_light:", "error": ":x:", "warning": ":warning:",
    "info": ":information_source:", "unknown": ":grey_question:",
}
FEEDBACK_ACTIONS = {"helped": "explainlog_helped", "wrong": "explainlog_wrong"}
DETAILS_ACTION = "explainlog_details"  # the long form of one answer, on demand
DETAILED = 3
TEXT_LIMIT = 2900
LINE_CHARS = 300


def escape(text: str) -> str:
    """Slack mrkdwn treats &, < and > as control characters."""
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def _clip(text: str, limit: int = TEXT_LIMIT) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _code(text: str, limit: int = LINE_CHARS) -> str:
    """Inline code; a backtick inside would end the span early, so it becomes a quote."""
    return "`" + escape(_clip(displayable(text).replace("`", "'"), limit)) + "`"


def _section(text: str) -> dict:
    return {"type": "section", "text": {"type": "mrkdwn", "text": _clip(text)}}


def _context(text: str) -> dict:
    return {"type": "context", "elements": [{"type": "mrkdwn", "text": _clip(text)}]}


def feedback_buttons(group: Group, lang: str) -> dict:
    elements = [
        {"type": "button", "action_id": FEEDBACK_ACTIONS["helped"], "style": "primary",
         "text": {"type": "plain_text", "text": label(lang, "helped")}, "value": group.id},
        {"type": "button", "action_id": FEEDBACK_ACTIONS["wrong"], "style": "danger",
         "text": {"type": "plain_text", "text": label(lang, "wrong")}, "value": group.id},
    ]
    if group.answer["known"]:
        elements.append({"type": "button", "action_id": DETAILS_ACTION,
                         "text": {"type": "plain_text", "text": label(lang, "details")}, "value": group.id})
    return {"type": "actions", "block_id": f"feedback_{group.id}", "elements": elements}


def _line_context(group: Group, lang: str) -> dict:
    text = _code(group.answer["line"])
    if group.count > 1:
        text += " — " + label(lang, "more_like", n=group.count - 1)
    return _context(text)


def _footer(answerer: Answerer, answer: dict, lang: str) -> dict:
    parts = [f"{label(lang, 'confidence')} {answer['confidence']:.2f}"]
    if answer["known"]:
        parts.append(f"`{answer['pattern_id']}`")
    link = answerer.link(answer)
    if link:
        parts.append(f"<{link}|{label(lang, 'open')}>")
    return _context(" · ".join(parts))


def known_blocks(answerer: Answerer, group: Group, lang: str) -> list[dict]:
    """What the line means here (the summary), then what to do; the explanation, fields and
    source come with the "details" button (``details_blocks``)."""
    answer = group.answer
    severity = answer["severity"]
    blocks = [
        _section(f"{SEVERITY_EMOJI[severity]} *{escape(answer['title'][lang])}*  `{label(lang, severity)}`"),
        _line_context(group, lang),
    ]
    if answer["summary"][lang] != answer["title"][lang]:  # the title says it already otherwise
        blocks.append(_section(escape(answer["summary"][lang])))
    if answer["action"]:
        blocks.append(_section(f"*{label(lang, 'action')}*\n{escape(answer['action'][lang])}"))
    blocks.append(_footer(answerer, answer, lang))
    blocks.append(feedback_buttons(group, lang))
    return blocks


def details_blocks(answerer: Answerer, answer: dict, lang: str) -> list[dict]:
    """The long form of one known answer: title, explanation, fields with their meanings, and
    where the message is printed."""
    blocks = [
        _section(f"*{escape(answer['title'][lang])}*"),
        _section(escape(answer["explanation"][lang])),
    ]
    notes = answerer.field_notes(answer, lang)
    if notes:
        rows = []
        for note in notes:
            row = f"• `{note.name}` {_code(note.value, 120)} — {escape(note.meaning)}"
            if note.decoded:
                row += f" → *{escape(note.decoded)}*"
            rows.append(row)
        blocks.append(_section(_listing(f"*{label(lang, 'fields')}*", rows)))
    where = source_line(answer.get("source"), lang)
    if where:
        blocks.append({"type": "context", "elements": [{"type": "mrkdwn", "text": escape(where)}]})
    return blocks


def unknown_blocks(answerer: Answerer, group: Group, lang: str) -> list[dict]:
    answer = group.answer
    nearest = answerer.nearest(answer, lang)
    if nearest:
        body = f"*{label(lang, 'nearest')}*\n" + "\n".join(
            f"• {escape(c.title)} (`{c.pattern_id}`, {c.confidence:.2f})" for c in nearest
        )
    else:
        body = label(lang, "no_nearest")
    return [
        _section(f"{SEVERITY_EMOJI['unknown']} *{label(lang, 'unknown_title')}*"),
        _line_context(group, lang),
        _section(f"{label(lang, 'unknown_body')}\n{body}"),
        _footer(answerer, answer, lang),
        feedback_buttons(group, lang),
    ]


def group_blocks(answerer: Answerer, group: Group, lang: str) -> list[dict]:
    if group.answer["known"]:
        return known_blocks(answerer, group, lang)
    return unknown_blocks(answerer, group, lang)


def _one_liner(group: Group, lang: str) -> str:
    answer = group.answer
    title = answer["title"][lang] if answer["known"] else label(lang, "unknown_title")
    text = f"• {SEVERITY_EMOJI[group.severity]} {escape(title)}"
    text += f" ×{group.count}" if group.count > 1 else ""
    return text + " — " + _code(answer["line"], 80)


def _listing(head: str, rows: list[str]) -> str:
    """Whole rows up to Slack's text limit, then a count of the rows left out (never half a row,
    which could leave a code span open)."""
    text = head
    for i, row in enumerate(rows):
        if len(text) + len(row) + 12 > TEXT_LIMIT:
            return text + f"\n… +{len(rows) - i}"
        text += "\n" + row
    return text


def _root_title(root: dict, lang: str) -> str:
    return (root.get("title") or {}).get(lang) or displayable(root["line"])


def triage_blocks(reply: Reply, lang: str) -> list[dict]:
    """The root cause (title, line, why, action) and the cascade folded into one section: one row
    per group with its count and ranks. Nothing for a paste that was not triaged."""
    triage = reply.triage
    if triage is None:
        return []
    root = triage["root_cause"]
    if root is None:
        blocks = [_section(f"*{escape(label(lang, 'no_failure'))}*")]
    else:
        blocks = [
            _section(":dart: *" + escape(label(lang, "root_cause", title=_clip(_root_title(root, lang), 300))) + "*"),
            _context(_code(root["line"])),
            _section(f"*{label(lang, 'why')}*\n{escape(root['why'][lang])}"),
        ]
        if root.get("action"):
            blocks.append(_section(f"*{label(lang, 'action')}*\n{escape(root['action'][lang])}"))
    cascade = triage["cascade"]
    if cascade:
        rows = []
        for group in cascade:
            title = (group.get("title") or {}).get(lang)
            count = f" ×{group['count']}" + escape(spread_text(group, lang))
            rows.append(f"• {escape(title)}{count} — {_code(group['sample'], 80)}" if title
                        else f"• {_code(group['sample'], 120)}{count}")
        n = sum(group["count"] for group in cascade)
        blocks.append(_section(_listing(f"*{label(lang, 'cascade', n=n, g=len(cascade))}*", rows)))
    return blocks


def fallback_text(reply: Reply, lang: str) -> str:
    """Notification and screen-reader text: the root cause of a triaged paste, else the first
    (most severe) answer's title."""
    first = reply.groups[0]
    title = first.answer["title"][lang] if first.answer["known"] else label(lang, "unknown_title")
    head = f"[{label(lang, first.severity)}] {title}"
    root = reply.triage and reply.triage["root_cause"]
    if root:
        head = label(lang, "root_cause", title=_root_title(root, lang))
    if reply.total > 1:
        head += " — " + label(lang, "summary", total=reply.total, distinct=len(reply.groups),
                              counts=severity_counts_text(reply.severity_counts(), lang))
    return head


def reply_blocks(answerer: Answerer, reply: Reply, lang: str) -> list[dict]:
    """The whole message: a single answer, or a summary, the most severe answers, the rest listed."""
    if reply.total == 1 and len(reply.groups) == 1:
        return group_blocks(answerer, reply.groups[0], lang)
    blocks = triage_blocks(reply, lang)
    if blocks:
        blocks.append({"type": "divider"})
    blocks += [_section("*" + escape(label(
        lang, "summary", total=reply.total, distinct=len(reply.groups),
        counts=severity_counts_text(reply.severity_counts(), lang))) + "*")]
    for group in reply.groups[:DETAILED]:
        blocks.append({"type": "divider"})
        blocks += group_blocks(answerer, group, lang)
    rest = reply.groups[DETAILED:]
    if rest:
        blocks.append({"type": "divider"})
        blocks.append(_section(_listing(f"*{label(lang, 'others')}*", [_one_liner(g, lang) for g in rest])))
    if reply.skipped:
        blocks.append(_context(label(lang, "skipped", max=reply.total, skipped=reply.skipped)))
    return blocks


def question_blocks(result: dict, lang: str) -> list[dict]:
    """A question answered from the KB (``ask``): each answer's title, text and source."""
    from service.ask import KIND_LABEL, NOT_KNOWN, source_line

    if not result.get("known"):
        return [_section(escape(NOT_KNOWN[lang]))]
    blocks: list[dict] = []
    for answer in result["answers"][:3]:
        head = f"*{escape(answer['title'])}*  `{KIND_LABEL[lang][answer['kind']]}` `{escape(answer['id'])}`"
        blocks.append(_section(_clip(f"{head}\n{escape(answer['text'])}")))
        where = source_line(answer.get("source"))
        if where:
            blocks.append(_context(escape(("来源：" if lang == "zh" else "source: ") + where)))
    return blocks


def question_text(result: dict, lang: str) -> str:
    from service.ask import NOT_KNOWN

    if not result.get("known"):
        return NOT_KNOWN[lang]
    return result["answers"][0]["title"]
