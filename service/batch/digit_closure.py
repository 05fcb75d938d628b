"""Decide which regexes can tell two lines apart that differ only in their digits.

The batch engine keys its caches by a line's *shape*: the line with every ASCII digit replaced
by ``0``. Lines of one shape have the same length and the same non-digit characters, so a regex
in which every construct that accepts one digit accepts all ten ("digit-closed": ``\\d``,
``\\w``, ``[0-9a-f]``, ``.``; but no literal ``1`` and no ``[1-9]``) matches all lines of a
shape at the same spans, or none of them. The normalizer's prefix rules and masks are
digit-closed; KB patterns mostly are. For those that are not, ``digit_closure`` rewrites the
pattern into a digit-closed *superset*: if it does not match a shape (the ``0``-translated
text), the original cannot match any line of that shape, and the shape is still safe to cache.
"""

from __future__ import annotations

DIGITS = "0123456789"
SHAPE_TABLE = bytes.maketrans(b"123456789", b"000000000")


def line_shape(data: bytes) -> bytes:
    """The cache key of a line (or of a whole buffer of lines: translation keeps newlines)."""
    return data.translate(SHAPE_TABLE)


def _class_end(pattern: str, start: int) -> int:
    """Index just past the ``]`` closing the character class that opens at ``start``."""
    i = start + 1
    if i < len(pattern) and pattern[i] == "^":
        i += 1
    if i < len(pattern) and pattern[i] == "]":  # a leading ] is a literal
        i += 1
    while i < len(pattern):
        char = pattern[i]
        if char == "\\":
            i += 2
            continue
        if char == "[" and pattern.startswith("[:", i):
            close = pattern.find(":]", i + 2)
            i = close + 2 if close != -1 else i + 1
            continue
        if char == "]":
            return i + 1
        i += 1
    raise ValueError("unterminated character class")


_ESCAPE_DIGITS = {"d": DIGITS, "w": DIGITS, "S": DIGITS, "D": "", "W": "", "s": ""}
_POSIX_DIGITS = {"digit": DIGITS, "alnum": DIGITS, "xdigit": DIGITS, "word": DIGITS, "graph": DIGITS, "print": DIGITS}


def _hex_escape(pattern: str, i: int) -> tuple[str, int] | None:
    """Decode ``\\xNN`` / ``\\x{N..}`` at ``pattern[i]`` into (character, length)."""
    if pattern.startswith("\\x{", i):
        close = pattern.find("}", i)
        if close == -1:
            return None
        digits, length = pattern[i + 3:close], close + 1 - i
    else:
        digits, length = pattern[i + 2:i + 4], 4
    try:
        return chr(int(digits, 16)), length
    except ValueError:
        return None


def _class_digits(body: str) -> set[str] | None:
    """The digits a class body (between the brackets, without ``^``) accepts; None if unsure."""
    found: set[str] = set()
    i = 0
    previous: str | None = None  # last single character, for ranges
    while i < len(body):
        char = body[i]
        if char == "[" and body.startswith("[:", i):
            close = body.find(":]", i)
            if close == -1:
                return None
            found |= set(_POSIX_DIGITS.get(body[i + 2:close].lstrip("^"), ""))
            i, previous = close + 2, None
            continue
        if char == "-" and previous is not None and i + 1 < len(body):
            high = body[i + 1]
            step = 2
            if high == "\\":
                decoded = _hex_escape(body, i + 1)
                if decoded is None:
                    return None
                high, step = decoded[0], 1 + decoded[1]
            found |= {d for d in DIGITS if previous <= d <= high}
            i, previous = i + step, None
            continue
        if char == "\\":
            nxt = body[i + 1] if i + 1 < len(body) else ""
            if nxt in _ESCAPE_DIGITS:
                found |= set(_ESCAPE_DIGITS[nxt])
                i, previous = i + 2, None
                continue
            if nxt in "xX":
                decoded = _hex_escape(body, i)
                if decoded is None:
                    return None
                char, step = decoded
            elif nxt in DIGITS or nxt in "pPu":
                return None  # octal or Unicode-class escapes: not reasoned about
            else:
                char, step = nxt, 2
            if char in DIGITS:
                found.add(char)
            i, previous = i + step, char
            continue
        if char in DIGITS:
            found.add(char)
        i, previous = i + 1, char
    return found


ZERO_X_HAZARD = "[1-9]x[0-9a-fA-F]"


NEVER = "[^\\s\\S]"  # a class no character is in


def digit_closure(pattern: str, zero_x: bool = False, interior: bool = False) -> str | None:
    """A digit-closed regex matching (at least) every shape of every line ``pattern`` matches.

    Returns the pattern unchanged when it is already digit-closed, and None when a construct
    cannot be reasoned about (then callers must treat every line as digit-sensitive).

    ``zero_x``: treat a literal ``0x`` as closed. Only sound for callers that send every line
    containing ``ZERO_X_HAZARD`` (a non-zero digit before ``x`` and a hex digit) down a slow
    path: on the other lines a digit before ``x``-and-hex is always ``0``, so ``0x[0-9a-f]+``
    (NCCL's comm pointers) cannot tell same-shape lines apart.

    ``interior``: the other side instead, a digit-closed *subset*: every digit-specific atom
    (a literal digit, the digit of an escape) becomes a class no character is in, so the
    regex matches only by paths that meet no such atom. If it matches a line, ``pattern``
    matches every line of that line's shape. A class that accepts some digits only gives
    None (no subset is built for it).
    """
    out: list[str] = []
    digit = NEVER if interior else "\\d"
    i = 0
    while i < len(pattern):
        char = pattern[i]
        if char == "\\":
            if i + 1 >= len(pattern):
                return None
            nxt = pattern[i + 1]
            if nxt in "xX":
                decoded = _hex_escape(pattern, i)
                if decoded is None:
                    return None
                out.append(digit if decoded[0] in DIGITS else pattern[i:i + decoded[1]])
                i += decoded[1]
                continue
            if nxt in DIGITS or nxt in "pPu" or nxt == "Q":
                return None  # backreferences, octal, Unicode classes, quoting: not handled
            out.append(pattern[i:i + 2])
            i += 2
            continue
        if char == "[":
            try:
                end = _class_end(pattern, i)
            except ValueError:
                return None
            negated = pattern.startswith("[^", i)
            body = pattern[i + (2 if negated else 1):end - 1]
            digits = _class_digits(body)
            if digits is None:
                return None
            if len(digits) in (0, len(DIGITS)):
                out.append(pattern[i:end])  # all digits in, or all out: already closed
            elif negated or interior:
                return None  # excludes some digits only, e.g. [^1]; or no subset wanted
            else:
                out.append(pattern[i:end - 1] + "0-9]")  # now accepts every digit
            i = end
            continue
        if char == "{":
            close = pattern.find("}", i)
            quantifier = pattern[i + 1:close] if close != -1 else ""
            if close != -1 and quantifier and all(c in DIGITS + "," for c in quantifier):
                out.append(pattern[i:close + 1])  # a repetition count, not text
                i = close + 1
                continue
            out.append(char)  # RE2 reads a brace that is not a quantifier literally
            i += 1
            continue
        if char == "(" and pattern.startswith("(?P<", i):
            close = pattern.find(">", i)
            if close == -1:
                return None
            out.append(pattern[i:close + 1])  # a group name may contain digits
            i = close + 1
            continue
        if char in DIGITS:
            if zero_x and char == "0" and pattern.startswith("x[0-9a-f" if interior else "x", i + 1):
                out.append(char)  # (a subset keeps it only before a hex class, as the hazard reads)
            else:
                out.append(digit)
            i += 1
            continue
        out.append(char)
        i += 1
    return "".join(out)


def is_digit_closed(pattern: str) -> bool:
    return digit_closure(pattern) == pattern


def digit_hazard(pattern: str, unanchored: bool = False) -> str | None:
    """A regex that finds where ``pattern`` would treat a line differently from its shape-mates.

    ``digit_closure`` widens each digit-specific atom (a literal ``0``, a class like ``[1-9]``)
    to all digits. A line can differ from another of its shape only where one of those atoms
    meets a digit the original atom rejects; this regex is the alternation, over the widened
    atoms, of the closure with that one atom replaced by the digits it rejects. Lookarounds and
    anchors are kept, so callers that apply it to raw lines (rather than the text the pattern
    really sees) should treat a hit as "go the slow way", never as proof of a difference.
    Returns None when the pattern is digit-closed (no hazard), and "" when unsure. With
    ``unanchored``, anchors and word boundaries are dropped (which only widens the regex), for
    searching whole lines when the pattern really runs on a part of them.
    """
    closure = digit_closure(pattern)
    if closure is None:
        return ""
    if closure == pattern:
        return None
    variants: list[str] = []
    # Re-walk the pattern, emitting for each widened atom one variant with the complement.
    pieces = _atoms(pattern)
    if pieces is None:
        return ""
    if unanchored:
        pieces = [("", None, "") if o in ("^", "$", "\\b", "\\B", "\\A", "\\z") else (o, w, r) for o, w, r in pieces]
    for index, (original, widened, rejected) in enumerate(pieces):
        if widened is None:
            continue
        parts = [w if w is not None and i != index else (o if w is None else rejected) for i, (o, w, _) in enumerate(pieces)]
        variants.append("".join(parts))
    return "|".join(f"(?:{v})" for v in variants)


def _atoms(pattern: str) -> list[tuple[str, str | None, str]] | None:
    """Split ``pattern`` into (original text, widened text or None, rejected-digit class)."""
    out: list[tuple[str, str | None, str]] = []
    i = 0
    while i < len(pattern):
        char = pattern[i]
        if char == "\\":
            nxt = pattern[i + 1] if i + 1 < len(pattern) else ""
            if nxt in "xX":
                decoded = _hex_escape(pattern, i)
                if decoded is None:
                    return None
                text = pattern[i:i + decoded[1]]
                if decoded[0] in DIGITS:
                    out.append((text, "\\d", _rejected({decoded[0]})))
                else:
                    out.append((text, None, ""))
                i += decoded[1]
                continue
            out.append((pattern[i:i + 2], None, ""))
            i += 2
            continue
        if char == "[":
            end = _class_end(pattern, i)
            negated = pattern.startswith("[^", i)
            body = pattern[i + (2 if negated else 1):end - 1]
            digits = _class_digits(body) or set()
            text = pattern[i:end]
            if 0 < len(digits) < len(DIGITS) and not negated:
                out.append((text, text[:-1] + "0-9]", _rejected(digits)))
            else:
                out.append((text, None, ""))
            i = end
            continue
        if char == "{":
            close = pattern.find("}", i)
            quantifier = pattern[i + 1:close] if close != -1 else ""
            if close != -1 and quantifier and all(c in DIGITS + "," for c in quantifier):
                out.append((pattern[i:close + 1], None, ""))
                i = close + 1
                continue
        if char == "(" and pattern.startswith("(?P<", i):
            close = pattern.find(">", i)
            out.append((pattern[i:close + 1], None, ""))
            i = close + 1
            continue
        if char in DIGITS:
            out.append((char, "\\d", _rejected({char})))
        else:
            out.append((char, None, ""))
        i += 1
    return out


def _rejected(accepted: set[str]) -> str:
    return "[" + "".join(d for d in DIGITS if d not in accepted) + "]"
