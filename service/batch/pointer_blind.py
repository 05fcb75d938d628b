"""Decide once per shape whether the pointers in its lines can change the regex tier's answer.

NCCL prints a comm pointer (``comm 0x7f3a5c00b2d0``) on most of its lines, a different one per
rank and communicator. Shape keys fold those pointers' hex letters to ``0`` (see
``shape_keys.fold``), so lines of one shape may differ in them, which digit closure does not
cover. Checking every new (shape, pointer) pair against the KB cost ~90,000 RE2 and ``re``
calls per million lines of a big job's log. This module settles the question per shape instead.

The argument. Take the shape's first message and put a letter ``W`` that occurs nowhere in it
(in either case) on every pointer character after ``0x``: the *probe*. Rewrite a KB pattern so
that each atom (literal, class, ``.``, escape) that accepts at least one hex character
``[0-9a-f]`` also accepts ``W``, and each atom that accepts none rejects ``W``. Every way the
original pattern can match any line of the shape is then a way the rewrite matches the probe
(at pointer characters the original consumed a hex character, so the atom takes ``W`` too), so:

* a pattern whose rewrite cannot match the probe matches no line of the shape (``prefilter``:
  one RE2 set over all patterns, widened only, to find the few worth a closer look);
* for one that can, the rewrite also *captures* each ``W`` taken by an atom that accepts some
  hex characters but not all (a literal ``e``, ``\\d``, ``[0-9]``). If the rewrite's match
  captures none, every atom it passes at a pointer character accepts all hex characters, so
  the very same match (same path, same group spans) is open to the original pattern on every
  line of the shape; and since the rewrite's matches include all of the original's, no
  preferred match exists there either. The pattern then matches every line of the shape, with
  the spans of the probe (``marked``, compiled from ``re``'s parse tree, ASCII classes as RE2).

If some pattern's match does capture a ``W``, or a pattern cannot be rewritten (syntax that only
RE2 reads, lookarounds), the shape is left *pointer-sensitive* and the engine checks each new
pointer value as before. Digits outside pointers are the digit-closure machinery's business.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

from service.batch.re_twin import python_twin

try:  # re's parser and compiler: private modules, renamed in Python 3.11
    import re._compiler as sre_compile  # type: ignore[import-not-found]
    import re._constants as sre  # type: ignore[import-not-found]
    import re._parser as sre_parse  # type: ignore[import-not-found]
except ImportError:  # Python 3.10
    import sre_compile  # type: ignore[no-redef]
    import sre_constants as sre  # type: ignore[no-redef]
    import sre_parse  # type: ignore[no-redef]

HEX = "0123456789abcdef"
# Candidates for W: ASCII word characters (so \b and \w see a pointer character's like) that are
# not hex digits and not the "x" of "0x"; the first absent from the message is used.
W_CANDIDATES = "QJKZVYWUTSRPONMLIHG"
_ANY_W = "[G-WYZ]"  # every candidate: what the RE2 prefilter accepts in W's place
POINTER = re.compile(r"0x[0-9a-f]{4,}")


def prefilter(pattern: str) -> str:
    """An RE2 regex matching the probe wherever ``pattern`` can match a line of the shape.

    A textual rewrite: every atom that may accept a hex character gets ``W`` as an alternative;
    literal characters that cannot be hex are kept. Only ever widened, so when in doubt (a
    construct not understood) the answer is ``""``, which matches every probe.
    """
    out: list[str] = []
    i = 0
    n = len(pattern)
    while i < n:
        char = pattern[i]
        if char == "\\":
            if i + 1 >= n:
                return ""
            nxt = pattern[i + 1]
            if nxt in "bBAzZ":
                out.append(pattern[i:i + 2])  # assertions consume nothing
                i += 2
                continue
            if nxt == "Q" or nxt.isdigit():
                return ""  # quoting, backreferences, octal: not reasoned about
            if nxt in "xpP" and pattern.startswith("{", i + 2):
                close = pattern.find("}", i)
                if close == -1:
                    return ""
                end = close + 1
            elif nxt == "x":
                end = i + 4
            elif nxt in "pP":
                end = i + 3
            else:
                end = i + 2
            out.append(f"(?:{pattern[i:end]}|{_ANY_W})")
            i = end
            continue
        if char == "[":
            end = _class_end(pattern, i)
            if end is None:
                return ""
            out.append(f"(?:{pattern[i:end]}|{_ANY_W})")
            i = end
            continue
        if char == "(":
            if pattern.startswith("(?", i):
                end = _group_header_end(pattern, i)
                if end is None:
                    return ""
                out.append(pattern[i:end])
                i = end
            else:
                out.append(char)
                i += 1
            continue
        if char == "{":
            close = pattern.find("}", i)
            body = pattern[i + 1:close] if close != -1 else ""
            if body and re.fullmatch(r"\d+(?:,\d*)?", body):
                out.append(pattern[i:close + 1])  # a repetition count
                i = close + 1
                continue
        if char in ")|^$*+?":
            out.append(char)
        elif char == "." or char.lower() in HEX or char == "{":
            out.append(f"(?:{re.escape(char) if char == '{' else char}|{_ANY_W})")
        else:
            out.append(char)  # a literal that is no hex digit in any case
        i += 1
    return "".join(out)


def _class_end(pattern: str, start: int) -> int | None:
    """Index just past the ``]`` closing the class opened at ``start`` (RE2 syntax)."""
    i = start + 1
    if pattern.startswith("^", i):
        i += 1
    if pattern.startswith("]", i):
        i += 1
    while i < len(pattern):
        if pattern[i] == "\\":
            i += 2
        elif pattern.startswith("[:", i):
            close = pattern.find(":]", i + 2)
            i = close + 2 if close != -1 else i + 1
        elif pattern[i] == "]":
            return i + 1
        else:
            i += 1
    return None


def _group_header_end(pattern: str, start: int) -> int | None:
    """Index just past ``(?:``, ``(?P<name>``, ``(?i)``, ``(?i:`` ... opening at ``start``."""
    if pattern.startswith("(?P<", start):
        close = pattern.find(">", start)
        return close + 1 if close != -1 else None
    match = re.compile(r"\(\?[a-zA-Z-]*[:)]").match(pattern, start)
    return match.end() if match else None


@dataclass(frozen=True)
class Marked:
    """A pattern rewritten for one W: the compiled rewrite and its capturing markers."""

    regex: Any
    markers: tuple[int, ...]

    def match_on(self, probe: str) -> Any:
        """The rewrite's match on the probe; ``False`` when it used a W the original would
        have had to judge (the pattern's answer may then depend on the pointers)."""
        match = self.regex.search(probe)
        if match is not None and any(match.start(g) != -1 for g in self.markers):
            return False
        return match


class _Unsupported(Exception):
    pass


@lru_cache(maxsize=4096)
def marked(pattern: str, w: str) -> Marked | None:
    """The capturing rewrite of ``pattern`` (as Python's ``re`` reads it, ASCII classes) for
    ``w``; None when ``re`` cannot read it as RE2 does (``python_twin``) or it has constructs
    the argument does not cover."""
    if python_twin(pattern) is False:
        return None
    try:
        parsed = sre_parse.parse(pattern, re.ASCII)
        markers: list[int] = []
        data = _rewrite(parsed, parsed.state.flags, w, parsed.state, markers)
        rewritten = sre_parse.SubPattern(parsed.state, data)
        return Marked(sre_compile.compile(rewritten, parsed.state.flags), tuple(markers))
    except Exception:  # noqa: BLE001 - re's internals raise more than re.error on odd trees;
        return None  # any failure only means "not proven": the per-value check stays


_ATOMS = {sre.LITERAL, sre.NOT_LITERAL, sre.ANY, sre.IN}
_REPEATS = {sre.MAX_REPEAT, sre.MIN_REPEAT}


def _rewrite(items: Any, flags: int, w: str, state: Any, markers: list[int]) -> list:
    out: list = []
    for op, av in items:
        if op in _ATOMS:
            out.extend(_atom(op, av, flags, w, state, markers))
        elif op is sre.BRANCH:
            out.append((op, (av[0], [sre_parse.SubPattern(state, _rewrite(b, flags, w, state, markers)) for b in av[1]])))
        elif op is sre.SUBPATTERN:
            group, add, remove, body = av
            inner = (flags | add) & ~remove
            out.append((op, (group, add, remove, sre_parse.SubPattern(state, _rewrite(body, inner, w, state, markers)))))
        elif op in _REPEATS:
            low, high, body = av
            out.append((op, (low, high, sre_parse.SubPattern(state, _rewrite(body, flags, w, state, markers)))))
        elif op is sre.AT:
            out.append((op, av))  # anchors and \b: W is a word character like every hex digit
        else:
            raise _Unsupported(op)  # lookarounds, backreferences, atomic groups, ...
    return out


def _atom(op: Any, av: Any, flags: int, w: str, state: Any, markers: list[int]) -> list:
    accepted = _accepts(op, _freeze(av), flags & re.IGNORECASE, w)
    hex_hits = sum(c in accepted for c in HEX)
    takes_w = w in accepted
    atom = (op, av)
    w_node = (sre.LITERAL, ord(w))
    if hex_hits == len(HEX):  # all hex alike: W is one more of them
        return [atom] if takes_w else [(sre.BRANCH, (None, [_sub(state, [atom]), _sub(state, [w_node])]))]
    not_w = [(sre.ASSERT_NOT, (1, _sub(state, [w_node])))] if takes_w else []
    if hex_hits == 0:  # no hex at all: a pointer character can never be this atom's
        return not_w + [atom]
    gid = state.opengroup()  # some hex but not all: taking W must be seen
    marker = _sub(state, [w_node])
    state.closegroup(gid, marker)
    markers.append(gid)
    return [(sre.BRANCH, (None, [_sub(state, [(sre.SUBPATTERN, (gid, 0, 0, marker))]), _sub(state, not_w + [atom])]))]


def _sub(state: Any, data: list) -> Any:
    return sre_parse.SubPattern(state, data)


def _freeze(av: Any) -> Any:
    return tuple(_freeze(x) for x in av) if isinstance(av, list) else av


@lru_cache(maxsize=8192)
def _accepts(op: Any, av: Any, ignore_case: int, w: str) -> frozenset[str]:
    """Which of the hex digits and ``w`` one atom accepts, by compiling it alone."""
    state = sre_parse.State()
    state.flags = re.ASCII | ignore_case
    value = list(av) if op is sre.IN else av
    regex = sre_compile.compile(sre_parse.SubPattern(state, [(op, value)]), state.flags)
    return frozenset(c for c in HEX + w if regex.fullmatch(c))


def probe(message: str) -> tuple[str, str] | None:
    """(W, the message with every pointer character after ``0x`` replaced by W), or None when
    no candidate letter is free (then the shape stays pointer-sensitive)."""
    present = set(message.lower())
    w = next((c for c in W_CANDIDATES if c.lower() not in present), None)
    if w is None:
        return None
    chars = list(message)
    for match in POINTER.finditer(message):
        chars[match.start() + 2:match.end()] = w * (match.end() - match.start() - 2)
    return w, "".join(chars)
