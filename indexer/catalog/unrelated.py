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
    """Set ``unrelated`` on exactly the records in ``marks`` (the evidence may change) and drop
    it from the others. Returns (newly marked, unmarked)."""
    from indexer.catalog.records import catalog_files

    marked = unmarked = 0
    for path in catalog_files(kb_dir):
        if not path.name.endswith(".jsonl"):
            continue  # a wheel's compressed catalogue is not edited
        rows = [json.loads(l) for l in path.read_text(encoding="utf-8").splitlines() if l.strip()]
        changed = False
        for row in rows:
            old, new = row.get("unrelated"), marks.get(row["id"])
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


def _marked_taken(kb_dir: Path, corpus: Sequence[tuple[str, str]]) -> dict[str, str]:
    """Of the records already marked (they answer nothing, so the KB's pattern set leaves them
    out), those whose pattern or a printed line's pattern still takes a corpus message."""
    from indexer.catalog.lines import line_parts
    from indexer.catalog.records import catalog_files, read_catalog_file
    from indexer.patterns import ShardedSet

    owners: list[str] = []
    patterns = ShardedSet()
    for path in catalog_files(kb_dir):
        for raw in read_catalog_file(path).splitlines():
            if '"unrelated"' not in raw:
                continue
            row = json.loads(raw)
            if not row.get("unrelated"):
                continue
            for pattern in [row["pattern"], *(p["pattern"] for p in line_parts(row))]:
                try:
                    compile_pattern(pattern)
                except Exception:
                    continue
                patterns.Add(pattern)
                owners.append(row["id"])
    if not owners:
        return {}
    patterns.Compile()
    found: dict[str, str] = {}
    for source, line in corpus:
        for i in patterns.Match(normalize_line(line).message):
            found.setdefault(owners[i], evidence(source, line))
    return found


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
    for rid, mark_ in _marked_taken(kb_dir, corpus).items():
        found.setdefault(rid, mark_)
    marked, unmarked = write_marks(kb_dir, found)
    return len(corpus), marked, unmarked


def collect(package_dirs: Sequence[Path], out: Path) -> int:
    """Write a corpus file (``<source>\\t<line>``, xz) from Python packages' sources: every
    message format the catalogue's Python extractor finds there, filled with stand-in values
    (``build.to_record``'s example line), one line each, first source wins. How
    ``python_packages.tsv.xz`` was made: the site-packages folders of 46 packages (pip,
    setuptools, requests, pandas, scipy, sympy, dask, uvicorn, pytest, ...; not torch or any
    project the catalogue reads) and the standard library's ``lib/python3.11``."""
    from indexer.catalog.build import collect as collect_formats, to_record
    from indexer.catalog.python_src import python_file
    from indexer.catalog.sources import Tree, directory_tree

    def extract(path: str, text: str):
        try:
            return python_file(path, text)
        except RecursionError:  # generated parser tables nest deeper than ast's visitor goes
            return []

    rows: dict[str, str] = {}
    for folder in package_dirs:
        folder = Path(folder)
        tree = directory_tree("v0", folder.parent, (folder.name,), (".py",), folder.name)
        files = tuple(f for f in tree.files if "/test" not in f.path and "/site-packages/" not in f.path
                      and "/idlelib/" not in f.path)
        for m in collect_formats("other", folder.name, [Tree("v0", folder.name, files)], extract).values():
            line = to_record(m, {})["example"]["line"].replace("\t", " ").strip()
            if len(line) >= 12 and "\n" not in line:
                rows.setdefault(line, folder.name)
    text = "".join(f"{source}\t{line}\n" for source, line in sorted((s, l) for l, s in rows.items()))
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_bytes(lzma.compress(text.encode("utf-8"), preset=9 | lzma.PRESET_EXTREME))
    return len(rows)
