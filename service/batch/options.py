"""The choices of one ``annotate`` run that reach the workers, as one picklable value."""

from __future__ import annotations

from dataclasses import dataclass
from service.presentation import SEVERITY_RANK  # one order for every front-end

FORMATS = ("jsonl", "commented", "html", "summary")


@dataclass(frozen=True)
class Options:
    format: str = "jsonl"
    lang: str = "both"  # en | zh | both
    only_known: bool = False
    min_severity: str | None = None
    hide_context: bool = False  # commented: no comment above lines whose entry's role is context
    semantic: bool = True
    # seconds of encoder time each process may spend on never-seen unknown templates (None: no limit)
    semantic_budget: float | None = 20.0

    @property
    def langs(self) -> tuple[str, ...]:
        return ("en", "zh") if self.lang == "both" else (self.lang,)

    @property
    def min_rank(self) -> int:
        """Lowest severity rank that is explained in full; -1 lets unknown lines through."""
        if self.min_severity is not None:
            return SEVERITY_RANK[self.min_severity]
        return 0 if self.only_known else -1
