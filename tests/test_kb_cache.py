"""The pickled KB is used only when it holds exactly the KB on disk, and is never required."""

from __future__ import annotations

import copy

import pytest

import indexer.kb_cache as kb_cache
from test_kb_check import VALID, write_kb


def ids(kb) -> list[str]:
    return [loaded.entry.id for loaded in kb.entries]


@pytest.fixture
def kb(tmp_path):
    return write_kb(tmp_path, VALID)


def test_second_load_comes_from_the_cache(kb, tmp_path, monkeypatch):
    first = kb_cache.load_kb_cached(kb, tmp_path / "cache")
    monkeypatch.setattr(kb_cache, "load_kb", lambda kb_dir: pytest.fail("parsed the YAML again"))
    second = kb_cache.load_kb_cached(kb, tmp_path / "cache")
    assert ids(second) == ids(first) == ["demo.affinity"]
    assert second.digest == first.digest and second.entries[0].entry == first.entries[0].entry


def test_an_edited_kb_is_loaded_fresh(kb, tmp_path):
    kb_cache.load_kb_cached(kb, tmp_path / "cache")
    other = copy.deepcopy(VALID)
    other["id"] = "demo.other"
    write_kb(tmp_path, VALID, other)
    assert ids(kb_cache.load_kb_cached(kb, tmp_path / "cache")) == ["demo.affinity", "demo.other"]


def test_a_corrupt_cache_file_is_ignored_and_replaced(kb, tmp_path):
    kb_cache.load_kb_cached(kb, tmp_path / "cache")
    [cached] = (tmp_path / "cache").glob("kb-*.pickle")
    cached.write_bytes(b"\x80\x05 not a pickle")
    assert ids(kb_cache.load_kb_cached(kb, tmp_path / "cache")) == ["demo.affinity"]
    assert cached.read_bytes()[:1] == b"\x80" and len(cached.read_bytes()) > 100


def test_an_unwritable_cache_location_only_costs_time(kb, tmp_path):
    blocker = tmp_path / "not-a-dir"
    blocker.write_text("a file where the cache directory should be")
    assert ids(kb_cache.load_kb_cached(kb, blocker)) == ["demo.affinity"]
    assert ids(kb_cache.load_kb_cached(kb, blocker)) == ["demo.affinity"]


def test_only_a_few_copies_are_kept(tmp_path):
    for n in range(kb_cache.KEEP + 3):
        entry = copy.deepcopy(VALID)
        entry["id"] = f"demo.e{n}"
        kb_cache.load_kb_cached(write_kb(tmp_path / f"kb{n}", entry), tmp_path / "cache")
    assert len(list((tmp_path / "cache").glob("kb-*.pickle"))) == kb_cache.KEEP
