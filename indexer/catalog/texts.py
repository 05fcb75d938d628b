"""``explainlog catalog texts FILE...``: merge written texts into the catalogue records.

Writers get a worklist of records (id, file, line, level, format) and return JSONL objects
``{id, severity, role, title, explanation, action}``. Texts are merged by id; an id the
catalogue no longer has (the extractor changed how it renders a format) is matched by the
worklist's place instead (repo, file, line, level), when that place names exactly one record.
Every text is validated (both languages present, Chinese in zh, an action for problems)
before it is written; rejected texts are reported, never half-merged.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

from pydantic import ValidationError

from indexer.catalog.build import write_records
from indexer.catalog.records import catalog_files
from indexer.schema import Bilingual, Role, Severity

KEYS = ("severity", "role", "title", "explanation", "action")


def _name_fields(text: dict, groups: dict[str, str]) -> dict:
    """Writers quote a value as the format shows it, ``{self.scope}``, or by its group's name,
    ``{scope}``; an answer fills ``{group}``. Rewrite each quoted argument to the name of the
    group that captures it.

    A spelling can be both: in "{cid} (0x{cid_2})" the group ``cid`` prints a lookup by the
    argument ``cid``, which group ``cid_2`` prints. A text that quotes some argument no group is
    named after (``{__name__}``) was written in arguments, so ``{cid}`` there means the
    argument; otherwise it was written in group names, as writers are asked, and ``{cid}``
    stays the group."""
    by_arg = {arg: name for name, arg in groups.items()}
    names = set(groups)
    fields = [v for key in ("title", "explanation", "action") if isinstance(text.get(key), dict)
              for v in text[key].values() if isinstance(v, str)]
    in_arguments = any(inner in by_arg and inner not in names
                       for v in fields for inner in re.findall(r"\{([^{}]+)\}", v))

    def one(m: re.Match) -> str:
        inner = m.group(1)
        if inner in by_arg and (in_arguments or inner not in names):
            return "{" + by_arg[inner] + "}"
        if inner in names:
            return m.group(0)
        # a name no group captures would print as "<name>": show it as the name it is
        return "`" + inner + "`" if re.fullmatch(r"[A-Za-z_][\w.]*", inner) else m.group(0)

    def fix(value: str) -> str:
        return re.sub(r"\{([^{}]+)\}", one, value)

    out = dict(text)
    for key in ("title", "explanation", "action"):
        if isinstance(out.get(key), dict):
            out[key] = {lang: fix(v) for lang, v in out[key].items()}
    return out


def _valid(text: dict) -> str | None:
    try:
        Severity(text["severity"])
        Role(text["role"])
        Bilingual.model_validate(text["title"])
        Bilingual.model_validate(text["explanation"])
        if text.get("action") is not None:
            Bilingual.model_validate(text["action"])
        elif text["severity"] != "info":
            return "no action for a problem line"
    except (KeyError, ValueError, ValidationError) as exc:
        return str(exc).splitlines()[0]
    return None


def import_texts(kb_dir: Path, text_files: list[Path], worklists: list[Path] = ()) -> dict:
    places = {}
    for path in worklists:
        for line in Path(path).read_text(encoding="utf-8").splitlines():
            if line.strip():
                w = json.loads(line)
                places[w["id"]] = (w["repo"], w["file"], w["line"], w["level"])
    texts = {}
    rejected = []
    for path in text_files:
        for number, line in enumerate(Path(path).read_text(encoding="utf-8").splitlines(), 1):
            if not line.strip():
                continue
            try:
                t = json.loads(line)
            except json.JSONDecodeError:
                rejected.append(f"{path}:{number}: not JSON")
                continue
            problem = _valid(t)
            if problem:
                rejected.append(f"{path}:{number}: {t.get('id')}: {problem}")
                continue
            texts[t["id"]] = t
    files = catalog_files(kb_dir)
    tables = {path: [json.loads(l) for l in path.read_text(encoding="utf-8").splitlines() if l.strip()]
              for path in files}
    by_id = {row["id"]: row for rows in tables.values() for row in rows}
    by_place: dict[tuple, list[dict]] = {}
    for row in by_id.values():
        by_place.setdefault((row["repo"], row["file"], row["line"], row["level"]), []).append(row)
    merged = remapped = unmatched = 0
    for tid, text in texts.items():
        row = by_id.get(tid)
        if row is None and tid in places and len(by_place.get(places[tid], [])) == 1:
            row = by_place[places[tid]][0]
            remapped += 1
        if row is None:
            unmatched += 1
            continue
        text = _name_fields(text, row.get("groups") or {})
        for key in KEYS:
            row[key] = text.get(key)
        merged += 1
    for path, rows in tables.items():
        write_records(path, rows)
    return {"merged": merged, "remapped": remapped, "unmatched": unmatched, "rejected": rejected}
