"""The explainer: regex tier first, semantic tier for the rest, calibrated confidence.

Every input line gets exactly one answer, in order. The regex tier (one RE2 set pass) needs
only the KB; the semantic index and the encoder are loaded on the first line that the regex
tier cannot answer, so a regex-tier answer never waits for torch. Semantic results are cached
by masked template: a training log repeats a few hundred templates a million times.
"""

from __future__ import annotations

import re
import os
import sys
import threading
import time
from collections import OrderedDict
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Callable, Hashable, Sequence

from indexer import paths
from indexer.calibration import REGEX_CONFIDENCE
from indexer.catalog.records import pattern_tier, source_of
from indexer.catalog.versions import version_key
from indexer.compiled import compilable
from indexer.kb_cache import load_kb_cached
from indexer.kb_loader import KnowledgeBase
from indexer.normalize import EXCEPTION_PREFIX, NormalizedLine, mask_message, normalize_line
from indexer.patterns import PatternSet, compile_pattern
from indexer.schema import PatternEntry
from indexer.texts import field_values, fill_bilingual, summary_text, verdict_values

# The semantic tier (numpy, the model, the index) is imported when a line first needs it: a
# line a pattern knows never pays for it.
if TYPE_CHECKING:
    from indexer.calibration import Calibrator
    from indexer.encoders import Encoder
    from indexer.semantic_index import Neighbours, SemanticIndex
    from service.encode_scheduler import EncodeScheduler

CONTRACT_KEYS = (
    "line", "known", "confidence", "pattern_id", "tier", "component", "severity", "role",
    "title", "summary", "verdicts", "explanation", "action", "fields", "context", "candidates", "source",
)
# The summary of a line no entry explains (the presentation layer words the rest).
UNKNOWN_SUMMARY = {
    "en": "Not in the knowledge base: no entry explains this line.",
    "zh": "未收录：知识库里没有解释这一行的条目。",
}




_WORD = re.compile(r"[A-Za-z\u4e00-\u9fff]{2,}")


def _wordy(message: str) -> bool:
    """Two words and ten letters or more: a bare file name, number or single word ("train.py",
    "Done") is too little text for similar wording to mean the same message; such lines stay
    unknown unless a pattern knows them."""
    words = _WORD.findall(message)
    return len(words) >= 2 and sum(map(len, words)) >= 10


# Tokens that name one thing rather than say something: ids mixing letters and digits (UUIDs,
# hashes, job and request ids, base64), and long unbroken runs. Unknown lines that differ only
# there share one embedding (the first one's): a log of a million such lines embeds a few.
_ID_TOKEN = re.compile(r"(?<![\w<])(?=(?:[\w-]*\d){2})(?=(?:[\w-]*[A-Za-z]){2})[\w-]{8,}(?![\w>])|[\w+/=-]{24,}")


def cluster_key(text: str) -> str:
    """The key an unknown line's embedding is shared under: its embedding text with id-like
    tokens replaced."""
    return _ID_TOKEN.sub("<ID>", text)


BUDGET_STEP = 64  # templates encoded between two looks at a run's budget


class SemanticBudget:
    """How long one run may spend embedding never-seen templates (seconds of encoder time).

    Past it, lines no pattern knows are answered unknown without asking the semantic tier, so a
    log of nothing but unique junk costs a bounded time; ``skipped_templates``/``skipped_lines``
    say how much went unasked, for the run's summary."""

    def __init__(self, seconds: float) -> None:
        self.seconds = seconds
        self.spent = 0.0
        self.skipped_templates = 0
        self.skipped_lines = 0

    @property
    def left(self) -> float:
        return self.seconds - self.spent


# what a record's pattern holds besides its fixed text: groups, classes, escapes, operators
_FIXED_TEXT = re.compile(r"\(\?P<\w+>(?:[^()]|\([^()]*\))*\)|\[[^\]]*\]|\\[sdwSDW]|[\\^$*+?(){}|.]")


def _cached_size(text: str, near: Neighbours) -> int:
    """Approximate memory of one cache entry: the key (a str object), the tuple and list, and
    per neighbour a tuple, its id (shared with the KB) and a float."""
    return 49 + 4 * len(text) + 200 + 100 * len(near.entries)


class EmbeddingBudgetExceeded(RuntimeError):
    """One call asked the embedding tier about more never-seen text than its budget allows."""

    def __init__(self, templates: int, chars: int, limit: int) -> None:
        super().__init__(
            f"{templates} line templates in this request are new to the service and need the "
            f"embedding model ({chars} characters of text); the budget is {limit} characters per "
            f"request: send fewer lines per request or use POST /v1/annotate for whole logs"
        )
        self.templates, self.chars, self.limit = templates, chars, limit


class IndexUnavailable(RuntimeError):
    """The semantic index is stale, missing or corrupt and the policy forbids rebuilding it.

    ``reason`` leaves out the directory (HTTP clients see it); ``str()`` names it."""

    def __init__(self, reason: str, index_dir: Path | None = None) -> None:
        super().__init__(f"semantic index at {index_dir} is unusable: {reason}" if index_dir else reason)
        self.reason = reason


class _EntryView(Sequence):
    """``[l.entry for l in loaded]`` without reading the items before they are used."""

    def __init__(self, loaded: Sequence) -> None:
        self._loaded = loaded

    def __len__(self) -> int:
        return len(self._loaded)

    def __getitem__(self, index):  # type: ignore[override]
        if isinstance(index, slice):
            return [l.entry for l in self._loaded[index]]
        return self._loaded[index].entry


class _ById(Mapping):
    """Entries by id, reading an entry only when it is asked for."""

    def __init__(self, ids: list[str], entries: Sequence[PatternEntry]) -> None:
        self._index: dict[str, int] = {}
        for i, entry_id in enumerate(ids):
            self._index[entry_id] = i  # the last of a repeated id, as a dict comprehension keeps it
        self._entries = entries

    def __getitem__(self, key: str) -> PatternEntry:
        return self._entries[self._index[key]]

    def __iter__(self):
        return iter(self._index)

    def __len__(self) -> int:
        return len(self._index)


class Explainer:
    """Explain lines against one KB. Thread-safe; one instance per process is the intent.

    ``index_policy``: ``"rebuild"`` rebuilds a missing or stale index (with a note on stderr),
    ``"refuse"`` raises ``IndexUnavailable``; neither ever uses a mismatched index.
    """

    def __init__(
        self,
        kb_dir: Path | str | None = None,
        index_dir: Path | str | None = None,
        model_path: str | None = None,
        index_policy: str = "rebuild",
        encoder: Encoder | None = None,
        cache_bytes: int = 64 * 1024 * 1024,
        log: Callable[[str], None] | None = None,
    ) -> None:
        self.kb_dir = Path(kb_dir or paths.kb_dir())
        self._index_dir = Path(index_dir) if index_dir else None
        self.kb: KnowledgeBase = load_kb_cached(self.kb_dir)
        self._log = log or (lambda msg: print(msg, file=sys.stderr))
        if self.kb.findings:
            # Serve what is valid rather than nothing; `explainlog kb check` is the gate.
            self._log(
                f"explainlog: warning: {len(self.kb.findings)} KB problem(s) skipped, first: "
                f"{self.kb.findings[0]} (run 'explainlog kb check')"
            )
        # Two pattern sets: the curated entries, compiled now (a line they know is answered
        # without reading or compiling the catalogue), and every entry with the catalogue's
        # records, built on the first line the curated set does not answer.
        curated = self.kb.curated_compiled()
        if curated is None:
            curated = compilable(self.kb, catalog=False)
        self._curated: list[PatternEntry] = [l.entry for l in curated]
        self._curated_patterns = PatternSet(self._curated)
        self._all: tuple[list[PatternEntry], dict[str, PatternEntry], PatternSet] | None = None
        self._all_lock = threading.Lock()
        self.index_policy = index_policy
        self._encoder = encoder
        self._model_path = model_path
        self._index: SemanticIndex | None = None
        self._lock = threading.Lock()
        self._cache: OrderedDict[str, tuple[Neighbours, float]] = OrderedDict()
        self._cache_bytes = 0
        self.cache_limit_bytes = cache_bytes
        # Set by a server: never-seen lines of concurrent requests are encoded together, fairly.
        self.scheduler: EncodeScheduler | None = None
        self._format_rx: dict[str, tuple] = {}  # format id -> (compiled pattern, its rank as a print site)
        self._last_hits: tuple[str, dict, tuple[int, ...], bool] | None = None  # _hits' last question
        # Set by a batch run: the embedding time it may spend (None: no limit).
        self.semantic_budget: SemanticBudget | None = None

    # ---- every entry: curated ones, then catalogue records ----------------------------------
    def _everything(self) -> tuple[Sequence[PatternEntry], Mapping[str, PatternEntry], PatternSet]:
        if self._all is None:
            with self._all_lock:
                if self._all is None:
                    compiled = self.kb.compiled if self.kb.compiled is not None else compilable(self.kb)
                    columns = self.kb.match_columns
                    if columns is not None and len(columns.ids) == len(compiled):
                        # from the KB cache: entries stay pickled until a line needs one
                        entries: Sequence[PatternEntry] = _EntryView(compiled)
                        by_id: Mapping[str, PatternEntry] = _ById(columns.ids, entries)
                        patterns = PatternSet(entries, columns)
                    else:
                        entries = [l.entry for l in compiled]
                        by_id = {e.id: e for e in entries}
                        patterns = PatternSet(entries)
                    self._all = (entries, by_id, patterns)
        return self._all

    @property
    def entries(self) -> Sequence[PatternEntry]:
        """Every entry in tier order (curated, then catalogue); indices are ``patterns``'."""
        return self._everything()[0]

    @property
    def by_id(self) -> Mapping[str, PatternEntry]:
        return self._everything()[1]

    @property
    def patterns(self) -> PatternSet:
        return self._everything()[2]

    # ---- semantic tier plumbing -------------------------------------------------------------
    @property
    def index_dir(self) -> Path:
        return self._index_dir or paths.index_dir(self.encoder.name, self.kb.digest)

    @property
    def encoder(self) -> Encoder:
        if self._encoder is None:
            from indexer.encoders import default_encoder

            self._encoder = default_encoder(self._model_path)
        return self._encoder

    def index(self) -> SemanticIndex:
        """Load (or, by policy, rebuild) the index that matches this KB and model.

        A stale index (other KB, model or format) and a damaged one (``SemanticIndex.load``
        verifies checksums and vectors) are treated alike: rebuilt under ``rebuild``,
        ``IndexUnavailable`` under ``refuse``. Never used."""
        from indexer.semantic_index import (
            IndexError_, SemanticIndex, build_index, prune_older_builds, read_stamp, spot_check, stamp_problem,
        )

        with self._lock:
            if self._index is None:
                index_dir = self.index_dir
                problem = stamp_problem(read_stamp(index_dir), self.kb.digest, self.encoder.name)
                if problem is None:
                    try:
                        loaded = SemanticIndex.load(index_dir)
                        spot_check(loaded, self.encoder)
                        self._index = loaded
                    except IndexError_ as exc:
                        problem = exc.reason
                if self._index is None:
                    if self.index_policy != "rebuild":
                        raise IndexUnavailable(f"{problem}; run 'explainlog index build'", index_dir)
                    self._log(f"explainlog: {problem}; building the semantic index at {index_dir} ...")
                    build_index(self.kb, self.kb_dir, index_dir, self.encoder)
                    if self._index_dir is None and "EXPLAINLOG_INDEX" not in os.environ:
                        prune_older_builds(index_dir)
                    self._index = SemanticIndex.load(index_dir)
                problem = stamp_problem(self._index.meta, self.kb.digest, self.encoder.name)
                if problem:
                    self._index = None
                    raise IndexUnavailable(problem, index_dir)
            return self._index

    def warm_up(self) -> None:
        """Load the index and the model now (raising what loading raises), so that the first
        line the regex tier cannot answer does not wait for them. Front-ends call it from a
        background thread and report failures their own way."""
        self.index()
        self.encoder.encode(["NCCL INFO warm-up"])  # the first call loads the model

    @property
    def calibrator(self) -> Calibrator:
        return self.index().calibrator

    # ---- answers ----------------------------------------------------------------------------
    def explain(self, line: str) -> dict:
        return self.explain_many([line])[0]

    def explain_many(
        self, lines: Sequence[str], semantic: bool = True, regex: bool = True,
        client: Hashable = None, budget_chars: int | None = None,
    ) -> list[dict]:
        """One answer per line, in order. Unknown templates are embedded in one batch.

        ``regex=False`` sends every line to the semantic tier: ``eval --tier semantic`` uses it
        to measure that tier on lines the regex tier would otherwise answer. ``client`` names
        the caller to the scheduler (fair shares); ``budget_chars`` caps the embedding text
        of never-seen templates one call may ask for (``EmbeddingBudgetExceeded`` beyond it,
        before anything is encoded).
        """
        normalized = [normalize_line(line) for line in lines]
        answers: list[dict | None] = [self._regex_answer(n) if regex else None for n in normalized]
        pending = [i for i, a in enumerate(answers) if a is None]
        if pending and semantic:
            self._semantic_answers(normalized, pending, answers, client, budget_chars)
        for i in pending:
            if answers[i] is None:
                answers[i] = self._unknown(normalized[i], [], 0.0)
        return answers  # type: ignore[return-value]

    @property
    def curated_count(self) -> int:
        """How many curated entries there are: they are ``entries[:curated_count]``."""
        return len(self._curated)

    def regex_hits(self, message: str, context: dict[str, str] | None = None) -> list[int]:
        """What the regex tier finds for ``message`` before its traceback fallback, as indices
        into ``entries`` and ``patterns``, best first: the curated entries that match, when any
        does (they come first in ``entries`` and outrank every record, so the catalogue's
        27,000 patterns need not be asked), else every entry that matches."""
        return list(self._hits(message, context)[0])

    def _hits(self, message: str, context: dict[str, str] | None) -> tuple[tuple[int, ...], bool]:
        """``regex_hits`` and whether they are the curated set's, remembered for the last
        message asked: the batch engine asks about a shape's first line, then explains it."""
        last = self._last_hits
        if last is not None and last[0] == message and last[1] == (context or {}):
            return last[2], last[3]
        # A curated entry outranks every catalogue record, so a curated match is the answer
        # whatever the catalogue holds: no need to load or compile it.
        hits = self._curated_patterns.matching(message, context)
        curated = bool(hits)
        if not curated:
            hits = self.patterns.matching(message, context)
        self._last_hits = (message, dict(context or {}), tuple(hits), curated)
        return tuple(hits), curated

    def _regex_answer(self, line: NormalizedLine) -> dict | None:
        if not line.message and not line.context.get("prefix_only"):
            return None  # a blank line; a prefix with nothing after it is matched below
        message = line.message
        hits, curated = self._hits(message, line.context)
        if curated:
            entry = self._curated[hits[0]]
            fields = self._curated_patterns.groups(hits[0], message)
            return self._known(line, entry, fields, REGEX_CONFIDENCE, "regex", self.regex_candidates(hits))
        if not hits:
            # The last line of a traceback, "XError: message": when no entry knows the whole
            # line, the message is explained by whatever entry knows it.
            m = EXCEPTION_PREFIX.match(message)
            if m is None:
                return None
            message = m.group("rest")
            hits = self.patterns.matching(message, line.context)
            if not hits:
                return None
        entry = self.entries[hits[0]]
        fields = self.patterns.groups(hits[0], message)
        return self._known(line, entry, fields, REGEX_CONFIDENCE, "regex", self.regex_candidates(hits))

    def regex_candidates(self, hits: Sequence[int]) -> list[dict]:
        """The candidates a regex-tier answer lists for these hits (``regex_hits``' order)."""
        curated, count = self._curated, len(self._curated)
        return [{"pattern_id": (curated[h] if h < count else self.entries[h]).id, "confidence": REGEX_CONFIDENCE}
                for h in hits[:3]]

    def _semantic_answers(
        self, normalized: list[NormalizedLine], pending: list[int], answers: list,
        client: Hashable = None, budget_chars: int | None = None,
    ) -> None:
        from indexer.semantic_index import embedding_text

        # Too little text for similar wording to mean the same message: unknown, not embedded
        # (the semantic tier would not answer it, see _semantic_answer).
        keys = {i: cluster_key(embedding_text(normalized[i].raw)) for i in pending
                if normalized[i].message and _wordy(normalized[i].message)}
        found_here: dict[str, tuple[Neighbours, float]] = {}
        with self._lock:
            for key in keys.values():
                hit = self._cache.get(key)
                if hit is not None:
                    self._cache.move_to_end(key)
                    found_here[key] = hit
        missing = sorted({k for k in keys.values() if k not in found_here})
        if missing:
            if budget_chars is not None:
                size = sum(map(len, missing))
                if size > budget_chars:
                    raise EmbeddingBudgetExceeded(len(missing), size, budget_chars)
            index = self.index()
            budget = self.semantic_budget
            done = 0
            # within a run's budget, in slices, so a budget runs out after a slice, not a log
            step = len(missing) if budget is None else BUDGET_STEP
            while done < len(missing) and (budget is None or budget.left > 0):
                part = missing[done:done + step]
                started = time.perf_counter()
                scheduler = self.scheduler
                vectors = scheduler.encode(part, client) if scheduler else self.encoder.encode(part)
                found = index.neighbours(vectors)
                if budget is not None:
                    budget.spent += time.perf_counter() - started
                with self._lock:
                    for key, near in zip(part, found):
                        confidence = index.calibrator.confidence(near.similarities, near.unrelated)
                        found_here[key] = (near, confidence)
                        self._remember(key, near, confidence)
                done += len(part)
            if done < len(missing) and budget is not None:
                budget.skipped_templates += len(missing) - done
        for i, key in keys.items():
            hit = found_here.get(key)
            if hit is None:
                self.semantic_budget.skipped_lines += 1  # type: ignore[union-attr]
                continue
            near, confidence = hit
            answers[i] = self._semantic_answer(normalized[i], near, confidence)

    def _remember(self, text: str, near: Neighbours, confidence: float) -> None:
        """Cache a template's neighbours, evicting the least recently used beyond the byte
        limit (called with the lock held). Bounded in bytes, not entries: templates run from
        ten characters to 400."""
        old = self._cache.pop(text, None)
        if old is not None:
            self._cache_bytes -= _cached_size(text, old[0])
        self._cache[text] = (near, confidence)
        self._cache_bytes += _cached_size(text, near)
        while self._cache_bytes > self.cache_limit_bytes and self._cache:
            evicted, (gone, _) = self._cache.popitem(last=False)
            self._cache_bytes -= _cached_size(evicted, gone)

    @property
    def cache_bytes(self) -> int:
        """Approximate bytes held by the template cache."""
        return self._cache_bytes

    def _semantic_answer(self, line: NormalizedLine, near: Neighbours, confidence: float) -> dict:
        calibrator = self.calibrator
        row = near.entries
        # A runner-up is scored as if it were the answer, with a negative margin to the best.
        candidates = [
            {
                "pattern_id": entry_id,
                "confidence": round(
                    confidence if rank == 0 else calibrator.confidence([sim, row[0][1]], near.unrelated), 4
                ),
            }
            for rank, (entry_id, sim) in enumerate(row[:3])
        ]
        if row and confidence >= calibrator.threshold and _wordy(line.message):
            entry = self.by_id[row[0][0]]
            return self._known(line, entry, {}, confidence, "semantic", candidates)
        return self._unknown(line, candidates, confidence)

    def source(self, entry: PatternEntry, message: str | None = None) -> dict | None:
        """Where the line is printed and in which releases: the catalogue record itself, or,
        for a curated entry, the linked format that prints this line (the first linked one when
        none matches or no line is given); an unlinked curated entry names its source file."""
        rec = None
        if message is not None and len(entry.formats) > 1:
            rec = self._printing_format(entry, message)
        if rec is None:
            rec = self.kb.record_for(entry.id, entry.formats)
        if rec is not None:
            out = source_of(rec)
            span = (entry.versions or "").split(" (", 1)[0].strip()
            if entry.formats and entry.id != rec.id and span:
                # A curated entry speaks for its message in every release it links, not only
                # those of the print site that took this line: a reader on torch 2.x shown
                # "v1.13.1" takes the text for another version's. Its span already holds the
                # other projects printing the format (RCCL's copy), so 'also' would repeat it.
                out["versions"] = span
                out.pop("also", None)
            return out
        repo, _, file = entry.source.partition(" ")
        return {"repo": repo, "file": file, "line": None, "function": None, "versions": entry.versions, "record": None}

    def _printing_format(self, entry: PatternEntry, message: str):
        """The linked record that prints the message: of those whose own pattern matches it,
        the one with the most fixed text (the wording that says most about this line: the
        2.7 form over an older, looser one), then the newest release (the code as it is now,
        when one format moved between lines or functions). Patterns compiled once."""
        best, best_key = None, None
        for fid in entry.formats:
            rec = self.kb.record_for(fid, [])
            if rec is None:
                continue
            compiled = self._format_rx.get(fid)
            if compiled is None:
                try:
                    rank = (len(_FIXED_TEXT.sub("", rec.pattern)), version_key(rec.versions[-1]) if rec.versions else ())
                    compiled = self._format_rx[fid] = (compile_pattern(rec.pattern), rank)
                except Exception:
                    continue
            rx, key = compiled
            if rx.search(message):
                if best_key is None or key > best_key:
                    best, best_key = rec, key
        return best

    def _known(self, line, entry: PatternEntry, fields: dict[str, str], confidence: float, tier: str, candidates) -> dict:
        values = field_values(entry, fields)
        extra, fired = verdict_values(entry, fields)
        for name, value in extra.items():
            values[name] = (value, value)
        if tier == "regex":
            tier = pattern_tier(entry)
        return {
            "line": line.raw,
            "known": True,
            "confidence": round(confidence, 4),
            "pattern_id": entry.id,
            "tier": tier,
            "component": entry.component.value,
            "severity": entry.severity.value,
            "role": entry.role.value,
            "title": fill_bilingual(entry.title, values),
            "summary": fill_bilingual(summary_text(entry, fired, set(fields) | set(extra)), values),
            "verdicts": [dict(when=entry.verdicts[i].when, **fill_bilingual(entry.verdicts[i], values)) for i in fired],
            "explanation": fill_bilingual(entry.explanation, values),
            "action": fill_bilingual(entry.action, values),
            "fields": fields,
            "context": line.context,
            "candidates": candidates,
            "source": self.source(entry, line.message),
        }

    def _unknown(self, line: NormalizedLine, candidates: list, confidence: float) -> dict:
        return {
            "line": line.raw,
            "known": False,
            "confidence": round(confidence, 4),
            "pattern_id": None,
            "tier": None,
            "component": None,
            "severity": None,
            "role": None,
            "title": None,
            "summary": dict(UNKNOWN_SUMMARY),
            "verdicts": [],
            "explanation": None,
            "action": None,
            "fields": {},
            "context": line.context,
            "candidates": candidates,
            "source": None,
        }

    def template(self, line: str) -> str:
        """The masked template of a line: the cache key batch front-ends group by."""
        return mask_message(normalize_line(line).message)
