"""Terminal rendering of answers: colour on a terminal, plain text when piped.

Short by default — the one-line summary (what the line means here), then the action, then one
line naming the entry, its role and tier, and where the message is printed. ``verbose`` adds
the full explanation and the fields. The frame's words come from ``service.presentation``, so
``--lang zh`` reads Chinese throughout.
"""

from __future__ import annotations

import re

from service.presentation import TERMS, display_width, severity_name, term, wrap_display, wrap_source

SEVERITY_COLOURS = {"info": "36", "warning": "33", "error": "31", "fatal": "1;31"}
INDENT = "  "
_width = display_width  # the name earlier callers used


def _paint(text: str, code: str, colour: bool) -> str:
    return f"\x1b[{code}m{text}\x1b[0m" if colour else text


def _block(label: str, text: str, width: int, pad: int) -> list[str]:
    """A labelled paragraph: the label in a column of ``pad`` display columns."""
    body = wrap_display(text, max(20, width - len(INDENT) - pad - 1))
    head = label + " " * max(0, pad - display_width(label))
    return [f"{INDENT}{head} {body[0]}"] + [f"{INDENT}{' ' * pad} {line}" for line in body[1:]]


def _wrap_items(items: list[str], width: int, sep: str = " · ") -> list[str]:
    """Join items with ``sep``, breaking only between items ("置信度 0.99" stays on one line);
    an item wider than the line is wrapped on its own."""
    lines: list[str] = []
    current = ""
    for item in items:
        joined = current + sep + item if current else item
        if current and display_width(joined) > width:
            lines.append(current)
            current = item
        else:
            current = joined
        if display_width(current) > width:
            *full, current = wrap_display(current, width)
            lines += full
    if current:
        lines.append(current)
    return lines


def _shown_value(value) -> str:
    """A field's value in the 'fields' row: one holding a space or a comma is quoted, so it does
    not run into the next key=value ("lr='0.0003, 0.0003' mom=..."); an empty one shows as ''."""
    text = "" if value is None else str(value)
    if text and not re.search(r"[\s,]", text):
        return text
    quote = "'" if "'" not in text else '"'
    return f"{quote}{text}{quote}"


def render_answer(answer: dict, langs: tuple[str, ...] = ("en", "zh"), colour: bool = False, width: int = 100,
                  verbose: bool = False) -> str:
    out: list[str] = []
    line = answer["line"] if len(answer["line"]) <= 300 else answer["line"][:300] + " …"
    out.append(_paint(line, "2", colour))
    lang0 = langs[0]
    if not answer["known"]:
        for lang in langs:
            summary = (answer.get("summary") or {}).get(lang) or term(lang, "unknown_title")
            out.append(_paint(f"{INDENT}? {summary}", "35", colour))
        if answer["candidates"]:
            near = ", ".join(f"{c['pattern_id']} ({c['confidence']:.2f})" for c in answer["candidates"])
            out.append(f"{INDENT}{term(lang0, 'nearest')}{'：' if lang0 == 'zh' else ': '}{near}")
        return "\n".join(out)
    severity = answer["severity"]
    pad = max(display_width(term(lang, key)) for lang in langs for key in ("summary", "action", "explanation"))
    for lang in langs:
        badge = _paint(f"[{severity_name(severity, lang)}]", SEVERITY_COLOURS.get(severity, "0"), colour)
        out.append(f"{INDENT}{badge} {_paint(answer['title'][lang], '1', colour)}")
    summary = answer.get("summary")
    if summary:
        for lang in langs:
            if summary[lang] != answer["title"][lang]:  # a summary that only repeats the title says nothing
                out += _block(term(lang, "summary"), summary[lang], width, pad)
    if verbose:
        for lang in langs:
            out += _block(term(lang, "explanation"), answer["explanation"][lang], width, pad)
    if answer["action"]:
        for lang in langs:
            out += _block(term(lang, "action"), answer["action"][lang], width, pad)
    if verbose and answer["fields"]:
        shown = " ".join(f"{k}={_shown_value(v)}" for k, v in answer["fields"].items())
        out += _block(term(lang0, "fields"), shown, width, pad)
    meta = [
        answer["pattern_id"], answer["component"], term(lang0, f"role.{answer['role']}"),
        TERMS[lang0].get(f"tier.{answer['tier']}", answer["tier"]),
        f"{term(lang0, 'confidence')} {answer['confidence']:.2f}",
    ]
    out += [f"{INDENT}{l}" for l in _wrap_items(meta, width - len(INDENT))]
    out += [f"{INDENT}{l}" for l in wrap_source(answer.get("source"), lang0, width - len(INDENT))]
    if not verbose:
        out.append(_paint(f"{INDENT}{term(lang0, 'more')}", "2", colour))
    return "\n".join(out)

