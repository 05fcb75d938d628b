"""The encode scheduler: concurrent callers share micro-batches, a heavy client cannot hold the
model, the queue is bounded, and every caller gets exactly its own vectors."""

from __future__ import annotations

import hashlib
import threading
import time

import numpy as np
import pytest

from service.encode_scheduler import Busy, EncodeScheduler, cost


def vector(text: str) -> np.ndarray:
    digest = hashlib.sha256(text.encode()).digest()
    return np.frombuffer(digest, dtype=np.uint8)[:8].astype(np.float32)


class RecordingEncoder:
    """Deterministic vectors; records every batch; the first call can be held at a gate."""

    name = "recording"

    def __init__(self, gate_first: bool = False, fail_on: str | None = None) -> None:
        self.batches: list[list[str]] = []
        self.gate = threading.Event()
        self.entered = threading.Event()
        self.gate_first = gate_first
        self.fail_on = fail_on
        if not gate_first:
            self.gate.set()

    def encode(self, texts):
        self.batches.append(list(texts))
        if len(self.batches) == 1:
            self.entered.set()
            assert self.gate.wait(30), "the test never opened the gate"
        if self.fail_on and any(self.fail_on in t for t in texts):
            raise RuntimeError("model exploded")
        return np.stack([vector(t) for t in texts])


def call_in_thread(scheduler, texts, client, results, key):
    def run():
        try:
            results[key] = scheduler.encode(texts, client)
        except BaseException as exc:  # noqa: BLE001 - the test inspects it
            results[key] = exc
    thread = threading.Thread(target=run)
    thread.start()
    return thread


def wait_until(predicate, seconds=10.0):
    deadline = time.monotonic() + seconds
    while not predicate():
        assert time.monotonic() < deadline, "condition never held"
        time.sleep(0.005)


def test_vectors_are_the_callers_own_and_in_order():
    encoder = RecordingEncoder()
    scheduler = EncodeScheduler(encoder)
    texts = ["b second", "a first", "b second", "c third"]
    got = scheduler.encode(texts, "x")
    assert np.array_equal(got, np.stack([vector(t) for t in texts]))
    assert encoder.batches == [["b second", "a first", "c third"]]  # the repeat is encoded once


def test_callers_that_arrive_while_the_model_is_busy_share_one_batch():
    encoder = RecordingEncoder(gate_first=True)
    scheduler = EncodeScheduler(encoder)
    results: dict = {}
    threads = [call_in_thread(scheduler, ["warm"], "w", results, "warm")]
    assert encoder.entered.wait(10)
    for i in range(10):
        threads.append(call_in_thread(scheduler, [f"never seen line {i}"], f"client{i}", results, i))
    wait_until(lambda: scheduler.pending_cost == sum(cost(f"never seen line {i}") for i in range(10)) + cost("warm"))
    encoder.gate.set()
    for thread in threads:
        thread.join(10)
    assert len(encoder.batches) == 2, encoder.batches  # ten callers, one encoder call
    assert sorted(encoder.batches[1]) == sorted(f"never seen line {i}" for i in range(10))
    for i in range(10):
        assert np.array_equal(results[i][0], vector(f"never seen line {i}"))
    assert scheduler.pending_cost == 0


def test_a_heavy_client_advances_a_quantum_per_batch_and_a_light_one_goes_next():
    encoder = RecordingEncoder(gate_first=True)
    scheduler = EncodeScheduler(encoder)
    results: dict = {}
    heavy = [f"{i:03d} " + "x" * 396 for i in range(50)]  # 50 lines of 400 characters
    threads = [call_in_thread(scheduler, ["warm"], "w", results, "warm")]
    assert encoder.entered.wait(10)
    threads.append(call_in_thread(scheduler, heavy, "heavy", results, "heavy"))
    wait_until(lambda: scheduler.pending_cost >= 50 * cost(heavy[0]))
    threads.append(call_in_thread(scheduler, ["a short never-seen line"], "light", results, "light"))
    wait_until(lambda: scheduler.pending_cost == 50 * cost(heavy[0]) + cost("warm") + cost("a short never-seen line"))
    encoder.gate.set()
    for thread in threads:
        thread.join(30)
    second = encoder.batches[1]
    assert "a short never-seen line" in second  # not after the 50 heavy lines
    assert sum(t in heavy for t in second) <= 2  # the heavy client got about a quantum
    assert np.array_equal(results["heavy"], np.stack([vector(t) for t in heavy]))
    # Alone, the heavy client fills whole batches, each at most one line over the batch size.
    assert all(sum(map(cost, b)) <= scheduler.batch_cost + cost(heavy[0]) for b in encoder.batches)
    assert len(encoder.batches) <= 2 + 50 * cost(heavy[0]) // scheduler.batch_cost + 1


def test_a_full_queue_is_refused_with_a_retry_time_and_forgets_nothing():
    encoder = RecordingEncoder(gate_first=True)
    scheduler = EncodeScheduler(encoder, max_pending_cost=1000)
    results: dict = {}
    threads = [call_in_thread(scheduler, ["x" * 600], "a", results, "a")]
    assert encoder.entered.wait(10)
    with pytest.raises(Busy) as refused:
        scheduler.encode(["y" * 600], "b")
    assert refused.value.retry_after >= 1 and "retry in" in str(refused.value)
    assert scheduler.pending_cost == cost("x" * 600)  # the refused text was not queued
    encoder.gate.set()
    threads[0].join(10)
    assert np.array_equal(scheduler.encode(["y" * 600], "b")[0], vector("y" * 600))  # and fits now


def test_an_encoder_failure_reaches_every_caller_of_that_batch_and_the_next_batch_works():
    encoder = RecordingEncoder(fail_on="boom")
    scheduler = EncodeScheduler(encoder)
    with pytest.raises(RuntimeError, match="model exploded"):
        scheduler.encode(["boom here"], "a")
    assert scheduler.pending_cost == 0
    assert np.array_equal(scheduler.encode(["fine"], "a")[0], vector("fine"))


def test_rate_limiter_refills_at_its_rate_and_forgets_refilled_clients_first():
    from service.http.rate_limit import RateLimiter

    now = [1000.0]
    limiter = RateLimiter(rate=2.0, burst=3, max_clients=4, clock=lambda: now[0])
    assert [limiter.take("a") for _ in range(3)] == [0.0, 0.0, 0.0]
    assert limiter.take("a") == pytest.approx(0.5)
    now[0] += 0.5  # one token back
    assert limiter.take("a") == 0.0 and limiter.take("a") > 0
    for key in "bcde":
        limiter.take(key)
    assert len(limiter._buckets) <= 4
    now[0] += 10  # everyone refilled: the table shrinks, and a forgotten client starts full
    limiter.take("f")
    assert len(limiter._buckets) <= 2
    assert [limiter.take("a") for _ in range(3)] == [0.0, 0.0, 0.0]
    assert RateLimiter(rate=0, burst=1).take("x") == 0.0  # 0 turns it off


def test_the_template_cache_is_bounded_in_bytes_and_answers_do_not_change(explainer, kb_dir, index_dir):
    from service.explainer import Explainer

    small = Explainer(kb_dir=kb_dir, index_dir=index_dir, index_policy="refuse", encoder=explainer.encoder,
                      cache_bytes=6000)
    words = ["ghost", "kiwi", "lumen", "prism", "quartz", "rover", "tundra", "vortex"]
    lines = [f"the {a} met the {b} near the old mill" + " again" * (i % 5) for i, (a, b) in
             enumerate((a, b) for a in words for b in words)]
    answers = small.explain_many(lines)
    assert 0 < small.cache_bytes <= 6000
    assert 0 < len(small._cache) < len(lines)
    assert [a["known"] for a in answers] == [a["known"] for a in explainer.explain_many(lines)]
    assert embedding_key(lines[-1]) in small._cache  # the newest stays, the oldest went
    assert embedding_key(lines[0]) not in small._cache


def embedding_key(line: str) -> str:
    from indexer.semantic_index import embedding_text

    return embedding_text(line)


def test_long_lines_give_way_to_short_ones_but_are_never_passed_over_more_than_twice():
    from collections import deque

    from service.encode_scheduler import _Item

    scheduler = EncodeScheduler(RecordingEncoder())

    def arrive(client: str, texts: list[str]) -> None:  # what encode() does, without the thread
        scheduler._queues[client] = deque(_Item(t, cost(t)) for t in texts)

    heavy = [f"{i:03d} " + "x" * 396 for i in range(20)]
    arrive("heavy", heavy)
    served = []
    for round_no in range(9):
        for n in range(18):  # more short work than a batch holds, every batch
            arrive(f"light{round_no}-{n}", [f"NCCL INFO a never-seen line of about eighty characters, number {round_no} {n}"])
        batch = scheduler._next_batch()
        assert sum(i.cost for i in batch) <= scheduler.batch_cost
        served.append(sum(i.text in heavy for i in batch))
    assert all(sum(served[k:k + 3]) >= 1 for k in range(len(served) - 2)), served
    assert served[0] == 0  # the first batch went to the short lines that had just arrived
