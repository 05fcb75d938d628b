"""Read ``kb/*.yaml`` into validated entries while remembering where each thing was written.

A curator who breaks an entry needs the file and line, so the loader composes the YAML node
tree (which carries marks) instead of calling ``yaml.safe_load`` and losing positions.
"""

from __future__ import annotations

import hashlib
import pickle
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

import yaml
from pydantic import ValidationError

from indexer.packed import PackedBlobs, PackedBytes
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


class _Blobs:
    """Pickled items and the ones already unpickled, shared by every view of them."""

    __slots__ = ("blobs", "items")

    def __init__(self, blobs: list[bytes]) -> None:
        self.blobs = blobs
        self.items: list = [None] * len(blobs)

    def get(self, index: int) -> Any:
        item = self.items[index]
        if item is None:
            item = self.items[index] = pickle.loads(self.blobs[index])
        return item


class LazyEntries(Sequence):
    """A list of loaded entries whose tail stays pickled, one blob per entry, until used.

    The KB cache keeps the catalogue's 20,000 entries this way: unpickling them all costs
    about a second and a half, and a line the catalogue answers needs one of them. Reading
    every item (iteration, ``list(...)``) unpickles the rest once."""

    def __init__(self, blobs: "list[bytes] | _Blobs", head: Sequence = ()) -> None:
        if not isinstance(blobs, _Blobs):
            blobs = _Blobs(blobs if isinstance(blobs, (list, PackedBlobs)) else list(blobs))
        self._store = blobs
        self._head = list(head)

    @classmethod
    def of(cls, items: Sequence) -> "LazyEntries":
        if isinstance(items, LazyEntries) and not items._head:
            return items
        return cls([pickle.dumps(item, protocol=pickle.HIGHEST_PROTOCOL) for item in items])

    def __len__(self) -> int:
        return len(self._head) + len(self._store.blobs)

    def pickled(self) -> "Sequence[bytes]":
        """Every item as its pickled bytes (what a cache stores), unpickling none."""
        return [pickle.dumps(item, protocol=pickle.HIGHEST_PROTOCOL) for item in self._head] + list(self._store.blobs) \
            if self._head else self._store.blobs

    def __getitem__(self, index):  # type: ignore[override]
        if isinstance(index, slice):
            return [self[i] for i in range(*index.indices(len(self)))]
        if index < 0:
            index += len(self)
        if index < len(self._head):
            return self._head[index]
        if not 0 <= index - len(self._head) < len(self._store.blobs):
            raise IndexError(index)
        return self._store.get(index - len(self._head))

    def __iter__(self):
        yield from self._head
        get = self._store.get
        for index in range(len(self._store.blobs)):
            yield get(index)

    def __radd__(self, other: Sequence) -> "LazyEntries":
        return LazyEntries(self._store, head=[*other, *self._head])

    def __add__(self, other: Sequence) -> list:
        return [*self, *other]

    def __eq__(self, other: object) -> bool:
        return isinstance(other, (list, LazyEntries)) and list(self) == list(other)

    def __reduce__(self):
        return (LazyEntries, (self._store.blobs, self._head))


class KnowledgeBase:
    """The loaded KB: curated entries, findings, the digest of what it was loaded from, and the
    source catalogue (every record by id; those that can answer a line as entries ranked
    below curated ones).

    A KB from the cache may arrive in two parts (``kb_cache``): the curated entries and the
    records they link first, the rest of the catalogue on first use of ``records``,
    ``catalog`` or ``compiled``. A line a curated entry answers never waits for the rest.
    """

    def __init__(
        self, entries: list[LoadedEntry], findings: list[Finding], digest: str, files: list[Path],
        records: dict | None = None, catalog: list[LoadedEntry] | None = None,
        compiled: list[LoadedEntry] | None = None,
    ) -> None:
        self.entries = entries
        self.findings = findings
        self.digest = digest
        self.files = files
        self._records = records if records is not None else {}
        self._catalog = catalog if catalog is not None else []
        # ``compiled.compilable(self)``, kept by the KB cache so a process does not compile
        # every pattern again at start-up just to learn which ones compile (None: not computed)
        self._compiled = compiled
        # every record as read, duplicates included, with its file and line: (record, file,
        # line), set by load_kb for kb check (None: a KB from the cache, which keeps one per id)
        self.record_rows: list | None = None
        # set on the first part of a KB from the cache: () -> (records with text, catalogue
        # entries, compiled catalogue), and () -> the records still awaiting text
        self._rest: Callable[[], tuple[dict, list, list]] | None = None
        self._unwritten: Callable[[], dict] | None = None
        # records of the second part, kept as the bytes they were stored as: unpickling 18,000
        # records costs a second, and an answer needs one of them
        self._raw: "dict[str, bytes | dict] | PackedBytes" = {}
        # the pattern set's inputs for ``compiled`` (curated then catalogue), from the KB cache:
        # the explainer builds its set from them without unpickling the catalogue's entries
        self.match_columns: Any = None

    # ---- the catalogue, completed on first use ------------------------------------------------
    def _complete(self) -> None:
        """Everything that can answer a line: the catalogue entries and their records."""
        rest, self._rest = self._rest, None
        if rest is not None:
            records, catalog, compiled_catalog, *columns = rest()
            # the KB cache's records stay in their mapped file (PackedBytes) until one is used
            raw = records if isinstance(records, PackedBytes) else dict(records)
            for key in self._records:
                raw.pop(key, None)
            self._raw = raw
            self._catalog = catalog
            if self._compiled is not None:
                curated = len(self._compiled)
                self._compiled = self._compiled + (catalog if compiled_catalog is None else compiled_catalog)
                found = columns[0] if columns else None
                if found is not None and len(found.ids) == len(self._compiled) and all(
                    found.ids[i] == l.entry.id for i, l in enumerate(self._compiled[:curated])
                ):
                    self.match_columns = found

    def _complete_records(self) -> None:
        """And the records that answer nothing yet (kb check, the index build, links)."""
        self._complete()
        if self._raw:
            from indexer.catalog.records import CatalogRecord

            raw, self._raw = self._raw, {}
            self._records = {**self._records, **{k: CatalogRecord.model_validate(_plain(v)) for k, v in raw.items()}}
        unwritten, self._unwritten = self._unwritten, None
        if unwritten is not None:
            self._records = {**self._records, **unwritten()}

    @property
    def complete(self) -> bool:
        return self._rest is None and self._unwritten is None

    @property
    def records(self) -> dict:
        self._complete_records()
        return self._records

    @records.setter
    def records(self, value: dict) -> None:
        self._complete_records()
        self._records = value

    @property
    def catalog(self) -> list[LoadedEntry]:
        self._complete()
        return self._catalog

    @catalog.setter
    def catalog(self, value: list[LoadedEntry]) -> None:
        self._complete()
        self._catalog = value

    @property
    def compiled(self) -> list[LoadedEntry] | None:
        self._complete()
        return self._compiled

    @compiled.setter
    def compiled(self, value: list[LoadedEntry] | None) -> None:
        self._complete()
        self._compiled = value

    def curated_compiled(self) -> list[LoadedEntry] | None:
        """The curated entries whose patterns compile, without completing the catalogue."""
        if self._compiled is None:
            return None
        ids = self._curated_ids()
        return [l for l in self._compiled if l.entry.id in ids]

    def record_for(self, entry_id: str, formats: list[str]) -> object | None:
        """The catalogue record of an answer: the record itself, or the first format a curated
        entry links. Linked records travel with the curated part, so this needs no more."""
        records = self._records
        rec = records.get(entry_id) or next((records[f] for f in formats if f in records), None)
        if rec is None and entry_id not in self._curated_ids():
            self._complete()  # a record that answers has text: it is in the second part
            rec = self._records.get(entry_id)
            if rec is None and entry_id in self._raw:
                from indexer.catalog.records import CatalogRecord

                rec = self._records[entry_id] = CatalogRecord.model_validate(_plain(self._raw.pop(entry_id)))
        return rec

    def _curated_ids(self) -> set[str]:
        ids = self.__dict__.get("_curated_id_set")
        if ids is None:
            ids = self.__dict__["_curated_id_set"] = {l.entry.id for l in self.entries}
        return ids

    def split(self) -> tuple["KnowledgeBase", tuple[dict, list, list], dict]:
        """Three parts, for a cache that reads each only when a line needs it: the curated
        entries (with the records they link); the catalogue entries and the records that can
        answer; the records still awaiting text."""
        self._complete_records()
        curated_ids = {l.entry.id for l in self.entries}
        linked = {f for l in self.entries for f in l.entry.formats}
        first = KnowledgeBase(
            self.entries, self.findings, self.digest, self.files,
            records={k: v for k, v in self._records.items() if k in linked}, catalog=[],
            compiled=None if self._compiled is None else [l for l in self._compiled if l.entry.id in curated_ids],
        )
        written = {k: pickle.dumps(v.model_dump(mode="json", exclude_none=True), protocol=pickle.HIGHEST_PROTOCOL)
                   for k, v in self._records.items() if v.has_text and k not in linked}
        catalog = LazyEntries.of(self._catalog)
        compiled_catalog = [] if self._compiled is None else [l for l in self._compiled if l.entry.id not in curated_ids]
        same = len(compiled_catalog) == len(self._catalog) and all(
            a is b for a, b in zip(compiled_catalog, self._catalog)
        )
        rest = (written, catalog, None if same else LazyEntries.of(compiled_catalog), None)
        unwritten = {k: v for k, v in self._records.items() if not v.has_text and k not in linked}
        return first, rest, unwritten

    def __getstate__(self) -> dict:
        self._complete_records()
        state = dict(self.__dict__)
        state.pop("_curated_id_set", None)
        return state

    @property
    def all_entries(self) -> list[LoadedEntry]:
        """Curated entries first, then catalogue records: the order every tier uses."""
        return self.entries + self.catalog

    def by_id(self) -> dict[str, LoadedEntry]:
        return {loaded.entry.id: loaded for loaded in self.entries}


def _plain(raw: "bytes | dict") -> dict:
    return pickle.loads(raw) if isinstance(raw, bytes) else raw


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


# folders of the KB that hold other kinds of record than entries (read by their own loaders)
NOT_ENTRIES = ("concepts", "params", "catalog", "calibration")


def kb_files(kb_dir: Path) -> list[Path]:
    return sorted(p for p in kb_dir.rglob("*.yaml")
                  if p.is_file() and p.relative_to(kb_dir).parts[0] not in NOT_ENTRIES)


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
    records, catalog, rows = _load_catalog(kb_dir, findings)
    kb = KnowledgeBase(
        entries=entries, findings=findings, digest=kb_digest(kb_dir), files=files,
        records=records, catalog=catalog,
    )
    kb.record_rows = rows
    return kb


def _load_catalog(kb_dir: Path, findings: list[Finding]) -> tuple[dict, list[LoadedEntry], list]:
    from indexer.catalog.records import as_entry, load_catalog

    loaded, problems = load_catalog(kb_dir)
    for p in problems:
        findings.append(Finding(p.file, p.line, p.record_id, "catalog", str(p)))
    records = {}
    catalog: list[LoadedEntry] = []
    for rec, shown, number in loaded:
        records[rec.id] = rec
        if rec.answers:
            try:
                entry = as_entry(rec)
            except ValidationError as exc:
                findings.append(Finding(shown, number, rec.id, "catalog", str(exc.errors()[0]["msg"])))
                continue
            catalog.append(LoadedEntry(entry=entry, file=shown, line=number))
    return records, catalog, loaded
