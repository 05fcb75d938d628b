"""Build ``kb/catalog/<component>.jsonl`` from source trees at release tags.

One record per distinct (level, format) of a component. Its place (file, line, function) is
taken from the newest tag that has it; ``versions`` lists every tag read that has it. Texts
(title, explanation, action, severity, role) are written by people reading the code and kept
across rebuilds by record id, which is a digest of the component, level and format, so a
record keeps its id and text for as long as the message keeps its wording.

Same trees in, same bytes out: records are sorted, JSON is written with sorted keys.
"""

from __future__ import annotations

import hashlib
import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Iterable

from indexer.catalog.extract import HOST_HEAD, SLURM_LEVEL, Occurrence, meaningful
from indexer.catalog.formats import display_format, example_line, group_name, re2_escape, to_pattern
from indexer.catalog.sources import Tree
from indexer.catalog.versions import version_key

TEXT_KEYS = ("title", "explanation", "action", "severity", "role", "example_kept")


@dataclass
class Merged:
    component: str
    repo: str
    level: str
    pieces: tuple
    anchored: bool
    kind: str
    first: Occurrence
    versions: list[str] = field(default_factory=list)
    locations: set = field(default_factory=set)


def record_id(component: str, file: str, level: str, fmt: str) -> str:
    stem = re.sub(r"[^a-z0-9]+", "_", Path(file).stem.lower()).strip("_") or "src"
    digest = hashlib.sha1(f"{component}\0{level}\0{fmt}".encode()).hexdigest()[:8]
    return f"{component}.{stem}.{digest}"


def collect(
    component: str | Callable[[str], str],
    repo: str,
    trees: Iterable[Tree],
    extractor: Callable[[str, str], list[Occurrence]],
) -> dict[tuple, Merged]:
    """Every occurrence in every tree, merged by (level, format); newest tag's place wins.

    An extractor with a ``flavor(version)`` method reads a file differently by release (a
    header's format macro that changed: UCX's ``UCT_IB_IFACE_FMT``); it is then called with
    the flavor as a third argument, and a file is parsed once per flavor."""
    merged: dict[tuple, Merged] = {}
    parsed: dict[str, list[Occurrence]] = {}
    ordered = sorted(trees, key=lambda t: version_key(t.version), reverse=True)
    flavor_of = getattr(extractor, "flavor", None)
    for tree in ordered:
        seen_here: set[tuple] = set()
        flavor = flavor_of(tree.version) if flavor_of is not None else None
        for f in tree.files:
            cache_key = f.blob + f.path + (f"#{flavor}" if flavor else "")
            occs = parsed.get(cache_key)
            if occs is None:
                occs = extractor(f.path, f.read(), flavor) if flavor_of is not None else extractor(f.path, f.read())
                parsed[cache_key] = occs
            for occ in occs:
                key = (occ.level, display_format(list(occ.pieces)))
                m = merged.get(key)
                if m is None:
                    comp = component(occ.file) if callable(component) else component
                    m = merged[key] = Merged(comp, repo, occ.level, occ.pieces, occ.anchored, occ.kind, occ)
                m.locations.add(occ.file)
                if key not in seen_here:
                    seen_here.add(key)
                    m.versions.append(tree.version)
    for m in merged.values():
        m.versions.sort(key=version_key)
    return merged


def to_record(m: Merged, texts: dict[str, dict]) -> dict:
    fmt = display_format(list(m.pieces))
    pattern, groups = to_pattern(list(m.pieces), anchor_start=m.anchored)
    if m.kind.startswith("TORCH_WARN"):
        # c10's warning handler prints "Warning: <message> (function <name>)"
        body = pattern[1:-len(r"\s*$")]
        pattern = r"^(?:Warning:\s+)?" + body + r"(?:\s+\(function .*\))?\s*$"
    if m.kind == "NV_PRINTF" and pattern.startswith(r"^NVRM:\s+"):
        # RmMsgPrefix puts "GPU<n> " before the function name in later releases
        pattern = r"^NVRM:\s+(?:GPU\d+\s+)?" + pattern[len(r"^NVRM:\s+"):]
    if m.kind == "job_state_reason_string":
        # a refused submission prints it as the client's error: "sbatch: error: <reason>"
        pattern = r"^(?:[\w-]+:\s+error:\s+)?" + pattern[1:]
    if m.repo == "SchedMD/slurm" and m.kind in SLURM_LEVEL and not pattern.startswith("^") and _one_word(m.pieces):
        # "socket: %m", "authentication: %s": one word of fixed text matches it anywhere in any
        # program's line ("Writing to socket: Connection refused"); Slurm prints it first, after
        # "<program>: <level>: " or a daemon's "[time] " (which the normalizer strips)
        pattern = r"^(?:[\w-]+:\s+(?:(?:error|fatal|warning|verbose|debug\d?):\s+)?)?" + pattern
    if m.kind == "job_notify" and pattern.startswith("^"):
        # srun, salloc and sbatch's allocation print it with info("%s"): "srun: <text>"
        pattern = r"^(?:(?:srun|salloc|sbatch):\s+)?" + pattern[1:]
    if m.kind.endswith(HOST_HEAD):
        # "mlx5: <host>: <message>": the normalizer takes "mlx5: " and the host for pdsh-style
        # prefixes, so the message may come with all, part or none of that head
        pfx, host = m.pieces[0], group_name(m.pieces[1].arg, set())
        tail, tail_groups = to_pattern([m.pieces[2][2:].lstrip()] + list(m.pieces[3:]))
        pattern = (r"^(?:(?:" + re2_escape(pfx.strip()) + r"\s+)?(?P<" + host + r">\S+):\s+)?" + tail[1:])
        groups = [(host, m.pieces[1].arg)] + tail_groups
    rid = record_id(m.component, m.first.file, m.level, fmt)
    # by id; else by place, for a record whose id changed because the extractor now reads its
    # format or level better (the text was written for the call at that line, not its id);
    # else by its level and format, for one whose newest call is now in a file read since
    at = texts.get(("at", m.component, m.first.file, m.first.line))
    if at and not _same_words(at.get("_format"), fmt):
        at = None  # another message now printed at that line number (PyTorch 2.12's abort at 2.6's dump line)
    text = texts.get(rid) or _by_place(at, groups) \
        or _by_place(texts.get(("said", m.component, m.level, fmt)), groups) or {}
    borrowed = text.get("_owner") not in (None, rid)  # another record's text, by place or wording
    level_severity = {
        "INFO": "info", "WARN": "warning", "WARNING": "warning", "ERROR": "error", "FATAL": "fatal", "DEBUG": "info", "TRACE": "info",
        "debug": "info", "info": "info", "warning": "warning", "warn": "warning", "error": "error",
        "exception": "error", "critical": "fatal", "print": "info",
    }
    severity = text.get("severity") or level_severity.get(m.level, "error")
    record = {
        "id": rid,
        "component": m.component,
        "repo": m.repo,
        "file": m.first.file,
        "line": m.first.line,
        "function": m.first.function,
        "level": m.level,
        "call": m.kind.removesuffix(HOST_HEAD),
        "format": fmt,
        "pattern": pattern,
        "groups": {name: arg for name, arg in groups},
        "versions": m.versions,
        "matchable": meaningful(m.pieces) or _devinfo_key(m),
        "severity": severity,
        "role": text.get("role") or ("context" if severity == "info" else "root_cause"),
        "title": text.get("title"),
        "explanation": text.get("explanation"),
        "action": text.get("action"),
    }
    if len(m.locations) > 1:
        record["also_in"] = sorted(m.locations - {m.first.file})
    for key in ("unrelated", "unrelated_lines"):
        if text.get(key):
            record[key] = text[key]  # kb check says when the pattern no longer takes the line
    kept = text.get("example_kept")
    sample = example_line(list(m.pieces))
    if kept and (not kept[1] or (kept[0] != sample and _matches_after_normalizing(pattern, kept[0]))):
        # a real line, or an entry's line that `catalog link` gave the record: kept across
        # rebuilds (a constructed one only while the pattern, read better since, still takes it)
        record["example"] = {"line": kept[0], "constructed": kept[1]}
    else:
        record["example"] = {"line": sample, "constructed": True}
    if record["matchable"] and not _matches_after_normalizing(pattern, record["example"]["line"]):
        # what the format prints is itself a prefix the normalizer strips (c10d's "[c10d] "
        # builders): such a record can never be told from the message it wraps
        record["matchable"] = False
    if borrowed:
        # the text is kept only if its own record is gone (write_records settles it): a format
        # read from an older tag at the place of a written one is another message
        plain = {"severity": level_severity.get(m.level, "error"), "title": None, "explanation": None,
                 "action": None, "example": {"line": sample, "constructed": True},
                 "matchable": bool(meaningful(m.pieces) or _devinfo_key(m))
                 and _matches_after_normalizing(pattern, sample)}
        plain["role"] = "context" if plain["severity"] == "info" else "root_cause"
        record["_borrowed"] = {"owner": text["_owner"], "plain": plain}
    return record


def _one_word(pieces) -> bool:
    return len(re.findall(r"[A-Za-z]{2,}", "".join(p for p in pieces if isinstance(p, str)))) <= 1


# ibv_devinfo prints "<tabs>key:<tabs>value" with verbs' snake_case names (fw_ver, max_qp_wr,
# active_mtu, link_layer): too little fixed text for the generic rule, but a key with an
# underscore names the field; "port:" or "state:" alone stay unmatchable
_SNAKE_KEY = re.compile(r"\s*[a-z][a-z0-9]*(?:_[a-z0-9]+)+:")


def _devinfo_key(m: Merged) -> bool:
    first = m.pieces[0] if m.pieces else None
    return (m.first.file.endswith("libibverbs/examples/devinfo.c") and isinstance(first, str)
            and bool(_SNAKE_KEY.match(first)))


def _by_place(text: dict | None, groups: list[tuple[str, str]]) -> dict | None:
    """A text written for the record that sat at this place, if it fits this one: two formats
    of one line in different releases (6.1's and 6.12's en_tc.c:3401) share a place, and a
    text naming a value this record does not print was written for the other."""
    if not text:
        return None
    names = {name for name, _ in groups} | {name + "_decoded" for name, _ in groups}
    for key in ("title", "explanation", "action"):
        for lang_text in (text.get(key) or {}).values():
            if not set(re.findall(r"\{(\w+)\}", lang_text)) <= names:
                return None
    return text


def _matches_after_normalizing(pattern: str, line: str) -> bool:
    from indexer.normalize import normalize_line
    from indexer.patterns import compile_pattern

    try:
        return compile_pattern(pattern).search(normalize_line(line).message) is not None
    except Exception:
        return False


def _same_words(a: str | None, b: str | None) -> bool:
    """Two formats say the same message when most words of their fixed text are shared (a
    placeholder renamed, a word fixed): a text written for one is the other's too. A format
    without words says nothing either way."""
    def words(fmt: str | None) -> set[str]:
        return set(re.findall(r"[A-Za-z]{3,}", re.sub(r"\{[^{}]*\}", " ", fmt or "").lower()))
    wa, wb = words(a), words(b)
    if not wa or not wb:
        return True
    return len(wa & wb) * 2 >= max(len(wa), len(wb))


def load_texts(path: Path) -> dict[str, dict]:
    """Texts already written for a catalogue file, by record id."""
    texts: dict[str, dict] = {}
    if not path.exists():
        return texts
    for line in path.read_text(encoding="utf-8").splitlines():
        if not line.strip():
            continue
        rec = json.loads(line)
        keep = {k: rec.get(k) for k in ("title", "explanation", "action", "severity", "role", "unrelated",
                                             "unrelated_lines") if rec.get(k)}
        keep["_owner"] = rec["id"]
        keep["_format"] = rec.get("format")
        ex = rec.get("example") or {}
        if ex and ex.get("line"):
            keep["example_kept"] = (ex["line"], bool(ex.get("constructed")))
        texts[rec["id"]] = keep
        if keep.get("title"):
            place = ("at", rec["component"], rec["file"], rec["line"])
            # a place that held two written records cannot say which text is whose
            texts[place] = None if place in texts else keep
            # the same message printed from another file: the id (which names the file of the
            # newest tag's call) changes when a newly read file prints it too
            said = ("said", rec["component"], rec.get("level"), rec.get("format"))
            texts[said] = None if said in texts else keep
    return texts


def write_records(path: Path, records: list[dict]) -> None:
    ids = {r["id"] for r in records}
    for rec in records:
        borrowed = rec.pop("_borrowed", None)
        if borrowed and borrowed["owner"] in ids:  # its own record is still there: not this one's text
            rec.update(borrowed["plain"])
            rec.pop("unrelated", None)
            rec.pop("unrelated_lines", None)
    records = sorted(records, key=lambda r: (r["file"], r["line"], r["id"]))
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".tmp")
    with tmp.open("w", encoding="utf-8") as out:
        for rec in records:
            out.write(json.dumps(rec, ensure_ascii=False, sort_keys=True) + "\n")
    tmp.replace(path)
