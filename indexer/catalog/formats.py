"""Turn a message format, as written in source, into the RE2 pattern of the line it prints.

A format is a list of *pieces*: literal text, or a conversion (``%d``, ``{}``, an f-string
field, a C++ ``<< expr``) with the name of the argument that fills it. One representation
serves printf, ``str.format``, f-strings and stream chains, so every extractor only has to
cut its syntax into pieces and every record gets its pattern, its display format and its
constructed example from the same code.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

# What a conversion can print. `kind` picks the regex and the sample value of an example.
_KIND_REGEX = {
    "int": r"-?\d+",
    "uint": r"\d+",
    "hex": r"(?:0[xX])?[0-9a-fA-F]+",
    "ptr": r"(?:0x[0-9a-fA-F]+|\(nil\)|0)",
    "float": r"-?(?:\d+(?:\.\d*)?(?:[eE][-+]?\d+)?|inf|nan)",
    "char": r".",
    "str": r".*?",
    "any": r".*?",
    "word": r"\S+",  # a name without spaces (a network interface)
    "cfunc": r"[a-z_][A-Za-z0-9_]*",  # Slurm's __func__: its C functions are snake_case
    "cident": r"[A-Za-z_][A-Za-z0-9_]*",  # any C function name (the NVIDIA RM's are camelCase)
    "path": r"\S+?",  # a file path without blanks
}
_KIND_SAMPLE = {
    "int": "3", "uint": "3", "hex": "1f", "ptr": "0x7f3a2c000000", "float": "1.5",
    "char": "x", "str": "VALUE", "any": "VALUE", "word": "eth0", "cfunc": "func", "cident": "osFunc",
    "path": "/path/to/script",
}


@dataclass(frozen=True)
class Slot:
    """One conversion: what it prints (`kind`), the argument expression, padded or not."""

    kind: str
    arg: str = ""
    padded: bool = False


Piece = str | Slot


# ---- printf --------------------------------------------------------------------------------
PRINTF_SPEC = re.compile(
    r"%(?P<flags>[-+ #0']*)(?P<width>\*|\d+)?(?:\.(?P<prec>\*|\d+))?"
    r"(?P<len>hh|h|ll|l|L|z|j|t|q|I64|I32)?(?P<conv>[diouxXeEfFgGaAcspnr%])"
)


# Slurm's log functions add %m (slurm_strerror(errno)) and %p<letter>: %pJ a job ("JobId=12"),
# %ps/%pS a step ("StepId=12.0"), %pI a job id, %pA an address, %pd/%pD data.
PRINTF_SPEC_M = re.compile(r"%(?P<m>m)|%p(?P<slurm>[AdDIJsS])|" + PRINTF_SPEC.pattern)


def printf_pieces(fmt: str, args: list[str], strerror_m: bool = False) -> list[Piece]:
    """Cut a printf format into pieces, naming each conversion after its argument.

    ``strerror_m``: ``%m`` prints ``strerror(errno)`` and takes no argument (glibc, and
    Slurm's own log functions, which print ``slurm_strerror(errno)``)."""
    pieces: list[Piece] = []
    pos = 0
    arg_iter = iter(args)
    spec = PRINTF_SPEC_M if strerror_m else PRINTF_SPEC
    for m in spec.finditer(fmt):
        pieces.append(fmt[pos:m.start()])
        pos = m.end()
        if strerror_m and m.group("m"):
            pieces.append(Slot("str", "strerror(errno)"))
            continue
        if strerror_m and m.group("slurm"):
            pieces.append(Slot("str", next(arg_iter, "")))
            continue
        conv = m.group("conv")
        if conv == "%":
            pieces.append("%")
            continue
        if m.group("width") == "*":
            next(arg_iter, "")
        if m.group("prec") == "*":
            next(arg_iter, "")
        arg = next(arg_iter, "")
        if conv == "n":
            continue
        kind = {
            "d": "int", "i": "int", "u": "uint", "o": "uint", "x": "hex", "X": "hex",
            "c": "char", "s": "str", "p": "ptr", "r": "str",  # %r: Python's repr
        }.get(conv, "float")
        padded = bool(m.group("width") and m.group("width") != "*" and "0" not in (m.group("flags") or ""))
        pieces.append(Slot(kind, arg, padded))
    pieces.append(fmt[pos:])
    return _merge(pieces)


# ---- str.format / fmt::format / c10 "{}" ---------------------------------------------------
BRACE_FIELD = re.compile(r"\{\{|\}\}|\{(?P<name>[^{}:!]*)(?:![rsa])?(?::(?P<spec>[^{}]*))?\}")


def brace_pieces(fmt: str, args: list[str], kwargs: dict[str, str] | None = None) -> list[Piece]:
    """Cut a ``str.format``/``fmt::format`` format into pieces."""
    kwargs = kwargs or {}
    pieces: list[Piece] = []
    pos = 0
    auto = 0
    for m in BRACE_FIELD.finditer(fmt):
        pieces.append(fmt[pos:m.start()])
        pos = m.end()
        token = m.group(0)
        if token in ("{{", "}}"):
            pieces.append(token[0])
            continue
        name = (m.group("name") or "").strip()
        if name == "":
            arg = args[auto] if auto < len(args) else ""
            auto += 1
        elif name.isdigit():
            arg = args[int(name)] if int(name) < len(args) else ""
        else:
            base = re.split(r"[.\[]", name, maxsplit=1)[0]
            arg = kwargs.get(base, name)
        spec = m.group("spec") or ""
        kind = "any"
        if spec[-1:] in "dn" and spec:
            kind = "int"
        elif spec[-1:] in "eEfFgG%" and spec:
            kind = "float"
        elif spec[-1:] in "xX" and spec:
            kind = "hex"
        pieces.append(Slot(kind, arg, bool(re.match(r"[<>^]?\d", spec))))
    pieces.append(fmt[pos:])
    return _merge(pieces)


def _merge(pieces: list[Piece]) -> list[Piece]:
    out: list[Piece] = []
    for piece in pieces:
        if isinstance(piece, str):
            if not piece:
                continue
            if out and isinstance(out[-1], str):
                out[-1] += piece
                continue
        out.append(piece)
    return out


def merge_pieces(parts: list[list[Piece] | Piece]) -> list[Piece]:
    flat: list[Piece] = []
    for part in parts:
        flat.extend(part if isinstance(part, list) else [part])
    return _merge(flat)


# ---- what every record is derived from ----------------------------------------------------
def display_format(pieces: list[Piece]) -> str:
    """The format as a reader sees it: literals as printed, conversions as ``{arg}``."""
    out = []
    for piece in pieces:
        if isinstance(piece, str):
            out.append(piece.replace("{", "{{").replace("}", "}}"))
        else:
            out.append("{" + (piece.arg.strip() or piece.kind) + "}")
    return "".join(out)


def literal_text(pieces: list[Piece]) -> str:
    return "".join(p for p in pieces if isinstance(p, str))


def literal_weight(pieces: list[Piece]) -> int:
    """How much fixed text a format has: alphanumeric literal characters."""
    return sum(ch.isalnum() for ch in literal_text(pieces))


_IDENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_SKIP_NAMES = {
    "self", "c_str", "str", "get", "data", "size", "value", "std", "c10", "this", "to_string",
    "toString", "repr", "format", "join", "strip", "lower", "upper", "item", "ptr",
    "first", "second", "load", "what", "int", "float", "len", "type", "cast",
}


def group_name(arg: str, used: set[str]) -> str:
    """A regex group name from an argument expression: its most telling identifier."""
    arg = re.sub(r'"(?:\\.|[^"\\])*"', "", arg)
    idents = [i for i in _IDENT.findall(arg) if i not in _SKIP_NAMES and not i.isupper()]
    if not idents:
        idents = [i for i in _IDENT.findall(arg) if i not in _SKIP_NAMES]
    base = idents[-1] if idents else "value"
    # calls name their result after the function: ncclGetErrorString(res) -> errorstring
    call = re.match(r"\s*(?:[\w:]+(?:->|\.|::))*(\w+)\s*\(", arg)
    if call and call.group(1) not in _SKIP_NAMES:
        base = call.group(1)
    name = re.sub(r"(?<=[a-z0-9])(?=[A-Z])", "_", base).lower().strip("_")
    name = re.sub(r"[^a-z0-9_]", "_", name) or "value"
    if name[0].isdigit():
        name = "v_" + name
    name = name[:40]
    candidate, n = name, 2
    while candidate in used:
        candidate, n = f"{name}_{n}", n + 1
    used.add(candidate)
    return candidate


def to_pattern(pieces: list[Piece], anchor_start: bool = True) -> tuple[str, list[tuple[str, str]]]:
    """The RE2 pattern of the printed line, and (group, argument) for every named group.

    Whitespace in literals matches any run of blanks (terminals and pastes fold them);
    a trailing newline is dropped (the line reader already split on it); the last string
    conversion is greedy so that it takes the rest of the line.
    """
    used: set[str] = set()
    groups: list[tuple[str, str]] = []
    out: list[str] = []
    last_slot = max((i for i, p in enumerate(pieces) if isinstance(p, Slot)), default=-1)
    for i, piece in enumerate(pieces):
        if isinstance(piece, str):
            text = piece.replace("\r", "")
            if i == len(pieces) - 1:
                text = text.rstrip("\n ")
            chunks = re.split(r"(\s+)", text)
            for chunk in chunks:
                if not chunk:
                    continue
                if chunk.isspace():
                    # a message's leading blanks are cut by the prefix normalizer and by pastes
                    out.append(r"\s+" if "\n" not in chunk and out else r"\s*")
                else:
                    out.append(re2_escape(chunk))
            continue
        regex = _KIND_REGEX[piece.kind]
        if i == last_slot and piece.kind in ("str", "any") and i >= len(pieces) - 2:
            regex = ".*"
            if out and out[-1] == r"\s+":
                out[-1] = r"\s*"  # an empty last value leaves the blank before it at the line's end, cut
        if piece.padded:
            regex = r"\s*" + regex + r"\s*" if piece.kind in ("str", "any") else r"\s*" + regex
        name = group_name(piece.arg, used)
        groups.append((name, piece.arg))
        out.append(f"(?P<{name}>{regex})")
    body = "".join(out)
    return ("^" if anchor_start else "") + body + r"\s*$", groups


def re2_escape(text: str) -> str:
    return re.sub(r"([\\.^$|?*+()\[\]{}])", r"\\\1", text)


def example_line(pieces: list[Piece]) -> str:
    """A line the format can print, with sample values: marked constructed by the caller."""
    out = []
    for piece in pieces:
        if isinstance(piece, str):
            out.append(piece)
        else:
            sample = _KIND_SAMPLE[piece.kind]
            if piece.kind in ("str", "any"):
                name = group_name(piece.arg, set())
                sample = name if name != "value" else "x"
            out.append(sample)
    text = "".join(out).replace("\r", "")
    return re.sub(r"\s+", " ", text).strip()
