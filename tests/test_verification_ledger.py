"""The verification pass over the curated entries (issue 15) left a ledger that agrees with the
KB and with the README's figures."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

from indexer.kb_loader import load_kb
from indexer.ledger import CLASSES, OUTCOMES, ROOT, read_ledger, table


def test_ledger_rows_are_well_formed():
    rows = read_ledger()
    assert rows, "docs/verification/ holds the ledger"
    for row in rows:
        where = row["_where"]
        assert set(row) - {"_where"} <= {"id", "outcome", "classes", "detail"}, where
        assert row["outcome"] in OUTCOMES, where
        assert set(row.get("classes", [])) <= set(CLASSES), where
        if row["outcome"] == "confirmed":
            assert not row.get("classes"), f"{where}: a confirmed entry has no error classes"
        else:
            assert row.get("classes") and row.get("detail"), f"{where}: say what was wrong"
    dup = [i for i, n in Counter(r["id"] for r in rows).items() if n > 1]
    assert not dup, dup


def test_ledger_agrees_with_the_kb(kb_dir):
    kb_ids = {l.entry.id for l in load_kb(Path(kb_dir)).entries}
    rows = read_ledger()
    for row in rows:
        if row["outcome"] in ("removed", "merged"):
            assert row["id"] not in kb_ids, f"{row['_where']}: {row['id']} is {row['outcome']} but still in kb/"
        else:
            assert row["id"] in kb_ids, f"{row['_where']}: {row['id']} is not in kb/"
    # every entry of the KB went through the pass
    missing = kb_ids - {r["id"] for r in rows}
    assert not missing, sorted(missing)[:20]


def test_readme_carries_the_ledger_table():
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    assert table(read_ledger()) in readme, "run python -m indexer.ledger and paste the table into README"
