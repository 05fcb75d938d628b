"""Turn the PATH arguments of ``annotate`` into an ordered list of inputs.

Users point the command at whatever a job left behind: single files, a directory of per-rank
logs, a glob, or a pipe. Discovery is deterministic (sorted) so two runs over the same tree
give the same output, and anything that cannot be an input (a FIFO, a dangling link, a glob
that matches nothing) becomes a reported problem rather than an aborted run.
"""

from __future__ import annotations

import glob
import os
import stat
from dataclasses import dataclass
from pathlib import Path

from service.batch.problems import Problem

STDIN = "-"
GLOB_CHARS = set("*?[")


@dataclass(frozen=True)
class Source:
    """One input stream. ``path`` is None for standard input."""

    name: str
    path: Path | None
    size: int | None  # bytes on disk (compressed size for archives); None for stdin

    @property
    def is_stdin(self) -> bool:
        return self.path is None


def _from_path(path: Path, shown: str, problems: list[Problem]) -> list[Source]:
    try:
        info = path.stat()  # follows symlinks: a dangling link fails here
    except OSError as exc:
        problems.append(Problem(shown, 0, "unreadable", f"cannot read: {exc.strerror or exc}", True))
        return []
    if stat.S_ISDIR(info.st_mode):
        return _walk(path, problems)
    if not stat.S_ISREG(info.st_mode):
        # FIFOs and devices would block or never end; sockets cannot be opened at all.
        problems.append(Problem(shown, 0, "not_a_file", "skipped: not a regular file", True))
        return []
    return [Source(shown, path, info.st_size)]


def _walk(root: Path, problems: list[Problem]) -> list[Source]:
    found: list[Source] = []

    def on_error(exc: OSError) -> None:
        problems.append(Problem(str(exc.filename or root), 0, "unreadable", f"cannot list: {exc.strerror or exc}", True))

    for dirpath, dirnames, filenames in os.walk(root, onerror=on_error):
        dirnames.sort()  # in place: os.walk then descends in sorted order
        for filename in sorted(filenames):
            path = Path(dirpath) / filename
            found.extend(_from_path(path, str(path), problems))
    return found


def discover(arguments: list[str]) -> tuple[list[Source], list[Problem]]:
    """Expand files, directories (recursively), globs and ``-`` into sources, in order."""
    sources: list[Source] = []
    problems: list[Problem] = []
    for argument in arguments:
        if argument == STDIN:
            sources.append(Source("<stdin>", None, None))
            continue
        path = Path(argument)
        if os.path.lexists(path):
            sources.extend(_from_path(path, argument, problems))
        elif GLOB_CHARS & set(argument):
            matches = sorted(glob.glob(argument, recursive=True))
            if not matches:
                problems.append(Problem(argument, 0, "unreadable", "no file matches this pattern", True))
            for match in matches:
                sources.extend(_from_path(Path(match), match, problems))
        else:
            problems.append(Problem(argument, 0, "unreadable", "cannot read: No such file or directory", True))
    return sources, problems
