"""Things that went wrong with an input, located by file and line, never fatal to the run.

A batch run over a fleet's logs meets truncated archives, binary junk and unreadable files; the
rest of the input is still worth annotating, so each problem is recorded here, shown on stderr
and in the summary, and turned into a non-zero exit code at the end instead of an exception.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Problem:
    """One finding about an input: ``line`` is 1-based, or 0 when it concerns the whole file."""

    file: str
    line: int
    kind: str  # unreadable | not_a_file | truncated | undecodable | nul_bytes | long_line | empty
    message: str
    # True when input was lost (the file or its tail could not be read); False for notes such
    # as "3 lines had bytes that are not UTF-8", whose lines were still annotated.
    lost_input: bool = False

    def __str__(self) -> str:
        where = f"{self.file}:{self.line}" if self.line else self.file
        return f"{where}: {self.message}"

    def to_json(self) -> dict:
        return {
            "file": self.file,
            "line": self.line,
            "kind": self.kind,
            "message": self.message,
            "lost_input": self.lost_input,
        }

    @classmethod
    def from_json(cls, data: dict) -> "Problem":
        return cls(data["file"], data["line"], data["kind"], data["message"], data["lost_input"])
