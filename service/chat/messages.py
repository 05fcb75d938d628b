"""Turn a chat message into the log lines to explain and the language the asker wrote in.

People paste lines in many shapes: bare, inside a ``` code block, after a mention, after
``/explain --zh``. Chat platforms also rewrite text: Slack escapes ``&<>`` (so NCCL's
``eth0:10.0.0.1<0>`` arrives as ``&lt;0&gt;``) and wraps URLs as ``<http://...|label>``; Feishu
replaces mentions with ``@_user_1`` keys. All of that is undone here, in one place, so both
bots hand the explainer the line the user actually saw.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

CJK = re.compile(r"[\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\u3000-\u303f\uff00-\uffef]")
CODE_FENCE = re.compile(r"```(?:[A-Za-z0-9_+-]*\n)?(.*?)```", re.DOTALL)
SLACK_MENTION = re.compile(r"<[@!#][^>]*>")
SLACK_LINK = re.compile(r"<((?:https?|mailto|ftp):[^>|]*)(?:\|([^>]*))?>")
FEISHU_MENTION = re.compile(r"@_user_\d+|@_all")
COMMAND = re.compile(r"^\s*/explain\b", re.IGNORECASE)
ANSI_OR_CONTROL = re.compile(r"\x1b\[[0-9;?]*[ -/]*[@-~]|[\x00-\x08\x0b-\x1f\x7f]")
LANG_FLAGS = {"--zh": "zh", "--cn": "zh", "--en": "en", "--lang=zh": "zh", "--lang=en": "en"}


@dataclass
class ChatRequest:
    """What one message asks for. ``lang`` is an explicit ``--zh``/``--en`` choice (or None);
    ``written_in`` is the language of the message's own words, the default when none is stored."""

    lines: list[str]
    lang: str | None = None
    written_in: str = "en"
    skipped: int = 0
    notes: list[str] = field(default_factory=list)
    # the same lines with their indentation as pasted: triage tells a traceback's code lines
    # from its final exception line by it, and ``lines`` (what the explainer gets) has none
    pasted: list[str] = field(default_factory=list)


def written_language(text: str) -> str:
    """"zh" when the asker's words contain Chinese, else "en".

    Two CJK characters are required so a single Chinese file name inside a pasted path does
    not flip an English speaker's answer."""
    return "zh" if len(CJK.findall(text)) >= 2 else "en"


def displayable(text: str) -> str:
    """A line as chat should show it: colour codes and control characters removed (the
    explainer still receives the line as pasted)."""
    return ANSI_OR_CONTROL.sub("", text)


def unescape_slack(text: str) -> str:
    """Undo Slack's message formatting: mentions removed, links to their label, &<> restored."""
    text = SLACK_MENTION.sub(" ", text)
    text = SLACK_LINK.sub(lambda m: m.group(2) or m.group(1).removeprefix("mailto:"), text)
    return text.replace("&lt;", "<").replace("&gt;", ">").replace("&amp;", "&")


def strip_feishu_mentions(text: str) -> str:
    return FEISHU_MENTION.sub(" ", text)


def _leading_flags(text: str) -> tuple[str | None, str]:
    """Consume ``/explain`` and ``--zh``/``--en`` tokens at the start; the last flag wins."""
    text = COMMAND.sub("", text, count=1)
    lang = None
    while True:
        stripped = text.lstrip(" \t")
        token = stripped.split(None, 1)[0] if stripped.strip() else ""
        if token.lower() not in LANG_FLAGS:
            return lang, stripped
        lang = LANG_FLAGS[token.lower()]
        text = stripped[len(token):]


def parse_request(text: str, max_lines: int = 50) -> ChatRequest:
    """Lines to explain from already-unescaped message text.

    With code blocks, only their contents are log lines and the words around them are the
    question; without, every non-blank line is a log line. Lines beyond ``max_lines`` are
    counted in ``skipped`` rather than silently dropped."""
    text = text.replace("\r\n", "\n").replace("\r", "\n")
    lang, body = _leading_flags(text)
    blocks = CODE_FENCE.findall(body)
    if blocks:
        prose = CODE_FENCE.sub(" ", body)
        raw_lines = [line for block in blocks for line in block.split("\n")]
    else:
        prose = body
        raw_lines = body.split("\n")
    shown = [(_strip_inline_code(line), line) for line in raw_lines]
    shown = [(line, raw) for line, raw in shown if line.strip()]
    lines = [line for line, _ in shown]
    pasted = [raw.rstrip() if line == raw.strip() else line for line, raw in shown]
    request = ChatRequest(lines=lines[:max_lines], lang=lang, written_in=written_language(prose),
                          pasted=pasted[:max_lines])
    request.skipped = max(0, len(lines) - max_lines)
    return request


def _strip_inline_code(line: str) -> str:
    line = line.strip()
    if len(line) >= 2 and line.startswith("`") and line.endswith("`"):
        line = line[1:-1]
    return line.strip()
