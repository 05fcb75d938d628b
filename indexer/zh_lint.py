"""The house style of the KB's Chinese texts, as checks ``kb check`` runs on every zh text.

The rules come from the Chinese review (glossary and systematic issues): one space between
Chinese and Latin words or numbers, none next to full-width punctuation; full-width punctuation
in Chinese sentences; “” around Chinese phrases (ASCII quotes and backticks are for log text);
no raw English value dropped into a Chinese verb slot ("已 {status}"); and the terms to avoid,
each with the preferred one. Each problem says what to write instead.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

HAN = r"\u4e00-\u9fff"

# Terms to avoid -> what to write (the glossary of the review).
AVOID: list[tuple[re.Pattern[str], str]] = [
    (re.compile(p), hint) for p, hint in [
        (r"通讯器|通信域", "通信器"),
        (r"集体通信|集合操作", "集合通信"),
        (r"看门狗", "watchdog"),
        (r"挂住|挂起", "卡住 / 卡死（hang）"),
        (r"元凶", "出问题的 rank"),
        (r"核函数|(?:GPU|CUDA|NCCL|RCCL|HIP|clique|MSCCL\+\+|通信|计算|对称) ?内核", "kernel（内核只指操作系统内核）"),
        (r"GPU 内存", "显存"),
        (r"交换芯片", "PCIe Switch"),
        (r"根复合体", "Root Complex（RC）"),
        (r"CPU 插槽", "CPU socket"),
        (r"退出服务", "下线（drain）"),
        (r"已提交", "保存完成"),
        (r"超额订阅", "线程超卖 / 线程数过多互相抢核"),
        (r"权威指示", "以这一行为准"),
        (r"发现拓扑", "获取 rank 信息（拓扑只指 GPU/网络拓扑）"),
        (r"仅为信息|属提示信息|属正常现象|属正常信息|正常信息", "正常日志，无需处理。"),
        (r"屏障", "barrier"),
    ]
]

_MISSING_SPACE = re.compile(rf"[{HAN}](?=[A-Za-z0-9])|[A-Za-z0-9](?=[{HAN}])")
_PLACEHOLDER_TOUCH = re.compile(rf"[{HAN}](?=\{{(\w+)\}})|\{{(\w+)\}}(?=[{HAN}])")
_SPACE_AFTER = re.compile(r"[，。；：、（“！？][ \t]+")
_SPACE_BEFORE = re.compile(r"[ \t]+[，。；：、）”！？]")
# Sentence punctuation only: "文件:行号" and "时:分:秒" are notations, a colon with a space
# after it is punctuation; parentheses of a formula or a call ("len(轨迹)", "(值 >> 8)") stay.
_ASCII_PUNCT = re.compile(rf"(?<=[{HAN}])[,;]|[,;](?=\s*[{HAN}])|(?<=[{HAN}]):\s+(?=[{HAN}])")
_ASCII_PARENS = re.compile(rf"(?<![A-Za-z0-9_)])\(([^()<>=&×*/+\-]*[{HAN}][^()<>=&×*/+\-]*)\)")
# Log text and notations are written in backticks or ASCII quotes; the punctuation rules do not
# look inside them ("<主机> slots=<N>", "子节点/…->本 rank->父节点").
_NOTATION = re.compile(r"[<>=\[\]:]|->")
_BACKTICKED = re.compile(r"`[^`]*`")
_ENUM_IN_GRAMMAR = re.compile(r"(?:已|被)\s*\{(\w+)\}")
# “” holds a Chinese phrase; log text, a value or an identifier inside it ("“RST: Yes” 表示")
# reads as a Chinese quotation and keeps a stray space before the next Chinese word
_LOG_IN_CJK_QUOTES = re.compile(rf"“[^“”{HAN}]*”")
# log text with a Chinese stand-in for its variable part ("“zsh: <信号> …”") is still log text
_PLACEHOLDERS_BLANKED = re.compile(r"<[^<>“”]*>")


@dataclass(frozen=True)
class Problem:
    rule: str
    message: str


def lint(text: str) -> list[Problem]:
    """The style problems of one Chinese text (each rule reported once, with an excerpt)."""
    problems: list[Problem] = []

    def add(rule: str, match: re.Match[str] | None, message: str) -> None:
        if match is not None and not any(p.rule == rule for p in problems):
            excerpt = text[max(0, match.start() - 8):match.end() + 8].replace("\n", " ")
            problems.append(Problem(rule, f"{message}: …{excerpt}…"))

    prose = _prose(text)
    add("spacing", _MISSING_SPACE.search(prose), "put one space between Chinese and Latin words or numbers")
    for m in _PLACEHOLDER_TOUCH.finditer(text):
        if (m.group(1) or m.group(2)).endswith("_decoded"):
            continue  # a decoded value is Chinese text itself
        add("spacing", m, "put one space between Chinese and a placeholder")
        break
    add("punct-space", _SPACE_AFTER.search(text) or _SPACE_BEFORE.search(text),
        "no space next to full-width punctuation")
    add("ascii-punct", _ASCII_PUNCT.search(prose), "use full-width ，；： in Chinese sentences")
    add("ascii-punct", _ASCII_PARENS.search(prose), "use full-width （） around Chinese")
    quoted = text.split('"')[1::2] if text.count('"') % 2 == 0 else []
    for piece in quoted:
        if re.search(f"[{HAN}]", piece) and not _NOTATION.search(piece):
            add("quotes", re.search(re.escape(f'"{piece}"'), text), "put Chinese phrases in “”, not ASCII quotes")
            break
    add("log-quotes", _LOG_IN_CJK_QUOTES.search(_PLACEHOLDERS_BLANKED.sub("<>", text)),
        "log text, values and identifiers go in ASCII quotes ('…') or backticks, not “”")
    for m in _ENUM_IN_GRAMMAR.finditer(text):
        if not m.group(1).endswith("_decoded"):
            add("raw-value", m, "a raw English value in a Chinese verb slot; use {name_decoded}, a colon or parentheses")
            break
    for pattern, hint in AVOID:
        m = pattern.search(text)
        if m:
            add(f"term:{m.group(0)}", m, f"avoid “{m.group(0)}”, write {hint}")
    return problems


def _prose(text: str) -> str:
    """The text with log text and notations blanked out: backticked spans, and ASCII-quoted
    spans that hold notation characters (same length, so offsets stay)."""
    text = _BACKTICKED.sub(lambda m: " " * len(m.group(0)), text)
    if text.count('"') % 2 == 0:
        parts = text.split('"')
        for i in range(1, len(parts), 2):
            if _NOTATION.search(parts[i]):
                parts[i] = " " * len(parts[i])
        text = '"'.join(parts)
    return text


def entry_texts(entry) -> list[tuple[tuple, str]]:
    """(path, zh text) of every Chinese text of an entry: title, summary, explanation, action,
    verdicts, field meanings and value texts."""
    out: list[tuple[tuple, str]] = []
    for key in ("title", "summary", "explanation", "action"):
        text = getattr(entry, key, None)
        if text is not None:
            out.append(((key, "zh"), text.zh))
    for n, verdict in enumerate(getattr(entry, "verdicts", None) or ()):
        out.append((("verdicts", n, "zh"), verdict.zh))
    for name, spec in entry.fields.items():
        out.append((("fields", name, "zh"), spec.zh))
        for value, text in (spec.values or {}).items():
            out.append((("fields", name, "values", value, "zh"), text.zh))
        if spec.default is not None:
            out.append((("fields", name, "default", "zh"), spec.default.zh))
    return out
