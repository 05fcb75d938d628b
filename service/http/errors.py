"""API errors: one JSON shape for every failure, with a message a person can act on.

Every error body is ``{"error": <code>, "detail": <sentence>, "detail_zh": <the same in Chinese>}``
plus ``"limit"`` when a
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


# The same errors said in Chinese (``detail_zh``), for the page and clients of Chinese users;
# ``detail`` keeps the precise English sentence with the values it names.
DETAIL_ZH = {
    "body_too_large": "请求体过大，上限 {limit} 字节。",
    "too_many_lines": "一次请求的行数过多，上限 {limit} 行。",
    "line_too_long": "有一行过长，单行上限 {limit} 个字符。",
    "embedding_budget": "这次请求里从未见过的行太多，超出了语义检索的预算（上限 {limit}），请分批发送。",
    "invalid_request": "请求格式不对：{detail}",
    "malformed_json": "请求体不是合法的 JSON（UTF-8）。",
    "no_lines": "请求里没有日志行。",
    "no_question": "请先输入问题。",
    "question_too_long": "问题过长，上限 {limit} 个字符。",
    "unsupported_media_type": "不支持的请求类型，请用 application/json 或 text/plain。",
    "invalid_lang": "lang 只能是 en、zh 或 both。",
    "unknown_pattern": "知识库里没有这个条目。",
    "busy": "服务正忙（语义检索队列已满），请稍后重试。",
    "rate_limited": "请求过于频繁，请稍后重试。",
    "semantic_tier_unavailable": "语义检索暂不可用（索引与知识库不匹配或已损坏），只能精确匹配。",
    "unauthorized": "此服务需要 API 令牌：/v1/* 请求要带 'Authorization: Bearer <令牌>'。",
    "not_found": "没有这个地址。",
    "method_not_allowed": "不支持这个请求方法。",
}


def error_body(code: str, detail: str, limit: int | None = None, **extra: Any) -> dict[str, Any]:
    body: dict[str, Any] = {"error": code, "detail": detail}
    zh = DETAIL_ZH.get(code)
    body["detail_zh"] = zh.format(limit=limit, detail=detail) if zh else f"请求失败（{code}）：{detail}"
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
