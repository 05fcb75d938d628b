"""``explainlog eval --heldout``: answered / right / unrelated-answered on a held-out set.

A held-out record is a real line the KB was not built from, labelled before any pattern it
tests was written: ``{"line", "component", "severity", "concept": [terms], "source"}``, where
a right explanation must mention one of the concept terms. Lines of unrelated software
(``{"line", "software", "source"}``) must come back unknown.

- answered: the line got an answer (any tier);
- right: answered, and the answer's title, explanation or action (English) names a concept
  term (case-insensitive, ignoring '-', '_' and spaces between words);
- unrelated answered: lines of other software that got an answer (should be none).
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

from service.evaluate import read_rows


@dataclass
class HeldoutReport:
    n: int = 0
    answered: int = 0
    right: int = 0
    n_unrelated: int = 0
    unrelated_answered: int = 0
    by_tier: Counter = field(default_factory=Counter)
    by_component: dict = field(default_factory=dict)
    misses: list = field(default_factory=list)

    def rate(self, a: int, b: int) -> str:
        return f"{a}/{b} ({100.0 * a / b:.1f}%)" if b else "0/0"

    def lines(self) -> list[str]:
        out = [
            f"held-out lines: {self.n}",
            f"answered: {self.rate(self.answered, self.n)}",
            f"right: {self.rate(self.right, self.n)}",
            f"unrelated-software lines answered: {self.rate(self.unrelated_answered, self.n_unrelated)}",
            "answers by tier: " + ", ".join(f"{k} {v}" for k, v in sorted(self.by_tier.items())),
        ]
        for comp, row in sorted(self.by_component.items()):
            out.append(f"  {comp}: {row['n']} lines, answered {row['answered']}, right {row['right']}")
        return out


def _squash(text: str) -> str:
    return re.sub(r"[\s_\-/]+", "", text.lower())


def is_right(answer: dict, concepts: list[str]) -> bool:
    if not answer.get("known"):
        return False
    parts = [answer.get(k) or {} for k in ("title", "explanation", "action")]
    text = _squash(" ".join(p.get("en", "") for p in parts if isinstance(p, dict)))
    return any(_squash(c) in text for c in concepts if c.strip())


def load_rows(paths: list[Path]) -> list[dict]:
    return read_rows(paths, ("line",))


def evaluate_heldout(explainer, rows: list[dict]) -> HeldoutReport:
    report = HeldoutReport()
    answers = explainer.explain_many([r["line"] for r in rows])
    for row, answer in zip(rows, answers):
        if "concept" not in row:  # unrelated software
            report.n_unrelated += 1
            if answer["known"]:
                report.unrelated_answered += 1
                report.misses.append({"where": row["where"], "kind": "unrelated answered", "got": answer["pattern_id"]})
            continue
        report.n += 1
        comp = report.by_component.setdefault(row.get("component", "?"), {"n": 0, "answered": 0, "right": 0})
        comp["n"] += 1
        if answer["known"]:
            report.answered += 1
            comp["answered"] += 1
            report.by_tier[answer["tier"]] += 1
            if is_right(answer, row["concept"]):
                report.right += 1
                comp["right"] += 1
            else:
                report.misses.append({"where": row["where"], "kind": "wrong", "got": answer["pattern_id"],
                                      "concept": row["concept"]})
        else:
            report.by_tier["unknown"] += 1
            report.misses.append({"where": row["where"], "kind": "unknown", "got": None, "concept": row["concept"]})
    return report
