"""The package's import graph has no circles, deferred and type-only imports included.

A function-level or ``TYPE_CHECKING`` import does not break at run time, but it still ties two
modules into one design (the structure review of 2026-12-01 found two: the encoder interface
and its numpy implementation, and the batch dispatcher and the format writers). Dependencies
point one way: this walks every ``import`` in ``indexer/`` and ``service/`` and fails on a
cycle, naming it.
"""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = ("indexer", "service")


def _modules() -> dict[str, Path]:
    found = {}
    for package in PACKAGES:
        for path in (ROOT / package).rglob("*.py"):
            parts = list(path.relative_to(ROOT).with_suffix("").parts)
            if parts[-1] == "__init__":
                parts.pop()
            found[".".join(parts)] = path
    return found


def _imports(name: str, path: Path, modules: dict[str, Path]) -> set[str]:
    """Project modules ``name`` imports anywhere in its body (a package's ``__init__`` counts as
    the package; ``from pkg import mod`` counts as ``pkg.mod`` when that is a module)."""
    out = set()
    is_package = path.name == "__init__.py"
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        targets = []
        if isinstance(node, ast.Import):
            targets = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = name.split(".") if is_package else name.split(".")[:-1]
                base = base[: len(base) - (node.level - 1)]
                module = ".".join(base + ([node.module] if node.module else []))
            else:
                module = node.module or ""
            targets = [f"{module}.{alias.name}" for alias in node.names] + [module]
        for target in targets:
            # the longest project module that the target names (a.b.c -> a.b.c or a.b or a)
            parts = target.split(".")
            while parts and ".".join(parts) not in modules:
                parts.pop()
            if parts:
                found = ".".join(parts)
                if found != name and not name.startswith(found + "."):  # a package's own parents
                    out.add(found)
    return out


def _cycle(graph: dict[str, set[str]]) -> list[str] | None:
    state: dict[str, int] = {}
    stack: list[str] = []

    def visit(node: str) -> list[str] | None:
        state[node] = 1
        stack.append(node)
        for nxt in sorted(graph.get(node, ())):
            if state.get(nxt) == 1:
                return stack[stack.index(nxt):] + [nxt]
            if nxt not in state:
                found = visit(nxt)
                if found:
                    return found
        stack.pop()
        state[node] = 2
        return None

    for node in sorted(graph):
        if node not in state:
            found = visit(node)
            if found:
                return found
    return None


def test_no_import_cycles():
    modules = _modules()
    graph = {name: _imports(name, path, modules) for name, path in modules.items()}
    assert len(graph) > 80  # the walk found the packages
    assert _cycle(graph) is None, " -> ".join(_cycle(graph))


def test_the_check_sees_a_deferred_cycle(tmp_path):
    """The same walk reports a cycle made only of a function-level and a type-only import."""
    (tmp_path / "a.py").write_text("def f():\n    from pkg import b\n")
    (tmp_path / "b.py").write_text("from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from pkg.a import f\n")
    modules = {"pkg.a": tmp_path / "a.py", "pkg.b": tmp_path / "b.py"}
    graph = {name: _imports(name, path, modules) for name, path in modules.items()}
    assert graph == {"pkg.a": {"pkg.b"}, "pkg.b": {"pkg.a"}}
    assert _cycle(graph) == ["pkg.a", "pkg.b", "pkg.a"]
