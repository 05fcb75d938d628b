"""Read ``kb/*.yaml`` into validated entries while remembering where each thing was written.

A curator who breaks an entry needs the file and line, so the loader composes the YAML node
tree (which carries marks) instead of calling ``yaml.safe_load`` and losing positions.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml
from pydantic import ValidationError

from indexer.schema import PatternEntry


@dataclass(frozen=True)
class Finding:
    """One problem in the KB, located precisely enough to jump to it."""

    file: str
    line: int
    entry_id: str | None
    check: str
    message: str

    def __str__(self) -> str:
        where = f"{self.file}:{self.line}"
        who = f" [{self.entry_id}]" if self.entry_id else ""
        return f"{where}:{who} {self.check}: {self.message}"


@dataclass
class LoadedEntry:
    """A validated entry plus the positions of its parts in the source file."""

    entry: PatternEntry
    file: str
    line: int
    # key path (e.g. ("examples", 2) or ("pattern",)) -> 1-based line
    positions: dict[tuple, int] = field(default_factory=dict)

    def line_of(self, *path: Any) -> int:
        while path:
            if path in self.positions:
                return self.positions[path]
            path = path[:-1]
        return self.line


@dataclass
class KnowledgeBase:
    entries: list[LoadedEntry]
    findings: list[Finding]
    digest: str
    files: list[Path]
    # The source-derived catalogue (kb/catalog/*.jsonl): every record by id, and those that
    # can answer a line (text written, enough fixed text) as entries, ranked below curated ones.
    records: dict = field(default_factory=dict)
    catalog: list[LoadedEntry] = field(default_factory=list)
    # ``kb_check.compilable(self)``, kept by the KB cache so a process does not compile every
    # pattern again at start-up just to learn which ones compile (None: not computed)
    compiled: list[LoadedEntry] | None = None

    @property
    def all_entries(self) -> list[LoadedEntry]:
        """Curated entries first, then catalogue records: the order every tier uses."""
        return self.entries + self.catalog

    def by_id(self) -> dict[str, LoadedEntry]:
        return {loaded.entry.id: loaded for loaded in self.entries}


class KBLoadError(Exception):
    """The KB cannot be used at all (no directory, no files)."""


def _positions(node: yaml.Node, path: tuple = ()) -> dict[tuple, int]:
    out: dict[tuple, int] = {path: node.start_mark.line + 1}
    if isinstance(node, yaml.MappingNode):
        for key_node, value_node in node.value:
            out.update(_positions(value_node, path + (key_node.value,)))
            out[path + (key_node.value,)] = key_node.start_mark.line + 1
    elif isinstance(node, yaml.SequenceNode):
        for index, item in enumerate(node.value):
            out.update(_positions(item, path + (index,)))
    return out


def _error_path_line(positions: dict[tuple, int], loc: tuple, default: int) -> int:
    path = tuple(loc)
    while path:
        if path in positions:
            return positions[path]
        path = path[:-1]
    return default


# libyaml when available: the pure-Python parser spends seconds on a 700-entry KB, and every
# CLI run, server start and batch job loads the KB.
_Loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


def _parse(text: str) -> tuple[yaml.Node | None, object]:
    """Parse once: the node tree (with line marks) and the Python data built from it."""
    loader = _Loader(text)
    try:
        root = loader.get_single_node()
        data = loader.construct_document(root) if root is not None else None
    finally:
        loader.dispose()
    return root, data


def kb_files(kb_dir: Path) -> list[Path]:
    return sorted(p for p in kb_dir.rglob("*.yaml") if p.is_file())


def kb_digest(kb_dir: Path) -> str:
    """Hash of every file under the KB (entries and calibration data): an index's stamp."""
    digest = hashlib.sha256()
    files = sorted(p for p in kb_dir.rglob("*") if p.is_file() and not p.name.startswith("."))
    for path in files:
        digest.update(str(path.relative_to(kb_dir)).encode())
        digest.update(b"\0")
        digest.update(path.read_bytes())
        digest.update(b"\0")
    return digest.hexdigest()


def load_kb(kb_dir: Path) -> KnowledgeBase:
    """Load every YAML file; invalid entries become findings, valid ones are returned."""
    kb_dir = Path(kb_dir)
    if not kb_dir.is_dir():
        raise KBLoadError(f"knowledge base directory not found: {kb_dir}")
    files = kb_files(kb_dir)
    if not files:
        raise KBLoadError(f"no *.yaml files in knowledge base directory {kb_dir}")
    entries: list[LoadedEntry] = []
    findings: list[Finding] = []
    for path in files:
        shown = str(path)
        try:
            text = path.read_text(encoding="utf-8")
            root, data = _parse(text)
        except UnicodeDecodeError as exc:
            findings.append(Finding(shown, 1, None, "yaml", f"file is not UTF-8: {exc}"))
            continue
        except yaml.YAMLError as exc:
            mark = getattr(exc, "problem_mark", None)
            line = mark.line + 1 if mark else 1
            findings.append(Finding(shown, line, None, "yaml", str(exc).replace("\n", " ")))
            continue
        if data is None:
            continue
        if not isinstance(data, list) or not isinstance(root, yaml.SequenceNode):
            findings.append(
                Finding(shown, 1, None, "schema", "a KB file must be a YAML list of entries")
            )
            continue
        for index, (raw, node) in enumerate(zip(data, root.value)):
            positions = _positions(node)
            line = node.start_mark.line + 1
            entry_id = raw.get("id") if isinstance(raw, dict) else None
            if not isinstance(raw, dict):
                findings.append(Finding(shown, line, None, "schema", f"entry #{index} is not a mapping"))
                continue
            try:
                entry = PatternEntry.model_validate(raw)
            except ValidationError as exc:
                for err in exc.errors():
                    loc = tuple(err["loc"])
                    where = ".".join(str(part) for part in loc) or "entry"
                    findings.append(
                        Finding(
                            shown,
                            _error_path_line(positions, loc, line),
                            str(entry_id) if entry_id else None,
                            "schema",
                            f"{where}: {err['msg']}",
                        )
                    )
                continue
            entries.append(LoadedEntry(entry=entry, file=shown, line=line, positions=positions))
    records, catalog = _load_catalog(kb_dir, findings)
    return KnowledgeBase(
        entries=entries, findings=findings, digest=kb_digest(kb_dir), files=files,
        records=records, catalog=catalog,
    )


def _load_catalog(kb_dir: Path, findings: list[Finding]) -> tuple[dict, list[LoadedEntry]]:
    from indexer.catalog.records import as_entry, load_catalog

    loaded, problems = load_catalog(kb_dir)
    for p in problems:
        findings.append(Finding(p.file, p.line, p.record_id, "catalog", str(p)))
    records = {}
    catalog: list[LoadedEntry] = []
    for rec, shown, number in loaded:
        records[rec.id] = rec
        if rec.matchable and rec.has_text:
            try:
                entry = as_entry(rec)
            except ValidationError as exc:
                findings.append(Finding(shown, number, rec.id, "catalog", str(exc.errors()[0]["msg"])))
                continue
            catalog.append(LoadedEntry(entry=entry, file=shown, line=number))
    return records, catalog
