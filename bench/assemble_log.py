"""Assemble a long training log from real lines, for benchmarks on data nobody tuned for.

``generate_log.py`` writes the log the batch engine was tuned on. This one builds its body from
lines users pasted in public threads: the 1,189 labelled eval lines (``tests/data/eval_*.jsonl``)
and the 51 whole-log excerpts of the triage set (``tests/data/triage/*.log``), with their
numbers redrawn per use (ranks, pids, addresses, counters, sizes, times), interleaved as many
ranks of one job would print them, plus tqdm progress bars as a training loop prints them
(``  7%|▋  | 11200/160000 [1:02:31<13:50:19, 2.99it/s]``), which stay unique after masking.

``--junk F`` replaces a fraction F of lines with unique junk (UUIDs, hex ids, random words, random
bytes of printable ASCII): the adversarial case for any cache by template.

    python bench/assemble_log.py -n 1000000 -o /tmp/real_1m.log [--junk 0.33] [--seed 1]
"""

from __future__ import annotations

import argparse
import json
import random
import re
import string
import sys
import uuid
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
NUMBER = re.compile(r"(?<![\w.])\d+(?![\w])")
WORDS = ("alpha", "bravo", "checkpoint", "shard", "bucket", "delta", "vector", "lambda", "mirror", "quota",
         "stream", "tensor", "window", "cursor", "ledger", "packet", "spline", "harbor", "velvet", "cobalt")


def real_lines() -> list[str]:
    lines: list[str] = []
    for path in sorted((ROOT / "tests" / "data").glob("eval_*.jsonl")):
        for row in path.read_text(encoding="utf-8").splitlines():
            if row.strip():
                lines.append(json.loads(row)["line"])
    for path in sorted((ROOT / "tests" / "data" / "triage").glob("case_*.log")):
        lines.extend(l for l in path.read_text(encoding="utf-8", errors="replace").splitlines() if l.strip())
    return lines


def redraw(line: str, rng: random.Random) -> str:
    """The same message with other numbers (kept short ones short: ranks stay small)."""
    def one(m: re.Match) -> str:
        digits = m.group(0)
        if len(digits) <= 2:
            return str(rng.randrange(0, 64))
        return str(rng.randrange(10 ** (len(digits) - 1), 10 ** len(digits)))
    return NUMBER.sub(one, line)


def tqdm_bar(rng: random.Random) -> str:
    total = rng.choice((1000, 20000, 160000))
    done = rng.randrange(0, total)
    pct = done * 100 // total
    fill = "█" * (pct // 10) + ("▋" if pct % 10 >= 5 else "")
    h, m, s = rng.randrange(0, 30), rng.randrange(60), rng.randrange(60)
    rate = rng.uniform(0.5, 9.0)
    return f"{pct:3d}%|{fill:<10}| {done}/{total} [{h:02d}:{m:02d}:{s:02d}<{h + 3:02d}:{m:02d}:{s:02d}, {rate:.2f}it/s]"


def junk(rng: random.Random) -> str:
    kind = rng.randrange(4)
    if kind == 0:
        return f"{uuid.UUID(int=rng.getrandbits(128))} {rng.choice(WORDS)} {uuid.UUID(int=rng.getrandbits(128))}"
    if kind == 1:
        return " ".join(f"{rng.getrandbits(64):016x}" for _ in range(rng.randrange(1, 5)))
    if kind == 2:
        return " ".join(rng.choice(WORDS) + rng.choice(string.ascii_lowercase) * rng.randrange(1, 4)
                        for _ in range(rng.randrange(3, 9)))
    return "".join(rng.choice(string.ascii_letters + string.digits + " :/-_=") for _ in range(rng.randrange(20, 120)))


def assemble(n: int, junk_share: float, seed: int, out) -> None:
    rng = random.Random(seed)
    pool = real_lines()
    for _ in range(n):
        r = rng.random()
        if r < junk_share:
            out.write(junk(rng) + "\n")
        elif r < junk_share + (1 - junk_share) * 0.15:
            out.write(tqdm_bar(rng) + "\n")
        else:
            out.write(redraw(rng.choice(pool), rng) + "\n")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("-n", "--lines", type=int, default=1_000_000)
    parser.add_argument("-o", "--output", default="-")
    parser.add_argument("--junk", type=float, default=0.0, help="share of lines replaced by unique junk")
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args()
    out = sys.stdout if args.output == "-" else open(args.output, "w", encoding="utf-8")
    try:
        assemble(args.lines, args.junk, args.seed, out)
    finally:
        if out is not sys.stdout:
            out.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
