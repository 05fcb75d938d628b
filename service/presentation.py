"""Presentation pieces every front-end shares: how an answer's source is said.

"printed by NVIDIA/nccl src/transport/net_ib.cc:611 in ncclIbInit, v2.19.3-1–v2.27.7-1"
(also RCCL rocm-5.0.0–rocm-6.2.2)" — one wording for the terminal, chat and batch output;
the page builds the same sentence from the same JSON.
"""

from __future__ import annotations

WORDS = {
    "en": {"printed": "printed by", "in": "in", "also": "also", "versions": "releases"},
    "zh": {"printed": "打印位置：", "in": "函数", "also": "另见", "versions": "版本"},
}


def source_line(source: dict | None, lang: str = "en") -> str | None:
    """One line naming where a message is printed and in which releases; None if unknown."""
    if not source or not source.get("repo"):
        return None
    w = WORDS.get(lang, WORDS["en"])
    where = f"{source['repo']} {source.get('file') or ''}".strip()
    if source.get("line"):
        where += f":{source['line']}"
    parts = [f"{w['printed']} {where}" if lang == "en" else f"{w['printed']}{where}"]
    if source.get("function"):
        parts.append(f"{w['in']} {source['function']}")
    if source.get("versions"):
        parts.append(source["versions"])
    text = ", ".join(parts) if lang == "en" else "，".join(parts)
    for also in source.get("also") or []:
        text += f" ({w['also']} {also['repo']} {also['versions']})" if lang == "en" else f"（{w['also']} {also['repo']} {also['versions']}）"
    return text
