"""Sentence encoders behind one small interface, so models can be swapped and compared.

- ``base``: the interface (``Encoder``), its load error and the model-directory check;
- ``numpy_bert``: the bundled all-MiniLM-L6-v2 run in numpy (same vectors, no torch);
- ``st``: any other model through sentence-transformers;
- ``choose``: ``default_encoder``, which picks between the two.

Implementations depend on ``base`` only; ``choose`` is the one module that knows them all.
Either encoder loads on the first text encoded: a regex-tier answer never pays for a model.
"""

from indexer.encoders.base import Encoder, EncoderLoadError, require_model_dir
from indexer.encoders.choose import ENCODER_CHOICES, default_encoder

__all__ = ["ENCODER_CHOICES", "Encoder", "EncoderLoadError", "default_encoder", "require_model_dir"]
