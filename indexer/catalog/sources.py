"""Read source trees: a git repository at a list of tags, or a plain directory.

A tree is (version label, what it was read from, files). Git blobs are read through one
``git cat-file --batch`` process and parsed once per blob id, so sixty NCCL tags cost little
more than the distinct file versions among them.
"""

from __future__ import annotations

import hashlib
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Iterator


@dataclass(frozen=True)
class TreeFile:
    path: str
    blob: str          # git blob id, or sha1 of the bytes for plain directories
    read: Callable[[], str]


@dataclass(frozen=True)
class Tree:
    version: str       # the release tag or version label
    origin: str        # commit id, or a description of the directory and its digest
    files: tuple[TreeFile, ...]


class GitRepo:
    def __init__(self, git_dir: str | Path) -> None:
        self.git_dir = str(git_dir)
        self._batch: subprocess.Popen | None = None

    def _git(self, *args: str) -> str:
        return subprocess.run(
            ["git", "--git-dir", self.git_dir, *args], check=True, capture_output=True, text=True
        ).stdout

    def tags(self) -> list[str]:
        return [t for t in self._git("tag").split("\n") if t]

    def commit(self, ref: str) -> str:
        return self._git("rev-parse", f"{ref}^{{commit}}").strip()

    def blob_text(self, blob: str) -> str:
        if self._batch is None:
            self._batch = subprocess.Popen(
                ["git", "--git-dir", self.git_dir, "cat-file", "--batch"],
                stdin=subprocess.PIPE, stdout=subprocess.PIPE,
            )
        assert self._batch.stdin and self._batch.stdout
        self._batch.stdin.write(blob.encode() + b"\n")
        self._batch.stdin.flush()
        header = self._batch.stdout.readline().split()
        size = int(header[2])
        data = self._batch.stdout.read(size + 1)[:size]
        return data.decode("utf-8", errors="replace")

    def tree(self, tag: str, under: tuple[str, ...], suffixes: tuple[str, ...]) -> Tree:
        listing = self._git("ls-tree", "-r", tag, "--", *under)
        files = []
        for row in listing.splitlines():
            meta, path = row.split("\t", 1)
            _, kind, blob = meta.split()
            if kind == "blob" and path.endswith(suffixes):
                files.append(TreeFile(path, blob, lambda b=blob: self.blob_text(b)))
        return Tree(tag, self.commit(tag), tuple(sorted(files, key=lambda f: f.path)))


def directory_tree(version: str, root: Path, under: tuple[str, ...], suffixes: tuple[str, ...], origin: str) -> Tree:
    """A plain directory (an unpacked release archive or wheel), read as one version."""
    files = []
    digest = hashlib.sha256()
    for base in under:
        top = root / base
        for path in ([top] if top.is_file() else sorted(top.rglob("*"))):
            if path.is_file() and path.name.endswith(suffixes):
                data = path.read_bytes()
                rel = path.relative_to(root).as_posix()
                blob = hashlib.sha1(data).hexdigest()
                digest.update(rel.encode() + b"\0" + blob.encode() + b"\n")
                files.append(TreeFile(rel, blob, lambda d=data: d.decode("utf-8", errors="replace")))
    return Tree(version, f"{origin} (files sha256 {digest.hexdigest()[:16]})", tuple(files))


def iter_files(trees: list[Tree]) -> Iterator[tuple[Tree, TreeFile]]:
    for tree in trees:
        for f in tree.files:
            yield tree, f
