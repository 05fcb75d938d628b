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


def _later(monkeypatch, seconds: float = 60) -> None:
    """The clock as it will read a minute from now: the KB's files have settled by then."""
    import time

    now = time.time_ns
    monkeypatch.setattr(kb_cache.time, "time_ns", lambda: now() + int(seconds * 1e9))


def test_the_kb_digest_is_remembered_once_its_files_have_settled(kb, tmp_path, monkeypatch):
    cache = tmp_path / "cache"
    kb_cache.load_kb_cached(kb, cache)
    assert not list(cache.glob("kb-*.digest"))  # files written just now: hashed every time
    _later(monkeypatch)
    first = kb_cache.load_kb_cached(kb, cache)
    [memo] = cache.glob("kb-*.digest")
    assert memo.read_text() == first.digest
    hashed = kb_cache.kb_digest
    monkeypatch.setattr(kb_cache, "kb_digest", lambda kb_dir: pytest.fail("hashed the KB again"))
    assert ids(kb_cache.load_kb_cached(kb, cache)) == ["demo.affinity"]
    monkeypatch.setattr(kb_cache, "kb_digest", hashed)
    memo.write_text("not a digest")  # a damaged memo is hashed again, not trusted
    assert kb_cache.load_kb_cached(kb, cache).digest == first.digest


def test_a_same_size_edit_is_not_hidden_by_the_remembered_digest(kb, tmp_path, monkeypatch):
    cache = tmp_path / "cache"
    _later(monkeypatch)
    kb_cache.load_kb_cached(kb, cache)
    assert list(cache.glob("kb-*.digest"))
    [path] = [p for p in kb.rglob("*.yaml")]
    text = path.read_text(encoding="utf-8")
    assert "demo.affinity" in text
    path.write_text(text.replace("demo.affinity", "demo.affinitz"), encoding="utf-8")  # same size
    assert ids(kb_cache.load_kb_cached(kb, cache)) == ["demo.affinitz"]


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


RECORD = {
    "id": "nccl.net_ib.0badc0de", "component": "nccl", "repo": "NVIDIA/nccl", "file": "src/transport/net_ib.cc",
    "line": 1, "function": "ncclIbInit", "level": "WARN", "call": "WARN",
    "format": "NET/IB : No device found for {dev}", "pattern": r"^NET/IB : No device found for (?P<dev>.*?)\s*$",
    "groups": {"dev": "dev"}, "versions": ["v2.19.3-1"], "matchable": True, "severity": "warning",
    "role": "root_cause", "title": {"en": "No IB device", "zh": "没有 IB 设备"},
    "explanation": {"en": "Printed when no device is found.", "zh": "找不到设备时打印。"},
    "action": {"en": "Check the HCA.", "zh": "检查 HCA。"},
    "example": {"line": "NET/IB : No device found for mlx5_0", "constructed": True},
}


@pytest.fixture
def kb_with_catalog(tmp_path):
    import json

    kb_dir = write_kb(tmp_path, VALID)
    (kb_dir / "catalog").mkdir()
    unwritten = dict(RECORD, id="nccl.net_ib.0badc0df", format="NET/IB : {dev} gone", title=None,
                     explanation=None, action=None, pattern=r"^NET/IB : (?P<dev>.*?) gone\s*$",
                     example={"line": "NET/IB : mlx5_0 gone", "constructed": True})
    (kb_dir / "catalog" / "nccl.jsonl").write_text(json.dumps(RECORD) + "\n" + json.dumps(unwritten) + "\n",
                                                   encoding="utf-8")
    return kb_dir


def test_the_catalogue_part_is_read_only_when_a_line_needs_it(kb_with_catalog, tmp_path, monkeypatch):
    from service.explainer import Explainer

    monkeypatch.setenv("EXPLAINLOG_CACHE", str(tmp_path / "cache"))
    kb_cache.load_kb_cached(kb_with_catalog)  # writes both parts
    assert sorted(p.suffix for p in (tmp_path / "cache").iterdir()) == [".pickle", ".rest", ".unwritten"]
    monkeypatch.setattr(kb_cache, "load_kb", lambda kb_dir: pytest.fail("parsed the YAML again"))
    ex = Explainer(kb_with_catalog, index_policy="refuse")
    curated = ex.explain_many(["h:1:2 [2] NCCL INFO Setting affinity for GPU 2 to ff0000"], semantic=False)[0]
    assert curated["pattern_id"] == "demo.affinity" and not ex.kb.complete
    record = ex.explain_many(["h:1:2 [2] NCCL WARN NET/IB : No device found for mlx5_0"], semantic=False)[0]
    assert (record["pattern_id"], record["tier"]) == ("nccl.net_ib.0badc0de", "catalog")
    assert record["source"]["function"] == "ncclIbInit"
    assert ex.kb._unwritten is not None  # records awaiting text are not read to answer a line
    assert sorted(ex.kb.records) == ["nccl.net_ib.0badc0de", "nccl.net_ib.0badc0df"] and ex.kb.complete
    assert [e.id for e in ex.entries] == ["demo.affinity", "nccl.net_ib.0badc0de"]


def test_a_catalogue_answer_unpickles_only_the_entries_it_needs(kb_with_catalog, tmp_path, monkeypatch):
    """From the cache, the pattern set is built from stored columns: answering a line reads
    the one catalogue entry that matched, and the answer is the one a fresh load gives."""
    import json

    from indexer.kb_loader import LazyEntries
    from indexer.packed import PackedBytes
    from service.explainer import Explainer

    more = [dict(RECORD, id=f"nccl.net_ib.{i:08x}", format=f"NET/IB : gadget {i} {{x}}",
                 pattern=rf"^NET/IB : gadget {i} (?P<x>\S+)\s*$",
                 example={"line": f"NET/IB : gadget {i} foo", "constructed": True}) for i in range(40)]
    with open(kb_with_catalog / "catalog" / "nccl.jsonl", "a", encoding="utf-8") as handle:
        handle.writelines(json.dumps(r) + "\n" for r in more)
    line = "h:1:2 [2] NCCL WARN NET/IB : gadget 7 bar"
    monkeypatch.setenv("EXPLAINLOG_CACHE", str(tmp_path / "first"))  # a first load parses the YAML
    fresh = Explainer(kb_with_catalog, index_policy="refuse").explain_many([line], semantic=False)[0]
    monkeypatch.setenv("EXPLAINLOG_CACHE", str(tmp_path / "cache"))
    kb_cache.load_kb_cached(kb_with_catalog)
    ex = Explainer(kb_with_catalog, index_policy="refuse")
    answer = ex.explain_many([line], semantic=False)[0]
    assert answer == fresh and answer["pattern_id"] == "nccl.net_ib.00000007" and answer["tier"] == "catalog"
    assert ex.kb.match_columns is not None
    catalog = ex.kb.catalog
    assert isinstance(catalog, LazyEntries) and len(catalog) == 41
    assert sum(item is not None for item in catalog._store.items) == 1  # only the entry that matched
    assert isinstance(ex.kb._raw, PackedBytes) and "nccl.net_ib.00000003" in ex.kb._raw  # records not copied out
    assert [e.id for e in ex.entries][-1] == "nccl.net_ib.00000027"  # reading all still works, in order
    assert ex.by_id["nccl.net_ib.00000003"].pattern.startswith("^NET/IB : gadget 3 ")


@pytest.mark.parametrize("damage", ["missing", "corrupt", "truncated"])
def test_a_lost_catalogue_part_is_read_from_the_kb(kb_with_catalog, tmp_path, damage):
    cache = tmp_path / "cache"
    kb_cache.load_kb_cached(kb_with_catalog, cache)
    for part in [*cache.glob("kb-*.rest"), *cache.glob("kb-*.unwritten")]:
        if damage == "missing":
            part.unlink()
        elif damage == "truncated":  # a disk that filled up: the header is whole, blobs are not
            part.write_bytes(part.read_bytes()[: part.stat().st_size - 10])
        else:
            part.write_bytes(b"\x80\x05 not a pickle")
    kb = kb_cache.load_kb_cached(kb_with_catalog, cache)
    assert ids(kb) == ["demo.affinity"]
    assert sorted(kb.records) == ["nccl.net_ib.0badc0de", "nccl.net_ib.0badc0df"]
    assert [l.entry.id for l in kb.compiled] == ["demo.affinity", "nccl.net_ib.0badc0de"]


def test_derived_caches_keep_only_the_newest_files(tmp_path):
    import os

    from indexer import paths

    for i in range(6):
        f = tmp_path / f"prefilter-{i}.pickle"
        f.write_bytes(b"x")
        os.utime(f, (1000 + i, 1000 + i))
    (tmp_path / "kb-1.pickle").write_bytes(b"y")
    paths.prune(tmp_path, "prefilter-*.pickle", 2)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["kb-1.pickle", "prefilter-4.pickle", "prefilter-5.pickle"]


def test_derived_map_computes_only_the_items_it_has_not_seen(tmp_path, monkeypatch):
    """A list that differs from a cached one in a few items (a KB edit) costs only those
    items; a new list of known items costs nothing; answers equal a fresh computation."""
    from indexer import derived

    monkeypatch.setenv("EXPLAINLOG_CACHE", str(tmp_path))
    calls: list[str] = []

    def analyse(item: str) -> tuple[str, int]:
        calls.append(item)
        return item.upper(), len(item)

    first = [f"pattern {i}" for i in range(derived.MIN_ITEMS + 100)]
    assert derived.derived_map("demo", analyse, first) == [analyse(x) for x in first]
    calls.clear()
    assert derived.derived_map("demo", analyse, first) == [(x.upper(), len(x)) for x in first]
    assert calls == []  # the exact list's file

    edited = first[:-3] + ["new one", "new two", "new three"]
    assert derived.derived_map("demo", analyse, edited) == [(x.upper(), len(x)) for x in edited]
    assert calls == ["new one", "new two", "new three"]

    calls.clear()
    subset = first[10:] + edited[-3:]
    assert derived.derived_map("demo", analyse, subset) == [(x.upper(), len(x)) for x in subset]
    assert calls == []  # every item known from the store

    # a store written by other analysis code is never read
    monkeypatch.setattr(derived, "code_digest", lambda: "other-code")
    assert derived.derived_map("demo", analyse, subset) == [(x.upper(), len(x)) for x in subset]
    assert len(calls) == len(subset)


def test_derived_map_survives_a_damaged_store(tmp_path, monkeypatch):
    from indexer import derived

    monkeypatch.setenv("EXPLAINLOG_CACHE", str(tmp_path))
    items = [f"p{i}" for i in range(derived.MIN_ITEMS)]
    derived.derived_map("demo", len, items)
    for f in tmp_path.glob("demo*.pickle"):
        f.write_bytes(b"\x80\x05truncated")
    assert derived.derived_map("demo", len, items + ["p-extra"]) == [len(x) for x in items + ["p-extra"]]


def test_packed_blobs_read_back_one_at_a_time_and_pickle_as_plain_containers(tmp_path):
    import pickle

    from indexer import packed

    path = tmp_path / "p.bin"
    records = {"a": b"first", "b": b"", "c": b"\x00" * 3}
    with open(path, "wb") as handle:
        packed.write(handle, {"meta": 1}, [records, [b"x", b"yy", b"zzz"], []])
    meta, (got, blobs, empty) = packed.read(path)
    assert meta == {"meta": 1} and dict(got) == records and list(blobs) == [b"x", b"yy", b"zzz"]
    assert blobs[-1] == b"zzz" and blobs[0:2] == [b"x", b"yy"] and len(empty) == 0
    with pytest.raises(IndexError):
        blobs[3]
    assert got.pop("a") == b"first" and "a" not in got and got.pop("a", None) is None and len(got) == 2
    with pytest.raises(KeyError):
        got.pop("a")
    assert pickle.loads(pickle.dumps(got)) == {"b": b"", "c": b"\x00" * 3}  # e.g. sent to a worker
    assert pickle.loads(pickle.dumps(blobs)) == [b"x", b"yy", b"zzz"]
    path.write_bytes(path.read_bytes()[:-1])
    with pytest.raises(ValueError, match="truncated"):
        packed.read(path)


def test_a_filtered_sets_buckets_are_read_back_for_the_same_patterns(tmp_path, monkeypatch):
    """``FilteredSet.Compile`` keeps the state it works out (required words, literals, buckets)
    per exact pattern list: a second set of the same patterns reads it instead of working it out,
    matches the same, and a list with one pattern more is worked out afresh."""
    from indexer import derived, patterns

    monkeypatch.setenv("EXPLAINLOG_CACHE", str(tmp_path))
    worked: list[int] = []
    real = patterns._filtered_state

    def counting(items):
        worked.append(len(items))
        return real(items)

    monkeypatch.setattr(patterns, "_filtered_state", counting)
    pats = [rf"^gadget {i} (?P<x>\w+) ready" for i in range(derived.MIN_ITEMS + 20)] + [r"\d+ bytes"]

    def built(items):
        fs = patterns.FilteredSet()
        for p in items:
            fs.Add(p, check=False)
        fs.Compile()
        return fs

    first, second = built(pats), built(pats)
    assert worked == [len(pats)]  # the second set read the first one's state
    assert second.state() == first.state()
    for text in ["gadget 7 alpha ready", "12 bytes", "gadget 700 x ready", "nothing"]:
        assert sorted(second.Match(text)) == sorted(first.Match(text))
    assert sorted(first.Match("gadget 7 alpha ready 12 bytes")) == [7, len(pats) - 1]
    built(pats + [r"^other \d+"])
    assert worked == [len(pats), len(pats) + 1]
