"""API errors: one JSON shape for every failure, with a message a person can act on.

Every error body is ``{"error": <code>, "detail": <sentence>}`` plus ``"limit"`` when a
configured limit was exceeded, so a client (or the web page) can show ``detail`` verbatim.
FastAPI's own validation and HTTP errors are re-shaped into the same form.
"""

from __future__ import annotations

from typing import Any

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from starlette.exceptions import HTTPException as StarletteHTTPException


class ApiError(Exception):
    """An error answered as JSON with ``status``; raise it anywhere in a request handler."""

    def __init__(self, status: int, code: str, detail: str, limit: int | None = None,
                 headers: dict[str, str] | None = None) -> None:
        super().__init__(detail)
        self.status = status
        self.code = code
        self.detail = detail
        self.limit = limit
        self.headers = headers


class LimitExceeded(ApiError):
    """A request is larger than a configured limit: 413, and the message states the limit."""

    def __init__(self, code: str, detail: str, limit: int) -> None:
        super().__init__(413, code, detail, limit)


def error_body(code: str, detail: str, limit: int | None = None, **extra: Any) -> dict[str, Any]:
    body: dict[str, Any] = {"error": code, "detail": detail}
    if limit is not None:
        body["limit"] = limit
    body.update(extra)
    return body


def _location(loc: tuple) -> str:
    parts = [str(p) for p in loc if p not in ("body", "query", "path")]
    return ".".join(parts) or "request"


def install_error_handlers(app: FastAPI) -> None:
    @app.exception_handler(ApiError)
    async def _api_error(request: Request, exc: ApiError) -> JSONResponse:
        return JSONResponse(error_body(exc.code, exc.detail, exc.limit), status_code=exc.status, headers=exc.headers)

    @app.exception_handler(RequestValidationError)
    async def _validation_error(request: Request, exc: RequestValidationError) -> JSONResponse:
        problems = [f"{_location(tuple(e.get('loc', ())))}: {e.get('msg', 'invalid')}" for e in exc.errors()]
        detail = "invalid request: " + "; ".join(problems[:5])
        errors = [{"loc": list(e.get("loc", ())), "msg": e.get("msg")} for e in exc.errors()[:20]]
        return JSONResponse(error_body("invalid_request", detail, errors=errors), status_code=422)

    @app.exception_handler(StarletteHTTPException)
    async def _http_error(request: Request, exc: StarletteHTTPException) -> JSONResponse:
        code = {404: "not_found", 405: "method_not_allowed"}.get(exc.status_code, "http_error")
        return JSONResponse(error_body(code, str(exc.detail)), status_code=exc.status_code,
                            headers=getattr(exc, "headers", None))
