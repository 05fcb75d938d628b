"""Confidence for semantic-tier answers: a logistic model over neighbour similarities.

Raw cosine similarity is not a probability: all-MiniLM gives 0.6 to unrelated log lines that
share words like "timed out". So the index build fits P(top candidate is right | features) on
held-out data — leave-one-out KB examples (the line's own vectors removed from the index),
KB negatives and curated lines from unrelated software — and stores the coefficients in the
index metadata. Features: the best entry's similarity, its margin over the runner-up, its
margin over the nearest unrelated-software line (a nearest-neighbour out-of-domain signal:
an sshd line sits closer to other sshd lines than to any NCCL example), and a bias. Fitting is plain Newton-Raphson (IRLS) with a small L2 penalty; no sklearn needed.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # numpy is imported where it is used: a regex answer needs only the constant
    import numpy as np

REGEX_CONFIDENCE = 0.99  # regex answers: exact format match; kb check guards false positives


def features(similarities: list[float], unrelated: float = 0.0) -> np.ndarray:
    """[1, top similarity, margin over the second entry, margin over the nearest unrelated
    line] for one query."""
    import numpy as np

    top = similarities[0] if similarities else 0.0
    second = similarities[1] if len(similarities) > 1 else 0.0
    return np.array([1.0, top, top - second, top - unrelated], dtype=np.float64)


@dataclass(frozen=True)
class Calibrator:
    weights: tuple[float, ...]
    threshold: float = 0.5

    def confidence(self, similarities: list[float], unrelated: float = 0.0) -> float:
        import numpy as np

        z = float(features(similarities, unrelated) @ np.asarray(self.weights))
        return float(1.0 / (1.0 + np.exp(-z)))

    def to_json(self) -> dict:
        return {"weights": list(self.weights), "threshold": self.threshold}

    @classmethod
    def from_json(cls, data: dict) -> "Calibrator":
        return cls(weights=tuple(data["weights"]), threshold=float(data["threshold"]))


def fit_logistic(x: np.ndarray, y: np.ndarray, l2: float = 1e-2, iterations: int = 50) -> np.ndarray:
    """Newton-Raphson for L2-regularised logistic regression (bias column included in x)."""
    import numpy as np

    w = np.zeros(x.shape[1])
    penalty = l2 * np.eye(x.shape[1])
    penalty[0, 0] = 0.0  # do not shrink the bias
    for _ in range(iterations):
        p = 1.0 / (1.0 + np.exp(-(x @ w)))
        gradient = x.T @ (p - y) + penalty @ w
        hessian = (x * (p * (1 - p))[:, None]).T @ x + penalty
        step = np.linalg.solve(hessian, gradient)
        w -= step
        if np.max(np.abs(step)) < 1e-8:
            break
    return w


def expected_calibration_error(confidences: list[float], correct: list[bool], bins: int = 10) -> float:
    """Weighted mean |accuracy - confidence| over equal-width confidence bins."""
    import numpy as np

    if not confidences:
        return 0.0
    conf = np.asarray(confidences)
    hit = np.asarray(correct, dtype=np.float64)
    edges = np.linspace(0.0, 1.0, bins + 1)
    total = 0.0
    for lo, hi in zip(edges[:-1], edges[1:]):
        mask = (conf > lo) & (conf <= hi) if lo > 0 else (conf >= lo) & (conf <= hi)
        if mask.any():
            total += mask.sum() * abs(hit[mask].mean() - conf[mask].mean())
    return float(total / len(conf))
