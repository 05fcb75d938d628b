"""A deterministic corpus of hostile inputs for the fault-injection suite.

Three kinds, each a byte string that may hold several lines:
- random bytes of random length (binary junk, invalid UTF-8 everywhere);
- real log lines (the seed log) mutated the way logs get damaged: cut mid-line, bytes flipped,
  invalid UTF-8 spliced in, ANSI colours, CR and NUL inserted, numbers grown to 400 digits,
  the line repeated into one 100 kB line;
- hand-made nasties: BOMs, lone surrogates and overlong UTF-8, Unicode line separators, RTL
  overrides, combining-character floods, regex and format-string metacharacters, HTML/script,
  lines at and just over the service's line limit, only whitespace, only newlines.
"""

from __future__ import annotations

import random
import re
from pathlib import Path

SEED_LOG = Path(__file__).resolve().parent.parent / "samples" / "seed_training.log"

NASTIES: list[bytes] = [
    b"\xef\xbb\xbf" + b"NCCL INFO Bootstrap : Using eth0:10.0.0.1<0>",
    b"\xed\xa0\x80 lone surrogate \xed\xbf\xbf",
    b"overlong \xc0\xaf\xe0\x80\xaf slash",
    b"beyond unicode \xf4\x90\x80\x80 \xf5\x80\x80\x80 \xff",
    "line\u2028separator\u2029paragraph\u0085next".encode(),
    "\u202eRTL override NCCL WARN \u202c".encode(),
    ("e" + "\u0301" * 10_000).encode(),
    "\u200b\u200c\u200d\ufeff zero width".encode(),
    "🔥" .encode() * 2000,
    b"(((((((((((((((((((([[[[[[[[[[{{{{{{{{{{ ^$.*+?|\\",
    b"%s%s%n%x%p {0} {} {name} ${HOME} $(reboot) `id`",
    b"<script>alert(1)</script><img src=x onerror=alert(2)>",
    b'{"lines": ["a"], "text": "b", "__proto__": {"x": 1}}',
    b"\t\t\t   \t",
    b"\n" * 1000,
    b"\r" * 500,
    b"\r\n" * 300,
    b"\x00" * 4096,
    b"\x1b[31m\x1b[1m\x1b[0m\x1b]0;title\x07\x1b[2J",
    b"A" * 16_384,
    b"B" * 16_385,
    b"C" * 1_048_576,
    b"NCCL WARN " + b"9" * 5000,
    b"[rank0]: " * 3000,
    b"Traceback (most recent call last):\n" * 200,
    b"  File \"x.py\", line 99999999999999999999999, in <module>",
    b"frame #18446744073709551616: 0xdeadbeef",
    b"\x1f\x8b\x08\x00\x00\x00\x00\x00\x00\x03truncated gzip header",
    b"PK\x03\x04 not a zip either",
    b"-" * 50_000 + b"\n" + b"=" * 50_000,
]


def _mutations(rng: random.Random, line: bytes) -> list[bytes]:
    cut = rng.randrange(1, max(2, len(line)))
    flipped = bytearray(line)
    for _ in range(max(1, len(line) // 20)):
        flipped[rng.randrange(len(flipped))] = rng.randrange(256)
    spot = rng.randrange(len(line) + 1)
    return [
        line[:cut],
        bytes(flipped),
        line[:spot] + b"\xff\xfe\xc3\x28\xa0\xa1" + line[spot:],
        b"\x1b[1;31m" + line + b"\x1b[0m",
        line[:spot] + b"\r" + line[spot:] + b"\r",
        line[:spot] + b"\x00" + line[spot:],
        re.sub(rb"\d+", lambda m: b"7" * 400, line),
        (line + b" ") * max(1, 100_000 // max(1, len(line))),
    ]


def corpus(seed: int = 2026, random_blobs: int = 150, mutated_lines: int = 60) -> list[bytes]:
    """The same list of byte strings on every run."""
    rng = random.Random(seed)
    out: list[bytes] = []
    for _ in range(random_blobs):
        size = rng.choice([0, 1, 7, 80, 512, 4096, 20_000])
        out.append(rng.randbytes(size))
    lines = [line for line in SEED_LOG.read_bytes().splitlines() if line.strip()]
    for line in rng.sample(lines, min(mutated_lines, len(lines))):
        out.extend(_mutations(rng, line))
    out.extend(NASTIES)
    return out
