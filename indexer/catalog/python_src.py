"""Log calls in Python source, read with ``ast``: logging, warnings, raised messages, prints.

A message expression becomes pieces whatever its style: a literal, ``"%s" % x``, logging's
``logger.info("%s", x)``, ``"{}".format(x)``, f-strings, ``+`` concatenation, and a name
bound to one of these earlier in the same function. ``string.Template(T).substitute(...)``
is a message too (torchrun's failure report is one), its template a literal or a module-level
constant; and in a project's chosen files a string bound to an attribute such as
``self.message`` is one (the report's ``traceback :`` text is built that way).
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass, field
from typing import Callable

from indexer.catalog.extract import Occurrence
from indexer.catalog.formats import Piece, Slot, brace_pieces, merge_pieces, printf_pieces

LOG_METHODS = {"debug", "info", "warning", "warn", "error", "exception", "critical", "fatal",
               "warning_once", "info_once"}
# a logger object by its name: ``logger``, ``LOG``, ``self._log``, ``accel_logger`` ...
LOGGERS = re.compile(r"(?:^|\.)(?:_?log(?:ger)?|LOGGER|LOG|_LOGGER|logging|log_|logger_|[a-z]\w*_logger)$")
PRINT_PATHS = ("torch/distributed/run.py", "torch/distributed/launch.py", "torch/distributed/elastic/",
               "torch/utils/cpp_extension.py")
LEVEL_NAMES = {"DEBUG": "debug", "INFO": "info", "WARNING": "warning", "WARN": "warning",
               "ERROR": "error", "CRITICAL": "critical", "FATAL": "critical"}


@dataclass(frozen=True)
class Helper:
    """A project's own logging function: which argument holds the message, and its level.

    ``level`` is fixed ("info"), or None to read it from the ``level=`` keyword (or the
    positional argument ``level_arg``), falling back to ``default``. Arguments after the
    message are printf arguments when ``printf`` is set (``log_single_rank``)."""

    msg_arg: int = 0
    level: str | None = "info"
    level_arg: int | None = None
    default: str = "info"
    printf: bool = False
    anchored: bool = True


@dataclass(frozen=True)
class Dialect:
    """How one project logs: its helper functions and the files whose ``print`` is a message."""

    helpers: dict[str, Helper] = field(default_factory=dict)
    print_paths: tuple[str, ...] = PRINT_PATHS
    # ``assert cond, "message"`` in these files (Megatron validates its arguments this way;
    # elsewhere an assert is an internal invariant, not a message users meet)
    assert_paths: tuple[str, ...] = ()
    # ``self.<attr> = "message"`` in files matching ``attr_paths``: the text of an exception or
    # report, later printed whole (torchrun's ProcessFailure.message)
    message_attrs: tuple[str, ...] = ()
    attr_paths: tuple[str, ...] = ()


TORCH = Dialect(message_attrs=("message",), attr_paths=("torch/distributed/elastic/multiprocessing/errors/",))
TEMPLATE_FIELD = re.compile(r"\$(?:(\$)|\{([_a-zA-Z]\w*)\}|([_a-zA-Z]\w*))")
MORE = "more"  # the name of what a message gains after it is first bound (``msg += ...``)


def _inline_constants(pieces: list[Piece]) -> list[Piece]:
    """A value given as a literal (``err.format(mode="fp16")``) prints as that literal."""
    out: list[Piece] = []
    for piece in pieces:
        if isinstance(piece, Slot):
            try:
                value = ast.literal_eval(piece.arg)
            except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
                value = None
            if isinstance(value, (str, int, tuple)) and not isinstance(value, bool) and piece.arg.strip():
                out.append(str(value))
                continue
        out.append(piece)
    return merge_pieces(out)


def _src(node: ast.AST) -> str:
    try:
        return ast.unparse(node)
    except Exception:  # pragma: no cover - ast.unparse handles every parsed node
        return "value"


def pieces_of(node: ast.AST, names: dict[str, ast.AST], depth: int = 0) -> list[Piece] | None:
    """The pieces of a message expression; None when it is not a string we can read."""
    if depth > 4:
        return None
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return [node.value] if node.value else []
    if isinstance(node, ast.JoinedStr):
        out: list[Piece] = []
        for value in node.values:
            if isinstance(value, ast.Constant):
                out.append(str(value.value))
            elif isinstance(value, ast.FormattedValue):
                spec = ""
                if isinstance(value.format_spec, ast.JoinedStr):
                    spec = "".join(str(v.value) for v in value.format_spec.values if isinstance(v, ast.Constant))
                kind = "float" if spec[-1:] in "fFeEgG%" and spec else "int" if spec[-1:] == "d" else "any"
                # a width ({it:8d}, {name:>10}) pads with blanks; a leading 0 pads with zeros
                padded = bool(re.match(r"^(?:.?[<>^=])?[+\- ]?#?[1-9]", spec))
                out.append(Slot(kind, _src(value.value), padded))
        return merge_pieces(out)
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
        left = pieces_of(node.left, names, depth + 1)
        right = pieces_of(node.right, names, depth + 1)
        if left is None and right is None:
            return None
        return merge_pieces([left if left is not None else [Slot("any", _src(node.left))],
                             right if right is not None else [Slot("any", _src(node.right))]])
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Mod):
        fmt = node.left
        if isinstance(fmt, ast.Constant) and isinstance(fmt.value, str):
            args = node.right.elts if isinstance(node.right, ast.Tuple) else [node.right]
            return printf_pieces(fmt.value, [_src(a) for a in args])
        return None
    if (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "format"):
        base = pieces_of(node.func.value, names, depth + 1)
        if base is None or any(isinstance(p, Slot) for p in base):
            return None
        fmt = "".join(base)
        kwargs = {k.arg: _src(k.value) for k in node.keywords if k.arg}
        return brace_pieces(fmt, [_src(a) for a in node.args], kwargs)
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "join":
        return None
    if isinstance(node, ast.Name) and node.id in names:
        return pieces_of(names[node.id], {k: v for k, v in names.items() if k != node.id}, depth + 1)
    return None


def _print_pieces(call: ast.Call, names) -> list[Piece] | None:
    """``print(a, b, sep=" ")``: every argument, joined by the separator."""
    sep = " "
    for k in call.keywords:
        if k.arg == "sep":
            if not (isinstance(k.value, ast.Constant) and isinstance(k.value.value, str)):
                return pieces_of(call.args[0], names)
            sep = k.value.value
        elif k.arg == "file" and _src(k.value) not in ("sys.stderr", "sys.stdout"):
            return None  # written to a file, not the log
    parts: list = []
    for n, arg in enumerate(call.args):
        if isinstance(arg, ast.Starred):
            return None
        if n:
            parts.append(sep)
        got = pieces_of(arg, names)
        parts.append(got if got is not None else [Slot("any", _src(arg))])
    return merge_pieces(parts)


def _logging_pieces(call: ast.Call, names) -> list[Piece] | None:
    if not call.args:
        return None
    first = call.args[0]
    rest = call.args[1:]
    if rest and isinstance(first, ast.Constant) and isinstance(first.value, str):
        return printf_pieces(first.value, [_src(a) for a in rest])
    return pieces_of(first, names)


def template_pieces(template: str, values: dict[str, list[Piece] | None]) -> list[Piece]:
    """``string.Template``: ``$name``/``${name}`` are conversions (named after the placeholder,
    or the substituted value's own pieces when it is a string we can read), ``$$`` a dollar."""
    pieces: list[Piece] = []
    pos = 0
    for m in TEMPLATE_FIELD.finditer(template):
        pieces.append(template[pos:m.start()])
        pos = m.end()
        if m.group(1):
            pieces.append("$")
            continue
        name = m.group(2) or m.group(3)
        given = values.get(name)
        pieces.append(given if given is not None else [Slot("any", name)])
    pieces.append(template[pos:])
    return merge_pieces(pieces)


def _level_of(node: ast.AST | None, default: str) -> str:
    if node is None:
        return default
    name = _src(node).split(".")[-1].upper()
    return LEVEL_NAMES.get(name, default)


class _Visitor(ast.NodeVisitor):
    def __init__(self, path: str, dialect: Dialect = TORCH) -> None:
        self.path = path
        self.dialect = dialect
        self.out: list[Occurrence] = []
        self.func: list[str] = []
        self.names: list[dict[str, ast.AST]] = [{}]
        self.prints = path.startswith(dialect.print_paths) or "/launcher" in path

    def _scope(self, node, name):
        self.func.append(name)
        self.names.append({})
        self.generic_visit(node)
        self.names.pop()
        self.func.pop()

    def visit_FunctionDef(self, node):  # noqa: N802 - ast API
        self._scope(node, node.name)

    visit_AsyncFunctionDef = visit_FunctionDef

    def visit_ClassDef(self, node):  # noqa: N802
        self._scope(node, node.name)

    def visit_Assign(self, node):  # noqa: N802
        target = node.targets[0] if len(node.targets) == 1 else None
        if isinstance(target, ast.Name):
            self.names[-1][target.id] = node.value
        elif (isinstance(target, ast.Attribute) and target.attr in self.dialect.message_attrs
              and self.path.startswith(self.dialect.attr_paths)):
            self._emit(node, "text", pieces_of(node.value, self.names[-1]), f"{_src(target)} =", False)
        self.generic_visit(node)

    def _template(self, node: ast.Call) -> None:
        """``Template(T).substitute(name=value, ...)`` with T a literal or a module constant."""
        arg = node.func.value.args[0]
        if isinstance(arg, ast.Name):
            arg = next((scope[arg.id] for scope in reversed(self.names) if arg.id in scope), arg)
        if not (isinstance(arg, ast.Constant) and isinstance(arg.value, str)):
            return
        values = {}
        for k in node.keywords:
            if k.arg:
                got = pieces_of(k.value, self.names[-1])
                values[k.arg] = got if got and any(isinstance(p, str) and p.strip() for p in got) else None
        self._emit(node, "text", template_pieces(arg.value, values), "Template.substitute", False)

    def visit_AugAssign(self, node):  # noqa: N802
        # ``msg += ...`` (often under a condition): the message goes on past what was bound
        # first, so its format ends open, with whatever was appended as one trailing value
        scope = self.names[-1]
        if isinstance(node.target, ast.Name) and isinstance(node.op, ast.Add) and node.target.id in scope:
            bound = scope[node.target.id]
            if not (isinstance(bound, ast.BinOp) and isinstance(bound.right, ast.Name) and bound.right.id == MORE):
                scope[node.target.id] = ast.BinOp(left=bound, op=ast.Add(), right=ast.Name(id=MORE))
        self.generic_visit(node)

    def _emit(self, node, level, pieces, kind, anchored):
        if pieces:
            pieces = _inline_constants(list(pieces))
        if not pieces or not any(isinstance(p, str) and p.strip() for p in pieces):
            return
        where = ".".join(self.func[-2:]) if self.func else "<module>"
        self.out.append(Occurrence(self.path, node.lineno, where, level, tuple(pieces), anchored, kind))

    def _helper(self, node: ast.Call, helper: Helper) -> None:
        by_keyword = next((k.value for k in node.keywords if k.arg in ("message", "msg")), None)
        if len(node.args) <= helper.msg_arg and by_keyword is None:
            return
        level = helper.level
        if level is None:
            given = next((k.value for k in node.keywords if k.arg == "level"), None)
            if given is None and helper.level_arg is not None and len(node.args) > helper.level_arg:
                given = node.args[helper.level_arg]
            level = _level_of(given, helper.default)
        if len(node.args) > helper.msg_arg:
            msg, rest = node.args[helper.msg_arg], node.args[helper.msg_arg + 1:]
        else:  # log_dist(message=f"...", ranks=[0])
            msg, rest = by_keyword, []
        if helper.printf and rest and isinstance(msg, ast.Constant) and isinstance(msg.value, str):
            pieces = printf_pieces(msg.value, [_src(a) for a in rest])
        else:
            pieces = pieces_of(msg, self.names[-1])
        self._emit(node, level, pieces, _src(node.func).split(".")[-1], helper.anchored)

    def visit_Assert(self, node):  # noqa: N802
        if node.msg is not None and self.dialect.assert_paths and re.search("|".join(self.dialect.assert_paths), self.path):
            self._emit(node, "raise AssertionError", pieces_of(node.msg, self.names[-1]), "assert", False)
        self.generic_visit(node)

    def visit_Call(self, node):  # noqa: N802
        func = node.func
        scope = self.names[-1]
        helper_name = func.id if isinstance(func, ast.Name) else func.attr if isinstance(func, ast.Attribute) else ""
        if isinstance(func, ast.Attribute) and _src(func) in self.dialect.helpers:
            helper_name = _src(func)  # a helper known by its receiver too (``self.warning``)
        if helper_name in self.dialect.helpers:
            self._helper(node, self.dialect.helpers[helper_name])
        elif (isinstance(func, ast.Attribute) and func.attr in ("substitute", "safe_substitute")
              and isinstance(func.value, ast.Call) and _src(func.value.func) in ("Template", "string.Template")
              and len(func.value.args) == 1):
            self._template(node)
        elif isinstance(func, ast.Attribute) and func.attr in LOG_METHODS and LOGGERS.search(_src(func.value)):
            level = {"warn": "warning", "exception": "error", "fatal": "critical",
                     "warning_once": "warning", "info_once": "info"}.get(func.attr, func.attr)
            self._emit(node, level, _logging_pieces(node, scope), f"logger.{func.attr}", True)
        elif _src(func) in ("warnings.warn", "warn") and node.args:
            category = "UserWarning"
            if len(node.args) > 1:
                category = _src(node.args[1]).split(".")[-1]
            for k in node.keywords:
                if k.arg == "category":
                    category = _src(k.value).split(".")[-1]
            self._emit(node, "warn " + category, pieces_of(node.args[0], scope), "warnings.warn", False)
        elif self.prints and isinstance(func, ast.Name) and func.id == "print" and node.args:
            self._emit(node, "print", _print_pieces(node, scope), "print", True)
        self.generic_visit(node)

    def visit_Raise(self, node):  # noqa: N802
        exc = node.exc
        if isinstance(exc, ast.Call) and exc.args:
            name = _src(exc.func).split(".")[-1]
            if re.match(r"^[A-Z]\w*(?:Error|Exception|Warning|Timeout|Failure|Interrupt)$", name):
                self._emit(node, "raise " + name, pieces_of(exc.args[0], self.names[-1]), "raise", False)
        self.generic_visit(node)


def python_file(path: str, text: str, dialect: Dialect = TORCH) -> list[Occurrence]:
    try:
        tree = ast.parse(text)
    except (SyntaxError, ValueError):
        return []
    visitor = _Visitor(path, dialect)
    visitor.visit(tree)
    return visitor.out


def python_extractor(dialect: Dialect) -> Callable[[str, str], list[Occurrence]]:
    return lambda path, text: python_file(path, text, dialect)


# ---- rocm-smi (ROCm/rocm_smi_lib, python_smi_tools/rocm_smi.py) ------------------------------
# main() sets logging.basicConfig(format='%(levelname)s: %(message)s', level=logging.WARNING), so
# logging.error/warning print "ERROR: <message>" / "WARNING: <message>" (info and debug stay
# hidden unless --loglevel lowers the level: not read). printErrLog(device, err) logs each line
# of err as logging.error('GPU[%s]\t: %s'); printLog(device, metric, value) prints
# 'GPU[%s]\t\t: %s: %s' on stdout, without ": value" when value is None and without the
# "GPU[...]\t\t: " head when device is None.
_RSMI_LOGGING = {"error": "ERROR: ", "warning": "WARNING: "}


def rocm_smi_file(path: str, text: str) -> list[Occurrence]:
    try:
        tree = ast.parse(text)
    except (SyntaxError, ValueError):
        return []
    out = []
    functions = [n for n in ast.walk(tree) if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))]
    owner = {id(c): f.name for f in functions for c in ast.walk(f) if isinstance(c, ast.Call)}
    for call in (n for n in ast.walk(tree) if isinstance(n, ast.Call)):
        func = _src(call.func)
        level, pieces = None, None
        if func in ("logging.error", "logging.warning") and owner.get(id(call)) != "printErrLog":
            level = func.split(".")[1]
            got = _logging_pieces(call, {})
            pieces = merge_pieces([[_RSMI_LOGGING[level]], got]) if got else None
        elif func == "printErrLog" and len(call.args) >= 2:
            got = pieces_of(call.args[1], {})
            if got:
                level = "error"
                pieces = merge_pieces([["ERROR: GPU[", Slot("int", "device"), "]\t: "], got])
        elif func == "printLog" and len(call.args) >= 2:
            got = pieces_of(call.args[1], {})
            value = call.args[2] if len(call.args) >= 3 else next((k.value for k in call.keywords if k.arg == "value"), None)
            if got:
                level = "print"
                no_device = isinstance(call.args[0], ast.Constant) and call.args[0].value is None
                head = [] if no_device else ["GPU[", Slot("int", "device"), "]\t\t: "]
                tail: list = []
                if value is not None and not (isinstance(value, ast.Constant) and value.value is None):
                    tail = [": ", *(pieces_of(value, {}) or [Slot("any", _src(value))])]
                pieces = merge_pieces([head, got, tail])
        if level is None or not pieces:
            continue
        out.append(Occurrence(path, call.lineno, owner.get(id(call), "<module>"), level, tuple(pieces), True, func))
    return out
