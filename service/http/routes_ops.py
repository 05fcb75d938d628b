"""Operations endpoints: liveness, readiness, Prometheus metrics. Never behind the API token:
probes and scrapers carry no credentials, and none of these reveal log content."""

from __future__ import annotations

from fastapi import APIRouter, Request
from starlette.responses import Response

from service.http.responses import JSONBytes
from service.http.state import ServiceState

router = APIRouter(tags=["operations"])


@router.get("/healthz", summary="The process is alive and serving")
async def healthz() -> JSONBytes:
    return JSONBytes({"status": "ok"})


@router.get(
    "/readyz",
    summary="The semantic index is loaded and matches the KB",
    responses={503: {"description": "still loading, or the index is missing/stale; `problem` says which"}},
)
async def readyz(request: Request) -> JSONBytes:
    state: ServiceState = request.app.state.service
    report = state.ready_report()
    return JSONBytes(report, status_code=200 if report["ready"] else 503)


@router.get("/metrics", summary="Prometheus metrics", response_class=Response)
async def metrics(request: Request) -> Response:
    state: ServiceState = request.app.state.service
    body, content_type = state.metrics.exposition()
    return Response(body, media_type=content_type)
