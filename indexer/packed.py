"""Many pickled blobs in one file, read through ``mmap`` one blob at a time.

The KB cache keeps the catalogue's ~25,000 entries and ~25,000 records as one pickled blob
each, and a line the catalogue answers needs one or two of them. Stored as a pickle of lists
and dicts of ``bytes``, loading that part means reading ~95 MB and building 50,000 ``bytes``
objects (about 0.13 s of a 0.5 s start-up). Here the blobs sit back to back after a small
pickled header (their keys and offsets, and whatever else the caller stores there); opening
the file reads the header, maps the rest, and a blob is copied out only when asked for.

Layout: 8 bytes (header length, little-endian), the pickled header, the blobs. The header is
``(meta, [(kind, keys, offsets), ...])``: ``kind`` is "list" or "dict", ``keys`` the dict's
keys (None for a list), ``offsets`` an ``array('Q')`` of n + 1 positions after the header.
"""

from __future__ import annotations

import mmap
import pickle
import struct
from array import array
from collections.abc import Mapping, Sequence
from typing import Any, BinaryIO

_HEAD = struct.Struct("<Q")


class PackedBlobs(Sequence):
    """A read-only list of blobs in a mapped file."""

    __slots__ = ("_view", "_offsets", "_base")

    def __init__(self, view: "mmap.mmap | bytes", offsets: array, base: int = 0) -> None:
        self._view = view
        self._offsets = offsets
        self._base = base

    def __len__(self) -> int:
        return len(self._offsets) - 1

    def __getitem__(self, index):  # type: ignore[override]
        if isinstance(index, slice):
            return [self[i] for i in range(*index.indices(len(self)))]
        if index < 0:
            index += len(self)
        if not 0 <= index < len(self):
            raise IndexError(index)
        base = self._base
        return self._view[base + self._offsets[index]:base + self._offsets[index + 1]]

    def __reduce__(self):  # pickled again (a KB copied into a worker): as the plain list
        return (list, (list(self),))


class PackedBytes(Mapping):
    """A dict of blobs in a mapped file; keys can be dropped (``pop``) without copying any."""

    __slots__ = ("_blobs", "_index")

    def __init__(self, blobs: PackedBlobs, keys: list[str]) -> None:
        self._blobs = blobs
        self._index = dict(zip(keys, range(len(keys))))

    def __getitem__(self, key: str) -> bytes:
        return self._blobs[self._index[key]]

    def __iter__(self):
        return iter(self._index)

    def __len__(self) -> int:
        return len(self._index)

    def __contains__(self, key: object) -> bool:
        return key in self._index

    def pop(self, key: str, *default: Any) -> Any:
        if key not in self._index:
            if default:
                return default[0]
            raise KeyError(key)
        value = self[key]
        del self._index[key]
        return value

    def __reduce__(self):
        return (dict, (dict(self.items()),))


def write(handle: BinaryIO, meta: Any, parts: list["Sequence[bytes] | Mapping[str, bytes]"]) -> None:
    """Write ``meta`` and each part (a list of blobs, or a dict of them by key)."""
    described, position = [], 0
    for part in parts:
        keys = list(part) if isinstance(part, Mapping) else None
        blobs = [part[k] for k in keys] if keys is not None else list(part)
        offsets = array("Q", [position])
        for blob in blobs:
            position += len(blob)
            offsets.append(position)
        described.append(("dict" if keys is not None else "list", keys, offsets, blobs))
    header = pickle.dumps((meta, [d[:3] for d in described]), protocol=pickle.HIGHEST_PROTOCOL)
    handle.write(_HEAD.pack(len(header)))
    handle.write(header)
    for *_, blobs in described:
        for blob in blobs:
            handle.write(blob)


def read(path) -> tuple[Any, list["PackedBlobs | PackedBytes"]]:
    """``(meta, parts)`` of a file ``write`` made; the blobs stay in the mapped file."""
    with open(path, "rb") as handle:
        size = _HEAD.unpack(handle.read(_HEAD.size))[0]
        meta, described = pickle.loads(handle.read(size))
        start = _HEAD.size + size
        length = handle.seek(0, 2)
        # the map outlives the file object (and the file, if a newer cache replaces it)
        view = mmap.mmap(handle.fileno(), 0, access=mmap.ACCESS_READ) if length > start else b""
    parts: list[PackedBlobs | PackedBytes] = []
    for kind, keys, offsets in described:
        if start + offsets[-1] > length:
            raise ValueError(f"{path}: truncated ({length - start} of {offsets[-1]} bytes of blobs)")
        blobs = PackedBlobs(view, offsets, start)
        parts.append(PackedBytes(blobs, keys) if kind == "dict" else blobs)
    return meta, parts
