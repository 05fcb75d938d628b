"""The bundled MiniLM's forward pass in numpy: sentence-transformers' vectors without torch.

Why: importing sentence-transformers (torch + transformers) takes ~4 s on a 2-core box before
the first vector, and a batch annotation usually embeds only a handful of unknown templates.
This module runs the same computation (BERT encoder, mean pooling over the attention mask,
L2 normalisation) with the weights from model.safetensors (read by ``indexer.safetensors_np``;
float16 weights are widened to float32) and the tokenizer described by tokenizer.json (run by
``indexer.wordpiece``, or by the ``tokenizers`` package for a layout that one does not cover). Measured on 2 cores: first vector 0.25 s instead of 3.7 s (imports included),
500 eval lines at ~110 lines/s instead of ~80, peak RSS ~280 MB instead of ~1 GB. The vectors
match sentence-transformers to float32 rounding (max abs difference ~2e-7), so an index built
by either one serves the other.

It implements exactly one layout, and ``supports`` checks a directory for it;
``indexer.encoders.choose.default_encoder`` uses sentence-transformers for anything else.
"""

from __future__ import annotations

import json
import os
import threading
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Sequence

import numpy as np
from threadpoolctl import threadpool_limits

from indexer import paths, safetensors_np, wordpiece
from indexer.encoders.base import EncoderLoadError, require_model_dir

_MODULE_TYPES = ["Transformer", "Pooling", "Normalize"]
# The CPUs this process may run on (a container's cpuset), not the machine's.
_CPUS = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1


def _read_json(path: Path) -> Any:
    return json.loads(path.read_text(encoding="utf-8"))


def _mean_pooling_only(config: dict) -> bool:
    """True for a Pooling config that averages token vectors and does nothing else.

    sentence-transformers writes either ``pooling_mode`` (new) or one boolean per mode (old).
    """
    if "pooling_mode" in config:
        return config["pooling_mode"] in ("mean", ["mean"])
    active = [k for k, v in config.items() if k.startswith("pooling_mode_") and v]
    return active == ["pooling_mode_mean_tokens"]


def supports(model_path: str) -> bool:
    """Whether ``model_path`` is a sentence-transformers directory this module reproduces exactly.

    That is: Transformer -> mean Pooling -> Normalize, a BERT with exact GELU and absolute
    positions, no lower-casing or default prompt added by sentence-transformers, and the
    weights and tokenizer in the files this module reads. Anything unreadable is "no".
    """
    root = Path(model_path)
    try:
        modules = _read_json(root / "modules.json")
        if [m["type"] for m in modules] != [f"sentence_transformers.models.{t}" for t in _MODULE_TYPES]:
            return False
        model_dir = root / modules[0]["path"]
        config = _read_json(model_dir / "config.json")
        st_config = _read_json(model_dir / "sentence_bert_config.json")
        st_model = root / "config_sentence_transformers.json"
        default_prompt = _read_json(st_model).get("default_prompt_name") if st_model.exists() else None
        return (
            _mean_pooling_only(_read_json(root / modules[1]["path"] / "config.json"))
            and config.get("model_type") == "bert"
            and config.get("hidden_act") == "gelu"
            and config.get("position_embedding_type", "absolute") == "absolute"
            and not st_config.get("do_lower_case", False)
            and not default_prompt
            and (model_dir / "model.safetensors").is_file()
            and (model_dir / "tokenizer.json").is_file()
        )
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        return False


# Abramowitz & Stegun 7.1.26: |error| < 1.5e-7 over the whole line, float32's own rounding
# at erf's scale, so scipy (140 MB installed) is not needed for one function.
_ERF_P = np.float32(0.3275911)
_ERF_A = tuple(np.float32(a) for a in (1.061405429, -1.453152027, 1.421413741, -0.284496736, 0.254829592))


def _erf(x: np.ndarray) -> np.ndarray:
    ax = np.abs(x)
    t = ax * _ERF_P
    t += np.float32(1)
    np.reciprocal(t, out=t)
    poly = np.full_like(t, _ERF_A[0])
    for a in _ERF_A[1:]:
        poly *= t
        poly += a
    poly *= t
    np.square(ax, out=ax)
    np.negative(ax, out=ax)
    np.exp(ax, out=ax)
    poly *= ax
    np.subtract(np.float32(1), poly, out=poly)
    return np.copysign(poly, x, out=poly)


def _gelu(x: np.ndarray) -> np.ndarray:
    """BERT's exact GELU, x * (1 + erf(x / sqrt 2)) / 2 (not the tanh approximation)."""
    out = _erf(x * np.float32(1 / np.sqrt(2)))
    out += np.float32(1)
    out *= x
    out *= np.float32(0.5)
    return out


def _padded(encodings: list[list[int]]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Token ids, token type ids (all 0: one sequence) and attention mask, right-padded to the
    longest encoding."""
    length = max(len(e) for e in encodings)
    ids = np.zeros((len(encodings), length), dtype=np.int64)
    mask = np.zeros((len(encodings), length), dtype=bool)
    for row, e in enumerate(encodings):
        ids[row, : len(e)] = e
        mask[row, : len(e)] = True
    return ids, np.zeros_like(ids), mask


def _tokenizer(model_dir: Path, max_len: int) -> Callable[[list[str]], list[list[int]]]:
    """texts -> token ids with [CLS]/[SEP], truncated to ``max_len``: ``indexer.wordpiece``
    for the uncased BERT WordPiece it reproduces, else the ``tokenizers`` package."""
    config = _read_json(model_dir / "tokenizer.json")
    if wordpiece.supports(config):
        wp = wordpiece.WordPiece(config, max_len)
        return lambda texts: [wp.encode(t) for t in texts]
    try:
        from tokenizers import Tokenizer
    except ImportError:
        raise EncoderLoadError(
            f"the tokenizer in {model_dir} is not BERT WordPiece; install the 'tokenizers' package "
            f"(pip install 'explainlog[st]') to use it"
        ) from None
    tokenizer = Tokenizer.from_file(str(model_dir / "tokenizer.json"))
    # tokenizer.json ships its own limits (128, fixed padding); use the model's.
    tokenizer.enable_truncation(max_length=max_len)
    tokenizer.no_padding()
    return lambda texts: [e.ids for e in tokenizer.encode_batch(texts)]


@dataclass
class _Layer:
    qkv_w: np.ndarray  # (hidden, 3 * hidden): query, key and value in one matmul
    qkv_b: np.ndarray
    out_w: np.ndarray
    out_b: np.ndarray
    ln1_g: np.ndarray
    ln1_b: np.ndarray
    up_w: np.ndarray
    up_b: np.ndarray
    down_w: np.ndarray
    down_b: np.ndarray
    ln2_g: np.ndarray
    ln2_b: np.ndarray


class _Bert:
    """Weights and forward pass of one BertModel, inference only, float32."""

    def __init__(self, model_dir: Path) -> None:
        config = _read_json(model_dir / "config.json")
        self.heads: int = config["num_attention_heads"]
        self.eps = np.float32(config["layer_norm_eps"])
        w = safetensors_np.load(model_dir / "model.safetensors")
        # Checkpoints saved from a task model (BertFor...) carry a "bert." prefix.
        prefix = "bert." if "bert.embeddings.word_embeddings.weight" in w else ""

        def get(name: str) -> np.ndarray:
            return np.asarray(w[prefix + name], dtype=np.float32)

        def linear(name: str) -> tuple[np.ndarray, np.ndarray]:
            """torch stores (out, in); transpose once so the forward pass is ``x @ w + b``."""
            return np.ascontiguousarray(get(name + ".weight").T), get(name + ".bias")

        self.word = get("embeddings.word_embeddings.weight")
        self.position = get("embeddings.position_embeddings.weight")
        self.token_type = get("embeddings.token_type_embeddings.weight")
        self.ln_g = get("embeddings.LayerNorm.weight")
        self.ln_b = get("embeddings.LayerNorm.bias")
        self.layers: list[_Layer] = []
        for i in range(config["num_hidden_layers"]):
            p = f"encoder.layer.{i}."
            q, k, v = (linear(p + f"attention.self.{n}") for n in ("query", "key", "value"))
            self.layers.append(
                _Layer(
                    np.concatenate([q[0], k[0], v[0]], axis=1),
                    np.concatenate([q[1], k[1], v[1]]),
                    *linear(p + "attention.output.dense"),
                    get(p + "attention.output.LayerNorm.weight"),
                    get(p + "attention.output.LayerNorm.bias"),
                    *linear(p + "intermediate.dense"),
                    *linear(p + "output.dense"),
                    get(p + "output.LayerNorm.weight"),
                    get(p + "output.LayerNorm.bias"),
                )
            )

    @property
    def width(self) -> int:
        return self.word.shape[1]

    def _layer_norm(self, x: np.ndarray, g: np.ndarray, b: np.ndarray) -> np.ndarray:
        centred = x - x.mean(axis=-1, keepdims=True)
        var = np.square(centred).mean(axis=-1, keepdims=True)
        return centred / np.sqrt(var + self.eps) * g + b

    def _attention(self, qkv: np.ndarray, key_bias: np.ndarray) -> np.ndarray:
        """Softmax(q k^T / sqrt d) v per head, for (batch, length, 3 * width) projections."""
        batch, length, _ = qkv.shape
        head_dim = self.width // self.heads
        q, k, v = qkv.reshape(batch, length, 3, self.heads, head_dim).transpose(2, 0, 3, 1, 4)
        # In place: at 256 tokens a batch's scores are the largest array by far.
        scores = q @ k.transpose(0, 1, 3, 2)
        scores *= np.float32(1 / np.sqrt(head_dim))
        scores += key_bias
        scores -= scores.max(axis=-1, keepdims=True)
        np.exp(scores, out=scores)
        scores /= scores.sum(axis=-1, keepdims=True)
        return (scores @ v).transpose(0, 2, 1, 3).reshape(batch * length, self.width)

    def pooled(self, ids: np.ndarray, type_ids: np.ndarray, mask: np.ndarray) -> np.ndarray:
        """Mean of the last hidden states over real tokens, L2-normalised: (batch, width)."""
        batch, length = ids.shape
        x = self.word[ids] + self.position[:length] + self.token_type[type_ids]
        x = self._layer_norm(x.reshape(batch * length, self.width), self.ln_g, self.ln_b)
        # Padding keys get -inf before the softmax, so they weigh exactly zero.
        key_bias = np.where(mask, np.float32(0), np.float32(-np.inf))[:, None, None, :]
        for layer in self.layers:
            qkv = (x @ layer.qkv_w + layer.qkv_b).reshape(batch, length, -1)
            context = self._attention(qkv, key_bias)
            x = self._layer_norm(x + context @ layer.out_w + layer.out_b, layer.ln1_g, layer.ln1_b)
            up = _gelu(x @ layer.up_w + layer.up_b)
            x = self._layer_norm(x + up @ layer.down_w + layer.down_b, layer.ln2_g, layer.ln2_b)
        weights = mask.astype(np.float32)[:, :, None]
        summed = (x.reshape(batch, length, self.width) * weights).sum(axis=1)
        mean = summed / np.maximum(weights.sum(axis=1), np.float32(1e-9))
        return mean / np.maximum(np.linalg.norm(mean, axis=1, keepdims=True), np.float32(1e-12))


def _length_batches(lengths: list[int], batch_size: int) -> list[list[int]]:
    """Indices in batches of at most ``batch_size`` and of similar lengths: a batch is padded to
    its longest sequence, so one 200-token line among seven 20-token lines would make the batch
    cost eight long lines. A batch is closed early when the next (longer) sequence would make
    more than a third of it padding."""
    order = sorted(range(len(lengths)), key=lambda i: lengths[i])
    batches: list[list[int]] = []
    current: list[int] = []
    tokens = 0
    for i in order:
        n = lengths[i]
        if current and (len(current) == batch_size or (len(current) + 1) * n > 1.5 * (tokens + n)):
            batches.append(current)
            current, tokens = [], 0
        current.append(i)
        tokens += n
    if current:
        batches.append(current)
    return batches


class BertEncoder:
    """The ``Encoder`` for directories ``supports`` accepts; loads on the first ``encode``.

    Batches run in parallel, one per core, each on one BLAS thread, rather than one at a time
    on OpenBLAS's threads: numpy makes one BLAS call per (sequence, head) in attention, and
    OpenBLAS's threads synchronise on every call, so with another process busy on one of two
    cores 500 lines took 30-80 s instead of 7 s. Independent batches just share the cores
    there are (6.9 s with one core busy elsewhere, 4.6 s without), and the element-wise work
    (erf, softmax, LayerNorm) runs on every core too. Calls are serialised because the BLAS
    thread limit is process-wide.
    """

    def __init__(self, model_path: str | None = None, batch_size: int = 8) -> None:
        self.model_path = model_path or paths.model_path()
        self.name = paths.model_name(self.model_path)
        # 8: as fast as 16 with a batch per core in flight, and less memory (~260 MB in all).
        self.batch_size = batch_size
        self._lock = threading.Lock()
        self._loaded: tuple[_Bert, Callable[[list[str]], list[list[int]]]] | None = None

    def _load(self) -> tuple[_Bert, Callable[[list[str]], list[list[int]]]]:
        if self._loaded is None:
            require_model_dir(self.model_path)
            # Batch annotation forks workers after the parent may have encoded: no Rust threads
            # (only where the tokenizers package is used).
            os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
            root = Path(self.model_path)
            try:
                model_dir = root / _read_json(root / "modules.json")[0]["path"]
                max_len = _read_json(model_dir / "sentence_bert_config.json")["max_seq_length"]
                self._loaded = (_Bert(model_dir), _tokenizer(model_dir, max_len))
            except EncoderLoadError:
                raise
            except Exception as exc:  # the weights, the tokenizer and json each raise their own
                raise EncoderLoadError(f"cannot load the model in {self.model_path}: {exc}") from exc
        return self._loaded

    def encode_in_thread(self, texts: Sequence[str]) -> np.ndarray:
        """Encode on the calling thread alone, without the lock ``encode`` holds: for a caller
        that runs one encoder thread per core itself and has set BLAS to one thread (the
        service's encode scheduler). Same vectors as ``encode``."""
        if not texts:
            return np.zeros((0, 0), dtype=np.float32)
        with self._lock:
            loaded = self._load()
        return self._encode(loaded, texts, self.batch_size, map)

    def encode(self, texts: Sequence[str]) -> np.ndarray:
        if not texts:
            return np.zeros((0, 0), dtype=np.float32)
        with self._lock:
            # At least one batch per core: four lines as two batches of two take 18 ms, as one 31.
            per_batch = min(self.batch_size, -(-len(texts) // _CPUS))
            # A pool per call, not per process: batch annotation forks after encoding.
            with threadpool_limits(limits=1, user_api="blas"), ThreadPoolExecutor(_CPUS) as pool:
                return self._encode(self._load(), texts, per_batch, pool.map)

    @staticmethod
    def _encode(loaded, texts: Sequence[str], per_batch: int, mapper) -> np.ndarray:
        """Tokenize, cut into length batches, run them with ``mapper`` (``map`` or a pool's)."""
        bert, tokenizer = loaded
        encodings = tokenizer(list(texts))
        out = np.empty((len(texts), bert.width), dtype=np.float32)

        def run(batch: list[int]) -> None:
            out[batch] = bert.pooled(*_padded([encodings[i] for i in batch]))

        list(mapper(run, _length_batches([len(e) for e in encodings], per_batch)))
        return out
