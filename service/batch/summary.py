"""What a whole run found: counts per KB entry and per unknown template, with locations.

A ``Summary`` is built from per-chunk tallies and merges associatively, so the same object
serves one process, ``-j`` worker processes and Dask partitions (reduced in a tree). It is
plain data (``to_json``/``from_json``) and bounded in size: unknown templates beyond
``MAX_TEMPLATES`` are counted, not kept, so a log full of unique junk cannot grow it forever.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Iterable

from service.batch.problems import Problem
from service.presentation import SEVERITY_RANK  # one order for every front-end

MAX_TEMPLATES = 5000
SEVERITIES = ("fatal", "error", "warning", "info")

Location = tuple[int, int]  # (source index, 1-based line)


@dataclass
class EntryStat:
    count: int
    first: Location
    last: Location
    severity: str
    component: str
    role: str
    title: dict  # {"en": ..., "zh": ...}


@dataclass
class TemplateStat:
    count: int
    first: Location
    last: Location
    example: str


@dataclass
class Summary:
    files: list[str] = field(default_factory=list)
    lines_per_file: list[int] = field(default_factory=list)
    entries: dict[str, EntryStat] = field(default_factory=dict)
    templates: dict[str, TemplateStat] = field(default_factory=dict)
    untracked_unknown: int = 0  # unknown lines whose template did not fit in MAX_TEMPLATES
    # unknown lines the semantic tier was not asked about: the run's embedding budget was spent
    semantic_skipped: int = 0
    problems: list[Problem] = field(default_factory=list)
    # per-line notes aggregated per (source, kind): [count, first line]
    notes: dict[tuple[int, str], list[int]] = field(default_factory=dict)
    interrupted: bool = False
    interrupt_signal: int = 0  # the signal that interrupted the run (SIGINT, SIGTERM, SIGHUP)
    # Unknown to the regex tier, semantic tier not asked yet (template -> stat, with the whole
    # first line as example): ``-j`` summary workers leave these to the parent, which asks once
    # for all of them (``pipeline.settle_deferred``) before anything is written.
    deferred: dict[str, TemplateStat] = field(default_factory=dict)
    # what killed the job (``service.triage``'s verdict), when the run asked for it
    triage: dict | None = None

    # ---- building ---------------------------------------------------------------------------
    def ensure_file(self, index: int, name: str) -> None:
        while len(self.files) <= index:
            self.files.append("")
            self.lines_per_file.append(0)
        self.files[index] = name

    def add_known(self, pattern_id: str, count: int, first: Location, last: Location, meta: dict) -> None:
        stat = self.entries.get(pattern_id)
        if stat is None:
            self.entries[pattern_id] = EntryStat(
                count, first, last, meta["severity"], meta["component"], meta["role"], meta["title"]
            )
            return
        stat.count += count
        stat.first = min(stat.first, first)
        stat.last = max(stat.last, last)

    def add_unknown(self, template: str, count: int, first: Location, last: Location, example: str) -> None:
        stat = self.templates.get(template)
        if stat is None:
            if len(self.templates) >= MAX_TEMPLATES:
                self.untracked_unknown += count
                return
            self.templates[template] = TemplateStat(count, first, last, example[:500])
            return
        stat.count += count
        if first < stat.first:
            stat.first, stat.example = first, example[:500]
        stat.last = max(stat.last, last)

    def add_deferred(self, key: str, count: int, first: Location, last: Location, example: str) -> None:
        stat = self.deferred.get(key)
        if stat is None:
            self.deferred[key] = TemplateStat(count, first, last, example)
            return
        stat.count += count
        if first < stat.first:
            stat.first, stat.example = first, example
        stat.last = max(stat.last, last)

    def add_note(self, source: int, kind: str, line: int, count: int = 1) -> None:
        note = self.notes.get((source, kind))
        if note is None:
            self.notes[(source, kind)] = [count, line]
        else:
            note[0] += count
            note[1] = min(note[1], line)

    def merge(self, other: "Summary") -> "Summary":
        for index, name in enumerate(other.files):
            if name:
                self.ensure_file(index, name)
        for index, count in enumerate(other.lines_per_file):
            self.ensure_file(index, self.files[index] if index < len(self.files) else "")
            self.lines_per_file[index] += count
        for pattern_id, stat in other.entries.items():
            self.add_known(pattern_id, stat.count, stat.first, stat.last, stat.__dict__)
        for template, tstat in other.templates.items():
            self.add_unknown(template, tstat.count, tstat.first, tstat.last, tstat.example)
        for key, tstat in other.deferred.items():
            self.add_deferred(key, tstat.count, tstat.first, tstat.last, tstat.example)
        self.untracked_unknown += other.untracked_unknown
        self.semantic_skipped += other.semantic_skipped
        self.problems.extend(other.problems)
        for (source, kind), (count, line) in other.notes.items():
            self.add_note(source, kind, line, count)
        self.interrupted = self.interrupted or other.interrupted
        return self

    def shift_lines(self, offset: int) -> "Summary":
        """Add ``offset`` to every line number: a summary of a part of a file counted its
        lines from 1 (``ranges``); shifted by the lines before the part, it merges as if the
        whole file had been read in one stream."""
        for stat in (*self.entries.values(), *self.templates.values(), *self.deferred.values()):
            stat.first = (stat.first[0], stat.first[1] + offset)
            stat.last = (stat.last[0], stat.last[1] + offset)
        for note in self.notes.values():
            note[1] += offset
        self.problems = [replace(p, line=p.line + offset) if p.line else p for p in self.problems]
        return self

    # ---- reading ----------------------------------------------------------------------------
    @property
    def total_lines(self) -> int:
        return sum(self.lines_per_file)

    @property
    def known_lines(self) -> int:
        return sum(s.count for s in self.entries.values())

    @property
    def unknown_lines(self) -> int:
        return self.total_lines - self.known_lines

    def severity_counts(self) -> dict[str, int]:
        counts = {s: 0 for s in SEVERITIES}
        for stat in self.entries.values():
            counts[stat.severity] = counts.get(stat.severity, 0) + stat.count
        return counts

    def component_counts(self) -> dict[str, int]:
        counts: dict[str, int] = {}
        for stat in self.entries.values():
            counts[stat.component] = counts.get(stat.component, 0) + stat.count
        return dict(sorted(counts.items(), key=lambda kv: -kv[1]))

    def first_at_least(self, severity: str) -> Location | None:
        """Where the first line of at least ``severity`` is (e.g. the first warning or error)."""
        floor = SEVERITY_RANK[severity]
        found = [s.first for s in self.entries.values() if SEVERITY_RANK.get(s.severity, 0) >= floor]
        return min(found) if found else None

    def worst_severity(self) -> str | None:
        ranks = [SEVERITY_RANK.get(s.severity, 0) for s in self.entries.values()]
        return SEVERITIES[3 - max(ranks)] if ranks else None

    def ranked_entries(self) -> list[tuple[str, EntryStat]]:
        """Errors first, then by count."""
        return sorted(
            self.entries.items(),
            key=lambda kv: (-SEVERITY_RANK.get(kv[1].severity, 0), -kv[1].count, kv[0]),
        )

    def ranked_templates(self) -> list[tuple[str, TemplateStat]]:
        return sorted(self.templates.items(), key=lambda kv: (-kv[1].count, kv[1].first))

    def all_problems(self) -> list[Problem]:
        """File-level problems plus the aggregated per-line notes, in file order."""
        messages = {
            "undecodable": "line(s) had bytes that are not UTF-8 (shown as U+FFFD)",
            "nul_bytes": "line(s) contained NUL bytes (binary data)",
            "long_line": "line(s) were longer than the line limit and were cut",
        }
        out = list(self.problems)
        for (source, kind), (count, line) in sorted(self.notes.items()):
            name = self.files[source] if source < len(self.files) else str(source)
            out.append(Problem(name, line, kind, f"{count} {messages.get(kind, kind)}; first at this line"))
        return out

    def lost_input(self) -> bool:
        return any(p.lost_input for p in self.problems)

    def where(self, location: Location | None) -> str:
        if location is None:
            return "-"
        source, line = location
        name = self.files[source] if source < len(self.files) else str(source)
        return f"{name}:{line}"

    # ---- plain data -------------------------------------------------------------------------
    def to_json(self) -> dict:
        return {
            "files": self.files,
            "lines_per_file": self.lines_per_file,
            "total_lines": self.total_lines,
            "known_lines": self.known_lines,
            "unknown_lines": self.unknown_lines,
            "severity_counts": self.severity_counts(),
            "component_counts": self.component_counts(),
            "first_warning": self.where(self.first_at_least("warning")) if self.first_at_least("warning") else None,
            "first_error": self.where(self.first_at_least("error")) if self.first_at_least("error") else None,
            "entries": [
                {"pattern_id": pid, "count": s.count, "first": list(s.first), "last": list(s.last),
                 "severity": s.severity, "component": s.component, "role": s.role, "title": s.title}
                for pid, s in self.ranked_entries()
            ],
            "templates": [
                {"template": t, "count": s.count, "first": list(s.first), "last": list(s.last), "example": s.example}
                for t, s in self.ranked_templates()
            ],
            "untracked_unknown": self.untracked_unknown,
            "semantic_skipped": self.semantic_skipped,
            "problems": [p.to_json() for p in self.problems],
            "notes": [[src, kind, count, line] for (src, kind), (count, line) in sorted(self.notes.items())],
            "interrupted": self.interrupted,
            "triage": self.triage,
        }

    @classmethod
    def from_json(cls, data: dict) -> "Summary":
        summary = cls(files=list(data["files"]), lines_per_file=list(data["lines_per_file"]))
        for e in data["entries"]:
            summary.entries[e["pattern_id"]] = EntryStat(
                e["count"], tuple(e["first"]), tuple(e["last"]), e["severity"], e["component"], e["role"], e["title"]
            )
        for t in data["templates"]:
            summary.templates[t["template"]] = TemplateStat(t["count"], tuple(t["first"]), tuple(t["last"]), t["example"])
        summary.untracked_unknown = data["untracked_unknown"]
        summary.semantic_skipped = data.get("semantic_skipped", 0)
        summary.problems = [Problem.from_json(p) for p in data["problems"]]
        summary.notes = {(src, kind): [count, line] for src, kind, count, line in data["notes"]}
        summary.interrupted = data["interrupted"]
        summary.triage = data.get("triage")
        return summary


def merge_all(summaries: Iterable[Summary]) -> Summary:
    total = Summary()
    for summary in summaries:
        total.merge(summary)
    return total
