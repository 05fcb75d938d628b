"""Sentence encoders behind one small interface, so models can be swapped and compared.

The default is the bundled all-MiniLM-L6-v2 loaded from a local directory, run by the numpy
encoder in ``indexer.bert_encoder`` (same vectors, no torch); other models go through
sentence-transformers. Either one loads on the first text encoded: a regex-tier answer never
pays for a model.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Protocol, Sequence

import numpy as np

from indexer import paths


class Encoder(Protocol):
    """Maps texts to L2-normalised float32 vectors of a fixed width."""

    name: str

    def encode(self, texts: Sequence[str]) -> np.ndarray: ...


class EncoderLoadError(RuntimeError):
    pass


def require_model_dir(model_path: str) -> None:
    """Fail with the fix in the message, not with a loader's traceback about a missing file."""
    if not Path(model_path).is_dir():
        raise EncoderLoadError(
            f"model directory not found: {model_path} (set EXPLAINLOG_MODEL to a local "
            f"sentence-transformers directory, or reinstall explainlog: its wheel carries the model)"
        )


class SentenceTransformerEncoder:
    """A sentence-transformers model read from a local directory; never from a hub."""

    def __init__(self, model_path: str | None = None, batch_size: int = 64) -> None:
        self.model_path = model_path or paths.model_path()
        self.name = paths.model_name(self.model_path)
        self.batch_size = batch_size
        self._model = None

    def _load(self):
        if self._model is None:
            require_model_dir(self.model_path)
            os.environ.setdefault("HF_HUB_OFFLINE", "1")
            os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
            os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
            os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")
            os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")
            from sentence_transformers import SentenceTransformer

            self._model = SentenceTransformer(self.model_path, device="cpu", local_files_only=True)
        return self._model

    def encode(self, texts: Sequence[str]) -> np.ndarray:
        if not texts:
            return np.zeros((0, 0), dtype=np.float32)
        vectors = self._load().encode(
            list(texts),
            batch_size=self.batch_size,
            normalize_embeddings=True,
            convert_to_numpy=True,
            show_progress_bar=False,
        )
        return np.ascontiguousarray(vectors, dtype=np.float32)


ENCODER_CHOICES = ("auto", "sentence-transformers")


def default_encoder(model_path: str | None = None) -> Encoder:
    """The numpy encoder where it reproduces the model exactly, else sentence-transformers.

    ``EXPLAINLOG_ENCODER=sentence-transformers`` forces the latter, to compare the two or to
    rule the numpy path out; ``auto`` (or unset) picks. Reads only the small JSON configs.
    """
    from indexer import bert_encoder

    path = model_path or paths.model_path()
    choice = os.environ.get("EXPLAINLOG_ENCODER") or "auto"
    if choice not in ENCODER_CHOICES:
        raise EncoderLoadError(f"EXPLAINLOG_ENCODER must be one of {', '.join(ENCODER_CHOICES)}, not {choice!r}")
    if choice == "auto" and bert_encoder.supports(path):
        return bert_encoder.BertEncoder(path)
    return SentenceTransformerEncoder(path)
