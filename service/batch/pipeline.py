"""Run an annotation: read sources in order, annotate chunks (here or in workers), write.

With ``jobs > 1`` the explainer is built once in the parent and inherited by ``fork``ed worker
processes (copy-on-write; each worker loads the semantic index itself, once, if it meets a line
the regex tier cannot answer, except for summaries, whose workers leave those lines to the
parent: ``settle_deferred``, which loads the model in a thread meanwhile). At most
``2 * jobs + 2`` chunks are in flight, so memory does not grow with the input, and results are
written strictly in input order. Summaries of plain files are read in byte ranges
(``ranges``), which ``-j`` workers read themselves instead of receiving chunks: no line needs
to come back.

Ctrl-C stops reading, drops work in flight, and lets the writer close its output properly
(the HTML page gets its summary and script, the commented log a closing note). A SIGINT that
arrives while a chunk is being written is deferred until that write is complete, so no output
ever ends in half a record.
"""

from __future__ import annotations

import contextlib
import multiprocessing
import os
import re
import shutil
import signal
import sys
import tempfile
import threading
import time
from collections import deque
from dataclasses import dataclass, replace
from typing import Any, Callable, Iterator, Protocol

from service.batch.engine import Engine
from service.explainer import BUDGET_STEP, SemanticBudget
from service.batch.inputs import Source
from service.batch.options import Options
from service.batch.problems import Problem
from service.batch.process import process_chunk, renderer
from service.batch.result import ChunkResult
from service.batch.progress import Progress
from service.batch.ranges import RANGE_BYTES, Range, RangeResult, split, summarize_range
from service.batch.reader import CHUNK_BYTES, MAX_LINE_BYTES, Chunk, SourceReader
from service.batch.summary import Summary


class Writer(Protocol):
    def begin_source(self, name: str) -> None: ...
    def write(self, data: bytes, result: ChunkResult) -> None: ...
    def note(self, problem: Problem) -> None: ...
    def close(self, summary: Summary) -> None: ...


@dataclass(frozen=True)
class Limits:
    max_line: int = MAX_LINE_BYTES
    chunk_bytes: int = CHUNK_BYTES
    range_bytes: int = RANGE_BYTES  # summaries of plain files: see ``ranges``


# The signals that end a run the way Ctrl-C does: valid output up to there, workers and
# parked payloads cleaned up, exit code 128 + the signal.
STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)


class _Interrupts:
    """SIGINT, SIGTERM and SIGHUP raise KeyboardInterrupt, except inside a write, where they
    wait for its end. ``signum`` remembers the first."""

    def __init__(self) -> None:
        self.critical = False
        self.pending = False
        self.signum = 0

    def handler(self, signum: int, frame: Any) -> None:
        self.signum = self.signum or signum
        if self.critical:
            self.pending = True
        else:
            raise KeyboardInterrupt

    @contextlib.contextmanager
    def critical_section(self) -> Iterator[None]:
        self.critical = True
        try:
            yield
        finally:
            self.critical = False
        if self.pending:
            self.pending = False
            raise KeyboardInterrupt


_WORKER: dict[str, Any] = {}


class _Turns:
    """Workers write JSONL payloads (and HTML data blocks) to the output themselves, strictly
    in chunk order.

    A JSONL payload is ~2 KB per line. Sent back through the pool's pipe it would be pickled,
    copied four times and unpickled by the parent, which is then the bottleneck at -j 2. With
    a shared turn counter, the worker holding chunk ``turn`` writes it to the inherited file
    descriptor. A worker that finishes out of turn parks its payload in a file (in memory, in
    /dev/shm where it exists) rather than wait idle; whoever writes chunk ``k`` then also
    writes the parked ``k+1``, ``k+2``, ... before passing the turn on. Without a place to
    park, an early worker waits for its turn.
    """

    def __init__(self, context: Any, fd: int, park: str | None, stop: Any) -> None:
        self.fd = fd
        self.park = park
        self.stop = stop  # set by the parent when the run is interrupted: write nothing more
        self.turn = context.Value("q", 0, lock=False)  # written only under ``cond``
        self.cond = context.Condition()

    def write(self, seq: int, payload: bytes) -> None:
        parked = self._park(seq, payload) if self.park and self.turn.value != seq else None
        with self.cond:
            if parked is not None:
                if self.turn.value != seq:  # still not our turn: the turn holder will write it
                    os.rename(parked, self._parked(seq))
                    return
                os.unlink(parked)  # our turn came while parking: write from memory
            while self.turn.value != seq:
                if self.stop.value:
                    return  # interrupted: the turn may never come
                self.cond.wait(0.5)
            if self.stop.value:
                return
            # pool.terminate() (Ctrl-C) sends SIGTERM: let it land between records, not in one
            blocked = signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGTERM})
            try:
                self._write_all(payload)
                seq += 1
                while self.park and os.path.exists(self._parked(seq)):
                    with open(self._parked(seq), "rb") as handle:
                        self._write_all(handle.read())
                    os.unlink(self._parked(seq))
                    seq += 1
            finally:
                self.turn.value = seq
                self.cond.notify_all()
                signal.pthread_sigmask(signal.SIG_SETMASK, blocked)

    def _parked(self, seq: int) -> str:
        return os.path.join(self.park, f"{seq}.jsonl")  # type: ignore[arg-type]

    def _park(self, seq: int, payload: bytes) -> str | None:
        try:
            fd, path = tempfile.mkstemp(dir=self.park, suffix=".tmp")
            with os.fdopen(fd, "wb") as handle:
                handle.write(payload)
            return path
        except OSError:  # e.g. a full /dev/shm: wait for the turn instead
            with contextlib.suppress(OSError, UnboundLocalError):
                os.unlink(path)
            return None

    def _write_all(self, payload: bytes) -> None:
        view = memoryview(payload)
        while view:
            view = view[os.write(self.fd, view):]


def _park_dir() -> str | None:
    """A private directory for payloads finished out of turn, in memory where possible.

    Named after this process, so a run can remove what a killed run (SIGKILL, OOM) left."""
    shm = "/dev/shm"
    base = shm if os.path.isdir(shm) and os.access(shm, os.W_OK) else None
    _remove_orphan_parks(base or tempfile.gettempdir())
    try:
        return tempfile.mkdtemp(prefix=f"explainlog-{os.getpid()}-", dir=base)
    except OSError:
        return None


def _remove_orphan_parks(base: str) -> None:
    try:
        names = os.listdir(base)
    except OSError:
        return
    for name in names:
        m = re.fullmatch(r"explainlog-(\d+)-\w+", name)
        if m is None:
            continue
        try:
            os.kill(int(m.group(1)), 0)
        except ProcessLookupError:
            shutil.rmtree(os.path.join(base, name), ignore_errors=True)
        except (PermissionError, OverflowError):
            pass  # alive (another user's) or not a pid: not ours to touch


def _stop_pool(pool: Any, stop: Any, turns: _Turns | None, patience: float = 30.0) -> None:
    """End an interrupted run's pool without killing a worker in the middle of anything.

    ``pool.terminate()`` sends SIGTERM at any moment, also while a worker is sending a result
    through the pool's pipe: the parent's result thread then waits forever for the rest of that
    message, and ``join`` with it (a Ctrl-C on ``-j 2 --format commented`` hung about one run in
    twenty). Instead the workers are told to stop: queued chunks return at once, a worker
    waiting for its turn to write gives up, and the pool is closed and joined. Only a worker
    still busy after ``patience`` seconds is terminated."""
    stop.value = 1
    if turns is not None:
        with turns.cond:
            turns.cond.notify_all()
    pool.close()
    deadline = time.monotonic() + patience
    workers = list(getattr(pool, "_pool", []))  # the pool's processes (no public accessor)
    while time.monotonic() < deadline and any(w.exitcode is None for w in workers):
        time.sleep(0.05)
    if any(w.exitcode is None for w in workers):
        pool.terminate()
    pool.join()


def _worker_init(explainer: Any, semantic: bool, turns: _Turns | None, defer: bool, slots: Any, jobs: int,
                 stop: Any) -> None:
    # The parent decides what an interrupt means (a terminal's Ctrl-C or hang-up reaches the
    # whole process group); it stops the pool with SIGTERM, which stays default here.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGHUP, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)  # forked with the parent's handler: not ours
    _WORKER["engine"] = Engine(explainer, semantic=semantic, defer_semantic=defer)
    _WORKER["turns"] = turns
    _WORKER["stop"] = stop
    with slots.get_lock():  # this worker's place among the pool's: its html answer ids
        slot, slots.value = slots.value, slots.value + 1
    _WORKER["render"] = None  # made on the first chunk, whose options name the format
    _WORKER["slot"], _WORKER["jobs"] = slot, jobs


def _worker_run(chunk: Chunk, name: str, options: Options, seq: int) -> ChunkResult | None:
    if _WORKER["stop"].value:
        return None  # the run was interrupted: the parent drains the queue and ignores this
    if _WORKER["render"] is None:
        _WORKER["render"] = renderer(options, _WORKER["slot"], _WORKER["jobs"])
    result = process_chunk(_WORKER["engine"], chunk, name, options, _WORKER["render"])
    turns = _WORKER["turns"]
    if turns is not None:
        turns.write(seq, result.payload)
        result.payload, result.written = b"", True
    return result


def _output_fd(writer: Writer, options: Options) -> int | None:
    """The descriptor workers may write JSONL or HTML blocks to directly (None: send payloads
    back)."""
    out = getattr(writer, "out", None)
    if options.format not in ("jsonl", "html") or out is None:
        return None
    try:
        fd = out.fileno()
    except (AttributeError, OSError, ValueError):  # an in-memory output
        return None
    out.flush()
    return fd


def settle_deferred(summary: Summary, explainer: Any) -> None:
    """Ask the semantic tier, in one batch, about the templates ``-j`` summary workers left
    unanswered (``Engine(defer_semantic=True)``), and count each under the entry it names or as
    an unknown template, as a worker would have. One model load for the run instead of one per
    worker (~0.3 s of CPU and ~280 MB each)."""
    if not summary.deferred:
        return
    items = sorted(summary.deferred.items(), key=lambda item: item[1].first)  # first seen, first filed
    budget = getattr(explainer, "semantic_budget", None)
    # In slices of the explainer's budget step: a slice is either embedded or, once the run's
    # budget is spent, not at all, so its unknown templates are the ones not asked.
    for start in range(0, len(items), BUDGET_STEP):
        part = items[start:start + BUDGET_STEP]
        skipped = budget.skipped_lines if budget is not None else 0
        answers = explainer.explain_many([stat.example for _, stat in part], semantic=True)
        unasked = budget is not None and budget.skipped_lines != skipped
        for (template, stat), answer in zip(part, answers):
            if answer["known"]:
                meta = {key: answer[key] for key in ("severity", "component", "role", "title")}
                summary.add_known(answer["pattern_id"], stat.count, stat.first, stat.last, meta)
            else:
                summary.add_unknown(template, stat.count, stat.first, stat.last, stat.example)
                if unasked and not answer["candidates"]:
                    summary.semantic_skipped += stat.count
    summary.deferred.clear()


def _warm_up(explainer: Any) -> threading.Thread:
    """Load the semantic tier in the background while the workers go on, so the final
    ``settle_deferred`` finds it ready."""

    def load() -> None:
        with contextlib.suppress(Exception):  # settle_deferred meets and reports any failure itself
            explainer.warm_up()

    thread = threading.Thread(target=load, name="explainlog-warm-up", daemon=True)
    thread.start()
    return thread


def _worker_range(part: Range, limits: Limits) -> RangeResult | None:
    if _WORKER["stop"].value:
        return None  # interrupted (see _stop_pool)
    return summarize_range(_WORKER["engine"], part, limits.max_line, limits.range_bytes)


def _items(sources: list[Source], limits: Limits, progress: Progress, by_range: bool) -> Iterator[tuple]:
    """("begin", index, name), ("chunk", chunk, name) ... or ("range", range) ..., then
    ("end", index, problems) per source. Ranges only ``by_range`` and where ``ranges.split``
    allows."""
    for index, source in enumerate(sources):
        yield ("begin", index, source.name)
        parts = split(source, index, limits.range_bytes) if by_range else None
        if parts is not None:
            for part in parts:
                yield ("range", part)
            yield ("end", index, [])
            continue
        found: list[Problem] = []
        reader = SourceReader(source, index, found, limits.max_line, limits.chunk_bytes, progress.add_bytes)
        for chunk in reader.chunks():
            yield ("chunk", chunk, source.name)
        yield ("end", index, found)


def annotate_sources(
    sources: list[Source],
    explainer: Any,
    options: Options,
    writer: Writer,
    jobs: int = 1,
    progress: Progress | None = None,
    limits: Limits = Limits(),
    on_problem: Callable[[Problem], None] | None = None,
    problems: list[Problem] | None = None,
    triage: Any = None,
) -> Summary:
    """Annotate every source into ``writer``; returns the run's summary (interrupted or not).
    ``problems`` found before reading (by discovery) are part of the summary from the start.

    ``triage`` (a ``service.triage.TriageStream``): fed every chunk in order in this process,
    and sources read in byte ranges (summaries) once more after their last range; its verdict
    becomes ``summary.triage`` before the writer closes (not when interrupted)."""
    progress = progress or Progress(None, enabled=False)
    on_problem = on_problem or (lambda p: print(f"explainlog: {p}", file=sys.stderr))
    summary = Summary(problems=list(problems or []))
    # The run's embedding budget lives on the explainer while the run lasts (workers fork a
    # copy each); an explainer shared with later runs or callers gets its old budget back.
    budgeted = options.semantic_budget is not None and getattr(explainer, "semantic_budget", False) is None
    if budgeted:
        explainer.semantic_budget = SemanticBudget(options.semantic_budget)
    for index, source in enumerate(sources):
        summary.ensure_file(index, source.name)
    guard = _Interrupts()
    in_main = threading.current_thread() is threading.main_thread()
    previous = {sig: signal.signal(sig, guard.handler) for sig in STOP_SIGNALS} if in_main else {}
    pool = None
    engine = None
    park: str | None = None
    # Summaries leave the semantic tier to the end (see settle_deferred): -j workers then need
    # no model, and the model loads in a thread while the lines are counted.
    defer = options.format == "summary" and options.semantic
    warm: threading.Thread | None = None

    lines_before: dict[int, int] = {}  # per source, lines of the ranges merged so far
    ranged: set[int] = set()  # sources read in byte ranges (triage reads them after the last)

    def report(problem: Problem) -> None:
        summary.problems.append(problem)
        on_problem(problem)
        writer.note(problem)

    def handle(item: tuple, result: Any = None) -> None:
        nonlocal warm
        kind = item[0]
        if kind == "begin":
            writer.begin_source(item[2])
        elif kind == "end":
            for problem in item[2]:
                report(problem)
            if triage is not None and item[1] in ranged:
                triage.feed_source(sources[item[1]], item[1])
        elif kind == "range":
            ranged.add(item[1].source)
            part, offset = item[1], lines_before.get(item[1].source, 0)
            lines_before[part.source] = offset + result.n_lines
            with guard.critical_section():
                summary.merge(result.summary.shift_lines(offset))
            for problem in result.problems:
                report(replace(problem, line=problem.line + offset))
            progress.add_bytes(part.end - part.start)
            progress.add_lines(result.n_lines)
            if summary.deferred and warm is None:
                warm = _warm_up(explainer)
        else:
            chunk = item[1]
            with guard.critical_section():
                writer.write(chunk.data, result)  # type: ignore[arg-type]
                summary.merge(result.summary)  # type: ignore[union-attr]
            progress.add_lines(chunk.n_lines)
            if triage is not None:
                triage.feed_chunk(chunk, item[2])
            if summary.deferred and warm is None:
                warm = _warm_up(explainer)

    try:
        if jobs <= 1:
            engine = Engine(explainer, semantic=options.semantic, defer_semantic=defer)
            if triage is not None:
                triage.engine.peer = engine  # triage reads the same lines: it takes the shapes learned here
            render = renderer(options)
            for item in _items(sources, limits, progress, by_range=options.format == "summary"):
                if item[0] == "chunk":
                    handle(item, process_chunk(engine, item[1], item[2], options, render))
                elif item[0] == "range":  # read whole, with one copy, like a worker would
                    handle(item, summarize_range(engine, item[1], limits.max_line, limits.range_bytes))
                else:
                    handle(item)
        else:
            context = multiprocessing.get_context("fork")
            fd = _output_fd(writer, options)
            park = _park_dir() if fd is not None else None
            stop = context.Value("b", 0, lock=False)
            turns = _Turns(context, fd, park, stop) if fd is not None else None
            pool = context.Pool(jobs, initializer=_worker_init,
                                initargs=(explainer, options.semantic, turns, defer, context.Value("i", 0), jobs, stop))
            if defer:  # the workers are forked: a thread may start now, and will almost surely be needed
                warm = _warm_up(explainer)
            window: deque = deque()
            in_flight = seq = 0
            for item in _items(sources, limits, progress, by_range=options.format == "summary"):
                if item[0] == "chunk":
                    window.append((item, pool.apply_async(_worker_run, (item[1], item[2], options, seq))))
                    in_flight += 1
                    seq += 1
                elif item[0] == "range":
                    window.append((item, pool.apply_async(_worker_range, (item[1], limits))))
                    in_flight += 1
                else:
                    window.append((item, None))
                while window and (window[0][1] is None or in_flight >= 2 * jobs + 2):
                    head, pending = window.popleft()
                    if pending is not None:
                        in_flight -= 1
                        handle(head, pending.get())
                    else:
                        handle(head)
            while window:
                head, pending = window.popleft()
                handle(head, pending.get() if pending is not None else None)
            pool.close()
            pool.join()
            pool = None
    except KeyboardInterrupt:
        summary.interrupted = True
        summary.interrupt_signal = guard.signum or signal.SIGINT
    finally:
        if in_main:
            for sig in STOP_SIGNALS:  # neither the clean-up nor the closing write may be cut short
                signal.signal(sig, signal.SIG_IGN)
        if pool is not None:
            _stop_pool(pool, stop, turns)
        try:
            settle_deferred(summary, explainer)
            if triage is not None and not summary.interrupted:
                summary.triage = triage.result()
            writer.close(summary)
        finally:
            if park is not None:
                shutil.rmtree(park, ignore_errors=True)  # payloads parked when Ctrl-C stopped us
            for sig, handler in previous.items():
                signal.signal(sig, handler if handler is not None else signal.SIG_DFL)
            progress.close()
            if budgeted:
                explainer.semantic_budget = None
    if engine is not None and engine.mismatches:
        print(f"explainlog: note: {engine.mismatches} line shape(s) fell back to the slow path", file=sys.stderr)
    return summary
