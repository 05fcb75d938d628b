"""A message printed with newlines inside reaches the log as several lines.

torchrun's failure report (``Root Cause (first observed failure):`` then ``time : ...``, ``rank
: ...`` on lines of their own), ProcessGroupNCCL's option dump, DeepSpeed's and mmengine's
multi-line warnings: one log call, one record, but a reader pastes one line of it. The record's
own pattern is the whole message (newlines match any blank run), which answers a message that
was folded onto one line but never one of its lines.

``line_parts`` derives, from a stored record alone (its ``format`` and ``pattern``), one record
per printed line: id ``<record>.line<k>``, the line's part of the format, a pattern built the way
the extractor builds one (``formats.to_pattern``) from the conversions the record's pattern
already holds, the record's versions and text. Nothing is stored: the parts follow the record
through rebuilds and text imports. A line with too little fixed text to be recognised by
(``extract.meaningful``: ``  {rank}``, ``{name}:``) is left out; so is the first line when it
is the whole fixed text of the message (the record already answers it).
"""

from __future__ import annotations

import re

from indexer.catalog.extract import meaningful
from indexer.catalog.formats import _KIND_REGEX, Piece, Slot, to_pattern

PART_MARK = ".line"

# what ``to_pattern`` writes for each kind, padded or not, and for the greedy last string
_KIND_OF_REGEX: dict[str, tuple[str, bool]] = {}
for _kind, _rx in _KIND_REGEX.items():
    _KIND_OF_REGEX.setdefault(_rx, (_kind, False))
    _KIND_OF_REGEX.setdefault(r"\s*" + _rx + (r"\s*" if _kind in ("str", "any") else ""), (_kind, True))
_KIND_OF_REGEX.setdefault(".*", ("str", False))
_KIND_OF_REGEX.setdefault(r"\s*.*\s*", ("str", True))


def _groups_in_order(pattern: str) -> list[tuple[str, str]] | None:
    """(name, regex) of each named group, in order; None if the pattern is not what the
    extractor writes (nested named groups, a hand edit the scan cannot follow)."""
    out = []
    i = 0
    n = len(pattern)
    while i < n:
        if pattern[i] == "\\":
            i += 2
            continue
        m = re.compile(r"\(\?P<(\w+)>").match(pattern, i)
        if not m:
            i += 1
            continue
        depth, j = 1, m.end()
        while j < n and depth:
            c = pattern[j]
            if c == "\\":
                j += 2
                continue
            if c == "(":
                depth += 1
            elif c == ")":
                depth -= 1
            j += 1
        if depth:
            return None
        body = pattern[m.end():j - 1]
        if "(?P<" in body:
            return None
        out.append((m.group(1), body))
        i = j
    return out


def _format_pieces(fmt: str) -> list[tuple[str, str | None]] | None:
    """The display format cut into (literal, None) and (arg, 'slot') pieces; ``{{``/``}}``
    are literal braces."""
    out: list[tuple[str, str | None]] = []
    buf = []
    i, n = 0, len(fmt)
    while i < n:
        if fmt.startswith("{{", i) or fmt.startswith("}}", i):
            buf.append(fmt[i])
            i += 2
            continue
        if fmt[i] == "{":
            depth, j = 1, i + 1
            while j < n and depth:
                depth += {"{": 1, "}": -1}.get(fmt[j], 0)
                j += 1
            if depth:
                return None
            if buf:
                out.append(("".join(buf), None))
                buf = []
            out.append((fmt[i + 1:j - 1], "slot"))
            i = j
            continue
        buf.append(fmt[i])
        i += 1
    if buf:
        out.append(("".join(buf), None))
    return out


def split_format(fmt: str, pattern: str) -> list[tuple[list[Piece], list[str]]] | None:
    """The printed lines of a multi-line format: for each, its pieces and the record's group
    names of its conversions. None for a one-line format or one that cannot be read back."""
    body = fmt.rstrip("\n ")
    if "\n" not in body.lstrip("\n "):
        return None
    pieces = _format_pieces(body)
    groups = _groups_in_order(pattern)
    if pieces is None or groups is None:
        return None
    slots = [p for p in pieces if p[1]]
    if len(slots) != len(groups):
        return None
    lines: list[tuple[list[Piece], list[str]]] = [([], [])]
    g = iter(groups)
    for text, kind in pieces:
        if kind:
            name, rx = next(g)
            known = _KIND_OF_REGEX.get(rx)
            if known is None:
                return None
            lines[-1][0].append(Slot(known[0], text, known[1]))
            lines[-1][1].append(name)
            continue
        first, *rest = text.split("\n")
        _literal(lines[-1], first)
        for chunk in rest:
            lines.append(([], []))
            _literal(lines[-1], chunk)
    return lines


# Python logging's mapping form, ``logger.info("[%(role)s] ...", {"role": ...})``: the
# extractor keeps ``%(role)s`` as literal text; a line part reads it as the value it prints
_MAPPING = re.compile(r"%\((\w+)\)[-#0 +]*\d*(?:\.\d+)?([sdifrx])")


def _literal(line: tuple[list[Piece], list[str]], text: str) -> None:
    pos = 0
    for m in _MAPPING.finditer(text):
        if m.start() > pos:
            line[0].append(text[pos:m.start()])
        kind = {"d": "int", "i": "int", "f": "float", "x": "hex"}.get(m.group(2), "str")
        line[0].append(Slot(kind, m.group(1)))
        line[1].append(re.sub(r"\W", "_", m.group(1)).lower())
        pos = m.end()
    if pos < len(text):
        line[0].append(text[pos:])


def line_parts(rec: dict) -> list[dict]:
    """One derived record (a plain dict of ``CatalogRecord`` fields) per recognisable printed
    line of a multi-line record."""
    lines = split_format(rec["format"], rec["pattern"])
    if not lines:
        return []
    printed = [(k, p, names) for k, (p, names) in enumerate(lines, 1)
               if any(isinstance(x, Slot) or x.strip() for x in p)]
    if len(printed) < 2:
        return []
    out = []
    first = printed[0][0]
    for k, pieces, names in printed:
        if not meaningful(tuple(pieces)):
            continue
        # a later line starts its own log line; the first starts where the record does, after
        # an exception's class name ("torch.cuda.DeferredCudaCallError: ...") when it is raised
        pattern, found = to_pattern(list(pieces), anchor_start=k != first or rec["pattern"].startswith("^"))
        # the record's group names, so that its text's {placeholders} fill from this line
        for (made, _arg), name in zip(found, names):
            pattern = pattern.replace(f"(?P<{made}>", f"(?P<\0{name}>", 1)
        pattern = pattern.replace("\0", "")
        groups = {name: rec["groups"].get(name, arg) for (_made, arg), name in zip(found, names)}
        text_fmt = "".join(p if isinstance(p, str) else "{" + p.arg + "}" for p in pieces).strip()
        part = dict(rec)
        # a part answers unless that line itself takes another program's message
        part.pop("unrelated", None)
        part.pop("unrelated_lines", None)
        if (rec.get("unrelated_lines") or {}).get(f"{PART_MARK[1:]}{k}"):
            part["unrelated"] = rec["unrelated_lines"][f"{PART_MARK[1:]}{k}"]
        part.update(
            id=f"{rec['id']}{PART_MARK}{k}",
            format=text_fmt,
            pattern=pattern,
            groups=groups,
            matchable=True,
            example={"line": _example(pieces, names), "constructed": True},
        )
        for key in ("title", "explanation", "action"):
            if rec.get(key):
                part[key] = {lang: _unfilled_as_names(v, set(groups)) for lang, v in rec[key].items()}
        out.append(part)
    return out


_SAMPLE = {"int": "3", "uint": "3", "hex": "1f", "ptr": "0x7f3a2c000000", "float": "1.5", "char": "x"}


def _example(pieces: list[Piece], names: list[str]) -> str:
    """A line this part prints, with stand-in values (numbers for numeric conversions, the
    group's name for strings), as ``formats.example_line`` fills a whole format."""
    it = iter(names)
    out = []
    for p in pieces:
        if isinstance(p, str):
            out.append(p)
        else:
            name = next(it)
            out.append(_SAMPLE.get(p.kind, name))
    return re.sub(r"\s+", " ", "".join(out)).strip()


def _unfilled_as_names(text: str, have: set[str]) -> str:
    """A placeholder of a group on another line of the message prints as its name."""
    return re.sub(r"\{(\w+)\}", lambda m: m.group(0) if m.group(1) in have or m.group(1).endswith("_decoded")
                  and m.group(1)[:-8] in have else f"`{m.group(1)}`", text)


_PART_ID = re.compile(re.escape(PART_MARK) + r"\d+$")


def is_line_part(record_id: str) -> bool:
    """Whether an id names a derived line part (``<record>.line<k>``)."""
    return _PART_ID.search(record_id) is not None
