"""Per-pattern analyses computed once per KB, not once per process.

Reading the parse trees of tens of thousands of catalogue patterns (the prefilter's required
words, the batch engine's digit closures and pointer prefilters) costs seconds; every explainer
and every ``-j`` worker needs the same answers for the same KB. ``derived_map`` keeps them in
the cache directory, keyed by the analysis and all its inputs, and prunes old files.
"""

from __future__ import annotations

import hashlib
import os
import pickle
from typing import Callable, TypeVar

from indexer import paths

T = TypeVar("T")
KEEP = 32  # files per analysis kind: a few pattern lists per KB version in use
MIN_ITEMS = 500  # below this, computing is cheaper than a file


def derived_map(kind: str, function: Callable[[str], T], items: list[str]) -> list[T]:
    """``[function(x) for x in items]``, from ``<cache>/<kind>-<digest>.pickle`` when that
    exists (written atomically on first use; missing, damaged or unwritable files only cost
    the computation)."""
    if len(items) < MIN_ITEMS:
        return [function(x) for x in items]
    key = hashlib.sha256("\0".join(items).encode("utf-8", "surrogatepass")).hexdigest()[:32]
    path = paths.cache_dir() / f"{kind}-{key}.pickle"
    try:
        with open(path, "rb") as handle:
            found = pickle.load(handle)
        if isinstance(found, list) and len(found) == len(items):
            return found
    except Exception:  # missing, truncated, from another version
        pass
    found = [function(x) for x in items]
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
        with open(tmp, "wb") as handle:
            pickle.dump(found, handle, protocol=pickle.HIGHEST_PROTOCOL)
        os.replace(tmp, path)
        paths.prune(path.parent, f"{kind}-*.pickle", KEEP)
    except OSError:
        pass  # a read-only cache: every process computes it, which is only slower
    return found
