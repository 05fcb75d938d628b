"""A pickled copy of the loaded KB, keyed by what it was loaded from, so a process that only
needs the KB starts in ~0.1 s instead of seconds (YAML parsing and validating ~700 entries and
reading the catalogue's thousands of records).

It is kept in two files: the curated entries with the records they link (small, read at
start-up), and the rest of the catalogue (read on first use: a line no curated entry
answers, a batch run, a server). ``explainlog explain`` of a line a curated entry knows reads
only the first.

``explainlog explain LINE`` and every ``annotate`` run pay the KB load before their first
answer; the cache is what makes that cost small. It is a plain cache: keyed by the KB's
content digest, its directory, and the versions of Python and pydantic (whose objects it
holds), written atomically, ignored when unreadable or stale, and never required. ``kb check``
does not use it: the gate always parses the YAML itself. The file is trusted like the code
next to it (it lives in the project's build directory, or wherever EXPLAINLOG_CACHE points).
"""

from __future__ import annotations

import hashlib
import os
import pickle
import sys
import tempfile
from pathlib import Path

import pydantic

from indexer import paths
from indexer.kb_loader import KnowledgeBase, kb_digest, load_kb

FORMAT = 3  # 3: two files, the curated part and the rest of the catalogue
KEEP = 8


def cache_path(kb_dir: Path, digest: str, cache_dir: Path) -> Path:
    key = "\0".join([
        str(FORMAT), digest, str(kb_dir.resolve()), sys.version, pydantic.VERSION,
    ])
    return cache_dir / f"kb-{hashlib.sha256(key.encode()).hexdigest()[:32]}.pickle"


def rest_path(path: Path) -> Path:
    return path.with_name(path.stem + ".rest")


def load_kb_cached(kb_dir: Path | str, cache_dir: Path | None = None) -> KnowledgeBase:
    """``load_kb(kb_dir)``, from the cache when it holds this exact KB."""
    kb_dir = Path(kb_dir)
    if not kb_dir.is_dir():
        return load_kb(kb_dir)  # the loader's own error
    cache_dir = cache_dir or paths.cache_dir()
    path = cache_path(kb_dir, kb_digest(kb_dir), cache_dir)
    try:
        with open(path, "rb") as handle:
            kb = pickle.load(handle)
        if isinstance(kb, KnowledgeBase) and rest_path(path).is_file():
            kb._rest = lambda: _load_rest(kb_dir, path)
            return kb
    except Exception:  # missing, truncated, from another version: just load the YAML
        pass
    kb = load_kb(kb_dir)
    from indexer.kb_check import compilable

    kb.compiled = compilable(kb)
    _store(kb, path)
    return kb


def _load_rest(kb_dir: Path, path: Path) -> tuple[dict, list, list]:
    """The catalogue part; if its file went missing or is damaged, from the KB itself."""
    try:
        with open(rest_path(path), "rb") as handle:
            rest = pickle.load(handle)
        if isinstance(rest, tuple) and len(rest) == 3:
            return rest
    except Exception:
        pass
    from indexer.kb_check import compilable

    kb = load_kb(kb_dir)
    compiled = compilable(kb)
    curated = {l.entry.id for l in kb.entries}
    return kb.records, kb.catalog, [l for l in compiled if l.entry.id not in curated]


def _store(kb: KnowledgeBase, path: Path) -> None:
    first, rest = kb.split()
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        # the rest first: a first part on disk always has its rest beside it
        _write(rest, rest_path(path))
        _write(first, path)
        _prune(path.parent)
    except OSError:
        pass  # a read-only install: every process parses the YAML, which is only slower


def _write(obj: object, path: Path) -> None:
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".kb-", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as handle:
            pickle.dump(obj, handle, protocol=pickle.HIGHEST_PROTOCOL)
        os.replace(tmp, path)
    except BaseException:
        os.unlink(tmp)
        raise


def _prune(cache_dir: Path) -> None:
    """Keep the newest few copies (one per KB directory and version in use), each with its rest."""
    copies = sorted(cache_dir.glob("kb-*.pickle"), key=lambda p: p.stat().st_mtime, reverse=True)
    for old in copies[KEEP:]:
        old.unlink(missing_ok=True)
        rest_path(old).unlink(missing_ok=True)
    kept = {p.stem for p in copies[:KEEP]}
    for orphan in cache_dir.glob("kb-*.rest"):
        if orphan.stem.removesuffix(".rest") not in kept and orphan.stem not in kept:
            orphan.unlink(missing_ok=True)
