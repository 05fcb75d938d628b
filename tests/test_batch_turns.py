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
    turns = _Turns(multiprocessing.get_context("fork"), out, str(park))
    turns.write(2, b"C\n")  # finished first, both predecessors still running
    turns.write(1, b"B\n")
    assert sorted(os.listdir(park)) == ["1.jsonl", "2.jsonl"] and turns.turn.value == 0
    turns.write(0, b"A\n")  # the turn holder writes 0, then the parked 1 and 2
    os.close(out)
    assert (tmp_path / "out.jsonl").read_bytes() == b"A\nB\nC\n"
    assert os.listdir(park) == [] and turns.turn.value == 3


def test_without_a_place_to_park_an_early_chunk_waits_for_its_turn(tmp_path):
    out = os.open(tmp_path / "out.jsonl", os.O_WRONLY | os.O_CREAT)
    turns = _Turns(multiprocessing.get_context("fork"), out, None)
    early = threading.Thread(target=turns.write, args=(1, b"B\n"))
    early.start()
    early.join(0.3)
    assert early.is_alive() and (tmp_path / "out.jsonl").read_bytes() == b""
    turns.write(0, b"A\n")
    early.join(5)
    os.close(out)
    assert (tmp_path / "out.jsonl").read_bytes() == b"A\nB\n" and turns.turn.value == 2
