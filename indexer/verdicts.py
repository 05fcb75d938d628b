"""Verdicts: what a line's own numbers say, decided by conditions over its decoded fields.

An entry may carry ``verdicts:`` — each a condition (``when``) and the en/zh sentence it
yields — and ``compute:``, named values derived from the fields for its texts. Conditions are
small expressions in a Python-like syntax, parsed with ``ast`` and walked by a whitelist
evaluator: no ``eval``, no attribute access, no calls but the functions below, so a KB file
cannot run code.

    when: size(unallocated) >= size(requested) or size(unallocated) >= size('1 GiB')
    when: num(ran_for) > num(timeout)
    when: code in (13, 31, 43, 45) and has(pid)

Names are the entry's fields (a value that reads as a number is a number, else a string) and
earlier ``compute`` names. A condition that reads a field the line did not supply, or mixes
types, is simply false: a verdict fires only when the line says so.

Functions: ``size(x)`` bytes from "818.67 MiB" / "1.5GB" / "4096 bytes"; ``secs(x)`` seconds
from "600061 ms" / "30s" / "1:30:00" / "2-00:00:00" / "5 minutes"; ``num(x)`` a number
(decimal, 0x hex, thousands commas); ``has(name)`` the field is present and non-empty;
``lower``, ``upper``, ``len``, ``contains(x, s)``, ``startswith(x, s)``, ``matches(x, regex)``;
``min``, ``max``, ``abs``, ``round``; ``human_size(bytes)``, ``human_secs(seconds)`` and
``pct(x)`` for texts.
"""

from __future__ import annotations

import ast
import math
import operator
import re
import warnings
from dataclasses import dataclass
from functools import lru_cache
from typing import Any, Callable, Iterable

# ---------------------------------------------------------------------------- value parsing

_SIZE = re.compile(r"^\s*([-+]?\d+(?:[.,]\d+)?)\s*([A-Za-z]*)\s*$")
_SIZE_UNITS = {
    "": 1, "b": 1, "byte": 1, "bytes": 1,
    "k": 1024, "kib": 1024, "kb": 1000,
    "m": 1024**2, "mib": 1024**2, "mb": 1000**2,
    "g": 1024**3, "gib": 1024**3, "gb": 1000**3,
    "t": 1024**4, "tib": 1024**4, "tb": 1000**4,
    "p": 1024**5, "pib": 1024**5, "pb": 1000**5,
}
_DURATION = re.compile(r"^\s*([-+]?\d+(?:\.\d+)?)\s*([A-Za-zµ]*)\s*$")
_DURATION_UNITS = {
    "": 1, "s": 1, "sec": 1, "secs": 1, "second": 1, "seconds": 1,
    "ms": 1e-3, "msec": 1e-3, "millisecond": 1e-3, "milliseconds": 1e-3,
    "us": 1e-6, "µs": 1e-6, "microseconds": 1e-6, "ns": 1e-9, "nanoseconds": 1e-9,
    "m": 60, "min": 60, "mins": 60, "minute": 60, "minutes": 60,
    "h": 3600, "hr": 3600, "hrs": 3600, "hour": 3600, "hours": 3600,
    "d": 86400, "day": 86400, "days": 86400,
}
_CLOCK = re.compile(r"^\s*(?:(\d+)-)?(?:(\d+):)?(\d+):(\d+(?:\.\d+)?)\s*$")  # [D-][H:]M:S


_HEX_NUMBER = re.compile(r"[-+]?0[xX][0-9a-fA-F]+")
_INTEGER = re.compile(r"[-+]?\d+")


class VerdictError(ValueError):
    """A condition that cannot be evaluated on these values (the verdict does not fire)."""


def as_number(value: Any) -> float | int:
    if isinstance(value, bool):
        raise VerdictError("a truth value is not a number")
    if isinstance(value, (int, float)):
        return value
    text = str(value).strip().replace(",", "").replace("_", "")
    try:
        if _HEX_NUMBER.fullmatch(text):
            return int(text, 16)
        if _INTEGER.fullmatch(text):
            return int(text)
        number = float(text)
    except ValueError:
        raise VerdictError(f"not a number: {value!r}") from None
    if math.isnan(number) or math.isinf(number):
        raise VerdictError(f"not a finite number: {value!r}")
    return number


def as_size(value: Any) -> float:
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return float(value)
    m = _SIZE.match(str(value))
    unit = m and _SIZE_UNITS.get(m.group(2).lower())
    if not m or unit is None:
        raise VerdictError(f"not a size: {value!r}")
    return float(m.group(1).replace(",", ".")) * unit


def as_seconds(value: Any) -> float:
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return float(value)
    text = str(value)
    m = _CLOCK.match(text)
    if m:
        days, hours, minutes, seconds = m.groups()
        return int(days or 0) * 86400 + int(hours or 0) * 3600 + int(minutes) * 60 + float(seconds)
    m = _DURATION.match(text)
    unit = m and _DURATION_UNITS.get(m.group(2).lower() if m.group(2) != "µs" else "µs")
    if not m or unit is None:
        raise VerdictError(f"not a duration: {value!r}")
    return float(m.group(1)) * unit


def human_size(value: Any) -> str:
    n = as_size(value)
    for unit, factor in (("TiB", 1024**4), ("GiB", 1024**3), ("MiB", 1024**2), ("KiB", 1024)):
        if abs(n) >= factor:
            return f"{n / factor:.2f} {unit}"
    return f"{n:.0f} bytes"


def human_secs(value: Any) -> str:
    s = as_seconds(value)
    if abs(s) >= 3600:
        return f"{s / 3600:.1f} h"
    if abs(s) >= 60:
        return f"{s / 60:.1f} min"
    if abs(s) >= 1:
        return f"{s:.1f} s"
    return f"{s * 1000:.0f} ms"


def pct(value: Any) -> str:
    return f"{as_number(value) * 100:.0f}%"


def show(value: Any) -> str:
    """How a computed value reads in a text: integers plainly, other numbers to 2 decimals."""
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, float):
        if value.is_integer() and abs(value) < 1e15:
            return str(int(value))
        return f"{value:.2f}".rstrip("0").rstrip(".")
    return str(value)


def _text(value: Any) -> str:
    if isinstance(value, bool):
        raise VerdictError("a truth value is not text")
    return str(value)


def _matches(value: Any, pattern: Any) -> bool:
    return re.search(_text(pattern), _text(value)) is not None


FUNCTIONS: dict[str, tuple[Callable[..., Any], int]] = {  # name -> (function, arity; -1 any)
    "size": (as_size, 1),
    "secs": (as_seconds, 1),
    "num": (as_number, 1),
    "lower": (lambda x: _text(x).lower(), 1),
    "upper": (lambda x: _text(x).upper(), 1),
    "len": (lambda x: len(_text(x)), 1),
    "contains": (lambda x, s: _text(s) in _text(x), 2),
    "startswith": (lambda x, s: _text(x).startswith(_text(s)), 2),
    "matches": (_matches, 2),
    "min": (lambda *xs: min(as_number(x) for x in xs), -1),
    "max": (lambda *xs: max(as_number(x) for x in xs), -1),
    "abs": (lambda x: abs(as_number(x)), 1),
    "round": (lambda x, n=0: round(as_number(x), int(as_number(n))), -1),
    "human_size": (human_size, 1),
    "human_secs": (human_secs, 1),
    "pct": (pct, 1),
}

# ---------------------------------------------------------------------------- parsing

_BINOPS = {
    ast.Add: operator.add, ast.Sub: operator.sub, ast.Mult: operator.mul, ast.Div: operator.truediv,
    ast.FloorDiv: operator.floordiv, ast.Mod: operator.mod,
}
_CMPOPS = {
    ast.Lt: operator.lt, ast.LtE: operator.le, ast.Gt: operator.gt, ast.GtE: operator.ge,
    ast.Eq: operator.eq, ast.NotEq: operator.ne,
    ast.In: lambda a, b: a in b, ast.NotIn: lambda a, b: a not in b,
}
MAX_CHARS = 400


@dataclass(frozen=True)
class Expression:
    source: str
    tree: ast.expr
    names: frozenset[str]  # the field/compute names it reads (has() arguments included)
    run: Callable[[dict], Any] = None  # type: ignore[assignment]  # the tree as closures (_compile)


@lru_cache(maxsize=4096)
def parse(source: str) -> Expression:
    """Parse and whitelist a condition; ``ValueError`` says what is not allowed."""
    if len(source) > MAX_CHARS:
        raise ValueError(f"expression longer than {MAX_CHARS} characters")
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("error")  # an invalid escape such as '\d' in a string literal
            tree = ast.parse(source.strip(), mode="eval").body
    except SyntaxError as exc:
        raise ValueError(f"not an expression: {exc.msg} in {source!r}") from None
    except (SyntaxWarning, DeprecationWarning) as exc:
        raise ValueError(f"{exc} in {source!r} (write [0-9] for \\d in a regex literal)") from None
    names: set[str] = set()
    _check(tree, names)
    return Expression(source, tree, frozenset(names), _compile(tree))


def _check(node: ast.AST, names: set[str]) -> None:
    if isinstance(node, ast.BoolOp):
        for value in node.values:
            _check(value, names)
    elif isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.Not, ast.USub, ast.UAdd)):
        _check(node.operand, names)
    elif isinstance(node, ast.BinOp) and type(node.op) in _BINOPS:
        _check(node.left, names)
        _check(node.right, names)
    elif isinstance(node, ast.Compare) and all(type(op) in _CMPOPS for op in node.ops):
        _check(node.left, names)
        for comparator in node.comparators:
            _check(comparator, names)
    elif isinstance(node, ast.Constant) and isinstance(node.value, (int, float, str, bool)):
        pass
    elif isinstance(node, (ast.Tuple, ast.List, ast.Set)):
        for element in node.elts:
            _check(element, names)
    elif isinstance(node, ast.Name):
        names.add(node.id)
    elif isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and not node.keywords:
        fname = node.func.id
        if fname == "has":
            if len(node.args) != 1 or not isinstance(node.args[0], ast.Name):
                raise ValueError("has() takes one field name")
            names.add(node.args[0].id)
            return
        if fname not in FUNCTIONS:
            raise ValueError(f"unknown function {fname}() (known: has, {', '.join(sorted(FUNCTIONS))})")
        arity = FUNCTIONS[fname][1]
        if arity >= 0 and len(node.args) != arity:
            raise ValueError(f"{fname}() takes {arity} argument(s)")
        for arg in node.args:
            _check(arg, names)
    elif isinstance(node, ast.IfExp):
        for part in (node.test, node.body, node.orelse):
            _check(part, names)
    else:
        raise ValueError(f"not allowed in a condition: {ast.dump(node)[:60]}")


# ---------------------------------------------------------------------------- evaluation


def _auto(value: str) -> Any:
    try:
        return as_number(value)
    except VerdictError:
        return value


def evaluate(expression: Expression | str, values: dict[str, Any]) -> Any:
    """The value of an expression over ``values`` (raw field strings and computed values);
    ``VerdictError`` when it reads a missing name or mixes types."""
    if isinstance(expression, str):
        expression = parse(expression)
    return expression.run(values)


def _eval(node: ast.AST, values: dict[str, Any]) -> Any:
    if isinstance(node, ast.Constant):
        return node.value
    if isinstance(node, ast.Name):
        if node.id not in values or values[node.id] in (None, ""):
            raise VerdictError(f"no value for {node.id}")
        value = values[node.id]
        return _auto(value) if isinstance(value, str) else value
    if isinstance(node, ast.BoolOp):
        if isinstance(node.op, ast.And):
            result: Any = True
            for value in node.values:
                result = _eval(value, values)
                if not result:
                    return result
            return result
        for value in node.values:  # or: a side that cannot be evaluated counts as false
            try:
                result = _eval(value, values)
            except VerdictError:
                continue
            if result:
                return result
        return False
    if isinstance(node, ast.UnaryOp):
        operand = _eval(node.operand, values)
        if isinstance(node.op, ast.Not):
            return not operand
        number = as_number(operand)
        return -number if isinstance(node.op, ast.USub) else number
    if isinstance(node, ast.BinOp):
        left, right = _eval(node.left, values), _eval(node.right, values)
        try:
            if isinstance(node.op, ast.Add) and isinstance(left, str) and isinstance(right, str):
                return left + right
            return _BINOPS[type(node.op)](as_number(left), as_number(right))
        except (ZeroDivisionError, OverflowError) as exc:
            raise VerdictError(str(exc)) from None
    if isinstance(node, ast.Compare):
        left = _eval(node.left, values)
        for op, comparator in zip(node.ops, node.comparators):
            right = _eval(comparator, values)
            try:
                if isinstance(right, (tuple, list, set)) and isinstance(op, (ast.In, ast.NotIn)):
                    ok = _CMPOPS[type(op)](_key(left), {_key(r) for r in right})
                elif isinstance(op, (ast.In, ast.NotIn)):
                    ok = _CMPOPS[type(op)](_text(left), _text(right))
                elif isinstance(op, (ast.Eq, ast.NotEq)):
                    ok = _CMPOPS[type(op)](_key(left), _key(right))
                else:
                    if isinstance(left, str) != isinstance(right, str):
                        raise VerdictError(f"cannot order {left!r} and {right!r}")
                    ok = _CMPOPS[type(op)](left, right)
            except TypeError as exc:
                raise VerdictError(str(exc)) from None
            if not ok:
                return False
            left = right
        return True
    if isinstance(node, (ast.Tuple, ast.List, ast.Set)):
        return tuple(_eval(e, values) for e in node.elts)
    if isinstance(node, ast.IfExp):
        return _eval(node.body, values) if _eval(node.test, values) else _eval(node.orelse, values)
    if isinstance(node, ast.Call):
        fname = node.func.id  # type: ignore[attr-defined]
        if fname == "has":
            name = node.args[0].id  # type: ignore[attr-defined]
            return values.get(name) not in (None, "")
        function = FUNCTIONS[fname][0]
        try:
            return function(*(_eval(arg, values) for arg in node.args))
        except VerdictError:
            raise
        except (TypeError, ValueError, ArithmeticError) as exc:
            raise VerdictError(str(exc)) from None
    raise VerdictError(f"cannot evaluate {ast.dump(node)[:60]}")


def _compile(node: ast.AST) -> Callable[[dict], Any]:
    """The tree as nested closures, ``values -> value``: what ``_eval`` computes, without
    walking the tree on every line (batch runs evaluate verdicts on every step line, each with
    new values). ``_eval`` stays the reference; tests hold the two equal on every KB condition."""
    if isinstance(node, ast.Constant):
        constant = node.value
        return lambda values: constant
    if isinstance(node, ast.Name):
        name = node.id

        def read(values: dict) -> Any:
            value = values.get(name, None)
            if value is None or value == "" or name not in values:
                raise VerdictError(f"no value for {name}")
            return _auto(value) if isinstance(value, str) else value
        return read
    if isinstance(node, ast.BoolOp):
        parts = [_compile(v) for v in node.values]
        if isinstance(node.op, ast.And):
            def all_of(values: dict) -> Any:
                result: Any = True
                for part in parts:
                    result = part(values)
                    if not result:
                        return result
                return result
            return all_of

        def any_of(values: dict) -> Any:
            for part in parts:  # or: a side that cannot be evaluated counts as false
                try:
                    result = part(values)
                except VerdictError:
                    continue
                if result:
                    return result
            return False
        return any_of
    if isinstance(node, ast.UnaryOp):
        operand = _compile(node.operand)
        if isinstance(node.op, ast.Not):
            return lambda values: not operand(values)
        sign = -1 if isinstance(node.op, ast.USub) else 1

        def signed(values: dict) -> Any:
            number = as_number(operand(values))
            return -number if sign < 0 else number
        return signed
    if isinstance(node, ast.BinOp):
        left_of, right_of = _compile(node.left), _compile(node.right)
        op = _BINOPS[type(node.op)]
        adds = isinstance(node.op, ast.Add)

        def binop(values: dict) -> Any:
            left, right = left_of(values), right_of(values)
            try:
                if adds and isinstance(left, str) and isinstance(right, str):
                    return left + right
                return op(as_number(left), as_number(right))
            except (ZeroDivisionError, OverflowError) as exc:
                raise VerdictError(str(exc)) from None
        return binop
    if isinstance(node, ast.Compare):
        first = _compile(node.left)
        steps = [(_compile(c), _compare_step(op)) for op, c in zip(node.ops, node.comparators)]

        def compare(values: dict) -> Any:
            left = first(values)
            for right_of, step in steps:
                right = right_of(values)
                try:
                    ok = step(left, right)
                except TypeError as exc:
                    raise VerdictError(str(exc)) from None
                if not ok:
                    return False
                left = right
            return True
        return compare
    if isinstance(node, (ast.Tuple, ast.List, ast.Set)):
        elements = [_compile(e) for e in node.elts]
        return lambda values: tuple(e(values) for e in elements)
    if isinstance(node, ast.IfExp):
        test, body, orelse = _compile(node.test), _compile(node.body), _compile(node.orelse)
        return lambda values: body(values) if test(values) else orelse(values)
    if isinstance(node, ast.Call):
        fname = node.func.id  # type: ignore[attr-defined]
        if fname == "has":
            name = node.args[0].id  # type: ignore[attr-defined]
            return lambda values: values.get(name) not in (None, "")
        function = FUNCTIONS[fname][0]
        args = [_compile(arg) for arg in node.args]

        def call(values: dict) -> Any:
            try:
                return function(*(arg(values) for arg in args))
            except VerdictError:
                raise
            except (TypeError, ValueError, ArithmeticError) as exc:
                raise VerdictError(str(exc)) from None
        return call
    dump = ast.dump(node)[:60]

    def cannot(values: dict) -> Any:
        raise VerdictError(f"cannot evaluate {dump}")
    return cannot


def _compare_step(op: ast.cmpop) -> Callable[[Any, Any], bool]:
    """One comparison of a chain, as ``_eval`` decides it by the operands' types."""
    apply = _CMPOPS[type(op)]
    if isinstance(op, (ast.In, ast.NotIn)):
        def member(left: Any, right: Any) -> bool:
            if isinstance(right, (tuple, list, set)):
                return apply(_key(left), {_key(r) for r in right})
            return apply(_text(left), _text(right))
        return member
    if isinstance(op, (ast.Eq, ast.NotEq)):
        return lambda left, right: apply(_key(left), _key(right))

    def order(left: Any, right: Any) -> bool:
        if isinstance(left, str) != isinstance(right, str):
            raise VerdictError(f"cannot order {left!r} and {right!r}")
        return apply(left, right)
    return order


def _key(value: Any) -> Any:
    """Equality and membership compare numbers as numbers, and text as text."""
    if isinstance(value, str):
        try:
            return as_number(value)
        except VerdictError:
            return value
    if isinstance(value, float) and value.is_integer():
        return int(value)
    return value


def holds(expression: Expression | str, values: dict[str, Any]) -> bool:
    try:
        return bool(evaluate(expression, values))
    except VerdictError:
        return False


# ---------------------------------------------------------------------------- an entry's verdicts


def computed(compute: dict[str, str], fields: dict[str, str]) -> dict[str, str]:
    """The entry's ``compute:`` values for these fields, as text (a value that cannot be
    computed on this line is left out, so ``[[...]]`` segments using it drop)."""
    values: dict[str, Any] = dict(fields)
    out: dict[str, str] = {}
    for name, source in compute.items():
        try:
            value = evaluate(source, values)
        except VerdictError:
            continue
        values[name] = value
        out[name] = show(value)
    return out


def fired(verdicts: Iterable[Any], values: dict[str, Any]) -> tuple[int, ...]:
    """Indices of the verdicts whose condition holds on these values."""
    return tuple(i for i, verdict in enumerate(verdicts) if holds(verdict.when, values))


def used_names(entry: Any) -> set[str]:
    """Every name the entry's verdicts and computed values read."""
    names: set[str] = set()
    for verdict in getattr(entry, "verdicts", None) or ():
        names |= parse(verdict.when).names
    for source in (getattr(entry, "compute", None) or {}).values():
        names |= parse(source).names
    return names
