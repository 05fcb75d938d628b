"""``explainlog eval --triage DIR``: score triage on labelled whole-log excerpts.

``DIR/labels.jsonl`` has one object per case: ``case`` (``DIR/<case>.log``), ``root_cause`` (a
substring of exactly one line, or null for a log without failure), ``cascade`` (substrings of
consequence lines), ``kind``. Reported: root-cause line right; a cascade line named as root
cause (must be 0); "no failure" answered right on the excerpts that hold none.
"""

from __future__ import annotations

import json
from pathlib import Path

from service.triage import TriageStream, triage_lines, read_sources


def evaluate_triage(explainer, folder: Path, semantic: bool = True, streaming: bool = True) -> dict:
    """``streaming``: through ``TriageStream`` (what ``explainlog triage`` runs), else line by
    line (what ``POST /v1/triage`` runs); both must give the same verdicts."""
    rows = [json.loads(l) for l in (folder / "labels.jsonl").read_text(encoding="utf-8").splitlines() if l.strip()]
    out = {"cases": len(rows), "with_failure": 0, "root_right": 0, "cascade_as_root": 0,
           "no_failure_cases": 0, "no_failure_right": 0, "results": []}
    engine = None
    for row in rows:
        path = folder / f"{row['case']}.log"
        if streaming:
            result, engine = _stream(explainer, path, semantic, engine)
        else:
            result = triage_lines(explainer, read_sources([str(path)]), semantic=semantic)
        got = result["root_cause"]
        got_line = got["line"] if got else None
        verdict = "wrong"
        if row["root_cause"] is None:
            out["no_failure_cases"] += 1
            if got is None:
                out["no_failure_right"] += 1
                verdict = "right"
        else:
            out["with_failure"] += 1
            if got_line is not None and row["root_cause"] in got_line:
                out["root_right"] += 1
                verdict = "right"
            elif got_line is not None and any(c in got_line for c in row.get("cascade", [])):
                out["cascade_as_root"] += 1
                verdict = "cascade named as root cause"
        out["results"].append({"case": row["case"], "kind": row["kind"], "verdict": verdict,
                               "expected": row["root_cause"], "got": got_line,
                               "got_pattern": got["pattern_id"] if got else None})
    return out


def _stream(explainer, path: Path, semantic: bool, engine) -> tuple[dict, object]:
    from service.batch.inputs import Source

    stream = TriageStream(explainer, semantic, engine)
    stream.feed_source(Source(str(path), path, path.stat().st_size))
    return stream.result(), stream.engine


def report_lines(r: dict) -> list[str]:
    def pct(a, b):
        return f"{a}/{b} ({100.0 * a / b:.1f}%)" if b else "0/0"
    return [
        f"cases: {r['cases']} ({r['with_failure']} with a failure, {r['no_failure_cases']} without)",
        f"root-cause line right: {pct(r['root_right'], r['with_failure'])}",
        f"cascade line named as root cause: {r['cascade_as_root']}",
        f"'no failure' right: {pct(r['no_failure_right'], r['no_failure_cases'])}",
    ]
