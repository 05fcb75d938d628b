"""The KB's words beside its log lines: concepts (``kb/concepts/*.yaml``) and environment
variables (``kb/params/*.jsonl``, extracted from the source by ``explainlog catalog params``).

``explainlog ask`` answers questions from them (and from entries and catalogue records);
``explainlog kb check`` validates them with ``glossary_findings``.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

import yaml
from pydantic import ValidationError

from indexer.kb_loader import Finding, _error_path_line, _parse, _positions
from indexer.schema import Bilingual, Concept


@dataclass(frozen=True)
class Variable:
    name: str
    component: str
    repo: str
    file: str
    line: int
    function: str
    kind: str
    default: str | None
    versions: tuple[str, ...]
    aliases: tuple[str, ...]
    title: Bilingual | None
    text: Bilingual | None
    # how engineers name it in a question without its name ("PXB" for NCCL_P2P_LEVEL); ``ask``
    # treats each phrase like an entry's ``asked:``
    asked: tuple[str, ...] = ()
    where: tuple[str, int] = ("", 0)  # the params file and line it was read from


def load_concepts(kb_dir: Path) -> tuple[list[Concept], list[Finding]]:
    concepts: list[Concept] = []
    findings: list[Finding] = []
    for path in sorted((Path(kb_dir) / "concepts").glob("*.yaml")):
        shown = str(path)
        try:
            root, data = _parse(path.read_text(encoding="utf-8"))
        except (UnicodeDecodeError, yaml.YAMLError) as exc:
            mark = getattr(exc, "problem_mark", None)
            findings.append(Finding(shown, mark.line + 1 if mark else 1, None, "concept", str(exc).replace("\n", " ")))
            continue
        if data is None:
            continue
        if not isinstance(data, list) or not isinstance(root, yaml.SequenceNode):
            findings.append(Finding(shown, 1, None, "concept", "a concepts file must be a YAML list"))
            continue
        for raw, node in zip(data, root.value):
            line = node.start_mark.line + 1
            try:
                concepts.append(Concept.model_validate(raw))
            except ValidationError as exc:
                positions = _positions(node)
                for err in exc.errors():
                    where = _error_path_line(positions, tuple(err["loc"]), line)
                    loc = ".".join(str(p) for p in err["loc"])
                    findings.append(Finding(shown, where, raw.get("id") if isinstance(raw, dict) else None,
                                            "concept", f"{loc}: {err['msg']}"))
    return concepts, findings


def _asked(phrases) -> tuple[str, ...]:
    if not isinstance(phrases, list) or not all(isinstance(p, str) and 2 <= len(p.strip()) <= 60 for p in phrases):
        raise ValueError("'asked' is a list of phrases of 2 to 60 characters")
    return tuple(p.strip() for p in phrases)


def load_variables(kb_dir: Path) -> tuple[list[Variable], list[Finding]]:
    variables: list[Variable] = []
    findings: list[Finding] = []
    for path in sorted((Path(kb_dir) / "params").glob("*.jsonl")):
        for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            if not line.strip():
                continue
            try:
                row = json.loads(line)
                title = Bilingual.model_validate(row["title"]) if row.get("title") else None
                text = Bilingual.model_validate(row["text"]) if row.get("text") else None
                if (title is None) != (text is None):
                    raise ValueError("a variable has both title and text, or neither")
                variables.append(Variable(
                    row["name"], row["component"], row["repo"], row["file"], int(row["line"]),
                    row.get("function") or "", row["kind"], row.get("default"), tuple(row["versions"]),
                    tuple(row.get("aliases", ())), title, text, _asked(row.get("asked", [])),
                    (str(path), n),
                ))
            except (ValueError, KeyError, TypeError, ValidationError) as exc:
                findings.append(Finding(str(path), n, None, "variable", str(exc).replace("\n", " ")[:300]))
    return variables, findings


def glossary_findings(kb_dir: Path, entry_ids: set[str]) -> list[Finding]:
    """Concepts and variables: valid, unique, and ``see:`` naming things that exist."""
    concepts, findings = load_concepts(kb_dir)
    variables, more = load_variables(kb_dir)
    findings += more
    seen_vars: dict[tuple[str, str], int] = {}
    for v in variables:
        key = (v.component, v.name)
        if key in seen_vars:
            findings.append(Finding(str(Path(kb_dir) / "params"), 1, None, "variable",
                                    f"{v.name} is listed twice for {v.component}"))
        seen_vars[key] = 1
        if not v.versions:
            findings.append(Finding(str(Path(kb_dir) / "params"), 1, None, "variable", f"{v.name} has no versions"))
    names = {v.name for v in variables}
    ids: dict[str, str] = {}
    taken: dict[str, str] = {}
    for c in concepts:
        where = str(Path(kb_dir) / "concepts")
        if c.id in ids or c.id in entry_ids:
            findings.append(Finding(where, 1, c.id, "concept", "duplicate id"))
        ids[c.id] = c.id
        for name in c.names:
            other = taken.setdefault(name.lower(), c.id)
            if other != c.id:
                findings.append(Finding(where, 1, c.id, "concept", f"name {name!r} is also a name of {other}"))
    for c in concepts:
        for ref in c.see:
            if ref not in ids and ref not in entry_ids and ref not in names:
                findings.append(Finding(str(Path(kb_dir) / "concepts"), 1, c.id, "concept",
                                        f"see: {ref!r} is no entry, variable or concept"))
    return findings
