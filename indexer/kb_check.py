"""``explainlog kb check``: every rule the KB must obey, one small function per rule.

Each check yields ``Finding``s naming file, line and entry, so a curator can fix all problems
in one pass. Checks that need compiled patterns only run on entries whose regex compiled.
"""

from __future__ import annotations

import re
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Iterable, Iterator

from indexer.decoders import DECODERS
from indexer.compiled import compilable
from indexer.kb_loader import Finding, KnowledgeBase, LoadedEntry, load_kb
from indexer.normalize import normalize_line
from indexer.patterns import PatternSet, compile_pattern
from indexer.schema import Severity
from indexer.texts import DECODED_SUFFIX, OPTIONAL, PLACEHOLDER, available_placeholders, placeholders


@dataclass
class CheckContext:
    kb: KnowledgeBase
    compiled: list[LoadedEntry]  # entries whose pattern compiles, in KB order
    patterns: PatternSet
    kb_dir: Path | None = None
    # pattern -> compiled regex, for the patterns ``compilable`` compiled: checks that need a
    # pattern's regex take it here instead of compiling 58,000 patterns a second time
    regexes: dict = field(default_factory=dict)

    def regex(self, pattern: str):
        rx = self.regexes.get(pattern)
        if rx is None:
            rx = self.regexes[pattern] = compile_pattern(pattern)
        return rx


def _finding(loaded: LoadedEntry, check: str, message: str, *path: object) -> Finding:
    return Finding(loaded.file, loaded.line_of(*path), loaded.entry.id, check, message)


def check_unique_ids(ctx: CheckContext) -> Iterator[Finding]:
    seen: dict[str, LoadedEntry] = {}
    for loaded in ctx.kb.entries:
        first = seen.setdefault(loaded.entry.id, loaded)
        if first is not loaded:
            yield _finding(
                loaded, "duplicate-id", f"id already used at {first.file}:{first.line}", "id"
            )


def check_regex_compiles(ctx: CheckContext) -> Iterator[Finding]:
    for loaded in ctx.kb.entries:
        try:
            compile_pattern(loaded.entry.pattern)
        except Exception as exc:
            detail = exc.args[0].decode() if exc.args and isinstance(exc.args[0], bytes) else str(exc)
            yield _finding(
                loaded,
                "regex",
                f"pattern does not compile under RE2 (linear-time engine; no backreferences or "
                f"lookaround): {detail}",
                "pattern",
            )


def check_context_regexes(ctx: CheckContext) -> Iterator[Finding]:
    for loaded in ctx.kb.entries:
        for key, rx in loaded.entry.context.items():
            try:
                compile_pattern(rx)
            except Exception as exc:
                yield _finding(loaded, "regex", f"context.{key} does not compile under RE2: {exc}", "context", key)


def check_fields_documented(ctx: CheckContext) -> Iterator[Finding]:
    for index, loaded in enumerate(ctx.compiled):
        groups = ctx.patterns.group_names(index)
        for name in sorted(groups - set(loaded.entry.fields)):
            yield _finding(loaded, "fields", f"named group '{name}' has no entry under fields", "pattern")
        for name in sorted(set(loaded.entry.fields) - groups):
            yield _finding(loaded, "fields", f"field '{name}' is not a named group of the pattern", "fields", name)
        for name, spec in loaded.entry.fields.items():
            if spec.decode and spec.decode not in DECODERS:
                yield _finding(
                    loaded,
                    "fields",
                    f"field '{name}' uses unknown decoder '{spec.decode}' (known: {', '.join(sorted(DECODERS))})",
                    "fields", name, "decode",
                )


def check_placeholders(ctx: CheckContext) -> Iterator[Finding]:
    for index, loaded in enumerate(ctx.compiled):
        allowed = available_placeholders(loaded.entry, ctx.patterns.group_names(index))
        for key in ("title", "explanation", "action"):
            text = getattr(loaded.entry, key)
            if text is None:
                continue
            for lang in ("en", "zh"):
                for name in sorted(placeholders(getattr(text, lang)) - allowed):
                    yield _finding(
                        loaded, "placeholder", f"{key}.{lang} uses {{{name}}} but there is no such group", key, lang
                    )


def check_action_for_problems(ctx: CheckContext) -> Iterator[Finding]:
    for loaded in ctx.kb.entries:
        if loaded.entry.severity != Severity.info and loaded.entry.action is None:
            yield _finding(
                loaded, "action", f"severity {loaded.entry.severity.value} needs an action (what to do next)", "severity"
            )


def _is_record(loaded: LoadedEntry) -> bool:
    return loaded.file.endswith((".jsonl", ".jsonl.gz", ".jsonl.xz"))


def check_examples(ctx: CheckContext) -> Iterator[Finding]:
    for index, loaded in enumerate(ctx.compiled):
        entry = loaded.entry
        for n, example in enumerate(entry.examples):
            normalized = normalize_line(example.line)
            message = normalized.message
            hits = ctx.patterns.matching(message, normalized.context)
            where = ("examples", n)
            if index not in hits:
                yield _finding(loaded, "example", f"example does not match its own pattern: {message[:120]!r}", *where)
                continue
            if _is_record(loaded):
                # A curated entry answering a record's example is the design (richer text wins);
                # among records the more specific format answers. Links are checked below.
                continue
            winner = hits[0]
            rivals = [
                ctx.compiled[h].entry.id
                for h in hits
                if h != index and ctx.compiled[h].entry.priority >= entry.priority
            ]
            if winner != index:
                yield _finding(
                    loaded, "example", f"example is answered by '{ctx.compiled[winner].entry.id}' (higher priority)", *where
                )
            elif rivals:
                yield _finding(
                    loaded,
                    "example",
                    f"example also matches {', '.join(rivals)} with equal priority; make the patterns "
                    f"disjoint or set priority",
                    *where,
                )
            got = ctx.patterns.groups(index, message)
            for name, expected in example.fields.items():
                if got.get(name) != expected:
                    yield _finding(
                        loaded, "example", f"field '{name}' is {got.get(name)!r}, example expects {expected!r}", *where
                    )


def _message_and_context(line: str) -> tuple[str, dict[str, str]]:
    normalized = normalize_line(line)
    return normalized.message, normalized.context


def check_negatives(ctx: CheckContext) -> Iterator[Finding]:
    for index, loaded in enumerate(ctx.compiled):
        examples = {e.line for e in loaded.entry.examples}
        for n, negative in enumerate(loaded.entry.negatives):
            if negative in examples:
                yield _finding(loaded, "negative", "negative is also listed as an example", "negatives", n)
            elif index in ctx.patterns.matching(*_message_and_context(negative)):
                yield _finding(loaded, "negative", f"negative matches the pattern: {negative[:120]!r}", "negatives", n)


def check_catalog(ctx: CheckContext) -> Iterator[Finding]:
    """Every record: unique id, text in both languages, a pattern that compiles and matches
    its own example; every curated ``formats:`` link exists and its example matches the entry."""
    records = ctx.kb.records
    curated_ids = {l.entry.id for l in ctx.kb.entries}
    from indexer.catalog.records import load_catalog

    loaded_records = getattr(ctx.kb, "record_rows", None)
    if loaded_records is None:  # a KB not read by load_kb (the cache): read the files again
        loaded_records = load_catalog(ctx.kb_dir)[0] if ctx.kb_dir else []
    seen: dict[str, str] = {}
    for rec, file, line in loaded_records:
        where = f"{file}:{line}"
        if rec.id in seen or rec.id in curated_ids:
            yield Finding(file, line, rec.id, "catalog", f"duplicate id (first at {seen.get(rec.id, 'a curated entry')})")
        seen.setdefault(rec.id, where)
        if not rec.has_text:
            # extracted, not yet written: listed and versioned, never answered (kb check's
            # summary counts them per component); text that is there must be complete
            if rec.title or rec.explanation or rec.action:
                yield Finding(file, line, rec.id, "catalog", "record has partial text (title and explanation, en and zh)")
        elif rec.severity != Severity.info and rec.action is None:
            yield Finding(file, line, rec.id, "catalog", f"severity {rec.severity.value} needs an action")
        try:
            rx = ctx.regex(rec.pattern)
        except Exception as exc:
            yield Finding(file, line, rec.id, "catalog", f"pattern does not compile under RE2: {exc}")
            continue
        if rec.matchable and not rx.search(normalize_line(rec.example.line).message):
            yield Finding(file, line, rec.id, "catalog", f"pattern does not match its example {rec.example.line[:100]!r}")
    # a record's real example is a line of an entry that links it (catalog link put it
    # there); a line left behind by an entry that no longer links it documents another message
    linked_lines: dict[str, set[str]] = defaultdict(set)
    for loaded in ctx.kb.entries:
        for fid in loaded.entry.formats:
            linked_lines[fid].update(e.line for e in loaded.entry.examples)
    for rec, file, line in loaded_records:
        if not rec.example.constructed and rec.example.line not in linked_lines.get(rec.id, set()):
            yield Finding(file, line, rec.id, "catalog",
                          "real example belongs to no entry that links this record (run explainlog catalog link)")
    curated = [l for l in ctx.compiled if not _is_record(l)]
    linkers: dict[str, list] = defaultdict(list)
    for loaded in curated:
        for fid in loaded.entry.formats:
            linkers[fid].append(ctx.regex(loaded.entry.pattern))
    for loaded in curated:
        entry = loaded.entry
        for n, fid in enumerate(entry.formats):
            rec = records.get(fid)
            if rec is None:
                yield _finding(loaded, "formats", f"links unknown catalogue record {fid!r}", "formats", n)
                continue
            own = ctx.regex(rec.pattern)
            if not any(own.search(normalize_line(e.line).message) for e in entry.examples):
                yield _finding(loaded, "formats", f"no example of the entry is printed by linked format {fid}", "formats", n)
                continue
            if rec.example.constructed:
                # the record's example was filled from its format with stand-in values
                # ("Bootstrap: Usingline"): no line anyone saw, so the entry's own example,
                # printed by this format (checked above), is the evidence; `catalog link`
                # gives the record that real line
                continue
            # Entries that each explain one branch of a format (Enabled / Disabled) share it:
            # together they must explain the format's example.
            message, context = _message_and_context(rec.example.line)
            if not any(rx.search(message) for rx in linkers[fid]):
                yield _finding(
                    loaded, "formats",
                    f"pattern does not match the example of linked format {fid}: {rec.example.line[:100]!r}",
                    "formats", n,
                )


REQUIRE_VERIFIED = True  # every entry carries its evidence (issue 15)


def check_verified(ctx: CheckContext) -> Iterator[Finding]:
    """Every curated entry names its evidence (``verified:``): where the message is printed,
    read at a tag or commit, with a line; a document only where no source is readable."""
    for loaded in ctx.kb.entries:
        entry = loaded.entry
        if not entry.verified:
            if not REQUIRE_VERIFIED:
                continue
            yield _finding(loaded, "verified", "no 'verified:' evidence: cite where the message is printed "
                           "and where each decoded field is set ({repo, ref, file, line, what})", "id")
            continue
        for n, ev in enumerate(entry.verified):
            if ev.repo == "docs" and ev.ref != "docs":
                yield _finding(loaded, "verified", "a document is cited with 'ref: docs'", "verified", n)
            elif ev.repo not in ("docs",) and ev.line is None:
                yield _finding(loaded, "verified", f"evidence in {ev.repo} {ev.file} needs the line", "verified", n)


def check_versions_from_formats(ctx: CheckContext) -> Iterator[Finding]:
    """An entry that links formats states the versions those records were read in."""
    from indexer.catalog.records import entry_versions

    for loaded in ctx.kb.entries:
        entry = loaded.entry
        records = [ctx.kb.records[f] for f in entry.formats if f in ctx.kb.records]
        if not records or len(records) != len(entry.formats):
            continue
        want = entry_versions(records)
        if want and not (entry.versions or "").startswith(want):
            yield _finding(loaded, "versions", f"versions must start with those of the linked formats: {want!r} "
                           f"(explainlog catalog link writes them; detail may follow in parentheses)", "versions" if entry.versions else "formats")


def check_oldest_read(ctx: CheckContext) -> Iterator[Finding]:
    """``OLDEST_READ`` (the first release read of a project not read from its start, shown as
    '≤v1.9.0') is the oldest version among that project's records: reading older releases
    moves it, and a span would otherwise claim a start the catalogue no longer has."""
    from indexer.catalog.records import OLDEST_READ
    from indexer.catalog.versions import version_key

    oldest: dict[str, str] = {}
    for rec in ctx.kb.records.values():
        for repo, versions in [(rec.repo, rec.versions), *rec.other_versions.items()]:
            for v in versions[:1]:
                if repo not in oldest or version_key(v) < version_key(oldest[repo]):
                    oldest[repo] = v
    for repo, tag in OLDEST_READ.items():
        if repo in oldest and oldest[repo] != tag:
            yield Finding("indexer/catalog/records.py", 0, None, "versions",
                          f"OLDEST_READ[{repo!r}] is {tag!r} but the oldest release among its records is {oldest[repo]!r}")


_PLACEHOLDER = re.compile(r"\{([^{}]*)\}")


def _format_key(rec) -> tuple[str, str]:
    """A record's format as its message reads, for telling two records of one message apart
    from two messages: each placeholder by the last name in it (``{myInfo->busId}`` ->
    ``{busid}``, so a bus id is not taken for a device index), white space collapsed."""
    def name(match: re.Match) -> str:
        names = re.findall(r"[A-Za-z_]\w*", match.group(1))
        return "{" + (names[-1].lower() if names else "") + "}"
    return rec.repo, re.sub(r"\s+", " ", _PLACEHOLDER.sub(name, rec.format or "")).strip()


def check_other_releases(ctx: CheckContext) -> Iterator[Finding]:
    """An entry links every record of its message: a record of the same repository whose
    format reads the same as a linked one (another file, call or release printed it), whose
    pattern matches one of the entry's examples and whose example the entry matches, is linked
    too when it adds releases; else the entry's versions start too late (reading DeepSpeed 0.3
    and Megatron v2.0 found such records that no entry linked). Link it once the entry's text
    has been checked at those releases."""
    from indexer.catalog.records import entry_versions

    by_key: dict[tuple[str, str], list] = defaultdict(list)
    for rec in ctx.kb.records.values():
        if rec.matchable:
            by_key[_format_key(rec)].append(rec)
    for loaded in ctx.kb.entries:
        entry = loaded.entry
        linked = [ctx.kb.records[f] for f in entry.formats if f in ctx.kb.records]
        if not linked:
            continue
        try:
            own = ctx.regex(entry.pattern)
        except Exception:
            continue  # check_regex_compiles reports it
        messages = [normalize_line(e.line).message for e in entry.examples]
        extra = []
        for key in dict.fromkeys(_format_key(r) for r in linked):
            if len(re.sub(r"\{\w*\}|\W", "", key[1])) < 10:
                continue  # too little fixed text to call two formats one message
            for rec in by_key.get(key, ()):
                if rec.id in entry.formats or rec in extra:
                    continue
                try:
                    theirs = ctx.regex(rec.pattern)
                except Exception:
                    continue
                # a constructed example holds stand-in values ("type=optimizer") the entry's
                # pattern may rightly refuse: then the record's pattern taking one of the
                # entry's examples is the evidence that it prints the same message
                if ((rec.example.constructed or own.search(normalize_line(rec.example.line).message))
                        and any(theirs.search(m) for m in messages)):
                    extra.append(rec)
        if extra and entry_versions(linked + extra) != entry_versions(linked):
            yield _finding(loaded, "formats",
                           f"records of the same message in other releases are not linked: {', '.join(r.id for r in extra)} "
                           f"(versions would be {entry_versions(linked + extra)!r}); check the text at those releases, then add them to formats:",
                           "formats")


def check_unlinked_sites(ctx: CheckContext) -> Iterator[Finding]:
    """A curated entry answers every line its pattern takes, so a catalogue record whose
    example the entry would answer is a print site the entry speaks for: link it (once its
    text has been read to hold there, which moves ``versions:``), or narrow the pattern and
    keep the record's line as a negative. A record that another entry links is that entry's to
    answer: the entry that links it must win its example. (The fifth acceptance sample found
    patterns taking NCCL 2.28's Data Direct probe and Slurm 15.08.0's line without 'ON' while
    their text described another print site.)"""
    from indexer.catalog.records import version_span

    curated = {i for i, l in enumerate(ctx.compiled) if not _is_record(l)}
    linkers: dict[str, set[str]] = defaultdict(set)
    for i in curated:
        for fid in ctx.compiled[i].entry.formats:
            linkers[fid].add(ctx.compiled[i].entry.id)
    unlinked: dict[int, list] = defaultdict(list)
    # every record, with text or awaiting it: a curated entry answers either one's lines
    for rec in ctx.kb.records.values():
        # a record too loose to answer on its own (matchable False) still prints a message
        # when its format has words ("Launching ... abort asynchronously"); one of rules or
        # bare placeholders ("****", "{__FILE__}:{__LINE__} -> {res}") is no message
        if not rec.matchable and len(re.findall(r"[A-Za-z]", _PLACEHOLDER.sub("", rec.format or ""))) < 3:
            continue
        line = rec.example.line if rec.example else None
        if not line:
            continue
        hits = [h for h in ctx.patterns.matching(*_message_and_context(line)) if h in curated]
        if not hits:
            continue
        winner = ctx.compiled[hits[0]]
        if rec.id in winner.entry.formats:
            continue
        owners = linkers.get(rec.id)
        if owners:
            yield _finding(winner, "unlinked-site",
                           f"takes the example of record {rec.id}, which {', '.join(sorted(owners))} links and so "
                           f"should answer: {line[:100]!r}", "pattern")
        else:
            unlinked[hits[0]].append(rec)
    for index, recs in unlinked.items():
        loaded = ctx.compiled[index]
        shown = ", ".join(f"{r.id} ({version_span(r.versions, r.repo)})" for r in recs[:6]) + (f" and {len(recs) - 6} more" if len(recs) > 6 else "")
        yield _finding(loaded, "unlinked-site",
                       f"answers the example of {len(recs)} catalogue record(s) it does not link: {shown}; "
                       f"link each whose print site the text holds for (read it there), else narrow the pattern "
                       f"and add the line as a negative", "pattern")


# Authoring notes that must not reach a reader (an answer is shown to users as it renders).
AUTHORING_NOTE = re.compile(r"\b(?:empty if none|empty when|TODO|FIXME|TBD)\b|\?\?\?", re.I)
SUMMARY_CHARS = 140


def _example_fields(ctx: CheckContext, index: int, line: str) -> dict[str, str] | None:
    normalized = normalize_line(line)
    if index not in ctx.patterns.matching(normalized.message, normalized.context):
        return None
    return ctx.patterns.groups(index, normalized.message)


def check_verdicts(ctx: CheckContext) -> Iterator[Finding]:
    """Verdicts and computed values read only the entry's fields (and earlier computed names),
    their texts use only available placeholders, and every verdict fires on at least one of the
    entry's examples or of its own ``tests`` lines (which must match the entry)."""
    from indexer.verdicts import computed, fired, parse

    for index, loaded in enumerate(ctx.compiled):
        entry = loaded.entry
        if not entry.verdicts and not entry.compute and entry.summary is None:
            continue
        groups = ctx.patterns.group_names(index)
        known = set(groups)
        for name, source in entry.compute.items():
            for missing in sorted(parse(source).names - known):
                yield _finding(loaded, "verdict", f"compute.{name} reads {missing!r}: not a field or an earlier computed name",
                               "compute", name)
            known.add(name)
        allowed = available_placeholders(entry, groups) | set(entry.compute)
        texts = [("summary", entry.summary)] + [(f"verdicts[{n}]", v) for n, v in enumerate(entry.verdicts)]
        for key, text in texts:
            if text is None:
                continue
            for lang in ("en", "zh"):
                for name in sorted(placeholders(getattr(text, lang)) - allowed):
                    path = ("summary", lang) if key == "summary" else ("verdicts", int(key[9:-1]), lang)
                    yield _finding(loaded, "verdict", f"{key}.{lang} uses {{{name}}}: no such field or computed value", *path)
        lines = [(ex.line, ("examples", n)) for n, ex in enumerate(entry.examples)]
        exercised: set[int] = set()
        for n, verdict in enumerate(entry.verdicts):
            for missing in sorted(parse(verdict.when).names - known):
                yield _finding(loaded, "verdict", f"verdicts[{n}].when reads {missing!r}: not a field or computed name",
                               "verdicts", n, "when")
            for t, line in enumerate(verdict.tests):
                fields = _example_fields(ctx, index, line)
                if fields is None:
                    yield _finding(loaded, "verdict", f"verdicts[{n}].tests[{t}] does not match the entry's pattern",
                                   "verdicts", n, "tests", t)
                    continue
                values = {**fields, **computed(entry.compute, fields)}
                if n not in fired(entry.verdicts, values):
                    yield _finding(loaded, "verdict", f"verdicts[{n}] does not fire on its own test line {t}",
                                   "verdicts", n, "tests", t)
                exercised.add(n)
        for line, _ in lines:
            fields = _example_fields(ctx, index, line)
            if fields is not None:
                exercised.update(fired(entry.verdicts, {**fields, **computed(entry.compute, fields)}))
        for n in range(len(entry.verdicts)):
            if n not in exercised:
                yield _finding(loaded, "verdict", f"verdicts[{n}] fires on no example and has no test line that fires it",
                               "verdicts", n, "when")


def check_rendered(ctx: CheckContext) -> Iterator[Finding]:
    """Render every curated example as a user sees it: no placeholder left unfilled (an
    optional group belongs in a ``[[...]]`` segment), no authoring note, and a summary of at
    most 140 characters in each language."""
    from indexer.texts import field_values, fill_bilingual, summary_text, verdict_values

    for index, loaded in enumerate(ctx.compiled):
        if _is_record(loaded):
            continue
        entry = loaded.entry
        groups = ctx.patterns.group_names(index)
        reported: set[str] = set()
        for n, example in enumerate(entry.examples):
            fields = _example_fields(ctx, index, example.line)
            if fields is None:
                continue  # check_examples reports it
            values = field_values(entry, fields)
            extra, hits = verdict_values(entry, fields)
            values.update({k: (v, v) for k, v in extra.items()})
            summary = summary_text(entry, hits, set(fields) | set(extra))
            shown = {
                "title": entry.title, **({"summary": summary} if summary is not entry.title else {}),
                "explanation": entry.explanation, "action": entry.action,
                **{f"verdicts[{i}]": entry.verdicts[i] for i in hits},
            }
            for key, text in shown.items():
                filled = fill_bilingual(text, values)
                if filled is None:
                    continue
                for lang in ("en", "zh"):
                    body = filled[lang]
                    # a placeholder outside any [[optional]] segment whose value this line lacks
                    left = sorted(placeholders(OPTIONAL.sub("", getattr(text, lang))) - set(values))
                    note = AUTHORING_NOTE.search(body)
                    problem = None
                    if left:
                        problem = (f"{key}.{lang} renders <{left[0]}> unfilled on example {n} "
                                   f"(put text using an optional group inside [[...]])")
                    elif note:
                        problem = f"{key}.{lang} holds an authoring note ({note.group(0)!r}) a reader would see"
                    elif key == "summary" and len(body) > SUMMARY_CHARS:
                        problem = f"summary.{lang} is {len(body)} characters on example {n} (at most {SUMMARY_CHARS})"
                    if problem and (key, lang, problem[:30]) not in reported:
                        reported.add((key, lang, problem[:30]))
                        yield _finding(loaded, "render", problem, "examples", n)


def check_zh_style(ctx: CheckContext) -> Iterator[Finding]:
    """Every Chinese text of a curated entry and of a catalogue record that answers lines follows
    the house style (``indexer.zh_lint``)."""
    from indexer.zh_lint import entry_texts, lint

    for loaded in ctx.kb.entries:
        for path, text in entry_texts(loaded.entry):
            for problem in lint(text):
                yield _finding(loaded, "zh", f"{'.'.join(map(str, path))}: {problem.message}", *path)
    # catalogue records answer lines too: the same rules, reported at the record's file and line
    # (a line part carries its record's text, so only stored records are read)
    from indexer.catalog.lines import is_line_part

    for loaded in ctx.kb.all_entries:
        rec = ctx.kb.records.get(loaded.entry.id)
        if rec is None or is_line_part(rec.id):
            continue
        for key in ("title", "explanation", "action"):
            text = getattr(rec, key)
            for problem in lint(text.zh) if text is not None else ():
                yield Finding(loaded.file, loaded.line, rec.id, "zh", f"{key}.zh: {problem.message}")


def check_unrelated(ctx: CheckContext) -> Iterator[Finding]:
    """No catalogue answer line takes a message of unrelated software (``kb/unrelated/``); a
    marked record or printed line still takes the message its mark quotes."""
    if ctx.kb_dir is None:
        return
    from indexer.catalog.lines import is_line_part
    from indexer.catalog.unrelated import corpus_digest, load_corpus, still_taken, taken
    from indexer.derived import derived_value

    corpus = load_corpus(ctx.kb_dir)
    if not corpus:
        return
    where = {l.entry.id: l for l in ctx.compiled if _is_record(l)}
    # ~15 s for 240,000 messages; kept per exact pattern list and corpus (indexer.derived), so
    # a second check of the same KB reads the answer
    items = [f"{l.entry.id}\0{l.entry.pattern}\0{sorted(l.entry.context.items())}" for l in ctx.compiled]
    items.append("corpus\0" + corpus_digest(ctx.kb_dir))
    found = derived_value("unrelated", lambda _items: taken(ctx.patterns, [l.entry for l in ctx.compiled], corpus,
                                                            lambda e: e.id in where), items)
    for line_id, mark in sorted(found.items()):
        loaded = where[line_id]
        yield Finding(loaded.file, loaded.line, line_id, "unrelated",
                      f"answers a message of unrelated software ({mark[:120]!r}); run explainlog catalog unrelated")
    for rec in ctx.kb.records.values():
        if is_line_part(rec.id) or not (rec.unrelated or rec.unrelated_lines):
            continue
        row = rec.model_dump(mode="json", exclude_none=True)
        stale = [None] if rec.unrelated and not still_taken(row, rec.unrelated) else []
        stale += [k for k, m in rec.unrelated_lines.items() if not still_taken(row, m, k)]
        for part in stale:
            yield Finding(f"catalog/{rec.component.value}.jsonl", 0, rec.id + (f" ({part})" if part else ""),
                          "unrelated", "marked unrelated, but its pattern no longer takes that message; "
                          "run explainlog catalog unrelated")


def _shown_fields(text: str) -> set[str]:
    """The fields a text shows: ``{x}``, ``{x_decoded}`` and a computed ``{x_zh}`` all show x."""
    out = set()
    for name in placeholders(text):
        for suffix in (DECODED_SUFFIX, "_zh", "_en"):
            if name.endswith(suffix):
                name = name[: -len(suffix)]
                break
        out.add(name)
    return out


# English prose as a field holds it: a phrase of words ("this local rank", "collective timeout
# or exception"), or a unit word after a number ("1000 iterations"). A single word alone is not
# flagged: names engineers keep in English (nccl, recv, python, localhost) look the same.
_ENGLISH_PHRASE = re.compile(r"[a-z]+(?: [a-z]+)+")
_ENGLISH_WORD = re.compile(r"[a-z]{3,}")
_HAN_NEAR = re.compile(r"[\u4e00-\u9fff][ ]?$")
_HAN_AFTER = re.compile(r"^[ ]?[\u4e00-\u9fff]")
_NUMBER_BEFORE = re.compile(r"\{(\w+)\} ?$")
# "{size} > 1 时…": a condition with the placeholder in it prints "1 > 1 时" on a size-1 line
_VALUE_IN_CONDITION = re.compile(r"\{\w+\} ?(?:[<>]=?|==|!=|≥|≤) ?\d")


def check_zh_values(ctx: CheckContext) -> Iterator[Finding]:
    """How field values land in the Chinese texts, the classes the native-speaker reviews
    found poor (docs/review/zh_2026-12-07*.md):
    - a text's zh shows the same fields as its en (a value left out of one language is a
      different sentence; ``{x}`` and ``{x_decoded}`` count as the same field);
    - a field's ``default:`` replaces every value outside ``values:``; a text that shows
      ``{x_decoded}`` without ``{x}`` then never shows the value, only the default's words;
    - a raw English word from a field with no ``values:``/decoder filled between Chinese words
      on an example ("每 1000 iterations 保存")."""
    from indexer.texts import field_values

    for index, loaded in enumerate(ctx.compiled):
        if _is_record(loaded):
            continue
        entry = loaded.entry
        texts = [("title", entry.title), ("summary", entry.summary), ("explanation", entry.explanation),
                 ("action", entry.action)] + [(f"verdicts[{n}]", v) for n, v in enumerate(entry.verdicts)]
        texts = [(key, t) for key, t in texts if t is not None]
        for key, text in texts:
            en, zh = _shown_fields(text.en), _shown_fields(text.zh)
            if en != zh:
                side, missing = ("zh", sorted(en - zh)) if en - zh else ("en", sorted(zh - en))
                other = "en" if side == "zh" else "zh"
                path = (key.split("[")[0], int(key[key.index("[") + 1:-1])) if "[" in key else (key,)
                yield _finding(loaded, "zh-value", f"{key}.{side} leaves out {{{missing[0]}}}, which {key}.{other} shows",
                               *path, side)
        for key, text in texts:
            for lang in ("en", "zh"):
                m = _VALUE_IN_CONDITION.search(getattr(text, lang))
                if m:
                    yield _finding(loaded, "zh-value",
                                   f"{key}.{lang} writes a condition with the value in it ({m.group(0)!r}): on a line "
                                   f"where it does not hold it reads as a false statement ('1 > 1 时…'); say it in words",
                                   key.split("[")[0], lang)
                    break
        for name, spec in entry.fields.items():
            if spec.default is None:
                continue
            decoded = name + DECODED_SUFFIX
            for key, text in texts:
                hides = [lang for lang in ("en", "zh")
                         if decoded in placeholders(getattr(text, lang)) and name not in placeholders(getattr(text, lang))]
                if hides:
                    yield _finding(loaded, "zh-value",
                                   f"fields.{name}.default stands in for every value outside `values:`, and {key}.{hides[0]} "
                                   f"shows {{{decoded}}} without {{{name}}}: the reader never sees such a value; "
                                   f"drop the default (the raw value shows) or show {{{name}}} too",
                                   "fields", name, "default")
                    break
        bare = {name for name, spec in entry.fields.items() if not spec.values and not spec.decode}
        bare |= set(ctx.patterns.group_names(index)) - set(entry.fields)
        if not bare:
            continue
        reported = False
        for n, example in enumerate(entry.examples):
            if reported:
                break
            fields = _example_fields(ctx, index, example.line)
            if not fields:
                continue
            for key, text in texts:
                if reported or key.startswith("verdicts"):
                    continue
                zh = OPTIONAL.sub(lambda m: m.group(1), text.zh)
                for m in PLACEHOLDER.finditer(zh):
                    value = fields.get(m.group(1)) or ""
                    if m.group(1) not in bare or not _HAN_AFTER.search(zh[m.end():]):
                        continue
                    before = _NUMBER_BEFORE.search(zh[: m.start()])
                    unit = (before is not None and (fields.get(before.group(1)) or "").isdigit()
                            and _ENGLISH_WORD.fullmatch(value))
                    if unit or (_ENGLISH_PHRASE.fullmatch(value) and _HAN_NEAR.search(zh[: m.start()])):
                        yield _finding(loaded, "zh-value",
                                       f"{key}.zh puts {m.group(1)}={value!r} (example {n}) into a Chinese sentence as English; "
                                       f"give fields.{m.group(1)} `values:` with Chinese text and use {{{m.group(1)}_decoded}}",
                                       key, "zh")
                        reported = True
                        break


def check_asked(ctx: CheckContext) -> Iterator[Finding]:
    """``asked:`` phrases (of entries and of variables) name their document in a question
    (``explainlog ask``): a phrase must name one document only, and not be a concept's name or
    a variable (which name themselves)."""
    from indexer.glossary import load_concepts, load_variables

    taken: dict[str, str] = {}
    seen: dict[str, str] = {}
    variables = []
    if ctx.kb_dir is not None:
        concepts, _ = load_concepts(ctx.kb_dir)
        variables, _ = load_variables(ctx.kb_dir)
        taken.update({n.lower(): f"concept {c.id}" for c in concepts for n in c.names})
        taken.update({v.name.lower(): f"variable {v.name}" for v in variables})
    for v in variables:
        for phrase in v.asked:
            key = " ".join(phrase.lower().split())
            if key in taken:
                yield Finding(*v.where, v.name, "asked", f"asked phrase {phrase!r} is the name of {taken[key]}")
            elif seen.setdefault(key, f"variable {v.name}") != f"variable {v.name}":
                yield Finding(*v.where, v.name, "asked", f"asked phrase {phrase!r} already names {seen[key]}")
    for loaded in ctx.kb.entries:
        for k, phrase in enumerate(loaded.entry.asked):
            key = " ".join(phrase.lower().split())
            if key in taken:
                yield _finding(loaded, "asked", f"asked phrase {phrase!r} is the name of {taken[key]}", "asked", k)
            elif seen.setdefault(key, loaded.entry.id) != loaded.entry.id:
                yield _finding(loaded, "asked", f"asked phrase {phrase!r} already names {seen[key]}", "asked", k)


def check_heldout(ctx: CheckContext) -> Iterator[Finding]:
    """Held-out lines stay held out: no curated example or negative may contain a line of the
    checkout's held-out set (``tests/data/heldout/*.jsonl`` next to ``kb/``; lines over 30
    characters, the before-stop hook's rule). A line found in a public thread may be one the
    held-out set already took from that thread; the figures on that set mean nothing once a
    pattern was written from it. The labelled eval sets (``tests/data/eval_*.jsonl``) are held to
    what their test asks: no example may be one of their lines word for word. Skipped where there is
    no checkout next to the KB (an installed KB)."""
    if ctx.kb_dir is None:
        return
    data = ctx.kb_dir.resolve().parent / "tests" / "data"
    held = [line for line in _labelled_lines(sorted((data / "heldout").glob("*.jsonl"))) if len(line) > 30]
    evals = set(_labelled_lines(sorted(data.glob("eval_*.jsonl"))))
    if not held and not evals:
        return
    for loaded in ctx.kb.entries:
        if _is_record(loaded):
            continue
        texts = [("examples", n, e.line) for n, e in enumerate(loaded.entry.examples)]
        texts += [("negatives", n, line) for n, line in enumerate(loaded.entry.negatives)]
        for kind, n, text in texts:
            leaked = next((h for h in held if h in text), None)
            if leaked is not None:
                yield _finding(loaded, "heldout", f"{kind[:-1]} contains a held-out line ({leaked[:80]!r}): "
                               "held-out lines never become examples or negatives", kind, n)
            elif kind == "examples" and text.strip() in evals:
                yield _finding(loaded, "heldout", f"example is a line of a labelled eval set ({text.strip()[:80]!r}): "
                               "the eval sets measure lines the KB was not written from", kind, n)


def _labelled_lines(paths: list[Path]) -> list[str]:
    """The stripped ``line`` of every row of these JSONL files (unreadable rows skipped)."""
    import json

    lines = []
    for path in paths:
        for row in path.read_text(encoding="utf-8", errors="replace").splitlines():
            try:
                line = json.loads(row).get("line", "").strip()
            except (ValueError, AttributeError):
                continue
            if line:
                lines.append(line)
    return lines


CHECKS: list[Callable[[CheckContext], Iterable[Finding]]] = [
    check_unique_ids,
    check_regex_compiles,
    check_context_regexes,
    check_fields_documented,
    check_placeholders,
    check_action_for_problems,
    check_examples,
    check_negatives,
    check_catalog,
    check_verified,
    check_versions_from_formats,
    check_oldest_read,
    check_other_releases,
    check_unlinked_sites,
    check_verdicts,
    check_rendered,
    check_zh_style,
    check_zh_values,
    check_asked,
    check_heldout,
    check_unrelated,
]


def run_checks(kb_dir: Path) -> tuple[KnowledgeBase, list[Finding]]:
    """Load the KB and run every check; schema and YAML problems come first."""
    kb = load_kb(kb_dir)
    regexes: dict = {}
    compiled = compilable(kb, keep=regexes)
    patterns = PatternSet([l.entry for l in compiled])
    patterns.adopt_compiled(regexes)
    ctx = CheckContext(kb=kb, compiled=compiled, patterns=patterns, kb_dir=Path(kb_dir), regexes=regexes)
    findings = list(kb.findings)
    for check in CHECKS:
        findings.extend(check(ctx))
    from indexer.glossary import glossary_findings

    findings.extend(glossary_findings(Path(kb_dir), {l.entry.id for l in kb.entries}))
    return kb, findings


def summarize(kb: KnowledgeBase, findings: list[Finding], kb_dir: Path | None = None) -> str:
    by_check: dict[str, int] = defaultdict(int)
    for finding in findings:
        by_check[finding.check] += 1
    n_examples = sum(len(l.entry.examples) for l in kb.entries)
    n_neg = sum(len(l.entry.negatives) for l in kb.entries)
    n_verdict_entries = sum(1 for l in kb.entries if l.entry.verdicts)
    n_verdicts = sum(len(l.entry.verdicts) for l in kb.entries)
    n_summaries = sum(1 for l in kb.entries if l.entry.summary is not None)
    head = (
        f"{len(kb.entries)} entries in {len(kb.files)} files, {n_examples} examples, {n_neg} negatives, "
        f"{n_verdicts} verdicts in {n_verdict_entries} entries, {n_summaries} own summaries; "
        f"{len(kb.records)} catalogue records ({len(kb.catalog)} answer lines)"
    )
    if kb_dir is not None:
        from indexer.glossary import load_concepts, load_variables

        concepts, _ = load_concepts(kb_dir)
        variables, _ = load_variables(kb_dir)
        head += (f"; {len(concepts)} concepts; {len(variables)} environment variables "
                 f"({sum(1 for v in variables if v.text)} with text)")
    pending: dict[str, int] = defaultdict(int)
    for rec in kb.records.values():
        if not rec.has_text:
            pending[rec.component.value] += 1
    if pending:
        head += "; awaiting text (listed, not answered): " + ", ".join(
            f"{c} {n}" for c, n in sorted(pending.items()))
    if not findings:
        return f"kb check: OK: {head}"
    detail = ", ".join(f"{k}: {v}" for k, v in sorted(by_check.items()))
    return f"kb check: {len(findings)} problem(s) ({detail}); {head}"
