"""Benchmark ``explainlog annotate`` against the floor (wc, grep) and a peer (Drain3), one file.

Run by hand (never in the test suite); needs ``pip install drain3`` for the peer:

    .venv/bin/python bench/bench_batch.py                    # generates /tmp/explainlog-bench/train_1m.log
    .venv/bin/python bench/bench_batch.py --lines 200000 --formats jsonl summary --jobs 1

Every command runs as a child process under ``resource.getrusage(RUSAGE_CHILDREN)`` so wall
time, CPU time (user+sys, which is what matters on a shared machine) and peak RSS of the
largest process are measured the same way for all. Output goes to /dev/null, so the numbers
are the tool's, not the disk's. Prints a Markdown table (with ratios to Drain3) for the
README, and the machine's load average, since other work on the box slows every row alike.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
DRAIN3 = r"""
import sys, time
from drain3 import TemplateMiner
miner = TemplateMiner()
n = 0
with open(sys.argv[1], encoding="utf-8", errors="replace") as handle:
    for line in handle:
        miner.add_log_message(line.rstrip("\n"))
        n += 1
print(n, len(miner.drain.clusters))
"""
MEASURE = r"""
import resource, subprocess, sys, time, json
capture = sys.argv[1] == "capture"
start = time.perf_counter()
proc = subprocess.run(sys.argv[2:], stdout=subprocess.PIPE if capture else subprocess.DEVNULL, stderr=subprocess.PIPE)
wall = time.perf_counter() - start
usage = resource.getrusage(resource.RUSAGE_CHILDREN)
print(json.dumps({"rc": proc.returncode, "wall": wall, "cpu": usage.ru_utime + usage.ru_stime,
                  "maxrss_kb": usage.ru_maxrss, "stderr": proc.stderr.decode(errors="replace")[-400:],
                  "stdout": (proc.stdout or b"").decode(errors="replace")[-200:]}))
"""


def measure(cmd: list[str], capture: bool = False) -> dict:
    """Run ``cmd`` in a fresh wrapper so RUSAGE_CHILDREN covers it (and its workers) only.
    Its stdout goes to /dev/null unless ``capture`` (the peer prints a short count)."""
    out = subprocess.run([sys.executable, "-c", MEASURE, "capture" if capture else "discard", *cmd],
                         capture_output=True, check=True)
    result = json.loads(out.stdout)
    if result["rc"] not in (0, 1):  # 1 = a grep that found nothing, or --fail-on
        raise SystemExit(f"{' '.join(cmd)} failed ({result['rc']}): {result['stderr']}")
    return result


def row(name: str, lines: int, result: dict, drain_rate: float | None) -> dict:
    rate = lines / result["wall"]
    return {
        "name": name,
        "wall_s": round(result["wall"], 2),
        "cpu_s": round(result["cpu"], 2),
        "lines_per_s": round(rate),
        "cpu_lines_per_s": round(lines / result["cpu"]) if result["cpu"] else None,
        "vs_drain3": round(rate / drain_rate, 1) if drain_rate else None,
        "peak_rss_mb": round(result["maxrss_kb"] / 1024, 1),
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--file", type=Path, default=None, help="log to use (default: generate one)")
    parser.add_argument("--lines", type=int, default=1_000_000)
    parser.add_argument("--formats", nargs="+", default=["jsonl", "commented", "html", "summary"])
    parser.add_argument("--jobs", nargs="+", type=int, default=[1, 2])
    parser.add_argument("--extra", nargs="*", default=[], help="extra arguments for every annotate run")
    parser.add_argument("--memory-lines", type=int, default=100_000,
                        help="also run summary and jsonl on the first N lines to compare peak memory")
    parser.add_argument("--json", type=Path, help="also write the rows as JSON here")
    args = parser.parse_args(argv)

    work = Path("/tmp/explainlog-bench")
    work.mkdir(exist_ok=True)
    log = args.file or work / f"train_{args.lines}.log"
    if not log.exists():
        subprocess.run([sys.executable, str(HERE / "generate_log.py"), "-n", str(args.lines), "-o", str(log)], check=True)
    lines = sum(1 for _ in open(log, "rb"))
    size_mb = log.stat().st_size / 1e6
    print(f"input: {log} — {lines:,} lines, {size_mb:,.0f} MB; load average before: {os.getloadavg()}", file=sys.stderr)
    native = subprocess.run([sys.executable, "-c", "from service.batch.shape_keys import NATIVE; print(NATIVE)"],
                            capture_output=True, text=True, cwd=REPO).stdout.strip()
    print(f"native shape tally (service.batch._shape_tally) built: {native}", file=sys.stderr)

    rows = []
    rows.append(row("`wc -l`", lines, measure(["wc", "-l", str(log)]), None))
    rows.append(row("`grep -c NCCL`", lines, measure(["grep", "-c", "NCCL", str(log)]), None))
    drain = measure([sys.executable, "-c", DRAIN3, str(log)], capture=True)
    drain_rate = lines / drain["wall"]
    rows.append(row("Drain3 `TemplateMiner` (groups only)", lines, drain, drain_rate))
    explainlog = [sys.executable, "-m", "service.cli"]
    for fmt in args.formats:
        for jobs in args.jobs:
            cmd = explainlog + ["annotate", str(log), "--format", fmt, "-j", str(jobs), "--no-progress", *args.extra]
            print(f"running {' '.join(cmd[2:])}", file=sys.stderr)
            rows.append(row(f"annotate `--format {fmt}` `-j {jobs}`", lines, measure(cmd), drain_rate))
    if args.memory_lines and args.memory_lines < lines:
        small = work / f"head_{args.memory_lines}.log"
        with open(log, "rb") as src, open(small, "wb") as dst:
            for i, raw in enumerate(src):
                if i >= args.memory_lines:
                    break
                dst.write(raw)
        for fmt in ("summary", "jsonl"):
            cmd = explainlog + ["annotate", str(small), "--format", fmt, "-j", "1", "--no-progress", *args.extra]
            rows.append(row(f"annotate `--format {fmt}` `-j 1`, first {args.memory_lines:,} lines (memory check)",
                            args.memory_lines, measure(cmd), None))
    print(f"load average after: {os.getloadavg()}", file=sys.stderr)
    header = "| run | wall s | CPU s | lines/s (wall) | lines/s (CPU) | × Drain3 | peak RSS MB |"
    print(header)
    print("|---|---:|---:|---:|---:|---:|---:|")
    for r in rows:
        print(f"| {r['name']} | {r['wall_s']} | {r['cpu_s']} | {r['lines_per_s']:,} | "
              f"{r['cpu_lines_per_s'] and format(r['cpu_lines_per_s'], ',') or '-'} | {r['vs_drain3'] or '-'} | {r['peak_rss_mb']} |")
    if args.json:
        args.json.write_text(json.dumps(rows, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
