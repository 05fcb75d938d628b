"""The semantic index artifact: build it from the KB, write it atomically, load and verify it.

The artifact is a directory of plain data — ``vectors.npy``, ``items.json``, ``meta.json`` —
never a pickle; the exact inner-product search is rebuilt from the vectors at load time (over
some 10^4 vectors it costs milliseconds). ``meta.json`` carries the
KB digest and model name: an index built from another KB or model is refused, never used.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import tempfile
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Callable, Iterable, Sequence

import numpy as np

from indexer.calibration import Calibrator, features, fit_logistic
from indexer.encoders import Encoder
from indexer.kb_loader import KnowledgeBase
from indexer.normalize import mask_message, normalize_line
from indexer.patterns import PatternSet

# 3: CHECKSUMS (sha256 of every file, meta.json included) written last and verified on load.
FORMAT_VERSION = 3
CHECKSUMS = "CHECKSUMS"
NEIGHBOURS = 32
CALIBRATION_DIR = "calibration"


class IndexError_(RuntimeError):
    """The index cannot be used: missing, corrupt, or built from another KB or model.

    ``reason`` says why without naming the directory (what an HTTP client may see);
    ``str()`` adds the directory for the operator."""

    def __init__(self, reason: str, index_dir: Path | None = None) -> None:
        super().__init__(f"index at {index_dir}: {reason}" if index_dir else reason)
        self.reason = reason


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


UNRELATED = "unrelated"


@dataclass(frozen=True)
class IndexItem:
    entry_id: str  # "" for unrelated-software lines
    kind: str  # "example", "title" or "unrelated"
    text: str


@dataclass(frozen=True)
class Neighbours:
    """Entries ranked by their best item's cosine similarity to one query, and the similarity
    of the nearest unrelated-software line (the out-of-domain signal)."""

    entries: list[tuple[str, float]]
    unrelated: float

    @property
    def similarities(self) -> list[float]:
        return [s for _, s in self.entries]


def embedding_text(line: str) -> str:
    """What the semantic tier embeds for a line: its masked message, bounded in length."""
    return mask_message(normalize_line(line).message[:2000])[:400]


def index_items(kb: KnowledgeBase, unrelated: list[str]) -> list[IndexItem]:
    from indexer.catalog.lines import is_line_part

    seen: set[tuple[str, str]] = set()
    items: list[IndexItem] = []
    for text in {embedding_text(line) for line in unrelated}:
        if text:
            items.append(IndexItem("", UNRELATED, text))
    # A record that a curated entry links is the same message: its texts count for the entry,
    # whose richer text answers (a neighbour that is the record would otherwise win the line).
    linked_to = {fid: l.entry.id for l in kb.entries for fid in l.entry.formats}
    for loaded in kb.all_entries:
        entry = loaded.entry
        if entry.id in kb.records and is_line_part(entry.id):
            # one line of a multi-line message: the record itself is indexed with the same
            # title and the whole message; the line's stand-in example adds only noise
            continue
        owner = linked_to.get(entry.id, entry.id)
        candidates = [("title", entry.title.en)] + [("example", embedding_text(e.line)) for e in entry.examples]
        for kind, text in candidates:
            if text and (owner, text) not in seen:
                seen.add((owner, text))
                items.append(IndexItem(owner, kind, text))
    return items


class NumpyFlatIP:
    """Exact inner-product search, the contract of faiss.IndexFlatIP: for each query the ``k``
    highest scores, best first (ties: lower row first), padded with -1 rows past the end.

    The index holds some 10^4 vectors of 384 floats: one matrix product per batch of queries
    is as fast as faiss here, and the core install does without faiss's 66 MB.
    """

    def __init__(self, vectors: np.ndarray) -> None:
        self.vectors = np.ascontiguousarray(vectors, dtype=np.float32)

    @property
    def ntotal(self) -> int:
        return len(self.vectors)

    def search(self, queries: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
        n = len(queries)
        sims = np.full((n, k), -np.inf, dtype=np.float32)
        idx = np.full((n, k), -1, dtype=np.int64)
        take = min(k, self.ntotal)
        if not take or not n:
            return sims, idx
        scores = queries @ self.vectors.T
        top = np.argpartition(-scores, take - 1, axis=1)[:, :take] if take < self.ntotal else (
            np.broadcast_to(np.arange(self.ntotal), (n, self.ntotal)))
        top_scores = np.take_along_axis(scores, top, axis=1)
        for row in range(n):
            order = np.lexsort((top[row], -top_scores[row]))
            idx[row, :take] = top[row, order]
            sims[row, :take] = top_scores[row, order]
        return sims, idx


SEARCH_CHOICES = ("numpy", "faiss")


def flat_ip(vectors: np.ndarray):
    """The numpy search by default; ``EXPLAINLOG_SEARCH=faiss`` uses faiss.IndexFlatIP (the
    ``faiss`` extra) for indexes far larger than the KB's. Both are exact and return the same
    neighbours up to the order of equal scores (a test compares them); one default keeps the
    answers of a core install and a full one identical."""
    choice = os.environ.get("EXPLAINLOG_SEARCH") or "numpy"
    if choice not in SEARCH_CHOICES:
        raise ValueError(f"EXPLAINLOG_SEARCH must be one of {', '.join(SEARCH_CHOICES)}, not {choice!r}")
    if choice == "faiss":
        import faiss  # the 'faiss' extra; an ImportError says what is missing

        index = faiss.IndexFlatIP(vectors.shape[1])
        if len(vectors):
            index.add(np.ascontiguousarray(vectors, dtype=np.float32))
        return index
    return NumpyFlatIP(vectors)


class SemanticIndex:
    def __init__(self, meta: dict, items: list[IndexItem], vectors: np.ndarray) -> None:
        self.meta = meta
        self.items = items
        self.vectors = vectors
        # Entry items and unrelated-software items live in separate flat indexes, so the
        # nearest unrelated line is always found, however many entry items are closer.
        self._entry_rows = np.array([i for i, it in enumerate(items) if it.kind != UNRELATED], dtype=np.int64)
        self._unrelated_rows = np.array([i for i, it in enumerate(items) if it.kind == UNRELATED], dtype=np.int64)
        self._search = flat_ip(vectors[self._entry_rows])
        self._search_unrelated = flat_ip(vectors[self._unrelated_rows])
        self.calibrator = Calibrator.from_json(meta["calibration"])

    def neighbours(
        self, queries: np.ndarray, exclude_texts: Sequence[set[str]] | None = None, top: int = 3
    ) -> list[Neighbours]:
        """For each query vector, the nearest entries and the nearest unrelated line."""
        queries = np.ascontiguousarray(queries, dtype=np.float32)
        sims, idx = self._search.search(queries, min(NEIGHBOURS, len(self._entry_rows)))
        n_unrelated = min(2, len(self._unrelated_rows))
        if n_unrelated:
            u_sims, u_idx = self._search_unrelated.search(queries, n_unrelated)
        out: list[Neighbours] = []
        for row, (sim_row, idx_row) in enumerate(zip(sims, idx)):
            excluded = exclude_texts[row] if exclude_texts else set()
            best: dict[str, float] = {}
            for sim, i in zip(sim_row, idx_row):
                if i < 0:
                    continue
                item = self.items[self._entry_rows[i]]
                if item.text not in excluded and item.entry_id not in best:
                    best[item.entry_id] = float(sim)
            unrelated = 0.0
            if n_unrelated:
                for sim, i in zip(u_sims[row], u_idx[row]):
                    if i >= 0 and self.items[self._unrelated_rows[i]].text not in excluded:
                        unrelated = float(sim)
                        break
            ranked = sorted(best.items(), key=lambda kv: -kv[1])[:max(top, 2)]
            out.append(Neighbours(ranked, unrelated))
        return out

    @classmethod
    def load(cls, index_dir: Path) -> "SemanticIndex":
        """Load and verify: every file's checksum, the shapes, finite unit-length vectors.

        Raises ``IndexError_`` for anything else, so a damaged index (a 0-byte or truncated
        file, shuffled or NaN vectors, hand-edited calibration weights) is rebuilt or
        refused, never used."""
        index_dir = Path(index_dir)
        try:
            sums = json.loads((index_dir / CHECKSUMS).read_text(encoding="utf-8"))
            if not isinstance(sums, dict) or sorted(sums) != ["items.json", "meta.json", "vectors.npy"]:
                raise IndexError_(f"{CHECKSUMS} does not list the index's three files", index_dir)
            for name, expected in sums.items():
                if _sha256(index_dir / name) != expected:
                    raise IndexError_(f"{name} does not match its checksum: the index is corrupt", index_dir)
            meta = json.loads((index_dir / "meta.json").read_text(encoding="utf-8"))
            raw_items = json.loads((index_dir / "items.json").read_text(encoding="utf-8"))
            vectors = np.load(index_dir / "vectors.npy", allow_pickle=False)
        except FileNotFoundError as exc:
            raise IndexError_(f"no complete index (missing {Path(exc.filename or '?').name}); run 'explainlog index build'", index_dir) from exc
        except (ValueError, OSError, TypeError) as exc:
            detail = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
            raise IndexError_(f"the index is unreadable: {detail}", index_dir) from exc
        if meta.get("format_version") != FORMAT_VERSION:
            raise IndexError_(f"index format {meta.get('format_version')}, expected {FORMAT_VERSION}", index_dir)
        try:
            items = [IndexItem(**item) for item in raw_items]
        except TypeError as exc:
            raise IndexError_(f"the index is corrupt: {exc}", index_dir) from exc
        if vectors.ndim != 2 or vectors.shape != (len(items), meta.get("dim")) or vectors.dtype != np.float32:
            raise IndexError_(f"the index is corrupt: vectors {vectors.shape} {vectors.dtype} for {len(items)} items", index_dir)
        if not np.isfinite(vectors).all() or not np.allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-3):
            raise IndexError_("the index is corrupt: vectors that are not finite unit vectors", index_dir)
        return cls(meta, items, vectors)


def prune_older_builds(index_dir: Path, keep: int = 3) -> None:
    """Under a default, KB-keyed directory (``<model>/<digest>``), drop all but the ``keep``
    newest sibling indexes, so editing the KB does not pile up indexes. A server that loaded
    one of them holds it in memory and is not affected."""
    siblings = [p for p in Path(index_dir).parent.iterdir() if p.is_dir() and not p.name.startswith(".")]
    siblings.sort(key=lambda p: p.stat().st_mtime, reverse=True)
    for old in siblings[keep:]:
        if old != Path(index_dir) and (old / "meta.json").is_file():
            shutil.rmtree(old, ignore_errors=True)


def spot_check(index: SemanticIndex, encoder: Encoder, samples: int = 16) -> None:
    """Re-embed a few items spread over the index and compare with the stored vectors.

    Checksums catch damage, not a consistent forgery (rows shuffled and CHECKSUMS rewritten);
    this does, for the price of one small batch (~50 ms) when the semantic tier first loads."""
    if not len(index.items):
        return
    rows = sorted({int(i) for i in np.linspace(0, len(index.items) - 1, num=min(samples, len(index.items)))})
    fresh = encoder.encode([index.items[i].text for i in rows])
    agreement = (fresh * index.vectors[rows]).sum(axis=1)
    if float(agreement.min()) < 0.999:
        raise IndexError_(
            f"the index is corrupt: stored vectors do not match their texts "
            f"({int((agreement < 0.999).sum())} of {len(rows)} checked)"
        )


def read_stamp(index_dir: Path) -> dict | None:
    try:
        return json.loads((Path(index_dir) / "meta.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None


def stamp_problem(meta: dict | None, kb_digest: str, model_name: str) -> str | None:
    """Why an index must not be used with this KB and model, or None if it matches."""
    if meta is None:
        return "no index has been built"
    if meta.get("format_version") != FORMAT_VERSION:
        return "index format is outdated"
    if meta.get("kb_digest") != kb_digest:
        return "the knowledge base changed since the index was built"
    if meta.get("model_name") != model_name:
        return f"index was built with model {meta.get('model_name')!r}, not {model_name!r}"
    return None


def _calibration_lines(kb_dir: Path) -> list[str]:
    """Curated lines from unrelated software: the semantic tier must not claim them."""
    lines: list[str] = []
    for path in sorted((kb_dir / CALIBRATION_DIR).glob("*.txt")):
        for line in path.read_text(encoding="utf-8").splitlines():
            if line.strip() and not line.startswith("#"):
                lines.append(line)
    return lines


def _fit_calibration(
    kb: KnowledgeBase, kb_dir: Path, encoder: Encoder, index: SemanticIndex
) -> tuple[Calibrator, dict]:
    patterns = PatternSet([l.entry for l in kb.all_entries])
    linked_to = {fid: l.entry.id for l in kb.entries for fid in l.entry.formats}
    queries: list[str] = []
    truths: list[str | None] = []
    for loaded in kb.all_entries:
        record = kb.records.get(loaded.entry.id)
        if record is not None and record.example.constructed:
            continue  # a format filled with sample values is no line a user pastes: not a query
        for example in loaded.entry.examples:
            queries.append(embedding_text(example.line))
            truths.append(linked_to.get(loaded.entry.id, loaded.entry.id))
        for negative in loaded.entry.negatives:
            normalized = normalize_line(negative)
            hit = patterns.best(normalized.message, normalized.context)
            queries.append(embedding_text(negative))
            hit_id = patterns.entries[hit.index].id if hit else None
            truths.append(linked_to.get(hit_id, hit_id) if hit_id else None)
    unrelated = _calibration_lines(kb_dir)
    # Leave-one-out applies here too: an unrelated line does not see itself in the index.
    queries += [embedding_text(line) for line in unrelated]
    truths += [None] * len(unrelated)
    # Most queries are example texts the index already embedded: reuse those vectors.
    known = {item.text: index.vectors[i] for i, item in enumerate(index.items)}
    fresh = sorted({q for q in queries if q not in known})
    known.update(zip(fresh, encoder.encode(fresh)))
    vectors = np.stack([known[q] for q in queries])
    # Leave-one-out: a query never sees its own text, as a new line would not.
    found = index.neighbours(vectors, exclude_texts=[{q} for q in queries])
    x = np.array([features(n.similarities, n.unrelated) for n in found])
    y = np.array([1.0 if n.entries and n.entries[0][0] == t else 0.0 for n, t in zip(found, truths)])
    weights = fit_logistic(x, y)
    report = {
        "method": "logistic regression on [1, top similarity, margin to runner-up, margin to nearest unrelated line], IRLS, L2=0.01",
        "fitted_on": "leave-one-out KB examples, KB negatives, kb/calibration/*.txt unrelated lines",
        "n": int(len(y)),
        "n_positive": int(y.sum()),
        "n_unrelated": len(unrelated),
    }
    return Calibrator(weights=tuple(float(w) for w in weights)), report


def build_index(
    kb: KnowledgeBase, kb_dir: Path, index_dir: Path, encoder: Encoder,
    progress: Callable[[int, int], None] | None = None,
) -> dict:
    """Embed the KB, fit calibration, and atomically replace ``index_dir`` (built beside it,
    then switched: a server that loaded the old one keeps its copy in memory).

    ``progress(done, total)`` is called as the texts are embedded, in chunks of 512."""
    started = time.time()
    items = index_items(kb, _calibration_lines(Path(kb_dir)))
    texts = sorted({item.text for item in items})
    chunks = []
    for start in range(0, len(texts), 512):
        chunks.append(encoder.encode(texts[start : start + 512]))
        if progress:
            progress(min(start + 512, len(texts)), len(texts))
    by_text = dict(zip(texts, np.concatenate(chunks) if chunks else np.zeros((0, 0), np.float32)))
    vectors = np.stack([by_text[item.text] for item in items])
    meta = {
        "format_version": FORMAT_VERSION,
        "kb_digest": kb.digest,
        "model_name": encoder.name,
        "dim": int(vectors.shape[1]),
        "n_items": len(items),
        "n_unrelated_items": sum(item.kind == UNRELATED for item in items),
        "n_entries": len(kb.all_entries),
        "calibration": Calibrator(weights=(0.0, 0.0, 0.0, 0.0)).to_json(),
    }
    provisional = SemanticIndex(meta, items, vectors)
    calibrator, report = _fit_calibration(kb, Path(kb_dir), encoder, provisional)
    meta["calibration"] = calibrator.to_json() | {"report": report}
    meta["built_seconds"] = round(time.time() - started, 2)
    _write_atomically(Path(index_dir), meta, items, vectors)
    return meta


def _write_atomically(index_dir: Path, meta: dict, items: Iterable[IndexItem], vectors: np.ndarray) -> None:
    index_dir.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=".index-", dir=index_dir.parent))
    try:
        np.save(staging / "vectors.npy", vectors, allow_pickle=False)
        (staging / "items.json").write_text(
            json.dumps([asdict(i) for i in items], ensure_ascii=False), encoding="utf-8"
        )
        (staging / "meta.json").write_text(json.dumps(meta, indent=2, ensure_ascii=False), encoding="utf-8")
        # CHECKSUMS last: a directory with it is complete, and load() verifies every file.
        sums = {name: _sha256(staging / name) for name in ("items.json", "meta.json", "vectors.npy")}
        (staging / CHECKSUMS).write_text(json.dumps(sums, indent=1, sort_keys=True) + "\n", encoding="utf-8")
        if index_dir.exists():
            retired = Path(tempfile.mkdtemp(prefix=".old-index-", dir=index_dir.parent))
            os.replace(index_dir, retired / "index")
            os.replace(staging, index_dir)
            shutil.rmtree(retired, ignore_errors=True)
        else:
            os.replace(staging, index_dir)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise
