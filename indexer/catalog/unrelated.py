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
import re
import subprocess
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


def split_id(entry_id: str) -> tuple[str, str | None]:
    """(record id, part key) of an answer line: a multi-line record's printed lines are
    ``<id>.line<k>`` (part key ``line<k>``); the record itself has no part key."""
    from indexer.catalog.lines import PART_MARK, is_line_part

    if not is_line_part(entry_id):
        return entry_id, None
    rid, k = entry_id.rsplit(PART_MARK, 1)
    return rid, PART_MARK[1:] + k


def taken(patterns: PatternSet, entries: Sequence[PatternEntry], corpus: Iterable[tuple[str, str]],
          is_record) -> dict[str, str]:
    """Answer line id (a record's, or ``<record>.line<k>`` for one printed line of it) -> the
    first corpus message it takes (as the regex tier sees a line: normalised, context rules
    applied). ``entries`` are ``patterns``' entries; ``is_record(entry)`` tells catalogue
    records from curated entries (not judged here)."""
    found: dict[str, str] = {}
    for source, line in corpus:
        normalized = normalize_line(line)
        for i in patterns.matching(normalized.message, normalized.context):
            entry = entries[i]
            if is_record(entry):
                found.setdefault(entry.id, evidence(source, line))
    return found


def still_taken(record: dict, mark: str, part: str | None = None) -> bool:
    """Whether a record (a ``CatalogRecord``'s fields) still takes the message its mark
    quotes: by its own pattern, or by the pattern of its printed line ``part`` ("line3")."""
    from indexer.catalog.lines import PART_MARK, line_parts

    _, _, line = mark.partition(": ")
    message = normalize_line(line).message
    if part is None:
        patterns = [record["pattern"]]
    else:
        patterns = [p["pattern"] for p in line_parts(record) if p["id"] == record["id"] + PART_MARK + part[4:]]
    for pattern in patterns:
        try:
            if compile_pattern(pattern).search(message) is not None:
                return True
        except Exception:
            continue
    return False


def write_marks(kb_dir: Path, marks: dict[str, str]) -> tuple[int, int]:
    """Set exactly ``marks`` (answer line id -> evidence): ``unrelated`` on a record, or its
    ``unrelated_lines`` entry for one printed line; drop every other mark. Returns (newly
    marked, unmarked) answer lines."""
    from indexer.catalog.records import catalog_files

    wanted: dict[str, tuple[str | None, dict[str, str]]] = {}
    for line_id, ev in marks.items():
        rid, part = split_id(line_id)
        whole, parts = wanted.get(rid, (None, {}))
        if part is None:
            whole = ev
        else:
            parts[part] = ev
        wanted[rid] = (whole, parts)
    marked = unmarked = 0
    for path in catalog_files(kb_dir):
        if not path.name.endswith(".jsonl"):
            continue  # a wheel's compressed catalogue is not edited
        rows = [json.loads(l) for l in path.read_text(encoding="utf-8").splitlines() if l.strip()]
        changed = False
        for row in rows:
            whole, parts = wanted.get(row["id"], (None, {}))
            old_whole, old_parts = row.get("unrelated"), row.get("unrelated_lines") or {}
            if whole == old_whole and parts == old_parts:
                continue
            changed = True
            marked += (whole is not None and old_whole is None) + len(set(parts) - set(old_parts))
            unmarked += (whole is None and old_whole is not None) + len(set(old_parts) - set(parts))
            row.pop("unrelated", None)
            row.pop("unrelated_lines", None)
            if whole:
                row["unrelated"] = whole
            if parts:
                row["unrelated_lines"] = dict(sorted(parts.items()))
        if changed:
            path.write_text("".join(json.dumps(r, ensure_ascii=False, sort_keys=True) + "\n" for r in rows),
                            encoding="utf-8")
    return marked, unmarked


def _marked_taken(kb_dir: Path, corpus: Sequence[tuple[str, str]]) -> dict[str, str]:
    """Of the answer lines already marked (they answer nothing, so the KB's pattern set leaves
    them out), those whose pattern still takes a corpus message."""
    from indexer.catalog.lines import line_parts
    from indexer.catalog.records import catalog_files, read_catalog_file
    from indexer.patterns import ShardedSet

    owners: list[str] = []
    patterns = ShardedSet()
    for path in catalog_files(kb_dir):
        for raw in read_catalog_file(path).splitlines():
            if '"unrelated' not in raw:
                continue
            row = json.loads(raw)
            todo = [(row["id"], row["pattern"])] if row.get("unrelated") else []
            todo += [(p["id"], p["pattern"]) for p in line_parts(row) if p.get("unrelated")]
            for line_id, pattern in todo:
                try:
                    compile_pattern(pattern)
                except Exception:
                    continue
                patterns.Add(pattern)
                owners.append(line_id)
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
    from indexer.compiled import compilable
    from indexer.kb_loader import load_kb

    corpus = load_corpus(kb_dir)
    kb = load_kb(kb_dir)
    compiled = compilable(kb)
    records = {l.entry.id for l in compiled if l.file.endswith((".jsonl", ".jsonl.gz", ".jsonl.xz"))}
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


_WORDS = re.compile(r"[A-Za-z]{2,}")


def binary_messages(path: Path) -> list[str]:
    """The message-like strings of an ELF file (``strings -n 12``): at least two words and a
    lower-case run, at most 300 characters; printf conversions filled with stand-in values as
    the catalogue fills its own examples (``%s`` -> ``a0``, ``%d`` -> ``3``)."""
    from indexer.catalog.formats import example_line, printf_pieces

    try:
        with open(path, "rb") as fh:
            if fh.read(4) != b"\x7fELF":
                return []
    except OSError:
        return []
    out = subprocess.run(["strings", "-n", "12", str(path)], capture_output=True, check=False).stdout
    lines = []
    for s in out.decode("latin-1").splitlines():
        s = s.strip()
        if len(s) > 300 or " " not in s or len(_WORDS.findall(s)) < 2 or not re.search(r"[a-z]{3}", s):
            continue
        try:
            line = example_line(printf_pieces(s, [f"a{i}" for i in range(s.count("%"))])) if "%" in s else s
        except Exception:
            continue
        line = line.replace("\t", " ").strip()
        if len(line) >= 12:
            lines.append(line)
    return lines


def collect_binaries(files: Sequence[Path], out: Path) -> int:
    """Write a corpus file from the strings of compiled programs and libraries (``<file
    name>\\t<line>``, xz, first file wins). How ``debian_binaries.tsv.xz`` was made: every ELF
    file in /usr/bin, /usr/sbin and /usr/lib/x86_64-linux-gnu/*.so* of this Debian 12 machine
    (no training stack installed) except node, perf, lto-dump, cpp and libpfm (JavaScript
    source, instruction tables and event names, not messages)."""
    rows: dict[str, str] = {}
    for path in files:
        path = Path(path)
        if path.is_symlink() or not path.is_file():
            continue
        source = path.name.split(".so")[0]
        for line in binary_messages(path):
            rows.setdefault(line, source)
    text = "".join(f"{source}\t{line}\n" for source, line in sorted((s, l) for l, s in rows.items()))
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_bytes(lzma.compress(text.encode("utf-8"), preset=9 | lzma.PRESET_EXTREME))
    return len(rows)


def corpus_digest(kb_dir: Path) -> str:
    """What a cached ``taken`` answer depends on besides the patterns: the corpus files and the
    code that reads and normalises them."""
    import hashlib

    digest = hashlib.sha256()
    root = Path(__file__).resolve().parents[2]
    for path in [*corpus_files(kb_dir), root / "indexer" / "normalize.py", Path(__file__)]:
        try:
            digest.update(path.name.encode() + b"\0" + path.read_bytes() + b"\0")
        except OSError:
            digest.update(path.name.encode() + b"\0missing\0")
    return digest.hexdigest()
