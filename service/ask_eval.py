"""``explainlog eval --questions FILE``: measure ``ask`` on a labelled set of real questions.

Each line: ``{question, lang, source, expects}``; ``expects`` is null for a question the KB
should decline, else ``{kind: variable|concept|message, name, accept?}``. An answer is right
when its document is the one expected: the variable of that name, the concept with that name
among its names, or (messages) an entry or record id listed in ``accept``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from service.evaluate import read_rows


def load_questions(paths: list[Path]) -> list[dict]:
    rows = read_rows(paths, ("question", "expects"))
    for row in rows:
        if not isinstance(row["question"], str):
            raise ValueError(f"{row['where']}: 'question' is not text")
        row["where"] = Path(row["where"]).name  # misses name the file only: "questions.jsonl:12"
    return rows


def _right(answer: dict, expects: dict, concept_names: dict[str, set[str]]) -> bool:
    kind = expects["kind"]
    if kind == "variable":
        return answer["kind"] == "variable" and answer["id"].upper() == expects["name"].upper()
    if kind == "concept":
        return answer["kind"] == "concept" and expects["name"].lower() in concept_names.get(answer["id"], set())
    return answer["id"] in set(expects.get("accept") or [])


@dataclass
class QuestionReport:
    asked: int = 0
    in_domain: int = 0
    first: int = 0
    top3: int = 0
    unrelated: int = 0
    declined: int = 0
    by: dict = field(default_factory=dict)
    misses: list = field(default_factory=list)

    def lines(self) -> list[str]:
        pct = lambda a, b: f"{a}/{b} ({100 * a / b:.1f}%)" if b else "0/0"
        out = [f"questions: {self.asked} ({self.in_domain} in the KB's domain, {self.unrelated} unrelated)",
               f"right answer first: {pct(self.first, self.in_domain)}",
               f"right answer in the top 3: {pct(self.top3, self.in_domain)}",
               f"unrelated questions declined: {pct(self.declined, self.unrelated)}"]
        for key, (n, first, top3) in sorted(self.by.items()):
            out.append(f"  {key}: {n} questions, first {first}, top 3 {top3}")
        return out


def evaluate_questions(asker, rows: list[dict]) -> QuestionReport:
    from indexer.glossary import load_concepts

    concepts, _ = load_concepts(asker.kb_dir)
    names = {c.id: {n.lower() for n in c.names} for c in concepts}
    rep = QuestionReport()
    for row in rows:
        rep.asked += 1
        result = asker.ask(row["question"])
        expects = row["expects"]
        got = [f"{a['kind']}:{a['id']}" for a in result["answers"][:3]]
        if expects is None:
            rep.unrelated += 1
            if not result["known"]:
                rep.declined += 1
            else:
                rep.misses.append({"where": row["where"], "question": row["question"], "expected": None, "got": got})
            continue
        rep.in_domain += 1
        hits = [_right(a, expects, names) for a in result["answers"]]
        first = bool(hits[:1] and hits[0])
        top3 = any(hits[:3])
        rep.first += first
        rep.top3 += top3
        key = f"{expects['kind']} ({row.get('lang', '?')})"
        n, f1, t3 = rep.by.get(key, (0, 0, 0))
        rep.by[key] = (n + 1, f1 + first, t3 + top3)
        if not first:
            rep.misses.append({"where": row["where"], "question": row["question"],
                               "expected": f"{expects['kind']}:{expects['name']}", "got": got})
    return rep
