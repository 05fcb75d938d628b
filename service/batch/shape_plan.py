"""A shape's plan: what the first line of a shape teaches about all its lines.

A *shape* is a line with its digits 1-9 made ``0`` and the hex letters of its pointers too
(``shape_keys``). Its ``Shape`` holds where the message and each context value sit (slices,
so later lines are not normalised again), how the answer is found (``FIXED``: one for all;
``FIELDS``: one entry, fields read per line; ``PENDING``: unknown to the regex tier, asked of
the semantic tier once; ``BY_MESSAGE``: per message), and which per-line guards apply (digit-
specific entries, pointer values). ``ShapeProofs`` decides the guards; ``Engine`` learns and
uses plans.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

import orjson

from indexer.normalize import PREFIX_RULES, NormalizedLine, clean_text
from service.batch.answers import Answer

_DIGIT = re.compile(r"\d")

# answer modes of a shape
FIXED = 0  # one answer for every line of the shape
BY_MESSAGE = 1  # answer depends on the message: cached per message
PENDING = 2  # one answer for the shape, not computed yet (unknown to the regex tier)
FIELDS = 3  # one KB entry for the shape, with named groups: fields (and texts) per line


@dataclass(eq=False)
class Shape:
    fast: bool  # message and context come from fixed slices (else: normalize_line per line)
    lead: int = 0
    end: int | None = None  # message = text[lead:end]
    ctx_items: tuple = ()  # (key, constant or None, start, end)
    ctx_const: dict | None = None  # the context when it has no per-line part
    mode: int = BY_MESSAGE
    answer: Answer | None = None
    template: str | None = None
    embedded: str | None = None  # the text the spine's semantic tier keys its answers by
    checked: bool = False
    # digit-specific KB entries that may match this shape, and which of them matched its first
    # line; a line with another outcome is answered by message, not by shape
    checks: tuple | None = None
    checks_context: bool = False
    # FIELDS: the winning entry, its constant candidates, and the fields its texts use (texts
    # are cached by those values: a comm pointer in the fields leaves the texts alone)
    entry: int = -1
    candidates: list | None = None
    used: tuple = ()
    sample: Answer | None = None  # FIELDS: one answer standing for the shape in summaries
    tail: bytes | None = None
    # pointers in the line: the stretch holding them, which of its values were checked (see
    # _runs_ok; None: no pointers), and what the check compares against
    runs_at: tuple = (0, 0)
    runs_ok: dict | None = None
    pointer_hits: frozenset = frozenset()
    spans: tuple | None = None  # FIELDS with a digit-closed entry: (group, start, end) in the line
    regs: tuple | None = None  # the first line's Match.regs of that entry, in the message
    values_at: tuple = (0, 0)  # the stretch of the line that holds every group
    by_values: dict | None = None  # FIELDS with spans: that stretch -> (answer, fields)
    ctx_build: Any = None  # text -> context, compiled from ctx_items
    ctx_json: Any = None  # text -> the context as JSON (what jsonl writes), compiled likewise


SLOW = Shape(fast=False, mode=BY_MESSAGE, checked=True)  # lines answered by the spine one by one


def learn_normalization(text: str, normalized: NormalizedLine, normalize_ok: bool) -> Shape:
    """What a shape's first line teaches about normalisation: ``normalize_line`` replayed on
    ``text`` recording spans, so later lines of the shape are sliced instead of normalised
    (``normalize_ok``: the prefix rules are digit-closed, see ``ShapeProofs``)."""
    if not normalize_ok:
        return Shape(fast=False)
    stripped = text.strip()
    if clean_text(text) != stripped:
        return Shape(fast=False)  # ANSI codes or control bytes: let the spine clean each line
    offset = len(text) - len(text.lstrip())
    rest = stripped
    spans: dict[str, tuple[int, int]] = {}
    progress = True
    while progress and rest:
        progress = False
        for _, rule in PREFIX_RULES:
            match = rule.match(rest)
            if match and 0 < match.end() < len(rest):
                for name in rule.groupindex:
                    if match.group(name) is not None:
                        start, end = match.span(name)
                        spans.setdefault(name, (offset + start, offset + end))
                after = rest[match.end():]
                rest = after.lstrip()
                offset += match.end() + len(after) - len(rest)
                progress = True
                break
    trail = len(text) - len(text.rstrip())
    end = -trail if trail else None  # from the right: valid for lines of other lengths
    if text[offset:end] != normalized.message:
        return Shape(fast=False)
    items = []
    for key, value in normalized.context.items():
        if not _DIGIT.search(value):
            items.append((key, value, 0, 0))
            continue
        span = spans.get(key) or (spans.get("level2") if key == "level" else None)
        if span is None or text[span[0]:span[1]] != value:
            return Shape(fast=False)  # composed values (glog date + time): per line
        items.append((key, None, span[0], span[1]))
    const = {k: v for k, v, _, _ in items} if all(v is not None for _, v, _, _ in items) else None
    ctx_build, ctx_json = context_builders(items)
    return Shape(fast=True, lead=offset, end=end, ctx_items=tuple(items), ctx_const=const,
                 ctx_build=ctx_build, ctx_json=ctx_json)


_BUILDERS: dict[tuple, tuple[Any, Any]] = {}
BUILDERS_LIMIT = 4096


def context_builders(items: list[tuple]) -> tuple[Any, Any]:
    """``(_context_builder, _context_json_builder)`` of these items, compiled once for every
    shape that has them: shapes of one log mostly share their prefixes' keys, constants and
    offsets, and compiling the two costs ~0.1 ms per shape (real logs learn a shape about every
    ten lines)."""
    key = tuple(items)
    built = _BUILDERS.get(key)
    if built is None:
        if len(_BUILDERS) >= BUILDERS_LIMIT:
            _BUILDERS.clear()
        built = _BUILDERS[key] = (_context_builder(items), _context_json_builder(items))
    return built


def _context_builder(items: list[tuple]) -> Any:
    """``text -> context`` for a shape: a dict display with constant keys and slice bounds,
    ~3x faster than a comprehension over the items. Every piece is a repr'd str or an int."""
    body = ", ".join(
        f"{key!r}: {const!r}" if const is not None else f"{key!r}: t[{b}:{e}]" for key, const, b, e in items
    )
    return eval(f"lambda t: {{{body}}}")  # noqa: S307 - built from repr() and ints only


def _context_json_builder(items: list[tuple]) -> Any:
    """``text -> orjson.dumps(context)`` without the dict: constant keys and values are encoded
    once into a %-format, each sliced value is encoded per line."""
    pieces, args = [], []
    for key, const, b, e in items:
        value = orjson.dumps(const).replace(b"%", b"%%") if const is not None else b"%b"
        pieces.append(orjson.dumps(key).replace(b"%", b"%%") + b":" + value)
        if const is None:
            args.append(f"d(t[{b}:{e}])")
    template = b"{" + b",".join(pieces) + b"}"
    return eval(f"lambda t, d=d: {template!r} % ({''.join(a + ', ' for a in args)})", {"d": orjson.dumps})  # noqa: S307
