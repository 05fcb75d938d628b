"""Counting a chunk's lines by answer: ``--format summary`` and every format's summary half.

``summarize`` counts lines by shape without annotating them one by one (the engine's learned
shapes stand for their lines; only shapes a digit-specific entry or a pointer may split are
checked per message or per line); ``tally_answers`` sums an annotated chunk's answers.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

import numpy as np

from service.batch import shape_keys
from service.batch.answers import Answer
from service.batch.reader import Chunk, undecodable_lines
from service.batch.shape_plan import BY_MESSAGE, FIELDS, PENDING, Shape
from service.batch.summary import Summary


def tally_answers(chunk: Chunk, texts: list[str], answers: list[Answer], undecodable: list[int]) -> Summary:
    summary = Summary()
    summary.ensure_file(chunk.source, "")
    summary.lines_per_file[chunk.source] = chunk.n_lines
    counts = Counter(answers)
    last = dict(zip(answers, range(len(answers))))
    first = dict(zip(reversed(answers), range(len(answers) - 1, -1, -1)))
    # Answers of one entry (texts filled per line) are summed before reaching the summary.
    by_key: dict[tuple, list] = {}
    for answer, count in counts.items():  # in order of first appearance
        stat = by_key.get(answer.key)
        if stat is None:
            by_key[answer.key] = [answer, count, first[answer], last[answer]]
        else:
            stat[1] += count
            stat[3] = max(stat[3], last[answer])
    base = chunk.first_line
    for answer, count, first_i, last_i in by_key.values():
        _add(summary, chunk.source, answer, count, base + first_i, base + last_i, texts[first_i])
    _notes(summary, chunk, undecodable, texts)
    return summary

def summarize(engine: Any, chunk: Chunk, counted: shape_keys.Tally | None = None) -> Summary:
    """The summary of a chunk without annotating each line.

    Lines are counted by shape in one native pass (``shape_keys.tally``, the GIL released;
    bytes methods and ``Counter`` where it was not built); Python then visits each
    distinct shape once (a few dozen per chunk however many lines): its answer stands for
    all its lines. Lines of shapes that digit-specific KB entries may split are checked per
    distinct message; only lines whose answer can differ within a shape otherwise
    (pointer-sensitive shapes, shapes the fast path cannot slice) are annotated one by one.
    ``counted``: the chunk's ``shape_keys.tally``, when the caller already has it.
    """
    data = chunk.data
    if engine.proofs.hazard_lines(data):
        return engine.annotate(chunk, need_context=False).summary
    keys, counts, first, last, ids, starts = counted or shape_keys.tally(data)
    lines: shape_keys.Lines | None = None

    def text_at(i: int) -> str:
        nonlocal lines
        if lines is None:
            lines = shape_keys.Lines(data, starts)
        return lines[i].decode("utf-8", "replace")

    tally: dict[Answer, list[int]] = {}  # answer -> [count, first, last] (chunk indices)
    per_line: list[int] = []  # key indices
    checked: dict[int, tuple[Shape, Answer]] = {}  # digit-specific entries may apply: per message
    waiting: dict[Shape, list[int]] = {}
    for k, key in enumerate(keys):
        shape = engine.known_shape(key)
        if shape is None:
            shape = engine.new_shape(key, text_at(first[k]))
        if (not shape.fast or shape.mode == BY_MESSAGE or shape.runs_ok is not None
                or (shape.checks is not None and (shape.checks_context or shape.mode == PENDING))):
            per_line.append(k)  # a digit-specific context rule or a pointer may split it, or no fixed slices
            continue
        answer = shape.answer
        if answer is None and shape.mode == FIELDS:
            # Fields vary, the entry does not: one answer stands for the shape's count.
            if shape.sample is None:
                text = text_at(first[k])
                shape.sample = engine.fields_answer(shape, text[shape.lead:shape.end])[0]
            answer = shape.sample
        if answer is None:  # PENDING: unknown to the regex tier, resolved below in one batch
            waiting.setdefault(shape, []).append(k)
            continue
        if shape.checks is not None:
            checked[k] = (shape, answer)
            continue
        _count(tally, answer, counts[k], first[k], last[k])
    if waiting:
        shapes = list(waiting)
        resolved = engine.resolve([text_at(first[waiting[s][0]]) for s in shapes], [s.template for s in shapes])
        for shape, answer in zip(shapes, resolved):
            engine.settle(shape, answer)
            for k in waiting[shape]:
                _count(tally, answer, counts[k], first[k], last[k])
    if per_line or checked:
        if lines is None:
            lines = shape_keys.Lines(data, starts)
        slow = _check_lines(engine, tally, np.frombuffer(ids, np.uint32), lines, per_line, checked)
        annotated = engine.annotate(
            Chunk(chunk.source, 0, b"\n".join(lines[i] for i in slow), len(slow)), need_context=False
        )
        for i, answer in zip(slow, annotated.answers):
            _count(tally, answer, 1, i, i)
    summary = Summary()
    summary.ensure_file(chunk.source, "")
    summary.lines_per_file[chunk.source] = chunk.n_lines
    base = chunk.first_line
    for answer, (count, first_i, last_i) in sorted(tally.items(), key=lambda item: item[1][1]):
        example = text_at(first_i) if not answer.known else ""  # only unknown templates keep one
        _add(summary, chunk.source, answer, count, base + first_i, base + last_i, example)
    _notes(summary, chunk, undecodable_lines(data), None)
    return summary

def _check_lines(engine: Any, tally: dict, ids: np.ndarray, lines: shape_keys.Lines, per_line: list[int],
                 checked: dict[int, tuple[Shape, Answer]]) -> list[int]:
    """Count the lines of ``checked`` shapes whose digit-specific entries match as on the
    shape's first line (one RE2 set pass per distinct message: NCCL repeats its messages on
    every rank); return the indices of the rest, and of ``per_line`` shapes, to annotate.
    ``ids`` holds each line's key index: a shape's lines are found by numpy compares."""
    slow = np.flatnonzero(np.isin(ids, per_line)).tolist() if per_line else []
    for k, (shape, answer) in checked.items():
        index = np.flatnonzero(ids == k).tolist()
        messages = [lines[i].decode("utf-8", "replace")[shape.lead:shape.end] for i in index]
        relevant, expected = shape.checks  # type: ignore[misc]
        ok = {m: engine.proofs.outcomes(relevant, m, {}) == expected for m in set(messages)}
        if all(ok.values()):
            _count(tally, answer, len(index), index[0], index[-1])
            continue
        for i, message in zip(index, messages):
            if ok[message]:
                _count(tally, answer, 1, i, i)
            else:
                slow.append(i)
    slow.sort()
    return slow


def _count(tally: dict, answer: Answer, count: int, first: int, last: int) -> None:
    stat = tally.get(answer)
    if stat is None:
        tally[answer] = [count, first, last]
    else:
        stat[0] += count
        stat[1] = min(stat[1], first)
        stat[2] = max(stat[2], last)


def _add(summary: Summary, source: int, answer: Answer, count: int, first: int, last: int, example: str) -> None:
    if answer.deferred:
        summary.add_deferred(answer.template or "", count, (source, first), (source, last), example)
        return
    kind, key = answer.key
    if kind == "k":
        summary.add_known(key, count, (source, first), (source, last), answer.meta())
    else:
        summary.add_unknown(key, count, (source, first), (source, last), example)


def _notes(summary: Summary, chunk: Chunk, undecodable: list[int], texts: list[str] | None) -> None:
    base = chunk.first_line
    if undecodable:
        summary.add_note(chunk.source, "undecodable", base + undecodable[0], len(undecodable))
    if b"\0" in chunk.data:
        with_nul = [i for i, line in enumerate(chunk.data.split(b"\n")) if b"\0" in line]
        summary.add_note(chunk.source, "nul_bytes", base + with_nul[0], len(with_nul))
    if chunk.cut:
        summary.add_note(chunk.source, "long_line", base + min(chunk.cut), len(chunk.cut))
