"""Shared fixtures: the real KB, and one semantic index built per test session.

The index is built into a temporary directory (never into the checkout) with the bundled
model and the default encoder, so tests exercise the same artifact users get; ~20 s once
per session.
"""

from __future__ import annotations

import atexit
import os
import shutil
import tempfile
from pathlib import Path

import pytest

from indexer import paths

REPO = Path(__file__).resolve().parent.parent
DATA = REPO / "tests" / "data"
# The pickled-KB cache of every Explainer the tests build (and of the CLIs they start) goes to
# a scratch directory, never into the checkout's build/.
if "EXPLAINLOG_CACHE" not in os.environ:
    _SCRATCH_CACHE = tempfile.mkdtemp(prefix="explainlog-test-cache-")
    os.environ["EXPLAINLOG_CACHE"] = _SCRATCH_CACHE
    # removed when the session ends, whatever its outcome: it only holds caches
    atexit.register(shutil.rmtree, _SCRATCH_CACHE, ignore_errors=True)


@pytest.fixture(scope="session")
def kb_dir() -> Path:
    return paths.kb_dir()


@pytest.fixture(scope="session")
def index_dir(tmp_path_factory, kb_dir) -> Path:
    from indexer.encoders import default_encoder
    from indexer.kb_loader import load_kb
    from indexer.semantic_index import build_index

    target = tmp_path_factory.mktemp("index") / "index"
    build_index(load_kb(kb_dir), kb_dir, target, default_encoder())
    return target


@pytest.fixture(scope="session")
def explainer(kb_dir, index_dir):
    """A fully loaded explainer (both tiers) over the real KB."""
    from service.explainer import Explainer

    return Explainer(kb_dir=kb_dir, index_dir=index_dir, index_policy="refuse")


@pytest.fixture(scope="module")
def server(explainer):
    """A real uvicorn server on a free loopback port, one per HTTP test module."""
    from http_testing import serve

    with serve(explainer) as running:
        yield running


@pytest.fixture
def client(server):
    import httpx

    with httpx.Client(base_url=server.url, timeout=120) as c:
        yield c
