"""The ledger of the source verification pass over the curated entries (issue 15).

One JSON line per entry in ``docs/verification/<kb file stem>.jsonl``: ``id``, ``outcome``
(confirmed, corrected, merged, removed), ``classes`` (what kind of error was found) and
``detail``. ``python -m indexer.ledger`` prints the table the README carries; a test keeps the
two in step and checks the ledger against the KB.
"""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

OUTCOMES = ("confirmed", "corrected", "merged", "removed")
CLASSES = {
    "versions": "a version claim not borne out by the tags",
    "decode": "a field, flag or counter decoded by its label or wrongly",
    "rank_index": "global/local rank or NVML/CUDA device index confused",
    "pattern": "a missing branch, an over-match or a wrong anchor",
    "example": "a constructed example that cannot occur",
    "text": "another wrong statement",
    "zh": "wrong in Chinese only",
    "source": "the wrong file or function cited",
    "unverifiable": "claims cut (or the entry removed) because no code backs them",
}
ROOT = Path(__file__).resolve().parents[1]
LEDGER_DIR = ROOT / "docs" / "verification"


def read_ledger(folder: Path = LEDGER_DIR) -> list[dict]:
    rows = []
    for path in sorted(folder.glob("*.jsonl")):
        for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            if line.strip():
                row = json.loads(line)
                row["_where"] = f"{path.name}:{n}"
                rows.append(row)
    return rows


def table(rows: list[dict]) -> str:
    outcomes = Counter(r["outcome"] for r in rows)
    classes = Counter(c for r in rows if r["outcome"] != "confirmed" for c in r.get("classes", []))
    out = ["| outcome | entries |", "|---|---:|"]
    out += [f"| {o} | {outcomes.get(o, 0)} |" for o in OUTCOMES]
    out += [f"| **all** | **{len(rows)}** |", "", "| class of error | entries |", "|---|---:|"]
    out += [f"| `{c}`: {CLASSES[c]} | {classes.get(c, 0)} |" for c in CLASSES]
    return "\n".join(out)


if __name__ == "__main__":
    print(table(read_ledger()))
