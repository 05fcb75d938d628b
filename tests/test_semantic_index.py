"""The index artifact: stamped, atomic, refused or rebuilt when stale, never silently used."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
import yaml

from indexer.encoders import default_encoder
from indexer.kb_loader import load_kb
from indexer.semantic_index import SemanticIndex, build_index, read_stamp, stamp_problem
from service.explainer import Explainer, IndexUnavailable

ENTRIES = [
    {
        "id": "demo.network",
        "title": {"en": "NCCL chose its network transport", "zh": "NCCL 选定了网络传输"},
        "component": "nccl", "severity": "info", "role": "context",
        "pattern": r"^Using network (?P<net>\S+)$",
        "fields": {"net": {"en": "transport", "zh": "传输"}},
        "explanation": {"en": "NCCL uses {net}.", "zh": "NCCL 使用 {net}。"},
        "examples": ["h:1:2 [0] NCCL INFO Using network IB", "h:1:2 [0] NCCL INFO Using network Socket"],
        "source": "NVIDIA/nccl src/init.cc",
    },
    {
        "id": "demo.oom",
        "title": {"en": "CUDA ran out of memory", "zh": "CUDA 显存不足"},
        "component": "cuda", "severity": "error", "role": "root_cause",
        "pattern": r"CUDA out of memory\. Tried to allocate (?P<size>[\d.]+ [KMG]iB)",
        "fields": {"size": {"en": "requested", "zh": "申请大小"}},
        "explanation": {"en": "Needed {size} more.", "zh": "还需要 {size}。"},
        "action": {"en": "Reduce the batch size.", "zh": "减小 batch size。"},
        "examples": ["torch.cuda.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB (GPU 0; 79.15 GiB total capacity)"],
        "source": "pytorch/pytorch c10/cuda/CUDACachingAllocator.cpp",
    },
]


@pytest.fixture(scope="module")
def encoder():
    return default_encoder()


@pytest.fixture()
def small_kb(tmp_path) -> Path:
    kb = tmp_path / "kb"
    (kb / "calibration").mkdir(parents=True)
    (kb / "demo.yaml").write_text(yaml.safe_dump(ENTRIES, allow_unicode=True), encoding="utf-8")
    (kb / "calibration" / "unrelated.txt").write_text(
        "Exception in thread main java.lang.OutOfMemoryError: Java heap space\n"
        "nginx: upstream timed out (110: Connection timed out)\n",
        encoding="utf-8",
    )
    return kb


def test_build_writes_plain_data_with_a_stamp(small_kb, tmp_path, encoder):
    index_dir = tmp_path / "index"
    meta = build_index(load_kb(small_kb), small_kb, index_dir, encoder)
    assert sorted(p.name for p in index_dir.iterdir()) == ["CHECKSUMS", "items.json", "meta.json", "vectors.npy"]
    stamp = read_stamp(index_dir)
    assert stamp["kb_digest"] == load_kb(small_kb).digest and stamp["model_name"] == "all-MiniLM-L6-v2-f16"
    assert stamp["calibration"]["report"]["n"] > 0 and len(stamp["calibration"]["weights"]) == 4
    assert meta["n_entries"] == 2
    loaded = SemanticIndex.load(index_dir)
    assert loaded.vectors.shape == (meta["n_items"], meta["dim"])
    # Rebuilding over an existing index leaves no staging directories behind.
    build_index(load_kb(small_kb), small_kb, index_dir, encoder)
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".")] == []


def test_stale_index_is_refused_then_rebuilt(small_kb, tmp_path, encoder):
    index_dir = tmp_path / "index"
    build_index(load_kb(small_kb), small_kb, index_dir, encoder)
    with (small_kb / "demo.yaml").open("a", encoding="utf-8") as f:
        f.write("\n# a curator touched the KB\n")
    assert stamp_problem(read_stamp(index_dir), load_kb(small_kb).digest, encoder.name) == (
        "the knowledge base changed since the index was built"
    )
    strict = Explainer(kb_dir=small_kb, index_dir=index_dir, index_policy="refuse", encoder=encoder)
    # The regex tier still answers without the index ...
    assert strict.explain("NCCL INFO Using network IB")["tier"] == "regex"
    # ... but a line that needs the index is refused with a message naming the fix.
    with pytest.raises(IndexUnavailable, match="knowledge base changed.*explainlog index build"):
        strict.explain("allocation failed because the GPU has no free memory left")
    notes: list[str] = []
    lenient = Explainer(kb_dir=small_kb, index_dir=index_dir, encoder=encoder, log=notes.append)
    answer = lenient.explain("allocation failed because the GPU has no free memory left")
    assert notes and "building the semantic index" in notes[0]
    assert read_stamp(index_dir)["kb_digest"] == load_kb(small_kb).digest
    assert answer["candidates"][0]["pattern_id"] == "demo.oom"


def test_index_from_another_model_is_refused(small_kb, tmp_path, encoder):
    index_dir = tmp_path / "index"
    build_index(load_kb(small_kb), small_kb, index_dir, encoder)
    meta = json.loads((index_dir / "meta.json").read_text())
    meta["model_name"] = "some-other-model"
    (index_dir / "meta.json").write_text(json.dumps(meta))
    strict = Explainer(kb_dir=small_kb, index_dir=index_dir, index_policy="refuse", encoder=encoder)
    with pytest.raises(IndexUnavailable, match="some-other-model"):
        strict.explain("something the regex tier does not know")


def _damage(index_dir: Path, how: str) -> None:
    """One way an index directory goes bad on disk; ``+sums`` variants also rewrite CHECKSUMS
    (a careful forger, or a tool that "repairs" it), so the content checks are tested too."""
    vectors = index_dir / "vectors.npy"
    if how == "empty vectors":
        vectors.write_bytes(b"")
    elif how == "truncated vectors":
        vectors.write_bytes(vectors.read_bytes()[:-1000])
    elif how == "not numpy":
        vectors.write_bytes(b"not numpy")
    elif how.startswith("shuffled vectors"):
        v = np.load(vectors)
        np.save(vectors, v[::-1].copy())
    elif how.startswith("NaN vectors"):
        v = np.load(vectors)
        v[3] = np.nan
        np.save(vectors, v)
    elif how.startswith("edited calibration"):
        meta = json.loads((index_dir / "meta.json").read_text())
        meta["calibration"]["weights"] = [5.0, 0.0, 0.0, 0.0]
        (index_dir / "meta.json").write_text(json.dumps(meta))
    elif how == "no checksums":
        (index_dir / "CHECKSUMS").unlink()
    elif how == "items dropped":
        items = json.loads((index_dir / "items.json").read_text())
        (index_dir / "items.json").write_text(json.dumps(items[:-1]))
    if how.endswith("+sums"):
        from indexer.semantic_index import _sha256

        sums = {name: _sha256(index_dir / name) for name in ("items.json", "meta.json", "vectors.npy")}
        (index_dir / "CHECKSUMS").write_text(json.dumps(sums))


DAMAGE = ["empty vectors", "truncated vectors", "not numpy", "shuffled vectors", "NaN vectors",
          "NaN vectors +sums", "edited calibration", "no checksums", "items dropped"]


@pytest.mark.parametrize("how", DAMAGE)
def test_a_damaged_index_is_refused_with_a_reason_or_rebuilt(small_kb, tmp_path, encoder, how):
    from indexer.semantic_index import IndexError_

    index_dir = tmp_path / "index"
    build_index(load_kb(small_kb), small_kb, index_dir, encoder)
    _damage(index_dir, how)
    with pytest.raises(IndexError_) as raised:
        SemanticIndex.load(index_dir)
    assert str(tmp_path) not in raised.value.reason
    strict = Explainer(kb_dir=small_kb, index_dir=index_dir, index_policy="refuse", encoder=encoder)
    with pytest.raises(IndexUnavailable) as refused:
        strict.explain("something the regex tier does not know")
    assert str(tmp_path) not in refused.value.reason and "index build" in refused.value.reason
    notes: list[str] = []
    healing = Explainer(kb_dir=small_kb, index_dir=index_dir, encoder=encoder, log=notes.append)
    answer = healing.explain("something the regex tier does not know")
    assert answer["candidates"] and any("building the semantic index" in n for n in notes)
    SemanticIndex.load(index_dir)  # the rebuilt index verifies


def test_a_consistent_forgery_is_caught_by_re_embedding_a_sample(small_kb, tmp_path, encoder):
    """Rows shuffled and CHECKSUMS rewritten: every file checks out, every vector is a unit
    vector; only re-embedding some items shows that the vectors belong to other texts."""
    from indexer.semantic_index import IndexError_, spot_check

    index_dir = tmp_path / "index"
    build_index(load_kb(small_kb), small_kb, index_dir, encoder)
    spot_check(SemanticIndex.load(index_dir), encoder)
    _damage(index_dir, "shuffled vectors +sums")
    forged = SemanticIndex.load(index_dir)
    with pytest.raises(IndexError_, match="do not match their texts"):
        spot_check(forged, encoder)
    notes: list[str] = []
    healing = Explainer(kb_dir=small_kb, index_dir=index_dir, encoder=encoder, log=notes.append)
    assert healing.explain("something the regex tier does not know")["candidates"]
    assert any("do not match their texts" in n for n in notes)


def test_the_default_index_is_keyed_by_model_and_kb(small_kb, kb_dir, encoder, monkeypatch, tmp_path):
    monkeypatch.delenv("EXPLAINLOG_INDEX", raising=False)
    monkeypatch.setenv("EXPLAINLOG_HOME", str(tmp_path / "home"))
    small = Explainer(kb_dir=small_kb, encoder=encoder)
    real = Explainer(kb_dir=kb_dir, encoder=encoder)
    assert small.index_dir != real.index_dir and small.index_dir.parent == real.index_dir.parent
    assert small.index_dir.parent.name == encoder.name and small.index_dir.name == small.kb.digest[:16]
    small.explain("something the regex tier does not know")  # builds the small KB's index only
    assert (small.index_dir / "CHECKSUMS").is_file() and not real.index_dir.exists()


def _counting_explainer(small_kb, tmp_path, encoder) -> tuple[Explainer, list[int]]:
    """An explainer on the small KB whose encoder records the size of every batch it encodes."""
    index_dir = tmp_path / "index"
    build_index(load_kb(small_kb), small_kb, index_dir, encoder)
    calls: list[int] = []

    class CountingEncoder:
        name = encoder.name

        def encode(self, texts):
            calls.append(len(texts))
            return encoder.encode(texts)

    explainer = Explainer(kb_dir=small_kb, index_dir=index_dir, index_policy="refuse", encoder=CountingEncoder())
    explainer.index()  # loading re-embeds a sample of the index (spot_check): not counted here
    calls.clear()
    return explainer, calls


def test_semantic_answers_are_cached_by_template(small_kb, tmp_path, encoder):
    explainer, calls = _counting_explainer(small_kb, tmp_path, encoder)
    lines = [f"worker {i} could not reserve 1{i}.5 GiB of device memory" for i in range(50)]
    answers = explainer.explain_many(lines)
    assert len(answers) == 50 and calls == [1]  # 50 lines, one template, one encode of one text
    explainer.explain_many(lines[:3])
    assert calls == [1]


def test_unknown_lines_that_differ_in_ids_share_one_embedding_and_a_budget_bounds_the_rest(small_kb, tmp_path, encoder):
    """Lines no pattern knows are embedded once per template with id-like tokens masked (a log
    of a million lines with a request id each embeds one text), lines with too little text are
    not embedded at all, and past the run's budget nothing more is embedded: those lines stay
    unknown and are counted."""
    from service.explainer import SemanticBudget, cluster_key

    explainer, calls = _counting_explainer(small_kb, tmp_path, encoder)
    assert cluster_key("request 83844b40-ffa9-4b9f-8f54-f8ceacaab39e was refused") == "request <ID> was refused"
    ids = [f"upload session a{i:04d}f{i * 7919 % 10000:04d}x expired before the storage layer replied" for i in range(40)]
    answers = explainer.explain_many(ids + ["x7", "ok", ""])
    assert len(answers) == 43 and calls == [1]  # 40 lines, one shared text; the short ones not embedded
    assert [a["candidates"] for a in answers[40:]] == [[], [], []]

    calls.clear()
    explainer.semantic_budget = SemanticBudget(0.0)
    fresh = [f"the {word} replica could not reach quorum during leader election" for word in ("green", "blue", "amber")]
    answers = explainer.explain_many(fresh)
    assert calls == [] and [a["known"] for a in answers] == [False] * 3
    assert explainer.semantic_budget.skipped_lines == 3 and explainer.semantic_budget.skipped_templates == 3
    explainer.semantic_budget = SemanticBudget(60.0)
    explainer.explain_many(fresh)
    assert calls == [3] and explainer.semantic_budget.spent > 0


def test_the_numpy_search_finds_what_faiss_finds(index_dir):
    """faiss (the optional backend, EXPLAINLOG_SEARCH=faiss) and the default numpy search: the
    same neighbours; rows may differ only where two vectors score the same."""
    import faiss

    from indexer.semantic_index import NumpyFlatIP

    vectors = np.load(index_dir / "vectors.npy")
    rng = np.random.default_rng(0)
    queries = vectors[::41][:250] + rng.standard_normal((250, vectors.shape[1])).astype(np.float32) * 0.05
    queries /= np.linalg.norm(queries, axis=1, keepdims=True)
    reference = faiss.IndexFlatIP(vectors.shape[1])
    reference.add(vectors)
    f_sims, f_idx = reference.search(queries, 20)
    n_sims, n_idx = NumpyFlatIP(vectors).search(queries, 20)
    np.testing.assert_allclose(n_sims, f_sims, rtol=0, atol=1e-5)
    for row in range(len(queries)):
        for a, b in zip(f_idx[row], n_idx[row]):
            if a != b:  # a tie: both rows score the same against this query
                assert abs(float(vectors[a] @ queries[row]) - float(vectors[b] @ queries[row])) < 1e-5
    # Asking for more than there is pads with -1, as faiss does.
    sims, idx = NumpyFlatIP(vectors[:3]).search(queries[:2], 5)
    assert (idx[:, 3:] == -1).all() and sorted(idx[0, :3]) == [0, 1, 2]
