"""``/v1/explain``: answers in the spine's JSON contract, one per line, in order."""

from __future__ import annotations

from fastapi import APIRouter, Query, Request

from service.http.errors import ApiError
from service.http.explain_body import ExplainRequest, Lang, check_lines, in_language, parse_explain_request
from service.http.rate_limit import client_key
from service.http.responses import JSONBytes
from service.http.state import ServiceState

router = APIRouter(prefix="/v1", tags=["explain"])

ANSWER_EXAMPLE = {
    "line": "host:135:208 [2] NCCL INFO Setting affinity for GPU 2 to ff0000",
    "known": True, "confidence": 0.99, "pattern_id": "nccl.init.affinity", "tier": "regex",
    "component": "nccl", "severity": "info", "role": "context",
    "title": {"en": "NCCL pinned its helper threads near the GPU", "zh": "NCCL 为该 GPU 设置了 CPU 亲和性"},
    "summary": {"en": "NCCL pinned its helper threads near the GPU", "zh": "NCCL 为该 GPU 设置了 CPU 亲和性"},
    "verdicts": [],
    "explanation": {"en": "...", "zh": "..."}, "action": None,
    "fields": {"gpu": "2", "mask": "ff0000"}, "context": {"host": "host", "level": "INFO"},
    "candidates": [{"pattern_id": "nccl.init.affinity", "confidence": 0.99}],
}


def service(request: Request) -> ServiceState:
    return request.app.state.service


@router.post(
    "/explain",
    summary="Explain log lines",
    description=(
        "Send `{\"lines\": [...]}` (one answer per item) or `{\"text\": \"...\"}` (a paste; blank lines "
        "skipped), or a `text/plain` body (like `text`, `?lang=` in the query). Answers come back as "
        "`{\"answers\": [...]}` in input order. Limits: body size, lines per request and characters per "
        "line answer 413 with the limit in the message, and so does a request whose never-seen lines "
        "exceed the embedding budget; too many requests from one client, or a full queue for the "
        "embedding model, answer 429 with Retry-After."
    ),
    openapi_extra={
        "requestBody": {
            "required": True,
            "content": {
                "application/json": {"schema": ExplainRequest.model_json_schema()},
                "text/plain": {"schema": {"type": "string"}},
            },
        },
        "responses": {"200": {"content": {"application/json": {"example": {"answers": [ANSWER_EXAMPLE]}}}}},
    },
)
async def explain_post(request: Request) -> JSONBytes:
    state = service(request)
    lines, lang = await parse_explain_request(request, state.settings)
    answers = await state.explain(lines, client=client_key(request))
    return JSONBytes({"answers": [in_language(a, lang) for a in answers]})


@router.get(
    "/explain",
    summary="Explain one line (for curl)",
    responses={200: {"content": {"application/json": {"example": ANSWER_EXAMPLE}}}},
)
async def explain_get(
    request: Request,
    line: str = Query(..., description="one log line (URL-encoded)"),
    lang: Lang = Query("both", description="en, zh or both"),
) -> JSONBytes:
    state = service(request)
    if not line.strip():
        raise ApiError(422, "no_lines", "the 'line' parameter is empty")
    check_lines([line], state.settings)
    answers = await state.explain([line], client=client_key(request))
    return JSONBytes(in_language(answers[0], lang))
