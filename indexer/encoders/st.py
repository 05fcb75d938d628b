"""Any sentence-transformers model read from a local directory (never from a hub): the
encoder for models ``numpy_bert`` does not cover, and for comparing the two."""

from __future__ import annotations

import os
from typing import Sequence

import numpy as np

from indexer import paths
from indexer.encoders.base import require_model_dir


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
