"""``annotate -o FILE``: never a half-written FILE, never two runs mixed into one.

Everything is written to a temporary file beside the target; only a complete run renames it
over the target, so the previous output survives any failure (a crash, SIGKILL, a full disk).
An interrupted run (Ctrl-C, SIGTERM, SIGHUP) ends its output validly and keeps it beside the
target as ``FILE.partial``; FILE itself is left as it was. A lock beside the target (``flock``,
released by the kernel when its holder dies) refuses a second run into the same output with a
clear message; the next run that takes the lock removes temporary files a killed run left.

Targets that are not regular files (``/dev/null``, a FIFO, a terminal) are written directly:
they cannot be renamed over, and a reader may be waiting on them.
"""

from __future__ import annotations

import fcntl
import os
import stat
import tempfile
from pathlib import Path
from typing import BinaryIO


# Lock descriptors held by this process. A forked child (a -j worker) closes its copies, so
# the lock dies with the run's main process even when orphaned workers outlive it.
_HELD_LOCKS: set[int] = set()


def _close_locks_in_child() -> None:
    for fd in _HELD_LOCKS:
        try:
            os.close(fd)
        except OSError:
            pass
    _HELD_LOCKS.clear()


os.register_at_fork(after_in_child=_close_locks_in_child)


class OutputError(RuntimeError):
    """The output cannot be written (a directory, a missing parent, permissions)."""


class OutputBusy(OutputError):
    """Another run holds the lock on this output."""


class AtomicOutput:
    def __init__(self, target: str | Path) -> None:
        self.target = Path(target)
        self.file: BinaryIO | None = None
        self._temp: Path | None = None
        self._lock_fd: int | None = None
        self._lock_path = self.target.parent / f".{self.target.name}.explainlog.lock"
        self._done = False

    @staticmethod
    def direct(target: str | Path) -> bool:
        """Whether ``target`` exists and is not a regular file (written in place, unlocked)."""
        try:
            mode = os.stat(target).st_mode
        except FileNotFoundError:
            return False
        if stat.S_ISDIR(mode):
            raise OutputError(f"{target} is a directory (give a file name; --dask writes directories)")
        return not stat.S_ISREG(mode)

    def __enter__(self) -> "AtomicOutput":
        parent = self.target.parent
        if not parent.is_dir():
            raise OutputError(f"cannot write {self.target}: no directory {parent}")
        self._lock()
        try:
            for stale in parent.glob(f".{self.target.name}.explainlog-*.tmp"):
                stale.unlink(missing_ok=True)  # left by a killed run: we hold the lock, nobody writes it
            fd, temp = tempfile.mkstemp(dir=parent, prefix=f".{self.target.name}.explainlog-", suffix=".tmp")
        except OSError as exc:
            self._unlock()
            raise OutputError(f"cannot write {self.target}: {exc.strerror or exc}") from exc
        self._temp = Path(temp)
        umask = os.umask(0)
        os.umask(umask)
        os.fchmod(fd, 0o666 & ~umask)  # mkstemp's 0600 would hide a report from its readers
        self.file = os.fdopen(fd, "wb")
        return self

    def _lock(self) -> None:
        while True:
            try:
                fd = os.open(self._lock_path, os.O_RDWR | os.O_CREAT, 0o644)
            except OSError as exc:
                raise OutputError(f"cannot write {self.target}: {exc.strerror or exc}") from exc
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                holder = os.read(fd, 64).decode("ascii", "replace").strip() or "?"
                os.close(fd)
                raise OutputBusy(
                    f"another explainlog run (pid {holder}) is writing {self.target}; "
                    f"wait for it or choose another output"
                ) from None
            # The holder before us may have removed the lock file after we opened it: then our
            # lock is on a file nobody else sees. Lock the file that is there now.
            try:
                same = os.stat(self._lock_path).st_ino == os.fstat(fd).st_ino
            except FileNotFoundError:
                same = False
            if same:
                os.ftruncate(fd, 0)
                os.write(fd, str(os.getpid()).encode())
                self._lock_fd = fd
                _HELD_LOCKS.add(fd)
                return
            os.close(fd)

    def _unlock(self) -> None:
        if self._lock_fd is not None:
            self._lock_path.unlink(missing_ok=True)  # still locked: nobody can take it in between
            _HELD_LOCKS.discard(self._lock_fd)
            os.close(self._lock_fd)
            self._lock_fd = None

    def _close(self) -> None:
        if self.file is not None and not self.file.closed:
            self.file.flush()
            os.fsync(self.file.fileno())
            self.file.close()

    def commit(self) -> Path:
        """The run is complete: the temporary file becomes the target."""
        self._close()
        os.replace(self._temp, self.target)
        self._done = True
        return self.target

    def keep_partial(self) -> Path:
        """The run was interrupted: its valid output goes beside the target, which is kept."""
        self._close()
        partial = self.target.with_name(self.target.name + ".partial")
        os.replace(self._temp, partial)
        self._done = True
        return partial

    def __exit__(self, *exc_info) -> None:
        try:
            if not self._done and self._temp is not None:
                if self.file is not None and not self.file.closed:
                    self.file.close()
                self._temp.unlink(missing_ok=True)
        finally:
            self._unlock()
