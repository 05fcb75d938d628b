"""The app factory: one FastAPI app around one explainer.

``create_app(explainer)`` serves an explainer that is already built (tests share one across
servers); ``create_app(settings)`` builds it from settings. ``app_from_environ`` is the factory
uvicorn calls in each worker process, so every worker loads the KB, model and index once.
"""

from __future__ import annotations

from contextlib import asynccontextmanager
from typing import AsyncIterator

from fastapi import Depends, FastAPI
from starlette.middleware.cors import CORSMiddleware

from service.explainer import Explainer
from service.http import routes_annotate, routes_ask, routes_explain, routes_ops, routes_patterns, routes_triage
from service.http.auth import require_token
from service.http.catalog import Catalog
from service.http.errors import install_error_handlers
from service.http.metrics import MetricsMiddleware, ServiceMetrics
from service.http.pages import install_pages
from service.http.rate_limit import RateLimiter, rate_limited
from service.http.settings import Settings
from service.http.state import ServiceState

DESCRIPTION = """Explains log lines from distributed deep-learning training (NCCL/RCCL, torch.distributed,
DeepSpeed, ...) in English and Chinese, from a curated knowledge base. Every answer follows the
explainer's JSON contract: `line, known, confidence, pattern_id, tier, component, severity, role,
title, summary, verdicts, explanation, action, fields, context, candidates, source`. `summary` is one
sentence saying what the line means in this run (the first verdict that fired, else the entry's own
summary or its title); `verdicts` lists the conditions over the line's numbers that fired."""


def create_app(source: Explainer | Settings | None = None, settings: Settings | None = None) -> FastAPI:
    if isinstance(source, Explainer):
        explainer = source
        settings = settings or Settings(kb_dir=explainer.kb_dir, index_dir=explainer.index_dir)
    else:
        settings = source or settings or Settings()
        explainer = Explainer(
            kb_dir=settings.kb_dir, index_dir=settings.index_dir,
            model_path=settings.model_path, index_policy=settings.index_policy,
        )
    state = ServiceState(explainer, settings, ServiceMetrics())

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        state.start_warm_up()
        yield

    app = FastAPI(
        title="explainlog", version="1", description=DESCRIPTION, lifespan=lifespan,
        docs_url=None, redoc_url=None,  # served offline by install_pages
    )
    app.state.service = state
    app.state.catalog = Catalog(explainer.entries)
    app.state.rate_limiter = RateLimiter(settings.rate_limit, settings.rate_burst)
    install_error_handlers(app)
    for api in (routes_explain.router, routes_annotate.router, routes_patterns.router, routes_triage.router,
                routes_ask.router):
        app.include_router(api, dependencies=[Depends(require_token), Depends(rate_limited)])
    app.include_router(routes_ops.router)
    install_pages(app)
    if settings.cors_origins:
        app.add_middleware(
            CORSMiddleware, allow_origins=list(settings.cors_origins), allow_methods=["GET", "POST"],
            allow_headers=["Authorization", "Content-Type"],
        )
    app.add_middleware(MetricsMiddleware, metrics=state.metrics)
    return app


def app_from_environ() -> FastAPI:
    """uvicorn factory (``--factory``): settings come from ``EXPLAINLOG_*`` variables."""
    return create_app(Settings.from_environ())
