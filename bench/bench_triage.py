"""Benchmark ``explainlog triage`` next to ``annotate`` on the same logs, of three kinds.

Run by hand (never in the test suite):

    .venv/bin/python bench/bench_triage.py                       # 200k lines of each kind
    .venv/bin/python bench/bench_triage.py --lines 1000000 --kinds generated real

Kinds: ``generated`` (bench/generate_log.py, the log the batch engine was tuned on), ``real``
(bench/assemble_log.py: lines from public threads with redrawn numbers, interleaved, with tqdm
bars) and ``junk`` (the same with a third of the lines replaced by unique junk). Each command
runs as a child under ``RUSAGE_CHILDREN`` (bench_batch.measure): wall, CPU and peak RSS. Prints
a Markdown table for the README and the load average.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from bench_batch import measure  # noqa: E402

EXPLAINLOG = str(Path(sys.executable).with_name("explainlog"))


def make_log(kind: str, lines: int, folder: Path) -> Path:
    path = folder / f"{kind}_{lines}.log"
    if path.exists():
        return path
    if kind == "generated":
        cmd = [sys.executable, str(HERE / "generate_log.py"), "-n", str(lines), "-o", str(path)]
    else:
        cmd = [sys.executable, str(HERE / "assemble_log.py"), "-n", str(lines), "-o", str(path)]
        if kind == "junk":
            cmd += ["--junk", "0.33"]
    subprocess.run(cmd, check=True)
    return path


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--lines", type=int, default=200_000)
    parser.add_argument("--kinds", nargs="+", default=["generated", "real", "junk"])
    parser.add_argument("--folder", type=Path, default=Path("/tmp/explainlog-bench"))
    parser.add_argument("--json", type=Path, help="also write the rows as JSON here")
    args = parser.parse_args(argv)
    args.folder.mkdir(parents=True, exist_ok=True)
    rows = []
    for kind in args.kinds:
        log = make_log(kind, args.lines, args.folder)
        runs = [
            ("triage", [EXPLAINLOG, "triage", "--json", str(log)]),
            ("annotate jsonl -j 1", [EXPLAINLOG, "annotate", "--format", "jsonl", "-j", "1", str(log)]),
            ("annotate summary -j 1 --no-triage", [EXPLAINLOG, "annotate", "--format", "summary", "--no-triage", str(log)]),
        ]
        for name, cmd in runs:
            result = measure(cmd)
            rows.append({"log": kind, "lines": args.lines, "run": name, "wall_s": round(result["wall"], 1),
                         "cpu_s": round(result["cpu"], 1), "lines_per_s": round(args.lines / result["wall"]),
                         "peak_rss_mb": round(result["maxrss_kb"] / 1024)})
            print(json.dumps(rows[-1]), file=sys.stderr)
    print(f"load average: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    print("| log | run | wall s | lines/s | peak RSS MB |")
    print("|---|---|---:|---:|---:|")
    for r in rows:
        print(f"| {r['log']} {r['lines']:,} | {r['run']} | {r['wall_s']} | {r['lines_per_s']:,} | {r['peak_rss_mb']:,} |")
    if args.json:
        args.json.write_text(json.dumps(rows, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
