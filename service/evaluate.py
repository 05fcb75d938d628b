"""``explainlog eval``: score the explainer on a labelled set of real lines.

Each JSONL record is ``{"line": ..., "expected": "<entry id>" | null}``. Reported:
- top-1 accuracy over lines that have an expected entry (answered, and with that entry);
- abstention precision/recall, where abstaining means ``known: false`` and the lines that
  *should* be abstained on are those with ``expected: null``;
- expected calibration error of the confidence as P(top candidate is right), 10 bins;
- how many expected-unknown lines were nevertheless answered (confident false matches).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

from indexer.calibration import expected_calibration_error


@dataclass
class LabelledLine:
    line: str
    expected: str | None
    where: str


@dataclass
class EvalReport:
    n: int
    n_expected_known: int
    n_expected_unknown: int
    top1_accuracy: float
    abstention_precision: float
    abstention_recall: float
    ece: float
    false_matches: int
    by_tier: dict[str, int]
    errors: list[dict] = field(default_factory=list)

    def lines(self) -> list[str]:
        return [
            f"lines: {self.n} ({self.n_expected_known} with an expected entry, {self.n_expected_unknown} expected unknown)",
            f"top-1 accuracy: {self.top1_accuracy:.3f}",
            f"abstention precision: {self.abstention_precision:.3f}",
            f"abstention recall: {self.abstention_recall:.3f}",
            f"calibration error (ECE, 10 bins): {self.ece:.3f}",
            f"expected-unknown lines answered as known: {self.false_matches}",
            "answers by tier: " + ", ".join(f"{k} {v}" for k, v in sorted(self.by_tier.items())),
        ]


class LabelledSetError(ValueError):
    pass


def read_rows(paths: list[Path], needs: tuple[str, ...]) -> list[dict]:
    """The JSON objects of JSONL files (blank lines skipped), each with ``where``
    (``file:line``); a line that is not an object with the ``needs`` keys is an error naming
    its place. Every labelled set ``eval`` reads (eval sets, held-out lines, questions)."""
    rows = []
    for path in paths:
        for number, text in enumerate(Path(path).read_text(encoding="utf-8").splitlines(), 1):
            if not text.strip():
                continue
            try:
                row = json.loads(text)
            except ValueError as exc:
                raise LabelledSetError(f"{path}:{number}: not JSON ({exc})") from exc
            missing = [key for key in needs if not isinstance(row, dict) or key not in row]
            if missing:
                raise LabelledSetError(f"{path}:{number}: no {', '.join(repr(k) for k in missing)}")
            row["where"] = f"{path}:{number}"
            rows.append(row)
    return rows


def load_labelled(paths: list[Path]) -> list[LabelledLine]:
    return [LabelledLine(row["line"], row.get("expected"), row["where"]) for row in read_rows(paths, ("line",))]


def _ratio(a: int, b: int) -> float:
    return a / b if b else 1.0


def evaluate(explainer, records: list[LabelledLine], tier: str = "both") -> EvalReport:
    """Score answers; ``tier="semantic"`` bypasses the regex tier to measure the fallback alone."""
    answers = explainer.explain_many([r.line for r in records], regex=tier != "semantic")
    correct_top1 = abstained = abstained_right = false_matches = 0
    confidences: list[float] = []
    top_right: list[bool] = []
    by_tier: dict[str, int] = {}
    errors: list[dict] = []
    for record, answer in zip(records, answers):
        tier = answer["tier"] or "none"
        by_tier[tier] = by_tier.get(tier, 0) + 1
        top = answer["pattern_id"] or (answer["candidates"][0]["pattern_id"] if answer["candidates"] else None)
        confidences.append(answer["confidence"])
        top_right.append(top is not None and top == record.expected)
        if not answer["known"]:
            abstained += 1
            abstained_right += record.expected is None
        if record.expected is None:
            if answer["known"]:
                false_matches += 1
                errors.append({"where": record.where, "expected": None, "got": answer["pattern_id"], "confidence": answer["confidence"]})
        elif answer["known"] and answer["pattern_id"] == record.expected:
            correct_top1 += 1
        else:
            errors.append({"where": record.where, "expected": record.expected, "got": answer["pattern_id"], "confidence": answer["confidence"]})
    n_unknown = sum(r.expected is None for r in records)
    n_known = len(records) - n_unknown
    return EvalReport(
        n=len(records),
        n_expected_known=n_known,
        n_expected_unknown=n_unknown,
        top1_accuracy=_ratio(correct_top1, n_known),
        abstention_precision=_ratio(abstained_right, abstained),
        abstention_recall=_ratio(abstained_right, n_unknown),
        ece=expected_calibration_error(confidences, top_right),
        false_matches=false_matches,
        by_tier=by_tier,
        errors=errors,
    )
