"""Offline batch annotation of whole logs (``explainlog annotate``) and its Dask fleet API.

The data path: ``inputs`` (what to read) -> ``reader`` (streamed chunks of lines) -> ``engine``
(the spine's answers, cached by line shape) -> ``process`` (one chunk's result) -> ``write_*``
(one writer per format), driven by ``pipeline`` locally or ``fleet`` on Dask. Nothing here is
imported by ``explainlog`` until the ``annotate`` command runs.
"""
