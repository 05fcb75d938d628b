"""``/v1/triage``: what killed the job, for a pasted log (the same JSON as ``explainlog triage``)."""

from __future__ import annotations

import anyio.to_thread
import orjson
from fastapi import APIRouter, Request

from service.http.errors import ApiError
from service.http.explain_body import read_body
from service.http.responses import JSONBytes
from service.triage import triage_lines

router = APIRouter(prefix="/v1", tags=["triage"])


@router.post(
    "/triage",
    summary="Triage a whole log: root cause, cascade, facts",
    description=(
        "Send the log as a `text/plain` body, or JSON `{\"log\": \"...\"}`. Answers one object: "
        "`root_cause` (or null with `reason`), `cascade` groups, `facts`, `timeline`, `summary` {en, zh}. "
        "The body limit of the service applies (413 beyond it); use the CLI for multi-GB logs."
    ),
    openapi_extra={"requestBody": {"required": True, "content": {
        "text/plain": {"schema": {"type": "string"}},
        "application/json": {"schema": {"type": "object", "properties": {"log": {"type": "string"}},
                                        "required": ["log"]}},
    }}},
)
async def triage_post(request: Request) -> JSONBytes:
    state = request.app.state.service
    body = await read_body(request, state.settings.max_body_bytes)
    content_type = request.headers.get("content-type", "").split(";")[0].strip().lower()
    if content_type.startswith("text/") or content_type == "":
        text = body.decode("utf-8", errors="replace")
    elif content_type == "application/json" or content_type.endswith("+json"):
        try:
            payload = orjson.loads(body)
        except orjson.JSONDecodeError as exc:
            raise ApiError(422, "malformed_json", f"request body is not valid JSON (UTF-8): {exc}") from None
        if not isinstance(payload, dict) or not isinstance(payload.get("log"), str):
            raise ApiError(422, "invalid_request", "send {\"log\": \"...\"} with the log as one string")
        text = payload["log"]
    else:
        raise ApiError(415, "unsupported_media_type", f"send text/plain or application/json, not {content_type!r}")
    lines = text.splitlines()
    if not any(line.strip() for line in lines):
        raise ApiError(422, "no_lines", "the log is empty")
    pairs = [("<request>", line) for line in lines]
    result = await anyio.to_thread.run_sync(lambda: triage_lines(state.explainer, pairs))
    return JSONBytes(result)
