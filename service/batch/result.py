"""What a worker hands the writer for one chunk: the types both sides of every format share.

Workers (``process.process_chunk``) fill a ``ChunkResult``; the parent's writer of the run's
format (``formats``) receives results in input order. ``Run`` and ``Rendered`` are the
``commented`` format's payload: only its runs of comments can span chunks.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from service.batch.summary import Summary


@dataclass
class Run:
    """Consecutive lines explained by one entry, not written yet: the header counts them."""

    key: str  # the entry's pattern id
    comment: list[str]  # the comment of the answer of the line that started it
    lines: list[bytes]
    size: int  # bytes of its lines, newlines included
    continued: bool = False  # the rest of a run cut at RUN_BYTES


@dataclass
class Rendered:
    """A chunk as ``commented`` text, rendered where it was annotated (a ``-j`` worker).

    Only runs of comments may span chunks, so the writer needs just the chunk's first run
    (``head``: it may continue the run the previous chunk ended with) and its last (``tail``:
    the next chunk may continue it) as lines; everything between is final text (``body``).
    ``broken``: some line after ``head`` ends it; otherwise the whole chunk is ``head``.
    """

    head: Run | None
    broken: bool
    body: bytes = b""
    body_lines: int = 0
    tail: Run | None = None


@dataclass
class ChunkResult:
    source: int
    first_line: int
    n_lines: int
    payload: bytes = b""  # jsonl: the encoded records; html: the page's data blocks
    written: bool = False  # a worker already wrote the payload to the output
    rendered: Rendered | None = None  # commented: the chunk's text, but for runs at its edges
    undecodable: list[int] = field(default_factory=list)  # line indices within the chunk
    cut: dict[int, int] = field(default_factory=dict)
    summary: Summary = field(default_factory=Summary)
