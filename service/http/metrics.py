"""Prometheus metrics: requests, latency, and what the explainer answered.

Each app gets its own registry (tests start several apps in one process). The unknown rate is
``explainlog_answers_total{tier="unknown"}`` over all answers; README gives the PromQL. With
several workers, set ``PROMETHEUS_MULTIPROC_DIR`` (``explainlog serve`` does it for you) and
``/metrics`` aggregates the workers' files instead of answering for one random worker.
"""

from __future__ import annotations

import os
import time
from typing import Iterable

from prometheus_client import CONTENT_TYPE_LATEST, CollectorRegistry, Counter, Histogram, generate_latest
from starlette.types import ASGIApp, Message, Receive, Scope, Send

# Fine buckets at the low end: regex-tier answers take about a millisecond.
LATENCY_BUCKETS = (0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.15, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0)


# Every tier the explainer answers with (the JSON contract's ``tier``), and unknown.
TIERS = ("regex", "catalog", "semantic", "unknown")


class ServiceMetrics:
    def __init__(self) -> None:
        self.registry = CollectorRegistry(auto_describe=True)
        self.requests = Counter(
            "explainlog_http_requests", "HTTP requests answered, by route template, method and status.",
            ["route", "method", "status"], registry=self.registry,
        )
        self.latency = Histogram(
            "explainlog_http_request_duration_seconds", "Time from request start to the last byte sent.",
            ["route"], buckets=LATENCY_BUCKETS, registry=self.registry,
        )
        self.answers = Counter(
            "explainlog_answers", "Lines answered, by tier (regex, catalog, semantic, or unknown).",
            ["tier"], registry=self.registry,
        )
        for tier in TIERS:
            self.answers.labels(tier)  # export zeros so the unknown-rate query works from the start

    def count_answers(self, answers: Iterable[dict]) -> None:
        counts = dict.fromkeys(TIERS, 0)
        for answer in answers:
            tier = answer["tier"] if answer["known"] else "unknown"
            # A tier added to the explainer later is counted, not a 500 for the request.
            counts[tier] = counts.get(tier, 0) + 1
        for tier, n in counts.items():
            if n:
                self.answers.labels(tier).inc(n)

    def exposition(self) -> tuple[bytes, str]:
        if os.environ.get("PROMETHEUS_MULTIPROC_DIR"):
            from prometheus_client import multiprocess

            registry = CollectorRegistry()
            multiprocess.MultiProcessCollector(registry)
            return generate_latest(registry), CONTENT_TYPE_LATEST
        return generate_latest(self.registry), CONTENT_TYPE_LATEST


def route_template(scope: Scope, root_path: str) -> str:
    """The matched route's path template (``/v1/patterns/{pattern_id}``) or mount (``/static``),
    so labels stay few; the router records both in the scope it was given."""
    route = getattr(scope.get("route"), "path", None)
    if route:
        return route
    mount = scope.get("root_path", "")[len(root_path):]
    return mount or "unmatched"


class MetricsMiddleware:
    """Pure ASGI middleware (no BaseHTTPMiddleware): it must not buffer streamed responses."""

    def __init__(self, app: ASGIApp, metrics: ServiceMetrics) -> None:
        self.app = app
        self.metrics = metrics

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        started = time.perf_counter()
        root_path = scope.get("root_path", "")
        status = 500

        async def send_and_record(message: Message) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = message["status"]
            await send(message)

        try:
            await self.app(scope, receive, send_and_record)
        finally:
            route = route_template(scope, root_path)
            self.metrics.requests.labels(route, scope["method"], str(status)).inc()
            self.metrics.latency.labels(route).observe(time.perf_counter() - started)
