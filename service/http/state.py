"""What one service process holds: the explainer, its settings, metrics, and readiness.

The explainer is created once per process. The semantic tier (index + encoder) is warmed up in
a background thread at start-up, so the port opens at once — ``/healthz`` answers and
regex-tier lines are explained — while ``/readyz`` says 503 until the index is loaded.
"""

from __future__ import annotations

import re
import threading
from dataclasses import dataclass
from typing import Any

import anyio.to_thread

from indexer.encoders import EncoderLoadError
from indexer.semantic_index import IndexError_, read_stamp, stamp_problem
from service.encode_scheduler import Busy, EncodeScheduler
from service.explainer import EmbeddingBudgetExceeded, Explainer, IndexUnavailable
from service.http.errors import ApiError, LimitExceeded
from service.http.metrics import ServiceMetrics
from service.http.settings import Settings


def _reason(exc: BaseException) -> str:
    """What went wrong, without the server's directories (index and model errors carry a
    ``reason`` for this; other texts have absolute paths cut down to their last part)."""
    reason = getattr(exc, "reason", None)
    if reason:
        return str(reason)
    return re.sub(r"(?<![\w.])/(?:[^\s/'\"]+/)+([^\s/'\"]*)", r"…/\1", str(exc))


class _LazyEncoder:
    """The explainer's encoder, looked up when first used (so a server starts before the model
    loads)."""

    def __init__(self, explainer: Explainer) -> None:
        self._explainer = explainer

    @property
    def name(self) -> str:
        return self._explainer.encoder.name

    @property
    def inner(self):
        return self._explainer.encoder

    def encode(self, texts):
        return self._explainer.encoder.encode(texts)


@dataclass
class Readiness:
    loaded: bool = False
    problem: str | None = "the semantic index is still loading"


class ServiceState:
    def __init__(self, explainer: Explainer, settings: Settings, metrics: ServiceMetrics) -> None:
        self.explainer = explainer
        self.settings = settings
        self.metrics = metrics
        self.readiness = Readiness()
        self._warm_thread: threading.Thread | None = None
        if explainer.scheduler is None:
            # Every route (explain, annotate, triage, chat) shares the model through it.
            explainer.scheduler = EncodeScheduler(_LazyEncoder(explainer))

    def start_warm_up(self) -> None:
        """Load the index and the encoder off the event loop, once."""
        if self._warm_thread is None:
            self._warm_thread = threading.Thread(target=self._warm_up, name="explainlog-warm-up", daemon=True)
            self._warm_thread.start()

    def _warm_up(self) -> None:
        try:
            self.explainer.warm_up()
        except Exception as exc:  # noqa: BLE001 - any failure here is reported by /readyz
            # The reason, not the message: clients are not told the server's paths.
            self.readiness = Readiness(loaded=False, problem=f"semantic tier unavailable: {_reason(exc)}")
        else:
            self.readiness = Readiness(loaded=True, problem=None)

    def ready_report(self) -> dict[str, Any]:
        """Ready means: the index is loaded and the index on disk still matches the loaded KB."""
        explainer = self.explainer
        problem = self.readiness.problem
        if problem is None:
            stamp = read_stamp(explainer.index_dir)
            on_disk = stamp_problem(stamp, explainer.kb.digest, explainer.encoder.name)
            if on_disk:
                problem = f"index on disk no longer matches the loaded KB: {on_disk} (restart the service)"
        return {
            "ready": problem is None,
            "problem": problem,
            "index_loaded": self.readiness.loaded,
            "kb_digest": explainer.kb.digest,
            "kb_entries": len(explainer.entries),
            "model": explainer.encoder.name,
        }

    async def explain(self, lines: list[str], client: str | None = None, budget: bool = True) -> list[dict]:
        """Explain in a worker thread: the regex tier is quick, but embedding is CPU-bound and
        must never stall the event loop (health checks, other clients, streaming uploads).

        ``client`` is the caller's fair share of the model; ``budget`` applies the per-request
        budget of never-seen text (``/v1/annotate`` streams whole files and goes without)."""
        budget_chars = self.settings.embed_budget_chars if budget else None
        try:
            answers = await anyio.to_thread.run_sync(
                lambda: self.explainer.explain_many(lines, client=client, budget_chars=budget_chars)
            )
        except EmbeddingBudgetExceeded as exc:
            raise LimitExceeded("embedding_budget", str(exc), exc.limit) from None
        except Busy as exc:
            raise ApiError(429, "busy", str(exc), headers={"Retry-After": str(exc.retry_after)}) from None
        except (IndexUnavailable, IndexError_, EncoderLoadError) as exc:
            raise ApiError(503, "semantic_tier_unavailable", f"cannot explain lines the regex tier does not know: {_reason(exc)}") from exc
        self.metrics.count_answers(answers)
        return answers
