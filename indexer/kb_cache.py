"""A pickled copy of the loaded KB, keyed by what it was loaded from, so a process that only
needs the KB starts in ~0.1 s instead of ~0.35 s (YAML parsing and validating ~700 entries).

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

FORMAT = 2  # 2: the KB carries its compilable entries
KEEP = 8


def cache_path(kb_dir: Path, digest: str, cache_dir: Path) -> Path:
    key = "\0".join([
        str(FORMAT), digest, str(kb_dir.resolve()), sys.version, pydantic.VERSION,
    ])
    return cache_dir / f"kb-{hashlib.sha256(key.encode()).hexdigest()[:32]}.pickle"


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
        if isinstance(kb, KnowledgeBase):
            return kb
    except Exception:  # missing, truncated, from another version: just load the YAML
        pass
    kb = load_kb(kb_dir)
    from indexer.kb_check import compilable

    kb.compiled = compilable(kb)
    _store(kb, path)
    return kb


def _store(kb: KnowledgeBase, path: Path) -> None:
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".kb-", suffix=".tmp")
        try:
            with os.fdopen(fd, "wb") as handle:
                pickle.dump(kb, handle, protocol=pickle.HIGHEST_PROTOCOL)
            os.replace(tmp, path)
        except BaseException:
            os.unlink(tmp)
            raise
        _prune(path.parent)
    except OSError:
        pass  # a read-only install: every process parses the YAML, which is only slower


def _prune(cache_dir: Path) -> None:
    """Keep the newest few copies (one per KB directory and version in use)."""
    copies = sorted(cache_dir.glob("kb-*.pickle"), key=lambda p: p.stat().st_mtime, reverse=True)
    for old in copies[KEEP:]:
        old.unlink(missing_ok=True)
