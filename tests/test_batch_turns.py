"""-j workers write JSONL in chunk order: in turn, or parked and written by the turn holder."""

from __future__ import annotations

import multiprocessing
import os
import threading

from service.batch.pipeline import _Turns


def test_a_chunk_done_out_of_turn_is_parked_and_written_by_the_turn_holder(tmp_path):
    out = os.open(tmp_path / "out.jsonl", os.O_WRONLY | os.O_CREAT)
    park = tmp_path / "park"
    park.mkdir()
    context = multiprocessing.get_context("fork")
    turns = _Turns(context, out, str(park), context.Value("b", 0, lock=False))
    turns.write(2, b"C\n")  # finished first, both predecessors still running
    turns.write(1, b"B\n")
    assert sorted(os.listdir(park)) == ["1.jsonl", "2.jsonl"] and turns.turn.value == 0
    turns.write(0, b"A\n")  # the turn holder writes 0, then the parked 1 and 2
    os.close(out)
    assert (tmp_path / "out.jsonl").read_bytes() == b"A\nB\nC\n"
    assert os.listdir(park) == [] and turns.turn.value == 3


def test_without_a_place_to_park_an_early_chunk_waits_for_its_turn(tmp_path):
    out = os.open(tmp_path / "out.jsonl", os.O_WRONLY | os.O_CREAT)
    context = multiprocessing.get_context("fork")
    turns = _Turns(context, out, None, context.Value("b", 0, lock=False))
    early = threading.Thread(target=turns.write, args=(1, b"B\n"))
    early.start()
    early.join(0.3)
    assert early.is_alive() and (tmp_path / "out.jsonl").read_bytes() == b""
    turns.write(0, b"A\n")
    early.join(5)
    os.close(out)
    assert (tmp_path / "out.jsonl").read_bytes() == b"A\nB\n" and turns.turn.value == 2


def test_an_interrupted_run_frees_a_worker_waiting_for_a_turn_that_will_not_come(tmp_path):
    """Ctrl-C: the parent sets ``stop``; a worker waiting for its turn returns without writing
    (before, the pool was terminated around it, which could hang the parent for good)."""
    out = os.open(tmp_path / "out.jsonl", os.O_WRONLY | os.O_CREAT)
    context = multiprocessing.get_context("fork")
    stop = context.Value("b", 0, lock=False)
    turns = _Turns(context, out, None, stop)
    waiting = threading.Thread(target=turns.write, args=(1, b"B\n"))
    waiting.start()
    waiting.join(0.3)
    assert waiting.is_alive()
    stop.value = 1
    with turns.cond:
        turns.cond.notify_all()
    waiting.join(5)
    assert not waiting.is_alive()
    turns.write(0, b"A\n")  # nothing is written after the stop, not even the turn holder's
    os.close(out)
    assert (tmp_path / "out.jsonl").read_bytes() == b""
