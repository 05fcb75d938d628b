"""Load test for ``explainlog serve``: requests/s and p50/p99 latency at N concurrent clients.

Run by hand (numbers go into the README, never into a timed unit test):

    .venv/bin/python bench/http_load.py                      # starts its own server, 60 s per cell
    .venv/bin/python bench/http_load.py --duration 10 --clients 1 16
    .venv/bin/python bench/http_load.py --url http://127.0.0.1:8000   # an already running server
    .venv/bin/python bench/http_load.py --think 0.5 --scenarios semantic-uncached heavy --clients 16

Each client is one keep-alive HTTP/1.1 connection in a closed loop (send, wait for the whole
answer, send again; with ``--think S`` it first waits a random time of mean S seconds, like a
person or a bot between pastes), written on raw asyncio streams rather than an HTTP library: on a 2-core
machine the load generator shares the CPU with the server, and a lighter client disturbs the
measurement less. Every answer is checked (status 200, the expected tier); anything else
counts as an error. Scenarios:

- ``regex``: a seed line the RE2 tier answers.
- ``semantic``: a line only the embedding tier answers; after its first request the answer
  comes from the explainer's template cache, which is what a shared service mostly sees.
- ``semantic-uncached``: a new template on every request, so every request runs the encoder.
- ``heavy``: ``semantic-uncached`` while one more client sends, again and again, the heaviest
  request the limits allow: 250 never-seen lines of 16,000 characters (4 MB). The row is the
  light clients' latency; a ``heavy-request`` row gives the heavy client's.

Each client names itself in an ``X-Client`` header, and a server the bench starts is told to
key clients by it (``--client-header X-Client``) with the rate limit off (``--rate-limit 0``):
the load comes from one address, and the point is fair sharing of the model between clients,
not the limiter.
"""

from __future__ import annotations

import argparse
import asyncio
import itertools
import json
import multiprocessing
import os
import random
import signal
import socket
import statistics
import subprocess
import sys
import time
import urllib.error
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import urlparse

REPO = Path(__file__).resolve().parent.parent
REGEX_LINE = (
    "cc0af148112143078d5c88b5e68679fd-task0-0:133:202 [0] NCCL INFO NET/IB : Using [0]mlx5_0:1/IB "
    "[1]mlx5_1:1/IB [2]mlx5_2:1/IB [3]mlx5_3:1/IB [RO]; OOB eth0:10.244.174.137<0>"
)
# Reworded so no KB regex matches, close enough that the embedding tier still recognises it.
SEMANTIC_LINE = "NCCL INFO Setting the CPU affinity of GPU 2 to mask ff0000 for the proxy thread"


@dataclass
class Cell:
    scenario: str
    clients: int
    seconds: float
    latencies: list[float] = field(default_factory=list)
    errors: int = 0
    first_error: str = ""

    def row(self) -> dict:
        ordered = sorted(self.latencies)
        pick = lambda q: ordered[min(len(ordered) - 1, int(q * len(ordered)))] * 1000 if ordered else float("nan")
        return {
            "scenario": self.scenario, "clients": self.clients, "requests": len(ordered),
            "rps": round(len(ordered) / self.seconds, 1), "p50_ms": round(pick(0.50), 1),
            "p99_ms": round(pick(0.99), 1), "max_ms": round(ordered[-1] * 1000, 1) if ordered else None,
            "mean_ms": round(statistics.fmean(ordered) * 1000, 1) if ordered else None, "errors": self.errors,
        }


def request_bytes(host: str, port: int, line: str | list[str], client: str = "c0") -> bytes:
    body = json.dumps({"lines": line if isinstance(line, list) else [line]}).encode()
    head = (f"POST /v1/explain HTTP/1.1\r\nHost: {host}:{port}\r\nContent-Type: application/json\r\n"
            f"X-Client: {client}\r\nContent-Length: {len(body)}\r\nConnection: keep-alive\r\n\r\n").encode()
    return head + body


async def read_response(reader: asyncio.StreamReader) -> tuple[int, bytes]:
    head = await reader.readuntil(b"\r\n\r\n")
    lines = head.decode("latin-1").split("\r\n")
    status = int(lines[0].split(" ", 2)[1])
    length = next(int(l.split(":", 1)[1]) for l in lines if l.lower().startswith("content-length:"))
    return status, await reader.readexactly(length)


async def client_loop(host: str, port: int, lines, expect_tier: str | None, deadline: float, cell: Cell,
                      client: str = "c0", think: float = 0.0) -> None:
    """``expect_tier`` None accepts any answer (uncached lines may fall below the threshold)."""
    pause = random.Random(client)
    reader, writer = await asyncio.open_connection(host, port)
    try:
        while time.perf_counter() < deadline:
            if think:
                await asyncio.sleep(pause.expovariate(1 / think))
            payload = request_bytes(host, port, next(lines), client)
            started = time.perf_counter()
            try:
                writer.write(payload)
                status, body = await read_response(reader)
            except (OSError, asyncio.IncompleteReadError, ValueError) as exc:
                cell.errors += 1
                cell.first_error = cell.first_error or repr(exc)
                writer.close()
                reader, writer = await asyncio.open_connection(host, port)
                continue
            elapsed = time.perf_counter() - started
            answer = json.loads(body)["answers"][-1] if status == 200 else None
            if answer is None or (expect_tier is not None and answer["tier"] != expect_tier):
                cell.errors += 1
                cell.first_error = cell.first_error or f"status {status}, tier {answer and answer['tier']}: {body[:200]!r}"
            else:
                cell.latencies.append(elapsed)
    finally:
        writer.close()


_CELL_SEEDS = itertools.count(1000)


def scenario_lines(name: str):
    if name == "regex":
        return itertools.repeat(REGEX_LINE), "regex"
    if name == "semantic":
        return itertools.repeat(SEMANTIC_LINE), "semantic"
    # A random word (letters g-z: never masked as hex or a number) makes every template new;
    # every cell draws other words, so no cell finds the lines of an earlier one in the cache.
    rng = random.Random(next(_CELL_SEEDS))
    fresh = ("".join(rng.choice("ghijklmnopqrstuvwxyz") for _ in range(8)) for _ in itertools.count())
    return (f"{SEMANTIC_LINE} via {word}" for word in fresh), None


def heavy_requests():
    """250 lines of 16,000 characters of words that are never masked, new on every request
    (made from random bytes, so the load generator spends little CPU on them)."""
    rng = random.Random(1)
    letters = bytes(range(ord("g"), ord("z") + 1)) * 13  # 260 letters: byte value -> a letter
    table = bytes(letters[i] if i % 8 else ord(" ") for i in range(256))
    while True:
        yield [rng.randbytes(16000).translate(table).decode() for _ in range(250)]


async def run_cell(host: str, port: int, scenario: str, clients: int, seconds: float, think: float = 0.0) -> list[Cell]:
    lines, tier = scenario_lines("semantic-uncached" if scenario == "heavy" else scenario)
    cell = Cell(scenario, clients, seconds)
    deadline = time.perf_counter() + seconds
    loops = [client_loop(host, port, lines, tier, deadline, cell, f"c{n}", think) for n in range(clients)]
    cells = [cell]
    if scenario != "heavy":
        await asyncio.gather(*loops)
        return cells
    # The heavy client runs in its own process: building a 4 MB request and parsing its answer
    # would otherwise stall this event loop and show up as latency of the light clients.
    heavy = Cell("heavy-request", 1, seconds)
    results: multiprocessing.Queue = multiprocessing.get_context("fork").Queue()
    worker = multiprocessing.get_context("fork").Process(target=_heavy_process, args=(host, port, seconds, results))
    worker.start()
    await asyncio.gather(*loops)
    heavy.latencies, heavy.errors, heavy.first_error = await asyncio.to_thread(results.get, True, seconds + 600)
    worker.join()
    cells.append(heavy)
    return cells


def _heavy_process(host: str, port: int, seconds: float, results) -> None:
    heavy = Cell("heavy-request", 1, seconds)
    deadline = time.perf_counter() + seconds
    asyncio.run(client_loop(host, port, heavy_requests(), None, deadline, heavy, "heavy"))
    results.put((heavy.latencies, heavy.errors, heavy.first_error))


async def probe_tier(host: str, port: int, line: str) -> str | None:
    reader, writer = await asyncio.open_connection(host, port)
    writer.write(request_bytes(host, port, line))
    status, body = await read_response(reader)
    writer.close()
    return json.loads(body)["answers"][0]["tier"]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start_server(args) -> tuple[subprocess.Popen, str]:
    port = free_port()
    command = [sys.executable, "-m", "service.cli", "--index-policy", "refuse"]
    if args.kb:
        command += ["--kb", args.kb]
    if args.index:
        command += ["--index", args.index]
    command += ["serve", "--port", str(port), "--no-access-log", "--log-level", "warning", "--workers", str(args.workers),
                "--rate-limit", "0", "--client-header", "X-Client"]
    process = subprocess.Popen(command, cwd=REPO, start_new_session=True)
    url = f"http://127.0.0.1:{port}"
    deadline = time.time() + 600
    while time.time() < deadline:
        if process.poll() is not None:
            raise SystemExit(f"server exited with {process.returncode}")
        try:
            with urllib.request.urlopen(f"{url}/readyz", timeout=2) as response:
                if response.status == 200:
                    return process, url
        except urllib.error.HTTPError as exc:  # 503: still loading, or a problem worth stopping for
            problem = json.loads(exc.read()).get("problem") or ""
            if "still loading" not in problem:
                os.killpg(process.pid, signal.SIGTERM)
                raise SystemExit(f"server is not ready: {problem}")
        except OSError:
            pass
        time.sleep(0.5)
    raise SystemExit("server did not become ready in 600 s")


def markdown(rows: list[dict]) -> str:
    out = ["| scenario | clients | requests/s | p50 ms | p99 ms | max ms | errors |", "|---|---:|---:|---:|---:|---:|---:|"]
    for r in rows:
        out.append(f"| {r['scenario']} | {r['clients']} | {r['rps']} | {r['p50_ms']} | {r['p99_ms']} | {r['max_ms']} | {r['errors']} |")
    return "\n".join(out)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--url", help="benchmark a running server instead of starting one")
    parser.add_argument("--kb", help="KB directory for the server it starts")
    parser.add_argument("--index", help="index directory for the server it starts")
    parser.add_argument("--workers", type=int, default=1)
    parser.add_argument("--duration", type=float, default=60.0, help="seconds per (scenario, clients) cell")
    parser.add_argument("--clients", type=int, nargs="+", default=[1, 16, 64])
    parser.add_argument("--scenarios", nargs="+", default=["regex", "semantic", "semantic-uncached", "heavy"],
                        choices=["regex", "semantic", "semantic-uncached", "heavy"])
    parser.add_argument("--think", type=float, default=0.0,
                        help="mean seconds a client waits between requests (exponential; 0: send again at once)")
    parser.add_argument("--json", type=Path, help="also write the rows here")
    args = parser.parse_args()

    process = None
    url = args.url
    if url is None:
        process, url = start_server(args)
    parsed = urlparse(url)
    host, port = parsed.hostname or "127.0.0.1", parsed.port or 80
    try:
        semantic_tier = asyncio.run(probe_tier(host, port, SEMANTIC_LINE))
        if "semantic" in args.scenarios and semantic_tier != "semantic":
            print(f"warning: the semantic probe line was answered by tier {semantic_tier!r} with this KB", file=sys.stderr)
        rows = []
        for scenario in args.scenarios:
            for clients in args.clients:
                for cell in asyncio.run(run_cell(host, port, scenario, clients, args.duration, args.think)):
                    rows.append(cell.row())
                    print(json.dumps(rows[-1]) + (f"  first error: {cell.first_error}" if cell.errors else ""), flush=True)
        load = os.getloadavg()
        print(f"\nmachine: {os.cpu_count()} CPUs, load average {load[0]:.2f} {load[1]:.2f} {load[2]:.2f} at the end")
        print(markdown(rows))
        if args.json:
            args.json.write_text(json.dumps(rows, indent=2))
        return 1 if any(r["errors"] for r in rows) else 0
    finally:
        if process is not None:
            os.killpg(process.pid, signal.SIGTERM)
            process.wait(timeout=30)


if __name__ == "__main__":
    sys.exit(main())
