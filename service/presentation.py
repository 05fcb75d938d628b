"""Presentation every front-end shares: the words of the frame in both languages, severity
order and names, the source sentence, language choice, and one CJK-aware wrapper.

Explanations come from the KB; only the frame around them (labels, severity names, tiers,
"unknown") is worded here, once, so the terminal, the page, chat and batch output say the same
thing the same way. The page's script and the chat labels carry copies for the browser and the
cards; ``tests/test_presentation.py`` holds them to these terms.
"""

from __future__ import annotations

import re
import unicodedata

SEVERITIES = ("info", "warning", "error", "fatal")
SEVERITY_RANK = {name: rank for rank, name in enumerate(SEVERITIES)}

TERMS: dict[str, dict[str, str]] = {
    "en": {
        "fatal": "fatal", "error": "error", "warning": "warning", "info": "info",
        "unknown": "unknown", "unknown_title": "Not in the knowledge base",
        "summary": "In short", "action": "What to do", "explanation": "Explanation", "fields": "Fields",
        "details": "Details", "more": "(details: --verbose)",
        "confidence": "confidence", "nearest": "Nearest entries", "source": "Source",
        "tier.regex": "exact match", "tier.catalog": "source catalogue", "tier.semantic": "similar entry",
        "role.context": "context", "role.progress": "progress", "role.advice": "advice",
        "role.root_cause": "root cause", "role.cascade": "knock-on error", "role.wrapper": "wrapper",
        "printed": "printed by", "in": "in", "also": "also", "versions": "releases",
        "from.docs:": "documented in", "from.kernel:": "printed by the Linux kernel:",
        "from.vendor:": "printed by the vendor tool", "from.man:": "described in the man page",
    },
    "zh": {
        "fatal": "致命", "error": "错误", "warning": "警告", "info": "信息",
        "unknown": "未收录", "unknown_title": "知识库里没有这一行",
        "summary": "结论", "action": "建议操作", "explanation": "解释", "fields": "字段",
        "details": "详情", "more": "（详情：--verbose）",
        "confidence": "置信度", "nearest": "最接近的条目", "source": "打印位置",
        "tier.regex": "精确匹配", "tier.catalog": "源码目录", "tier.semantic": "语义相似",
        "role.context": "背景", "role.progress": "进度", "role.advice": "建议",
        "role.root_cause": "根因", "role.cascade": "连带报错", "role.wrapper": "包装信息",
        "printed": "打印位置：", "in": "函数", "also": "另见", "versions": "版本",
        "from.docs:": "出处（文档）：", "from.kernel:": "出处（Linux 内核）：",
        "from.vendor:": "出处（厂商工具）：", "from.man:": "出处（man 手册）：",
    },
}


def term(lang: str, key: str) -> str:
    return TERMS.get(lang, TERMS["en"])[key]


def severity_name(severity: str | None, lang: str) -> str:
    return term(lang, severity if severity in SEVERITY_RANK else "unknown")


def lang_of(text: str) -> str:
    """'zh' when the text holds Chinese (a question or a chat message), else 'en'."""
    return "zh" if re.search(r"[\u4e00-\u9fff]", text or "") else "en"


def source_parts(source: dict | None, lang: str = "en") -> list[str]:
    """The parts of the 'printed by' line, each kept whole when it wraps: where, the function,
    the releases, each other project printing it; [] if unknown."""
    if not source or not source.get("repo"):
        return []
    w = TERMS.get(lang, TERMS["en"])
    kind = w.get(f"from.{source['repo']}")  # an entry citing docs, the kernel, a vendor tool
    where = (source.get("file") or "") if kind else f"{source['repo']} {source.get('file') or ''}".strip()
    if source.get("line"):
        where += f":{source['line']}"
    label = kind or w["printed"]
    parts = [f"{label} {where}" if lang == "en" else f"{label}{where}"]
    if source.get("function"):
        parts.append(f"{w['in']} {source['function']}")
    versions = _versions(source.get("versions"), lang)
    if versions:
        parts.append(versions)
    for also in source.get("also") or []:
        parts.append(f"({w['also']} {also['repo']} {also['versions']})" if lang == "en" else f"（{w['also']} {also['repo']} {also['versions']}）")
    return parts


def _join_parts(parts: list[str], lang: str) -> str:
    out = ""
    for part in parts:
        if not out:
            out = part
        elif part[0] in "(（":
            out += (" " if lang == "en" else "") + part
        else:
            out += ", " + part if lang == "en" else "，" + part
    return out


def source_line(source: dict | None, lang: str = "en") -> str | None:
    """One line naming where a message is printed and in which releases; None if unknown.

    "printed by NVIDIA/nccl src/transport/net_ib.cc:611, in ncclIbInit, v2.19.3-1–v2.27.7-1
    (also RCCL rocm-5.0.0–rocm-6.2.2)"; the page builds the same sentence from the same JSON.
    """
    parts = source_parts(source, lang)
    return _join_parts(parts, lang) if parts else None


def wrap_source(source: dict | None, lang: str, width: int, hang: str = "  ") -> list[str]:
    """The 'printed by' line wrapped to ``width``: breaks fall only between its parts ("函数
    retrieveDesyncReport" and a release span stay whole), continuation lines hang by ``hang``;
    a part wider than a line is wrapped on its own."""
    parts = source_parts(source, lang)
    lines: list[str] = []
    current: list[str] = []
    for part in parts:
        room = width - (display_width(hang) if lines else 0)
        if current and display_width(_join_parts(current + [part], lang)) > room:
            text = _join_parts(current, lang) + ("" if part[0] in "(（" else ("," if lang == "en" else "，"))
            lines.append(text)
            current = [part]
        else:
            current.append(part)
    if current:
        lines.append(_join_parts(current, lang))
    out: list[str] = []
    for n, line in enumerate(lines):
        room = width - (display_width(hang) if n else 0)
        pieces = wrap_display(line, room) if display_width(line) > room else [line]
        out += [(hang if n or k else "") + piece for k, piece in enumerate(pieces)]
    return out


_PROSE = re.compile(r"[A-Za-z]{2,}[ ,;]+[A-Za-z]{2,}[ ,;]+[A-Za-z]{2,}")


def _versions(text: str | None, lang: str) -> str | None:
    """The releases as shown: in Chinese, a curator's English note after the span (in
    parentheses) is left out, and so is a span that is English prose throughout."""
    if not text or lang == "en":
        return text
    head = text.split(" (", 1)[0].strip()
    if _PROSE.search(head) and not re.search(r"[\u4e00-\u9fff]", head):
        return None
    return head


# ---------------------------------------------------------------------------- wrapping

# Chinese line-breaking rules (禁则): these never start a line ...
NO_LINE_START = set("，。；：、！？）》」』】〕〉”’…—．，,.;:!?)]}%")
# ... and these never end one.
NO_LINE_END = set("（《「『【〔〈“‘([{")
_TOKENS = re.compile(r"[\u2e80-\uffef]|[^\s\u2e80-\uffef]+|\s+")
# a short command in backticks stays on one line ("`nvidia-smi -q | grep -A8 Fabric`")
# a number and its unit stay on one line ("1.2 GB/s", "0.095 毫秒", "8 个")
_NUMBER_UNIT = (r"\d[\d.,:/x×]*[ \u00a0](?:[KMGTPE]i?B(?:/s)?|[KMG]b(?:/s|ps)|B|bytes|[mun]s|µs|s|[MG]Hz|W|%"
                r"|毫秒|微秒|纳秒|秒|分钟|小时|天|字节|个|次|块|步|条)(?![A-Za-z0-9/])")
_SPANNED = re.compile(r"`[^`\n]+`|" + _NUMBER_UNIT + r"|[\u2e80-\uffef]|[^\s\u2e80-\uffef`]+|`|\s+")


def _tokens(text: str, width: int) -> list[str]:
    tokens = []
    for token in _SPANNED.findall(text):
        if token[0] == "`" and len(token) > 1 and (" " in token or "\u3000" in token) and display_width(token) > width:
            tokens += _TOKENS.findall(token)  # too long to keep whole: break it like any text
        else:
            tokens.append(token)
    return tokens


def _no_widow(lines: list[str]) -> list[str]:
    """A last line of one Chinese character (and its closing punctuation) takes the character
    before it along ("…配置的精\n度" → "…配置的\n精度")."""
    if len(lines) < 2:
        return lines
    last, before = lines[-1], lines[-2]
    core = last.rstrip("".join(NO_LINE_START))
    if len(core) != 1 or not _CJK_CHAR.match(core) or len(before) < 3 or not _CJK_CHAR.match(before[-1]):
        return lines
    if before[-2] in NO_LINE_END or before[-2].isspace():
        return lines
    return lines[:-2] + [before[:-1], before[-1] + last]


_CJK_CHAR = re.compile(r"[\u4e00-\u9fff]")


def display_width(text: str) -> int:
    """Terminal columns: CJK characters and full-width punctuation take two."""
    return sum(2 if unicodedata.east_asian_width(ch) in "WF" else 1 for ch in text)


def wrap_display(text: str, width: int) -> list[str]:
    """Wrap by display width. Chinese may break between any two characters, Latin words and
    numbers only at spaces (never inside); closing punctuation never starts a line (the word
    before it moves down with it) and opening punctuation never ends one. A single word wider
    than the line stands alone on its line."""
    lines: list[str] = []
    current: list[str] = []  # tokens of the line being filled, spaces included
    used = 0
    for token in _tokens(text, width):
        if token.isspace():
            if current:
                current.append(" ")
                used += 1
            continue
        w = display_width(token)
        if current and used + w > width:
            carry: list[str] = []
            if token[0] in NO_LINE_START:
                # take the word before the punctuation down with it (if the line keeps something),
                # keeping the spaces between what moves ("error: ..." stays "error: ...")
                lead_gap = gap = False
                while current and current[-1] == " ":
                    current.pop()
                    lead_gap = True
                while len(current) > 1 and (not carry or carry[0][0] in NO_LINE_START):
                    word = current.pop()
                    if gap:
                        carry.insert(0, " ")
                    carry.insert(0, word)
                    gap = False
                    while len(current) > 1 and current[-1] == " ":
                        current.pop()
                        gap = True
                if carry and carry[0][0] in NO_LINE_START:  # only punctuation could move down
                    current += ([" "] if gap else []) + carry
                    carry = []
                if lead_gap:
                    (carry if carry else current).append(" ")
            if token[0] in NO_LINE_START and not carry:
                current.append(token)  # a lone over-wide word: the punctuation hangs after it
                used += w
                continue
            while current and (current[-1] == " " or current[-1][-1] in NO_LINE_END):
                piece = current.pop()
                if piece != " ":
                    carry.insert(0, piece)
            if current:
                lines.append("".join(current).rstrip())
                current = carry
            else:
                current = carry  # nothing could be left behind: the line overflows
            used = sum(display_width(t) for t in current)
        current.append(token)
        used += w
    if "".join(current).strip():
        lines.append("".join(current).rstrip())
    return _no_widow(lines) or [""]
