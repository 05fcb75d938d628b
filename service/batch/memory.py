"""The C allocator's settings for a batch run.

Every chunk builds megabytes of output (a 1 MiB chunk of NCCL lines encodes to ~3 MB of JSONL)
and frees them again. glibc serves blocks that large with ``mmap`` and gives them back to the
kernel on ``free``, so each chunk faulted its pages in afresh: on 1,000,000 generated lines
~400,000 page faults and ~1 s of system time. A fixed mmap threshold of 64 MiB and a trim
threshold of 256 MiB keep such blocks in the heap for the next chunk (~120,000 faults, 0.5 s).
Memory stays flat: the heap keeps at most what one chunk needs, plus the trim threshold.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import sys

M_TRIM_THRESHOLD = -1  # mallopt parameters (malloc.h)
M_MMAP_THRESHOLD = -3
MMAP_THRESHOLD = 64 << 20
TRIM_THRESHOLD = 256 << 20


def tune_malloc() -> bool:
    """Set glibc's thresholds (see the module text); False where there is no glibc ``mallopt``
    (macOS, musl) or it refuses: nothing changes then but the speed."""
    if not sys.platform.startswith("linux"):
        return False
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
        mallopt = libc.mallopt
    except (OSError, AttributeError):
        return False
    mallopt.argtypes = [ctypes.c_int, ctypes.c_int]
    mallopt.restype = ctypes.c_int
    return bool(mallopt(M_MMAP_THRESHOLD, MMAP_THRESHOLD)) and bool(mallopt(M_TRIM_THRESHOLD, TRIM_THRESHOLD))
