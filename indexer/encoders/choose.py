"""``default_encoder``: the numpy encoder where it reproduces the model, else sentence-transformers."""

from __future__ import annotations

import os

from indexer import paths
from indexer.encoders.base import Encoder, EncoderLoadError


ENCODER_CHOICES = ("auto", "sentence-transformers")


def default_encoder(model_path: str | None = None) -> Encoder:
    """The numpy encoder where it reproduces the model exactly, else sentence-transformers.

    ``EXPLAINLOG_ENCODER=sentence-transformers`` forces the latter, to compare the two or to
    rule the numpy path out; ``auto`` (or unset) picks. Reads only the small JSON configs.
    """
    from indexer.encoders import numpy_bert
    from indexer.encoders.st import SentenceTransformerEncoder

    path = model_path or paths.model_path()
    choice = os.environ.get("EXPLAINLOG_ENCODER") or "auto"
    if choice not in ENCODER_CHOICES:
        raise EncoderLoadError(f"EXPLAINLOG_ENCODER must be one of {', '.join(ENCODER_CHOICES)}, not {choice!r}")
    if choice == "auto" and numpy_bert.supports(path):
        return numpy_bert.BertEncoder(path)
    return SentenceTransformerEncoder(path)
