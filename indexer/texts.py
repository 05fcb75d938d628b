"""Fill ``{field}`` placeholders in curated texts with matched and decoded values.

Only ``{identifier}`` is a placeholder; any other brace is literal text. ``{name_decoded}`` is
the bilingual decoding of group ``name`` (a built-in decoder or a curated ``values`` table).
"""

from __future__ import annotations

import re
import unicodedata
from typing import Callable

from indexer.decoders import DECODERS
from indexer.schema import Bilingual, FieldSpec, PatternEntry

PLACEHOLDER = re.compile(r"\{(\w+)\}")
# "[[ ... ]]" marks an optional segment: kept (without the brackets) only when every
# placeholder inside it has a value, so optional groups leave no "<name>" behind.
OPTIONAL = re.compile(r"\[\[(.*?)\]\]", re.DOTALL)
DECODED_SUFFIX = "_decoded"


def _wide(char: str) -> bool:
    return unicodedata.east_asian_width(char) in ("W", "F")


def tight_after(value: str, following: str) -> bool:
    """Whether the space that starts ``following`` goes, after a zh value: a template writes
    "从 {state} 切到" for English values ("INIT"), but a value that ends in Chinese (a decoding
    such as "INIT（已初始化，未连接）") takes no space before Chinese text or after full-width
    punctuation."""
    if not value or not following.startswith(" ") or not _wide(value[-1]):
        return False
    return unicodedata.category(value[-1]).startswith("P") or (len(following) > 1 and _wide(following[1]))


def tight_before(preceding: str, value: str) -> bool:
    """Whether the space that ends ``preceding`` goes, before a zh value: "一次 {what}" is
    written for English values, but a value that starts in Chinese or with full-width
    punctuation takes no space after Chinese text ("一次聚合到…", not "一次 聚合到…")."""
    if not value or not preceding.endswith(" ") or len(preceding) < 2 or not _wide(value[0]):
        return False
    return _wide(preceding[-2])


def _han(char: str) -> bool:
    return "\u4e00" <= char <= "\u9fff"


def _latin(char: str) -> bool:
    return char.isascii() and char.isalnum()


def spaced_after(value: str, following: str) -> bool:
    """Whether a space goes after a zh value: a decoded value may be Chinese or English, so a
    template writes "用于{what_decoded}的" without spaces; an English value ("CollNet") then
    takes the house style's space before Chinese text ("用于 CollNet 的")."""
    return bool(value) and bool(following) and _latin(value[-1]) and _han(following[0])


def spaced_before(preceding: str, value: str) -> bool:
    """Whether a space goes before a zh value that starts with a Latin letter or digit and
    follows Chinese text directly (the twin of ``spaced_after``)."""
    return bool(value) and bool(preceding) and _latin(value[0]) and _han(preceding[-1])


_FULL_WIDTH_OPENERS = "，。；：、（“！？"


def trimmed_after(preceding: str, value: str) -> str:
    """A zh value whose capture starts with spaces ("其余网卡：{others}" with others = " [1]ib0")
    loses them after full-width punctuation, which takes no space after it."""
    if value[:1].isspace() and preceding[-1:] in _FULL_WIDTH_OPENERS and preceding:
        return value.lstrip()
    return value


def ends_twice(value: str, following: str, lang: int) -> bool:
    """Whether a value's closing "." doubles the sentence end that follows it: a captured
    message "... to activate." before "。" (zh) or "." (en) would print ".。" or ".."."""
    return value.endswith(".") and not value.endswith("..") and following.startswith("。" if lang else ".")


def placeholders(text: str) -> set[str]:
    return set(PLACEHOLDER.findall(text))


def available_placeholders(entry: PatternEntry, group_names: set[str]) -> set[str]:
    names = set(group_names)
    for name, spec in entry.fields.items():
        if spec.decode or spec.values:
            names.add(name + DECODED_SUFFIX)
    return names


def decode_value(spec: FieldSpec, value: str) -> tuple[str, str] | None:
    """The curated meaning of ``value``: a ``values`` table entry first, then the decoder."""
    if spec.values is not None:
        hit = spec.values.get(value)
        if hit is None and spec.default is not None:
            hit = spec.default
        if hit is not None:
            return (hit.en, hit.zh)
    if spec.decode:
        try:
            return DECODERS[spec.decode](value)
        except (ValueError, KeyError, ArithmeticError):
            return None
    return None


def field_values(
    entry: PatternEntry,
    fields: dict[str, str],
    decode: Callable[[FieldSpec, str], tuple[str, str] | None] = decode_value,
) -> dict[str, tuple[str, str]]:
    """Every placeholder value in both languages (raw values read the same in both).
    ``decode``: ``decode_value`` or a memoised twin (batch annotation decodes the same bus ids
    on every rank's lines)."""
    values: dict[str, tuple[str, str]] = {name: (value, value) for name, value in fields.items()}
    for name, spec in entry.fields.items():
        if name in fields:
            decoded = decode(spec, fields[name])
            values[name + DECODED_SUFFIX] = decoded or (fields[name], fields[name])
    return values


def given(name: str, values: dict) -> bool:
    """Whether an ``[[optional]]`` segment may show placeholder ``name``: its value is there
    and not empty (a group that matched nothing would print "Text on this line: ."); for
    ``x_decoded``, ``x`` must not be empty either. ``values`` maps names to (en, zh) pairs or,
    in the batch engine, to raw strings."""
    if name not in values:
        return False
    base = values.get(name.removesuffix(DECODED_SUFFIX), values[name])
    return (base[0] if isinstance(base, tuple) else base) != ""


def fill(text: str, values: dict[str, tuple[str, str]], lang: int) -> str:
    """Substitute placeholders; ``lang`` is 0 for en, 1 for zh. A value the line did not supply
    (an optional group, or a semantic-tier answer with no regex match) shows as ``<name>``.

    Same result as one ``OPTIONAL.sub`` then one ``PLACEHOLDER.sub``, but each text is split
    once and cached: batch annotation fills texts for hundreds of thousands of distinct lines.
    """
    if "[[" in text:
        pieces = _split(OPTIONAL, text)
        kept = [pieces[0]]
        for j in range(1, len(pieces), 2):
            inner = pieces[j]
            if all(given(name, values) for name in _split(PLACEHOLDER, inner)[1::2]):
                kept.append(inner)
            kept.append(pieces[j + 1])
        text = "".join(kept)
    parts = _split(PLACEHOLDER, text)
    if len(parts) == 1:
        return text
    out = list(parts)
    for j in range(1, len(parts), 2):
        hit = values.get(parts[j])
        out[j] = hit[lang] if hit is not None else f"<{parts[j]}>"
        if hit is not None:
            if lang:
                out[j] = trimmed_after(out[j - 1], out[j])
            if ends_twice(out[j], out[j + 1], lang):
                out[j] = out[j][:-1]
            if lang and tight_after(out[j], out[j + 1]):
                out[j + 1] = out[j + 1][1:]
            if lang and tight_before(out[j - 1], out[j]):
                out[j - 1] = out[j - 1][:-1]
            if lang and spaced_after(out[j], out[j + 1]):
                out[j + 1] = " " + out[j + 1]
            if lang and spaced_before(out[j - 1], out[j]):
                out[j - 1] = out[j - 1] + " "
    return "".join(out)


_SPLITS: dict[tuple[re.Pattern[str], str], list[str]] = {}
_SPLITS_LIMIT = 50_000


def _split(pattern: re.Pattern[str], text: str) -> list[str]:
    """``pattern.split(text)`` (text, group, text, ...), cached: KB texts are few and reused."""
    key = (pattern, text)
    parts = _SPLITS.get(key)
    if parts is None:
        if len(_SPLITS) >= _SPLITS_LIMIT:
            _SPLITS.clear()
        parts = _SPLITS[key] = pattern.split(text)
    return parts


def verdict_values(entry: PatternEntry, fields: dict[str, str]) -> tuple[dict[str, str], tuple[int, ...]]:
    """(computed values, indices of the verdicts that fire) for a line's fields."""
    if not entry.compute and not entry.verdicts:
        return {}, ()
    from indexer.verdicts import computed, fired

    extra = computed(entry.compute, fields) if entry.compute else {}
    hits = fired(entry.verdicts, {**fields, **extra}) if entry.verdicts else ()
    return extra, hits


def text_names(entry: PatternEntry) -> set[str]:
    """Every field an answer's texts depend on: placeholders of all texts (decoded ones by
    their field) and the names verdicts and computed values read."""
    texts = [entry.title, entry.summary, entry.explanation, entry.action, *entry.verdicts]
    names = {name.removesuffix(DECODED_SUFFIX) for b in texts if b is not None for t in (b.en, b.zh)
             for name in placeholders(t)}
    if entry.compute or entry.verdicts:
        from indexer.verdicts import used_names

        names |= used_names(entry)
    return names


def summary_text(entry: PatternEntry, fired: tuple[int, ...], present: set[str] | None = None) -> Bilingual:
    """What the summary says: the first verdict that fired, else the entry's ``summary`` when
    the line supplies every placeholder it needs (``present``; None: all), else the title."""
    if fired:
        return entry.verdicts[fired[0]]
    if entry.summary is not None:
        needed = {name.removesuffix(DECODED_SUFFIX) for lang in (entry.summary.en, entry.summary.zh)
                  for name in placeholders(OPTIONAL.sub("", lang))}
        if present is None or needed <= present:
            return entry.summary
    return entry.title


def fill_bilingual(text: Bilingual | None, values: dict[str, tuple[str, str]]) -> dict[str, str] | None:
    if text is None:
        return None
    return {"en": fill(text.en, values, 0), "zh": fill(text.zh, values, 1)}
