"""Start-up of ``explainlog explain LINE``: a fresh process per run, as a user at a shell.

Three lines: one a curated entry knows (the target: < 0.5 s), one only a catalogue record
knows (reads the catalogue part of the KB cache and compiles its RE2 set), one no entry knows
(loads the index and the model too). The KB cache and the index are warmed first, so the
figures are of a second use, not of the first build.

    .venv/bin/python bench/bench_startup.py [--runs 7]
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
LINES = {
    "curated": "host1:1234:1234 [0] NCCL INFO Bootstrap : Using eth0:10.1.2.3<0>",
    "catalog": "[2025-01-01 10:00:00,000] [INFO] [elasticity.py:1:x] [Elasticity] valid GPU counts: [8, 16, 32]",
    "unknown": "frobnicated the widget cache in 3 passes",
}


def one(line: str) -> tuple[float, dict]:
    start = time.perf_counter()
    out = subprocess.run([str(Path(sys.executable).parent / "explainlog"), "explain", "--json", line],
                         capture_output=True, text=True, check=True, cwd=ROOT)
    return time.perf_counter() - start, json.loads(out.stdout)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=7)
    args = parser.parse_args()
    for line in LINES.values():
        one(line)  # warm the KB cache, the index and the page cache
    for name, line in LINES.items():
        times, answer = [], {}
        for _ in range(args.runs):
            seconds, answer = one(line)
            times.append(seconds)
        print(f"{name:8s} median {statistics.median(times):.3f} s  min {min(times):.3f} s  "
              f"tier {answer.get('tier')}  id {answer.get('pattern_id')}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
