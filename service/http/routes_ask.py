"""``/v1/ask``: a question in words, answered from the KB (the same JSON as ``explainlog ask --json``)."""

from __future__ import annotations

import anyio.to_thread
import orjson
from fastapi import APIRouter, Query, Request

from service.ask import asker_for
from service.http.errors import ApiError
from service.http.explain_body import read_body
from service.http.responses import JSONBytes

router = APIRouter(prefix="/v1", tags=["ask"])
MAX_QUESTION = 2000
DESCRIPTION = (
    "Answers `{question, lang, known, answers: [{kind, id, component, title, text, score, source}]}`: "
    "variables, concepts, entries and catalogue records of the KB, ranked; an exact variable, concept "
    "or entry name wins. A question the KB does not know gets `known: false` and no answers. "
    "`lang` (en or zh) defaults to the question's language."
)


async def _answer(request: Request, question: str, lang: str | None) -> JSONBytes:
    question = (question or "").strip()
    if not question:
        raise ApiError(422, "no_question", "send a question: {\"q\": \"what does NCCL_IB_GID_INDEX do\"}")
    if len(question) > MAX_QUESTION:
        raise ApiError(413, "question_too_long", f"a question is at most {MAX_QUESTION} characters")
    if lang not in (None, "en", "zh"):
        raise ApiError(422, "invalid_lang", "lang is en or zh")
    asker = asker_for(request.app.state.service.explainer)
    result = await anyio.to_thread.run_sync(lambda: asker.ask(question, lang=lang))
    return JSONBytes(result)


@router.get("/ask", summary="Ask the KB a question", description=DESCRIPTION)
async def ask_get(request: Request, q: str = Query("", description="the question"),
                  lang: str | None = Query(None, description="en or zh")) -> JSONBytes:
    return await _answer(request, q, lang)


@router.post(
    "/ask", summary="Ask the KB a question", description=DESCRIPTION + " Body: `{\"q\": \"...\", \"lang\": \"zh\"}` "
    "or a text/plain question.",
    openapi_extra={"requestBody": {"required": True, "content": {
        "application/json": {"schema": {"type": "object", "properties": {
            "q": {"type": "string"}, "lang": {"type": "string", "enum": ["en", "zh"]}}, "required": ["q"]}},
        "text/plain": {"schema": {"type": "string"}},
    }}},
)
async def ask_post(request: Request) -> JSONBytes:
    body = await read_body(request, 64 * 1024)
    content_type = request.headers.get("content-type", "").split(";")[0].strip().lower()
    if content_type.startswith("text/") or content_type == "":
        return await _answer(request, body.decode("utf-8", errors="replace"), request.query_params.get("lang"))
    try:
        payload = orjson.loads(body)
    except orjson.JSONDecodeError as exc:
        raise ApiError(422, "malformed_json", f"request body is not valid JSON (UTF-8): {exc}") from None
    if not isinstance(payload, dict) or not isinstance(payload.get("q", payload.get("question")), str):
        raise ApiError(422, "invalid_request", "send {\"q\": \"...\"} with the question as a string")
    return await _answer(request, payload.get("q", payload.get("question")), payload.get("lang"))
