"""The encoder interface and what every implementation shares (no numpy import here)."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Protocol, Sequence

if TYPE_CHECKING:
    import numpy as np


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
