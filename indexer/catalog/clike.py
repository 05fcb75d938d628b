"""Find log calls in C, C++ and CUDA source without a compiler.

The scanner blanks comments and string contents (keeping offsets), so braces and call names
are found in code only; it tracks function bodies by brace depth to name the enclosing
function (or the ``#define`` a call sits in), and parses each call's arguments with string
literals, adjacent-literal concatenation and ``PRIu64``-style macros understood.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field

from indexer.catalog.formats import Piece, Slot, merge_pieces, printf_pieces, brace_pieces

_PRI = {
    "PRIu64": "lu", "PRId64": "ld", "PRIx64": "lx", "PRIX64": "lX", "PRIi64": "li",
    "PRIu32": "u", "PRId32": "d", "PRIx32": "x", "PRIu16": "u", "PRIu8": "u", "PRIxPTR": "lx",
    "PRIuPTR": "lu", "PRIdPTR": "ld", "PRIu": "u", "SCNu64": "lu",
}
_KEYWORDS = {"if", "for", "while", "switch", "catch", "return", "sizeof", "do", "else", "case", "defined"}


@dataclass
class Call:
    name: str            # the macro or function called (INFO, WARN, TORCH_CHECK, LOG ...)
    args: list[str]      # raw argument texts, comments removed
    offset: int
    line: int
    function: str
    extra: dict = field(default_factory=dict)


_DIRECTIVE = re.compile(r"^[ \t]*#[ \t]*(if|ifdef|ifndef|elif|else|endif)\b(.*)$", re.M)


def dead_blanked(text: str, defined: Mapping[str, bool] | None = None) -> str:
    """``text`` with the lines of conditional branches no build compiles made blank, offsets and
    newlines kept, so nothing in them is read as printing. A branch is dead when its condition
    is known false (``#if 0``; with ``defined``, a macro the build is known to define or not:
    ``{"__HIP_PLATFORM_AMD__": True}`` for RCCL) or an earlier branch of its chain is known
    true (the ``#else`` of ``#if 1``). Anything else (``CUDART_VERSION >= 11030``, a macro not
    in ``defined``) is unknown, and unknown branches are kept. Slurm keeps old code under
    ``#if 0``; RCCL keeps NCCL's CUDA code in the ``#else`` of ``#if defined(__HIP_PLATFORM_AMD__)``."""
    if "#" not in text:
        return text
    if not defined and not re.search(r"#[ \t]*(?:el)?if[ \t]+\(?\s*\d", text):
        return text
    defined = defined or {}
    out = []
    # one frame per open conditional: [dead above it, a branch so far known taken, this branch dead]
    stack: list[list[bool]] = []
    dead_from = None  # offset where the current dead region began

    def dead() -> bool:
        return bool(stack) and (stack[-1][0] or stack[-1][2])

    for m in _DIRECTIVE.finditer(text):
        word, rest = m.group(1), m.group(2)
        was_dead = dead()
        if word in ("if", "ifdef", "ifndef"):
            cond = _condition(word, rest, defined)
            stack.append([was_dead, cond is True, cond is False])
        elif word in ("elif", "else") and stack:
            frame = stack[-1]
            cond = True if word == "else" else _condition("if", rest, defined)
            frame[2] = frame[1] or cond is False
            frame[1] = frame[1] or cond is True
        elif word == "endif" and stack:
            stack.pop()
        now_dead = dead()
        if now_dead and not was_dead:
            dead_from = m.end()
        elif was_dead and not now_dead and dead_from is not None:
            out.append((dead_from, m.start()))
            dead_from = None
    if dead_from is not None:
        out.append((dead_from, len(text)))
    if not out:
        return text
    pieces, at = [], 0
    for start, end in out:
        pieces.append(text[at:start])
        pieces.append(re.sub(r"[^\n]", " ", text[start:end]))
        at = end
    pieces.append(text[at:])
    return "".join(pieces)


def _condition(word: str, rest: str, defined: Mapping[str, bool]) -> bool | None:
    """A directive's condition: True, False, or None when the build decides it."""
    rest = re.sub(r"/\*.*?\*/|//.*", " ", rest).strip()
    if word in ("ifdef", "ifndef"):
        name = rest.split()[0] if rest.split() else ""
        known = defined.get(name)
        return known if known is None or word == "ifdef" else not known
    return _expression(rest, defined)


def _split_top(expr: str, op: str) -> list[str]:
    parts, depth, at, i = [], 0, 0, 0
    while i < len(expr):
        c = expr[i]
        if c == "(":
            depth += 1
        elif c == ")":
            depth -= 1
        elif depth == 0 and expr.startswith(op, i):
            parts.append(expr[at:i])
            i += len(op)
            at = i
            continue
        i += 1
    parts.append(expr[at:])
    return parts


def _balanced(expr: str) -> bool:
    depth = 0
    for c in expr:
        depth += (c == "(") - (c == ")")
        if depth < 0:
            return False
    return depth == 0


def _expression(expr: str, defined: Mapping[str, bool]) -> bool | None:
    """Three-valued ``||``/``&&``/``!`` over ``defined(X)``, integer literals, parentheses and
    comparisons of those with a macro known not to be defined (which counts as 0, as the
    preprocessor takes it); any other operand (a defined macro's value) is unknown."""
    expr = expr.strip()
    ors = _split_top(expr, "||")
    if len(ors) > 1:
        values = [_expression(p, defined) for p in ors]
        return True if True in values else (False if all(v is False for v in values) else None)
    ands = _split_top(expr, "&&")
    if len(ands) > 1:
        values = [_expression(p, defined) for p in ands]
        return False if False in values else (True if all(v is True for v in values) else None)
    if expr.startswith("!") and not expr.startswith("!="):
        value = _expression(expr[1:], defined)
        return None if value is None else not value
    if expr.startswith("(") and expr.endswith(")") and _balanced(expr[1:-1]):
        return _expression(expr[1:-1], defined)
    m = re.fullmatch(r"defined\s*(?:\(\s*(\w+)\s*\)|\s(\w+))", expr)
    if m:
        return defined.get(m.group(1) or m.group(2))
    m = re.fullmatch(r"(\w+)\s*(==|!=|>=|<=|>|<)\s*(\w+)", expr)
    if m:
        left, right = _value(m.group(1), defined), _value(m.group(3), defined)
        if left is None or right is None:
            return None
        return {"==": left == right, "!=": left != right, ">=": left >= right, "<=": left <= right,
                ">": left > right, "<": left < right}[m.group(2)]
    value = _value(expr, defined)
    return None if value is None else value != 0


def _value(token: str, defined: Mapping[str, bool]) -> int | None:
    """An operand's value: an integer literal, or 0 for a macro known not to be defined (the
    preprocessor's rule for an unknown identifier); None when the build decides it."""
    m = re.fullmatch(r"(\d+)[uUlL]*", token)
    if m:
        return int(m.group(1))
    if re.fullmatch(r"[A-Za-z_]\w*", token) and defined.get(token) is False:
        return 0
    return None


def blank(text: str) -> tuple[str, str]:
    """(text without comments, code without comments or string contents), same offsets; the
    body of an ``#if 0`` block is blank in both (``dead_blanked``)."""
    text = dead_blanked(text)
    no_comments = []
    code = []
    i, n = 0, len(text)
    while i < n:
        c = text[i]
        if text.startswith("//", i):
            j = text.find("\n", i)
            j = n if j < 0 else j
            pad = " " * (j - i)
            no_comments.append(pad)
            code.append(pad)
            i = j
        elif text.startswith("/*", i):
            j = text.find("*/", i + 2)
            j = n if j < 0 else j + 2
            pad = re.sub(r"[^\n]", " ", text[i:j])
            no_comments.append(pad)
            code.append(pad)
            i = j
        elif c == '"' or (c == "'" and not (i > 0 and (text[i - 1].isalnum()))):
            raw = _raw_string(text, i)
            j = raw if raw else _end_of_literal(text, i, c)
            no_comments.append(text[i:j])
            code.append(c + re.sub(r"[^\n]", " ", text[i + 1:j - 1]) + c if j - i >= 2 else text[i:j])
            i = j
        else:
            no_comments.append(c)
            code.append(c)
            i += 1
    return "".join(no_comments), "".join(code)


def _raw_string(text: str, i: int) -> int:
    if i > 0 and text[i - 1] == "R":
        m = re.match(r'"([^()\\ ]{0,16})\(', text[i:])
        if m:
            end = text.find(")" + m.group(1) + '"', i)
            if end > 0:
                return end + len(m.group(1)) + 2
    return 0


def _end_of_literal(text: str, i: int, quote: str) -> int:
    j = i + 1
    n = len(text)
    while j < n:
        if text[j] == "\\":
            j += 2
            continue
        if text[j] == quote or text[j] == "\n":
            return j + 1
        j += 1
    return n


class Source:
    """One file, blanked once; answers 'which function holds this offset'."""

    def __init__(self, text: str) -> None:
        self.text, self.code = blank(text)
        self._line_starts = [0] + [m.end() for m in re.finditer("\n", self.text)]
        self._functions = self._function_spans()
        self._defines = self._define_spans()

    def line_of(self, offset: int) -> int:
        lo, hi = 0, len(self._line_starts) - 1
        while lo < hi:
            mid = (lo + hi + 1) // 2
            if self._line_starts[mid] <= offset:
                lo = mid
            else:
                hi = mid - 1
        return lo + 1

    def _function_spans(self) -> list[tuple[int, int, str]]:
        spans = []
        stack: list[tuple[int, str | None]] = []
        code = self.code
        last_stmt = 0
        for m in re.finditer(r"[{};]", code):
            ch = m.group(0)
            if ch == ";":
                last_stmt = m.end()
                continue
            if ch == "{":
                # a #define or #if between the last statement and the brace is not the head
                # ("#define T (A + \\\n B)\nNV_STATUS\nf(void)\n{" is f, not T)
                head = _PREPROC_LINE.sub("", code[last_stmt:m.start()])
                stack.append((m.start(), _function_name(head)))
                last_stmt = m.end()
            else:
                if stack:
                    start, name = stack.pop()
                    if name:
                        spans.append((start, m.end(), name))
                last_stmt = m.end()
        return spans

    def _define_spans(self) -> list[tuple[int, int, str]]:
        spans = []
        for m in re.finditer(r"^[ \t]*#[ \t]*define[ \t]+(\w+)", self.code, re.M):
            end = m.end()
            while True:
                nl = self.code.find("\n", end)
                if nl < 0:
                    end = len(self.code)
                    break
                if self.code[nl - 1:nl] == "\\" or self.code[max(0, nl - 2):nl].rstrip().endswith("\\"):
                    end = nl + 1
                    continue
                end = nl
                break
            spans.append((m.start(), end, m.group(1)))
        return spans

    def define_names(self) -> set[str]:
        """The names of the file's function-like macros (``#define NAME(...)``)."""
        return {name for _start, _end, name in self._defines}

    def function_at(self, offset: int) -> str:
        for start, end, name in self._defines:
            if start <= offset < end:
                return name
        best = ""
        best_start = -1
        for start, end, name in self._functions:
            if start <= offset < end and start > best_start:
                best, best_start = name, start
        return best

    def calls(self, names: str) -> list[Call]:
        """Every call of a name matching the regex alternation ``names``, with parsed args."""
        found = []
        for m in re.finditer(rf"(?<![\w.>:])(?:{names})\s*\(", self.code):
            open_at = m.end() - 1
            close = _matching_paren(self.code, open_at)
            if close < 0:
                continue
            args = _split_args(self.code, self.text, open_at + 1, close)
            name = re.match(r"[\w:]+", m.group(0)).group(0)
            found.append(Call(name, args, m.start(), self.line_of(m.start()), self.function_at(m.start())))
        return found


_PREPROC_LINE = re.compile(r"^[ \t]*#(?:[^\n]*\\\n)*[^\n]*", re.M)


def _function_name(head: str) -> str | None:
    head = re.sub(r"\s+", " ", head).strip()
    if not head or head.endswith("=") or head.endswith(")") is False and not re.search(r"\)\s*(?:const|override|noexcept|final|mutable|->[^(){}]*|:.*)?\s*$", head):
        return None
    # constructor init lists: take the part before ' : '
    m = None
    for m in re.finditer(r"([~\w:]+)\s*\(", head):
        name = m.group(1).split("::")[-1]
        if name in _KEYWORDS:
            return None
        break
    if not m:
        return None
    name = m.group(1)
    if name.split("::")[-1] in _KEYWORDS or name.startswith("["):
        return None
    if re.match(r"^\[", head) or "](" in head[:m.start() + 2]:
        return None  # lambda
    return name.split("::")[-1] if name.count("::") > 1 else name


def _matching_paren(code: str, open_at: int) -> int:
    depth = 0
    for i in range(open_at, len(code)):
        c = code[i]
        if c in "([{":
            depth += 1
        elif c in ")]}":
            depth -= 1
            if depth == 0:
                return i if c == ")" else -1
    return -1


def _split_args(code: str, text: str, start: int, end: int) -> list[str]:
    args = []
    depth = 0
    last = start
    for i in range(start, end):
        c = code[i]
        if c in "([{":
            depth += 1
        elif c in ")]}":
            depth -= 1
        elif c == "," and depth == 0:
            args.append(text[last:i].strip())
            last = i + 1
    tail = text[last:end].strip()
    if tail or args:
        args.append(tail)
    return args


# ---- from argument text to format pieces ---------------------------------------------------
_LITERAL = re.compile(r'(?:u8|u|U|L)?"((?:\\.|[^"\\\n])*)"|(?:u8|u|U|L)?R"([^()\\ ]{0,16})\((.*?)\)\2"', re.S)


def unescape(body: str) -> str:
    def repl(m: re.Match) -> str:
        s = m.group(1)
        simple = {"n": "\n", "t": "\t", "r": "\r", "0": "", "\\": "\\", '"': '"', "'": "'", "a": "", "e": "\x1b"}
        if s in simple:
            return simple[s]
        if s.startswith("x"):
            try:
                return chr(int(s[1:], 16))
            except ValueError:
                return ""
        return s
    return re.sub(r"\\(x[0-9a-fA-F]{1,2}|[0-7]{1,3}|.)", repl, body)


def literal_concat(arg: str) -> str | None:
    """The string a concatenation of literals (and PRI macros) makes; None if not only that.

    Unknown macros between literals become a ``%s``-like wildcard, written as ``\x00``."""
    arg = arg.strip()
    pos = 0
    out = []
    saw_literal = False
    while pos < len(arg):
        m = re.match(r"\s+", arg[pos:])
        if m:
            pos += m.end()
            continue
        m = _LITERAL.match(arg, pos)
        if m:
            out.append(unescape(m.group(1)) if m.group(1) is not None else m.group(3))
            saw_literal = True
            pos = m.end()
            continue
        m = re.match(r"[A-Za-z_]\w*(?=\s*(?:\"|$|[A-Za-z_]))", arg[pos:])
        if not m:
            return None
        word = m.group(0)
        out.append(_PRI[word] if word in _PRI else "\x00")
        pos += m.end()
    return "".join(out) if saw_literal else None


def printf_from_args(fmt_arg: str, rest: list[str], strerror_m: bool = False) -> list[Piece] | None:
    fmt = literal_concat(fmt_arg)
    if fmt is None:
        return None
    parts = fmt.split("\x00")
    pieces: list[Piece] = []
    args = list(rest)
    for k, part in enumerate(parts):
        n_conv = sum(1 for m in re.finditer(r"%(?!%)[-+ #0']*(?:\*|\d+)?(?:\.(?:\*|\d+))?[hlLzjtq]*[diouxXeEfFgGaAcsp]", part))
        stars = part.count("*")
        take = n_conv + (stars if "%*" in part or ".*" in part else 0)
        pieces.extend(printf_pieces(part, args[:take], strerror_m))
        args = args[take:]
        if k < len(parts) - 1:
            pieces.append(Slot("any", "macro"))
    return merge_pieces(pieces)


_MACRO_CONTINUATION = re.compile(r"\\[ \t]*\n")


def _stringified(arg: str) -> list[Piece] | None:
    """``" when calling `" #EXPR "`"`` inside a macro: literals around a stringified macro
    argument, which prints as the call's source text."""
    _, code = blank(arg)
    cuts = [m for m in re.finditer(r"#\s*([A-Za-z_]\w*)", code)]
    if not cuts:
        return None
    pieces: list[Piece] = []
    pos = 0
    for m in cuts:
        lit = literal_concat(arg[pos:m.start()]) if arg[pos:m.start()].strip() else ""
        if lit is None or "\x00" in lit:
            return None
        pieces += [lit, Slot("any", m.group(1))]
        pos = m.end()
    tail = literal_concat(arg[pos:]) if arg[pos:].strip() else ""
    if tail is None or "\x00" in tail:
        return None
    return merge_pieces(pieces + [tail])


def stream_pieces(args: list[str]) -> list[Piece]:
    """``c10::str(a, "lit", b)`` / ``TORCH_CHECK(cond, a, "lit")``: literals as text, the rest as slots."""
    pieces: list[Piece] = []
    for arg in args:
        arg = _MACRO_CONTINUATION.sub(" ", arg).strip()  # an argument inside a #define
        lit = literal_concat(arg)
        if lit is not None and "\x00" not in lit:
            pieces.append(lit)
        elif (stringified := _stringified(arg)) is not None:
            pieces.extend(stringified)
        else:
            nested = re.match(r"^\s*(?:c10::)?str\s*\((.*)\)\s*$", arg, re.S)
            if nested:
                pieces.extend(stream_pieces(_split_simple(nested.group(1))))
            else:
                pieces.append(Slot("any", arg))
    return merge_pieces(pieces)


def _split_simple(text: str) -> list[str]:
    _, code = blank(text)
    return _split_args(code, text, 0, len(text))


def shift_chain(text: str) -> list[Piece]:
    """``<< "a" << x << "b"`` after LOG(...): literals and slots in order."""
    _, code = blank(text)
    parts = []
    depth = 0
    last = 0
    i = 0
    while i < len(code):
        c = code[i]
        if c in "([{":
            depth += 1
        elif c in ")]}":
            depth -= 1
        elif depth == 0 and code.startswith("<<", i):
            parts.append(text[last:i])
            last = i + 2
            i += 2
            continue
        i += 1
    parts.append(text[last:])
    pieces: list[Piece] = []
    for part in parts:
        part = part.strip()
        if not part:
            continue
        if part in ("std::endl", "endl"):
            continue
        lit = literal_concat(part)
        if lit is not None and "\x00" not in lit:
            pieces.append(lit)
        else:
            pieces.append(Slot("any", part))
    return merge_pieces(pieces)


def brace_from_args(fmt_arg: str, rest: list[str]) -> list[Piece] | None:
    fmt = literal_concat(fmt_arg)
    if fmt is None or "\x00" in fmt:
        return None
    return brace_pieces(fmt, rest)
