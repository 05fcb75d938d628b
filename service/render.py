"""Readable terminal rendering of answers: colour on a terminal, plain text when piped."""

from __future__ import annotations

import re
import unicodedata

from service.presentation import source_line

SEVERITY_COLOURS = {"info": "36", "warning": "33", "error": "31", "fatal": "1;31"}
LANG_LABELS = {"en": "EN", "zh": "中文"}


def _paint(text: str, code: str, colour: bool) -> str:
    return f"\x1b[{code}m{text}\x1b[0m" if colour else text


_TOKENS = re.compile(r"[\u2e80-\uffef]|[^\s\u2e80-\uffef]+|\s+")


def _width(text: str) -> int:
    """Terminal columns: CJK characters take two."""
    return sum(2 if unicodedata.east_asian_width(ch) in "WF" else 1 for ch in text)


def wrap_display(text: str, width: int) -> list[str]:
    """Wrap by display width; Chinese may break between any two characters, English only at
    spaces (textwrap counts characters and treats a Chinese sentence as one long word)."""
    lines: list[str] = []
    current = ""
    for token in _TOKENS.findall(text):
        if token.isspace():
            if current:
                current += " "
            continue
        if current and _width(current) + _width(token) > width:
            lines.append(current.rstrip())
            current = ""
        current += token
    if current.strip():
        lines.append(current.rstrip())
    return lines or [""]


def _wrap(label: str, text: str, width: int) -> list[str]:
    body = wrap_display(text, width - 7)
    pad = " " * max(0, 4 - _width(label))
    return [f"  {label}{pad} {body[0]}"] + [f"       {line}" for line in body[1:]]


def render_answer(answer: dict, langs: tuple[str, ...] = ("en", "zh"), colour: bool = False, width: int = 100) -> str:
    out: list[str] = []
    line = answer["line"] if len(answer["line"]) <= 300 else answer["line"][:300] + " …"
    out.append(_paint(line, "2", colour))
    if not answer["known"]:
        out.append(_paint("  ? unknown: no KB entry explains this line", "35", colour))
        if answer["candidates"]:
            near = ", ".join(f"{c['pattern_id']} ({c['confidence']:.2f})" for c in answer["candidates"])
            out.append(f"  nearest: {near}")
        return "\n".join(out)
    severity = answer["severity"]
    badge = _paint(f"[{severity}]", SEVERITY_COLOURS.get(severity, "0"), colour)
    for lang in langs:
        out.append(f"  {badge} {_paint(answer['title'][lang], '1', colour)}")
        badge = " " * len(f"[{severity}]")
    out.append(
        f"  id {answer['pattern_id']} · {answer['component']} · role {answer['role']} · "
        f"{answer['tier']} tier · confidence {answer['confidence']:.2f}"
    )
    for lang in langs:
        out += _wrap(LANG_LABELS[lang], answer["explanation"][lang], width)
    if answer["action"]:
        for lang in langs:
            out += _wrap("→" if lang == "en" else "→", answer["action"][lang], width)
    if answer["fields"]:
        shown = " ".join(f"{k}={v}" for k, v in answer["fields"].items())
        out += _wrap("", "fields: " + shown, width)
    where = source_line(answer.get("source"), langs[0])
    if where:
        out += _wrap("", where, width)
    return "\n".join(out)
