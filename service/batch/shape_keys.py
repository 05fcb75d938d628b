"""Shape keys of a buffer's lines: the batch engine's cache keys, and their counts.

A line's shape is the line with ASCII digits 1-9 made ``0`` (``digit_closure.line_shape``) and
the hex letters of every pointer (``0x`` and at least four of ``[0-9a-f]``) made ``0``, keeping
the length: NCCL prints a fresh pointer per rank and communicator, and without folding each of
them would be a new shape to learn (``Engine._runs_ok`` and ``pointer_blind`` make it safe).

``tally`` finds them for a whole chunk: the distinct keys with their counts and first and last
lines (all ``--format summary`` needs), and each line's index into them (what ``annotate``
looks shapes up by). The native ``_shape_tally`` does it in one pass with the GIL released;
where it was not built (no C compiler at install time) ``tally`` does the same in Python from
C-level bytes methods, and gives the same result, slower.
"""

from __future__ import annotations

import re
from collections import Counter

import numpy as np

from service.batch.digit_closure import line_shape

try:
    from service.batch import _shape_tally
except ImportError:  # built without a C compiler: the Python path below
    _shape_tally = None

POINTERS = re.compile(rb"(0x[0-9a-f]{4,})")
_HEX_FOLD = bytes.maketrans(b"abcdef", b"000000")

# (keys in order of first appearance, count, first line, last line of each, then the key index
# of every line as native uint32s, and where each line starts as native int64s, plus
# len(data) + 1)
Tally = tuple[list[bytes], list[int], list[int], list[int], bytes, bytes]


def fold(shape_data: bytes) -> bytes:
    """Shape keys of a buffer with every pointer's hex letters zeroed (same length): the
    pointers are split out, translated in one pass, and put back, all in C."""
    if b"0x" not in shape_data:
        return shape_data
    parts = POINTERS.split(shape_data)
    if len(parts) == 1:  # "0x" but no pointer (``0x12``)
        return shape_data
    parts[1::2] = b"\n".join(parts[1::2]).translate(_HEX_FOLD).split(b"\n")  # no pointer holds a newline
    return b"".join(parts)


def line_keys(data: bytes) -> list[bytes]:
    """The shape key of each line of ``data.split(b"\\n")``."""
    return fold(line_shape(data)).split(b"\n")


def tally_python(data: bytes) -> Tally:
    """``tally`` from bytes methods and ``Counter``: the path without the native module."""
    keys = line_keys(data)
    counts = Counter(keys)
    n = len(keys)
    last = dict(zip(keys, range(n)))
    first = dict(zip(reversed(keys), range(n - 1, -1, -1)))
    distinct = list(counts)
    index = {key: k for k, key in enumerate(distinct)}
    ids = np.fromiter(map(index.__getitem__, keys), np.uint32, n)
    newlines = np.flatnonzero(np.frombuffer(data, np.uint8) == ord("\n"))
    starts = np.concatenate(([0], newlines + 1, [len(data) + 1])).astype(np.int64)
    return (distinct, [counts[k] for k in distinct], [first[k] for k in distinct],
            [last[k] for k in distinct], ids.tobytes(), starts.tobytes())


def tally(data: bytes) -> Tally:
    """Distinct shape keys of ``data``'s lines with their counts and first and last line
    (indices into ``data.split(b"\\n")``), each line's key index, and where lines start."""
    if _shape_tally is None:
        return tally_python(data)
    return _shape_tally.tally(data)


def digit_before_x_python(data: bytes) -> bool:
    """``digit_before_x`` with numpy's vector compares (~50 ms per 227 MB)."""
    buffer = np.frombuffer(data, np.uint8)
    before = buffer[np.flatnonzero(buffer[1:] == ord("x"))]
    return bool(np.any((before >= ord("1")) & (before <= ord("9"))))


def digit_before_x(data: bytes) -> bool:
    """Whether some ``x`` follows a digit 1-9: where it does, a shape's ``0x`` may stand for
    ``1x``..``9x``, which the pointer fold must not take for a pointer."""
    if _shape_tally is None:
        return digit_before_x_python(data)
    return _shape_tally.digit_before_x(data)


NATIVE = _shape_tally is not None  # reported by bench/bench_batch.py


class Lines:
    """Line ``i`` of a buffer from a ``tally``'s start offsets: a few lines of a chunk without
    splitting all of it into a million bytes objects."""

    def __init__(self, data: bytes, starts: bytes) -> None:
        self.data = data
        self.starts = np.frombuffer(starts, np.int64).tolist()

    def __getitem__(self, i: int) -> bytes:
        return self.data[self.starts[i]:self.starts[i + 1] - 1]
