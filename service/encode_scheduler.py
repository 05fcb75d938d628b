"""One encoder shared fairly by concurrent requests: micro-batches, round-robin by client.

A service process has one model. Calling it from each request thread serialises the calls
(the encoder holds a lock), so sixteen clients with one never-seen line each wait for sixteen
encoder calls in a row, and one request with 250 long lines holds the model for seconds while
everyone else waits. Here request threads only queue their texts; encoder threads (one per
core, "lanes") take what is queued as micro-batches and hand every caller its vectors:

- **Micro-batches.** Whatever arrived while the previous batch ran goes into the next one, so
  concurrent never-seen lines cost one encoder call, not one each. A text queued twice (two
  clients pasting the same new line) is encoded once.
- **Fair.** A batch is filled round-robin: each client with queued work gets up to
  ``quantum_cost`` of work per turn, the batch holds at most ``batch_cost``. While clients with
  little queued wait, they are served first come first served and a client with a lot queued
  sits out (never more than two batches in a row), since a batch lasts as long as its longest
  line. A heavy request so delays a light one by about one batch, not by its whole size;
  alone it gets whole batches.
- **Bounded.** More than ``max_pending_cost`` queued is refused at once with ``Busy`` (the
  service answers 429 with a Retry-After) rather than queued for minutes.

A text's cost estimates its encoder time from its length n (at most 400 characters plus a
fixed part): n + n²/250, since attention grows with the square of the length. Measured on this
2-core machine, 16 short lines (~80 characters) took 52 ms in one call and 16 random 400-character
lines 540 ms: per cost unit within a third of each other, where characters alone were 2.5x apart.
A batch of 2,300 units (two long lines, or about sixteen short ones) takes 60-80 ms on two
cores; with a lane per core each lane's batch is half that, on its core.
"""

from __future__ import annotations

import os
import threading
import time
from collections import OrderedDict, deque
from dataclasses import dataclass, field
from typing import Hashable, Sequence

import numpy as np

from indexer.encoders import Encoder

CPUS = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1

# Cost units one batch may hold when a single lane uses every core; a lane per core gets its share.
BATCH_COST = 2300

# Per-sequence overhead in characters ([CLS]/[SEP], pooling).
OVERHEAD_CHARS = 16


class Busy(RuntimeError):
    """The queue is full: the caller should retry after ``retry_after`` seconds."""

    def __init__(self, queued_seconds: float, retry_after: int) -> None:
        super().__init__(
            f"the embedding model has about {queued_seconds:.0f} s of never-seen lines queued from "
            f"other requests; retry in {retry_after} s"
        )
        self.retry_after = retry_after


def cost(text: str) -> int:
    """Estimated encoder time of one text, in units of about 0.03 ms (see the module text)."""
    n = len(text) + OVERHEAD_CHARS
    return n + n * n // 250


@dataclass
class _Item:
    text: str
    cost: int
    done: threading.Event = field(default_factory=threading.Event)
    vector: np.ndarray | None = None
    error: BaseException | None = None


class EncodeScheduler:
    """``encode(texts, client)`` from any thread; daemon threads (one per lane) run the encoder."""

    def __init__(
        self,
        encoder: Encoder,
        batch_cost: int | None = None,
        quantum_cost: int = 1100,
        max_pending_cost: int = 1_000_000,
        lanes: int | None = None,
    ) -> None:
        self.encoder = encoder
        # Lanes: one encoder thread per core where the encoder can run on the calling thread
        # alone (``encode_in_thread``), so a short line never waits for a long one on the
        # other core; else one lane whose encoder call uses every core.
        self._lanes = lanes
        self._batch_cost = batch_cost
        self.quantum_cost = quantum_cost
        self.max_pending_cost = max_pending_cost
        self._cond = threading.Condition()
        self._queues: OrderedDict[Hashable, deque[_Item]] = OrderedDict()
        self._pending: dict[str, _Item] = {}  # queued or being encoded, by text
        self._passed_over: dict[Hashable, int] = {}  # batches a client's next item did not fit
        self._pending_cost = 0
        self._threads: list[threading.Thread] = []
        self._blas_limit = None
        # Seconds per character of the last batches, for Retry-After.
        self._seconds_per_cost = 3e-5
        self.batches = 0  # encoder calls made (tests and metrics read it)
        self.batch_cost = batch_cost or BATCH_COST  # per lane; set when the lanes start
        self.lanes = 1
        self._pid = os.getpid()

    @property
    def name(self) -> str:
        return self.encoder.name

    # ---- callers ------------------------------------------------------------------------------
    def encode(self, texts: Sequence[str], client: Hashable = None) -> np.ndarray:
        """Vectors for ``texts`` in order; blocks until they are encoded. Raises ``Busy`` when
        the queue is full, and what the encoder raised if it failed."""
        if not texts:
            return np.zeros((0, 0), dtype=np.float32)
        if os.getpid() != self._pid:
            # A forked batch worker: the scheduler thread (and maybe its lock) stayed behind.
            return self.encoder.encode(list(texts))
        items: list[_Item] = []
        with self._cond:
            fresh = [t for t in dict.fromkeys(texts) if t not in self._pending]
            adding = sum(cost(t) for t in fresh)
            if self._pending_cost and self._pending_cost + adding > self.max_pending_cost:
                queued = self._pending_cost * self._seconds_per_cost
                raise Busy(queued, max(1, round(queued)))
            queue = self._queues.get(client)
            if queue is None:
                queue = self._queues[client] = deque()
            for text in fresh:
                item = _Item(text, cost(text))
                self._pending[text] = item
                queue.append(item)
            self._pending_cost += adding
            if not queue:
                del self._queues[client]
            items = [self._pending[t] for t in texts]
            self._ensure_thread()
            self._cond.notify_all()
        for item in items:
            item.done.wait()
        for item in items:
            if item.error is not None:
                raise item.error
        return np.stack([item.vector for item in items])  # type: ignore[misc]

    @property
    def pending_cost(self) -> int:
        return self._pending_cost

    # ---- the scheduler thread -----------------------------------------------------------------
    def _ensure_thread(self) -> None:
        if self._threads and all(t.is_alive() for t in self._threads):
            return
        real = getattr(self.encoder, "inner", self.encoder)
        in_thread = getattr(real, "encode_in_thread", None)
        lanes = self._lanes or (CPUS if in_thread else 1)
        if in_thread is None or lanes == 1:
            encode, lanes = self.encoder.encode, 1
        else:
            from threadpoolctl import threadpool_limits

            # Parallel lanes, each on one BLAS thread, for the life of the process.
            self._blas_limit = threadpool_limits(limits=1, user_api="blas")
            encode = in_thread
        self.batch_cost = self._batch_cost or BATCH_COST // lanes
        self.lanes = lanes
        self._threads = [
            threading.Thread(target=self._run, args=(encode,), name=f"explainlog-encode-{n}", daemon=True)
            for n in range(lanes)
        ]
        for thread in self._threads:
            thread.start()

    def _next_batch(self) -> list[_Item]:
        """Fill a batch round-robin, up to a quantum per client per turn. Called with the
        condition held.

        Order: clients in the order they arrived; one that was served and still has work
        goes to the back. An item that would overflow the batch waits (unless the batch is
        empty) and smaller ones from other clients fill the room; a client passed over twice
        is served first next time, so heavy work slows under light load but never starves."""
        light = self._light_batch()
        if light:
            return light
        batch: list[_Item] = []
        size = 0
        first = [c for c in self._queues if self._passed_over.get(c, 0) >= 2]
        for client in reversed(first):
            self._queues.move_to_end(client, last=False)
        progress = True
        while self._queues and size < self.batch_cost and progress:
            progress = False
            for client in list(self._queues):
                queue = self._queues[client]
                turn = 0
                while queue and turn < self.quantum_cost:
                    if batch and size + queue[0].cost > self.batch_cost:
                        self._passed_over[client] = self._passed_over.get(client, 0) + 1
                        break
                    item = queue.popleft()
                    batch.append(item)
                    turn += item.cost
                    size += item.cost
                    progress = True
                    self._passed_over.pop(client, None)
                if queue:
                    self._queues.move_to_end(client)
                else:
                    del self._queues[client]
                    self._passed_over.pop(client, None)
                if size >= self.batch_cost:
                    break
        return batch

    def _light_batch(self) -> list[_Item]:
        """When clients with little work (at most a quantum queued) wait, and no heavy client
        is overdue, a batch of only their items, first come first served: a batch takes as
        long as its longest line, so one 250-token line from a bulk request would make every
        short line in it wait 80 ms."""
        heavy = [c for c, q in self._queues.items() if sum(i.cost for i in q) > self.quantum_cost]
        if not heavy or len(heavy) == len(self._queues) or any(self._passed_over.get(c, 0) >= 2 for c in heavy):
            return []
        batch: list[_Item] = []
        size = 0
        for client in [c for c in self._queues if c not in heavy]:
            queue = self._queues[client]
            if batch and size + sum(i.cost for i in queue) > self.batch_cost:
                continue
            batch.extend(queue)
            size += sum(i.cost for i in queue)
            del self._queues[client]
            self._passed_over.pop(client, None)
        for client in heavy:
            self._passed_over[client] = self._passed_over.get(client, 0) + 1
        return batch

    def _run(self, encode) -> None:
        while True:
            with self._cond:
                while not self._queues:
                    self._cond.wait()
                batch = self._next_batch()
            started = time.perf_counter()
            try:
                vectors = encode([item.text for item in batch])
            except BaseException as exc:  # noqa: BLE001 - handed to every waiting caller
                for item in batch:
                    item.error = exc
            else:
                for item, vector in zip(batch, vectors):
                    item.vector = vector
            spent = sum(item.cost for item in batch)
            elapsed = time.perf_counter() - started
            with self._cond:
                self.batches += 1
                self._seconds_per_cost = 0.8 * self._seconds_per_cost + 0.2 * (elapsed / max(spent, 1))
                for item in batch:
                    self._pending.pop(item.text, None)
                self._pending_cost -= spent
            for item in batch:
                item.done.set()
