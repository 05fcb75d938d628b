"""Messages of unrelated software, and the catalogue records whose patterns take them.

Many formats a training stack prints are phrases any program prints: PyTorch's
``{device_name} does not support {dtype}`` takes pip's "url does not support range requests",
``Expected {value}, got {x}`` takes half of pytest's errors. A line like that does not say
which program printed it, so a record that answers it names the wrong program with a
confident text. ``kb/unrelated/`` holds the messages of unrelated programs (``<source>\\t<line>``
per line: the formats of well-known Python packages and the standard library, filled with
stand-in values the way the catalogue fills its own examples); a record whose pattern takes
one of them carries the evidence in ``unrelated`` and answers nothing (``CatalogRecord.answers``).

``explainlog catalog unrelated`` writes the marks; ``kb check`` reports an answering record that
takes such a line, and a mark whose pattern no longer takes its line.
"""

from __future__ import annotations

import json
import lzma
from pathlib import Path
from typing import Iterable, Sequence

from indexer.normalize import normalize_line
from indexer.patterns import PatternSet, compile_pattern
from indexer.schema import PatternEntry

UNRELATED_DIR = "unrelated"


def corpus_files(kb_dir: Path) -> list[Path]:
    folder = Path(kb_dir) / UNRELATED_DIR
    return sorted([*folder.glob("*.tsv"), *folder.glob("*.tsv.xz")])


def load_corpus(kb_dir: Path) -> list[tuple[str, str]]:
    """(source, line) of every message under ``kb/unrelated/``."""
    out: list[tuple[str, str]] = []
    for path in corpus_files(kb_dir):
        raw = lzma.decompress(path.read_bytes()) if path.name.endswith(".xz") else path.read_bytes()
        for row in raw.decode("utf-8").splitlines():
            source, sep, line = row.partition("\t")
            if sep and line.strip():
                out.append((source, line))
    return out


def evidence(source: str, line: str) -> str:
    return f"{source}: {line}"


def record_of(entry_id: str) -> str:
    """The record an answer line belongs to (a multi-line record's parts are ``<id>.line<k>``)."""
    from indexer.catalog.lines import PART_MARK, is_line_part

    return entry_id.rsplit(PART_MARK, 1)[0] if is_line_part(entry_id) else entry_id


def taken(patterns: PatternSet, entries: Sequence[PatternEntry], corpus: Iterable[tuple[str, str]],
          is_record) -> dict[str, str]:
    """Record id -> the first corpus message one of its answer lines takes (as the regex tier
    sees a line: normalised, context rules applied). ``entries`` are ``patterns``' entries;
    ``is_record(entry)`` tells catalogue records from curated entries (not judged here)."""
    found: dict[str, str] = {}
    for source, line in corpus:
        normalized = normalize_line(line)
        for i in patterns.matching(normalized.message, normalized.context):
            entry = entries[i]
            if is_record(entry):
                found.setdefault(record_of(entry.id), evidence(source, line))
    return found


def still_taken(record: dict, mark: str) -> bool:
    """Whether a record (a ``CatalogRecord``'s fields) still takes the message its mark quotes,
    by its own pattern or one of its printed lines' (``lines.line_parts``)."""
    from indexer.catalog.lines import line_parts

    _, _, line = mark.partition(": ")
    message = normalize_line(line).message
    for pattern in [record["pattern"], *(p["pattern"] for p in line_parts(record))]:
        try:
            if compile_pattern(pattern).search(message) is not None:
                return True
        except Exception:
            continue
    return False


def write_marks(kb_dir: Path, marks: dict[str, str]) -> tuple[int, int]:
    """Set ``unrelated`` on the records in ``marks``, keep a record's existing mark while its
    pattern still takes the line, and drop the others. Returns (marked, unmarked)."""
    from indexer.catalog.records import catalog_files

    marked = unmarked = 0
    for path in catalog_files(kb_dir):
        if not path.name.endswith(".jsonl"):
            continue  # a wheel's compressed catalogue is not edited
        rows = [json.loads(l) for l in path.read_text(encoding="utf-8").splitlines() if l.strip()]
        changed = False
        for row in rows:
            old = row.get("unrelated")
            new = marks.get(row["id"]) or (old if old and still_taken(row, old) else None)
            if new != old:
                changed = True
                if new:
                    row["unrelated"] = new
                    marked += old is None
                else:
                    del row["unrelated"]
                    unmarked += 1
        if changed:
            path.write_text("".join(json.dumps(r, ensure_ascii=False, sort_keys=True) + "\n" for r in rows),
                            encoding="utf-8")
    return marked, unmarked


def mark(kb_dir: Path) -> tuple[int, int, int]:
    """``explainlog catalog unrelated``: find the answering records that take a corpus message
    and write the marks. Returns (corpus lines, newly marked, unmarked)."""
    from indexer.kb_check import _is_record, compilable
    from indexer.kb_loader import load_kb

    corpus = load_corpus(kb_dir)
    kb = load_kb(kb_dir)
    compiled = compilable(kb)
    records = {l.entry.id for l in compiled if _is_record(l)}
    found = taken(PatternSet([l.entry for l in compiled]), [l.entry for l in compiled], corpus,
                  lambda e: e.id in records)
    marked, unmarked = write_marks(kb_dir, found)
    return len(corpus), marked, unmarked
