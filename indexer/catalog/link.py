"""``explainlog catalog link``: tie curated entries to the catalogue records of their message.

A curated entry explains a message that some record extracted from source; the link is found
by running each record's pattern (derived from the format string) over the entry's real
example lines. Per example the most specific matching record is taken (most fixed text), so a
generic ``%s`` format never claims an entry. The entry gets ``formats: [ids]`` written into its
YAML file (after ``source:``), and a record that had only a constructed example takes the
entry's real line as its example, so the link can be checked both ways by ``kb check``.
"""

from __future__ import annotations

import json
import re
from collections import defaultdict
from pathlib import Path

from indexer.catalog.build import write_records
from indexer.catalog.records import catalog_files, entry_versions
from indexer.kb_loader import load_kb
from indexer.normalize import EXCEPTION_PREFIX, normalize_line
from indexer.patterns import ShardedSet, compile_pattern


def _weight(pattern: str) -> int:
    return len(re.sub(r"\(\?P<\w+>[^)]*\)|\\[sd][*+]?|[\\^$*+?()|\[\]]", "", pattern))


def compute_links(kb_dir: Path) -> tuple[dict[str, list[str]], dict[str, tuple[str, bool]]]:
    """(entry id -> record ids, record id -> (an entry's example line, constructed?)), real
    lines preferred over an entry's constructed ones."""
    kb = load_kb(kb_dir)
    records = list(kb.records.values())
    compiled = []
    for rec in records:
        if not rec.matchable:
            continue  # a format with too little fixed text names no message
        try:
            compiled.append((rec, compile_pattern(rec.pattern), _weight(rec.pattern)))
        except Exception:
            continue
    # one sharded RE2 set over every pattern: 2,000 examples times 57,000 patterns one by one
    # took six minutes; the set names the candidates, each confirmed by its own pattern
    scan = ShardedSet()
    for _, rx, _ in compiled:
        scan.Add(rx.pattern)
    scan.Compile()

    def matching(text: str) -> list[tuple[int, str]]:
        return [(compiled[i][2], compiled[i][0].id) for i in scan.Match(text) if compiled[i][1].search(text)]

    links: dict[str, list[str]] = {}
    examples: dict[str, tuple[str, bool]] = {}
    for loaded in kb.entries:
        entry = loaded.entry
        found: list[str] = []
        for example in entry.examples:
            message = normalize_line(example.line).message
            hits = matching(message)
            exc = EXCEPTION_PREFIX.match(message) if not hits else None
            if exc:  # "RuntimeError: <message>": the record of the message, as the explainer reads it
                hits = matching(exc.group("rest"))
            if not hits:
                continue
            best = max(hits)[1]
            if best not in found:
                found.append(best)
            constructed = bool(example.note and "construct" in example.note.lower())
            if best not in examples or (examples[best][1] and not constructed):
                examples[best] = (example.line, constructed)
        if found:
            links[entry.id] = sorted(found)
    return links, examples


def write_links(kb_dir: Path) -> dict:
    links, real = compute_links(kb_dir)
    kb = load_kb(kb_dir)
    by_file: dict[str, list] = defaultdict(list)
    for loaded in kb.entries:
        by_file[loaded.file].append(loaded)
    for file, entries in by_file.items():
        lines = Path(file).read_text(encoding="utf-8").split("\n")
        edits = []  # (line index, replace?, text)
        for loaded in entries:
            entry = loaded.entry
            # links written by hand (a format no example reaches) stay; found ones are added,
            # except to an entry reviewed against the source (`verified:`), whose links are the
            # reviewer's: a format that merely matches an example ("CUDA error: invalid
            # argument" is also a HIP error string) is not added back
            found = [] if entry.verified else links.get(entry.id, [])
            ids = [f for f in entry.formats if f in kb.records]
            ids += [f for f in found if f not in ids]
            text = f"  formats: [{', '.join(ids)}]" if ids else None
            versions = entry_versions([kb.records[f] for f in ids]) if ids else ""
            if versions and not (entry.versions or "").startswith(versions):
                at = loaded.positions.get(("versions",))
                if at is not None and lines[at - 1].rstrip().endswith(("|-", ">-", "|", ">")):
                    pass  # a block scalar is rewritten by hand; kb check names it
                elif at is not None:
                    # the span changes; the detail written after it ("(... from v2.19.1-1)") stays
                    old = entry.versions or ""
                    detail = old[old.index(" ("):].replace("'", "''") if " (" in old else ""
                    edits.append((at - 1, True, f"  versions: '{versions}{detail}'"))
                else:
                    text = f"{text}\n  versions: '{versions}'"
            if ("formats",) in loaded.positions:
                at = loaded.positions[("formats",)] - 1
                edits.append((at, True, text))
                if lines[at].rstrip().endswith("formats:"):  # a block list: its items go too
                    item = at + 1
                    while item < len(lines) and re.match(r"\s+- ", lines[item]):
                        edits.append((item, True, None))
                        item += 1
            elif ids:
                edits.append((loaded.positions[("source",)], False, text))
        for at, replace, text in sorted(edits, reverse=True):
            if replace:
                if text is None:
                    del lines[at]
                else:
                    lines[at] = text
            else:
                lines.insert(at, text)
        Path(file).write_text("\n".join(lines), encoding="utf-8")
    # every linked record (found or written by hand) with a stand-in example takes a line of
    # the entry that links it: one its pattern matches, a real one before a constructed one
    kb = load_kb(kb_dir)
    real = {}  # only the records an entry links now take its lines
    for loaded in kb.entries:
        for fid in loaded.entry.formats:
            rec = kb.records.get(fid)
            if rec is None or not rec.example.constructed or (fid in real and not real[fid][1]):
                continue
            try:
                rx = compile_pattern(rec.pattern)
            except Exception:
                continue
            for example in loaded.entry.examples:
                constructed = bool(example.note and "construct" in example.note.lower())
                if rx.search(normalize_line(example.line).message):
                    if fid not in real or (real[fid][1] and not constructed):
                        real[fid] = (example.line, constructed)
                    if not constructed:
                        break
    # records linked by an entry take its real line as their example
    changed = 0
    for path in catalog_files(kb_dir):
        rows = [json.loads(l) for l in path.read_text(encoding="utf-8").splitlines() if l.strip()]
        for row in rows:
            taken = real.get(row["id"])
            if taken and row["example"].get("constructed") and row["example"]["line"] != taken[0]:
                row["example"] = {"line": taken[0], "constructed": taken[1]}
                changed += 1
        write_records(path, rows)
    return {"entries_linked": len(links), "links": sum(map(len, links.values())), "examples_taken": changed}
