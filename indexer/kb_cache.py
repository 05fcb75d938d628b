"""A pickled copy of the loaded KB, keyed by what it was loaded from, so a process that only
needs the KB starts in ~0.1 s instead of seconds (YAML parsing and validating ~700 entries and
reading the catalogue's thousands of records).

It is kept in three files: the curated entries with the records they link (small, read at
start-up); the catalogue entries and the records that can answer (read on first use: a line
no curated entry answers, a batch run, a server); and the records still awaiting text (read
only by what lists every record: the index build, ``catalog link``). ``explainlog explain`` of
a line a curated entry knows reads only the first. The second is one pickled blob per entry
and record in a mapped file (``indexer.packed``): a line the catalogue answers copies out and
unpickles the one or two it needs, not all 50,000.

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
import time
from pathlib import Path
from typing import BinaryIO, Callable

import pydantic

from indexer import packed, paths
from indexer.kb_loader import KnowledgeBase, LazyEntries, kb_digest, load_kb

# 5: three files: curated, catalogue that answers (its records as dicts), records awaiting text;
# 6: the catalogue's entries and records one pickled blob each, and the pattern set's columns
# 7: entries have `asked:` (a pickled 6 entry would lack the attribute)
# 8: records whose only fixed word is an outcome ("{message} failed: {error}") no longer answer
# 9: the pattern set's required words as tuples of shared strings (faster to unpickle)
# 10: the second part's blobs in one mapped file (indexer.packed), read one at a time
# 11: records whose words say only that a name does not exist / is not found / invalid no longer answer
# 12: records that take a message of unrelated software (kb/unrelated/) no longer answer
# 13: ... except NCCL's and RCCL's behind their own "NCCL WARN" head (a context rule on format)
# 14: ... and UCX's, libfabric's, HIP's, DeepSpeed's, mmengine's and c10's behind theirs
# 19: no fold space before a full-width "（" or before "“" after Chinese (schema.SPACE_BY_FULLWIDTH)
FORMAT = 19
KEEP = 8
SETTLED_NS = 2_000_000_000


def cache_path(kb_dir: Path, digest: str, cache_dir: Path) -> Path:
    key = "\0".join([
        str(FORMAT), digest, str(kb_dir.resolve()), sys.version, pydantic.VERSION,
    ])
    return cache_dir / f"kb-{hashlib.sha256(key.encode()).hexdigest()[:32]}.pickle"


def rest_path(path: Path) -> Path:
    return path.with_name(path.stem + ".rest")


def unwritten_path(path: Path) -> Path:
    return path.with_name(path.stem + ".unwritten")


def load_kb_cached(kb_dir: Path | str, cache_dir: Path | None = None) -> KnowledgeBase:
    """``load_kb(kb_dir)``, from the cache when it holds this exact KB."""
    kb_dir = Path(kb_dir)
    if not kb_dir.is_dir():
        return load_kb(kb_dir)  # the loader's own error
    cache_dir = cache_dir or paths.cache_dir()
    path = cache_path(kb_dir, _digest(kb_dir, cache_dir), cache_dir)
    try:
        with open(path, "rb") as handle:
            kb = pickle.load(handle)
        if isinstance(kb, KnowledgeBase) and rest_path(path).is_file() and unwritten_path(path).is_file():
            kb._rest = lambda: _load_rest(rest_path(path), lambda: _parts(kb_dir)[0])
            kb._unwritten = lambda: _load_part(unwritten_path(path), dict, lambda: _parts(kb_dir)[1])
            return kb
    except Exception:  # missing, truncated, from another version: just load the YAML
        pass
    kb = load_kb(kb_dir)
    from indexer.compiled import compilable

    kb.compiled = compilable(kb)
    _store(kb, path)
    return kb


def _digest(kb_dir: Path, cache_dir: Path) -> str:
    """``kb_digest(kb_dir)``, remembered by the files' names, sizes, modification times and
    inodes: hashing the KB's ~130 MB (the catalogue) cost ~50 ms of every start. An edit
    changes the size or the modification time, and a checkout replaces the file. A file's clock
    ticks coarsely (a few ms), so two writes in one tick could keep the same time: a digest is
    remembered only once every file is older than ``SETTLED_NS``, after which a write must move
    the time."""
    stamp = hashlib.sha256()
    newest = 0
    try:
        for file in sorted(p for p in kb_dir.rglob("*") if not p.name.startswith(".")):
            st = file.stat()
            if file.is_file():
                stamp.update(f"{file.relative_to(kb_dir)}\0{st.st_size}\0{st.st_mtime_ns}\0{st.st_ctime_ns}\0{st.st_ino}\0".encode())
                newest = max(newest, st.st_mtime_ns, st.st_ctime_ns)
    except OSError:
        return kb_digest(kb_dir)
    memo = cache_dir / f"kb-{stamp.hexdigest()[:32]}.digest"
    try:
        known = memo.read_text(encoding="ascii").strip()
        if len(known) == 64:
            return known
    except (OSError, UnicodeDecodeError):
        pass
    digest = kb_digest(kb_dir)
    if time.time_ns() - newest < SETTLED_NS:
        return digest  # a file changed just now: it may change again within its clock's tick
    try:
        cache_dir.mkdir(parents=True, exist_ok=True)
        _atomic(memo, lambda handle: handle.write(digest.encode("ascii")))
        _prune_digests(cache_dir)
    except OSError:
        pass
    return digest


def _prune_digests(cache_dir: Path) -> None:
    memos = sorted(cache_dir.glob("kb-*.digest"), key=lambda p: p.stat().st_mtime, reverse=True)
    for old in memos[KEEP:]:
        old.unlink(missing_ok=True)


def _load_rest(path: Path, rebuild):
    """The second part (records with text, catalogue entries, compiled catalogue, the pattern
    set's columns), its blobs left in the mapped file; from the KB if the file is damaged."""
    try:
        columns, (records, catalog, *compiled) = packed.read(path)
        return (records, LazyEntries(catalog), LazyEntries(compiled[0]) if compiled else None, columns)
    except Exception:
        return rebuild()


def _load_part(path: Path, kind: type, rebuild):
    """A later part of the cached KB; if its file went missing or is damaged, from the KB."""
    try:
        with open(path, "rb") as handle:
            part = pickle.load(handle)
        if isinstance(part, kind):
            return part
    except Exception:
        pass
    return rebuild()


def _parts(kb_dir: Path) -> tuple[tuple[dict, list, list], dict]:
    from indexer.compiled import compilable

    kb = load_kb(kb_dir)
    kb.compiled = compilable(kb)
    _, rest, unwritten = kb.split()
    return rest, unwritten


def _store(kb: KnowledgeBase, path: Path) -> None:
    first, rest, unwritten = kb.split()
    if kb.compiled is not None:
        from indexer.patterns import PatternSet

        # the explainer's set over every entry, as plain columns: a process that needs the
        # catalogue builds its set from these without unpickling 20,000 entries
        rest = (*rest[:3], PatternSet([l.entry for l in kb.compiled]).columns())
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        # the later parts first: a first part on disk always has its parts beside it
        _write(unwritten, unwritten_path(path))
        _write_rest(rest, rest_path(path))
        _write(first, path)
        _prune(path.parent)
    except OSError:
        pass  # a read-only install: every process parses the YAML, which is only slower


def _write(obj: object, path: Path) -> None:
    _atomic(path, lambda handle: pickle.dump(obj, handle, protocol=pickle.HIGHEST_PROTOCOL))


def _write_rest(rest: tuple, path: Path) -> None:
    records, catalog, compiled, columns = rest
    parts = [records, catalog.pickled()] + ([] if compiled is None else [compiled.pickled()])
    _atomic(path, lambda handle: packed.write(handle, columns, parts))


def _atomic(path: Path, write: Callable[[BinaryIO], object]) -> None:
    """``write`` into a temporary file beside ``path``, then put it in place in one step."""
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".kb-", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as handle:
            write(handle)
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
        unwritten_path(old).unlink(missing_ok=True)
    kept = {p.stem for p in copies[:KEEP]}
    for orphan in [*cache_dir.glob("kb-*.rest"), *cache_dir.glob("kb-*.unwritten")]:
        if orphan.stem not in kept:
            orphan.unlink(missing_ok=True)
