"""Per-pattern analyses computed once per KB, not once per process.

Reading the parse trees of tens of thousands of catalogue patterns (the prefilter's required
words, the batch engine's digit closures and pointer prefilters) costs seconds; every explainer
and every ``-j`` worker needs the same answers for the same KB. ``derived_map`` keeps them in
the cache directory and prunes old files, in two layers:

- ``<kind>-<digest>.pickle``: the answer for one exact list of patterns (one read, no hashing
  of single items), the fast path of every process after the first;
- ``<kind>.items-<code>.pickle``: every pattern's answer by pattern, so a list that differs from
  a known one in a few patterns (a KB edit, a text that makes a record answer, the engine's
  lists that share most patterns with the explainer's) computes only the new ones. Before it,
  the first batch run after any KB change spent ~100 s redoing every analysis.

Both are keyed by a digest of the code that computes the answers (the analysing modules'
source): a changed analysis never reads an older version's results.
"""

from __future__ import annotations

import hashlib
import os
import pickle
from functools import lru_cache
from pathlib import Path
from typing import Callable, TypeVar

from indexer import paths

T = TypeVar("T")
KEEP = 32  # files per analysis kind: a few pattern lists per KB version in use
KEEP_STORES = 2  # item stores per analysis kind (one per code version in use)
STORE_LIMIT = 200_000  # items kept in one store; past it, only the current list's are kept
MIN_ITEMS = 500  # below this, computing is cheaper than a file
_MISSING = object()
# The modules whose code decides the answers (the analyses and what they call).
_ANALYSES = ("indexer/patterns.py", "indexer/derived.py", "service/batch/digit_closure.py",
             "service/batch/pointer_blind.py", "service/batch/engine.py")


@lru_cache(maxsize=1)
def code_digest() -> str:
    root = Path(__file__).resolve().parents[1]
    digest = hashlib.sha256()
    for name in _ANALYSES:
        try:
            digest.update(name.encode() + b"\0" + (root / name).read_bytes() + b"\0")
        except OSError:
            digest.update(name.encode() + b"\0missing\0")
    return digest.hexdigest()[:16]


def derived_map(kind: str, function: Callable[[str], T], items: list[str]) -> list[T]:
    """``[function(x) for x in items]``, from the cache when it holds them (written atomically;
    missing, damaged or unwritable files only cost the computation)."""
    if len(items) < MIN_ITEMS:
        return [function(x) for x in items]
    code = code_digest()
    key = hashlib.sha256((code + "\0" + "\0".join(items)).encode("utf-8", "surrogatepass")).hexdigest()[:32]
    directory = paths.cache_dir()
    path = directory / f"{kind}-{key}.pickle"
    found = _read(path)
    if isinstance(found, list) and len(found) == len(items):
        return found
    store_path = directory / f"{kind}.items-{code}.pickle"
    store = _read(store_path)
    if not isinstance(store, dict):
        store = {}
    found = []
    new = 0
    for item in items:
        answer = store.get(item, _MISSING)
        if answer is _MISSING:
            answer = store[item] = function(item)
            new += 1
        found.append(answer)
    try:
        directory.mkdir(parents=True, exist_ok=True)
        _write(path, found)
        paths.prune(directory, f"{kind}-*.pickle", KEEP)
        if new:
            if len(store) > STORE_LIMIT:
                store = dict(zip(items, found))
            _write(store_path, store)
            paths.prune(directory, f"{kind}.items-*.pickle", KEEP_STORES)
    except OSError:
        pass  # a read-only cache: every process computes it, which is only slower
    return found


def derived_value(kind: str, function: Callable[[list[str]], T], items: list[str]) -> T:
    """``function(items)`` for an analysis of the whole list (not item by item), kept per exact
    list like ``derived_map``'s fast path: the pattern sets' buckets (each pattern filed under
    its rarest required word, which depends on every other pattern) cost a process ~0.1 s per
    30,000 patterns to work out and a few milliseconds to read."""
    if len(items) < MIN_ITEMS:
        return function(items)
    key = hashlib.sha256((code_digest() + "\0" + "\0".join(items)).encode("utf-8", "surrogatepass")).hexdigest()[:32]
    directory = paths.cache_dir()
    path = directory / f"{kind}-{key}.pickle"
    found = _read(path)
    if found is not None:
        return found  # type: ignore[return-value]
    value = function(items)
    try:
        directory.mkdir(parents=True, exist_ok=True)
        _write(path, value)
        paths.prune(directory, f"{kind}-*.pickle", KEEP)
    except OSError:
        pass
    return value


def _read(path: Path) -> object:
    try:
        with open(path, "rb") as handle:
            return pickle.load(handle)
    except Exception:  # missing, truncated, from another version
        return None


def _write(path: Path, value: object) -> None:
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    try:
        with open(tmp, "wb") as handle:
            pickle.dump(value, handle, protocol=pickle.HIGHEST_PROTOCOL)
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
