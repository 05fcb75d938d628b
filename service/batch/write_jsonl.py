"""``--format jsonl``: one JSON object per input line, in input order.

Records are encoded where the lines are annotated (in the workers, see ``process``); the writer
only appends each chunk's bytes in order, which keeps the parent process nearly idle.
"""

from __future__ import annotations

from service.batch.summary import Summary


class JsonlWriter:
    """Records are encoded by the workers; this only puts them in order."""

    def __init__(self, out) -> None:
        self.out = out

    def begin_source(self, name: str) -> None:
        pass

    def write(self, data: bytes, result) -> None:
        if not result.written:  # -j workers write their payloads themselves, in order
            self.out.write(result.payload)

    def note(self, problem) -> None:
        pass  # JSONL stays one object per input line; problems go to stderr and the exit code

    def close(self, summary: Summary) -> None:
        pass
