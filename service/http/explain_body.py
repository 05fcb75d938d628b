"""Turn an /v1/explain request into a checked list of lines, or a clear 413/422.

The body is read here (not by FastAPI's model binding) so the size limit is enforced while
reading — a 1 GB body is refused after ``max_body_bytes``, never buffered — and so malformed
JSON, invalid UTF-8 and plain-text pastes each get their own precise message.
"""

from __future__ import annotations

from typing import Literal, Optional

import orjson
from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator
from starlette.requests import Request

from service.http.errors import ApiError, LimitExceeded
from service.http.settings import Settings

Lang = Literal["en", "zh", "both"]
BILINGUAL_KEYS = ("title", "summary", "explanation", "action")


class ExplainRequest(BaseModel):
    """Either ``lines`` (one answer per item) or ``text`` (a paste; blank lines are skipped)."""

    model_config = ConfigDict(extra="forbid")
    lines: Optional[list[str]] = Field(default=None, description="log lines, answered one per item, in order")
    text: Optional[str] = Field(default=None, description="a multi-line paste; split on newlines, blank lines skipped")
    lang: Lang = Field(default="both", description="'en' or 'zh' keeps only that language in title/summary/verdicts/explanation/action")

    @model_validator(mode="after")
    def exactly_one_input(self) -> "ExplainRequest":
        if (self.lines is None) == (self.text is None):
            raise ValueError("give exactly one of 'lines' (a list of strings) or 'text' (a string)")
        return self


def split_paste(text: str) -> list[str]:
    """Lines of a paste: split on LF only (CR is stripped by the normalizer; other Unicode
    separators inside binary junk must not split a line), blank lines dropped."""
    return [line for line in text.split("\n") if line.strip()]


async def read_body(request: Request, limit: int) -> bytes:
    declared = request.headers.get("content-length")
    if declared and declared.isdigit() and int(declared) > limit:
        raise LimitExceeded("body_too_large", f"request body is {int(declared)} bytes; the limit is {limit} bytes", limit)
    chunks: list[bytes] = []
    size = 0
    async for chunk in request.stream():
        size += len(chunk)
        if size > limit:
            raise LimitExceeded("body_too_large", f"request body exceeds the limit of {limit} bytes", limit)
        chunks.append(chunk)
    return b"".join(chunks)


async def parse_explain_request(request: Request, settings: Settings) -> tuple[list[str], Lang]:
    body = await read_body(request, settings.max_body_bytes)
    content_type = request.headers.get("content-type", "").split(";")[0].strip().lower()
    if content_type.startswith("text/"):
        lang = request.query_params.get("lang", "both")
        if lang not in ("en", "zh", "both"):
            raise ApiError(422, "invalid_request", f"lang must be en, zh or both, not {lang!r}")
        lines = split_paste(body.decode("utf-8", errors="replace"))
    elif content_type in ("", "application/json") or content_type.endswith("+json"):
        try:
            payload = orjson.loads(body)
        except orjson.JSONDecodeError as exc:
            raise ApiError(422, "malformed_json", f"request body is not valid JSON (UTF-8): {exc}") from None
        try:
            parsed = ExplainRequest.model_validate(payload)
        except ValidationError as exc:
            problems = "; ".join(
                f"{'.'.join(str(p) for p in e['loc']) or 'body'}: {e['msg']}" for e in exc.errors()[:5]
            )
            raise ApiError(422, "invalid_request", f"invalid request: {problems}") from None
        lines = parsed.lines if parsed.lines is not None else split_paste(parsed.text or "")
        lang = parsed.lang
    else:
        raise ApiError(
            415, "unsupported_media_type",
            f"send application/json ({{\"lines\": [...]}} or {{\"text\": \"...\"}}) or text/plain, not {content_type!r}",
        )
    check_lines(lines, settings)
    return lines, lang


def check_lines(lines: list[str], settings: Settings) -> None:
    if not lines:
        raise ApiError(422, "no_lines", "no lines to explain (the input is empty or only blank lines)")
    if len(lines) > settings.max_lines:
        raise LimitExceeded(
            "too_many_lines",
            f"{len(lines)} lines in one request; the limit is {settings.max_lines} lines per request "
            f"(use POST /v1/annotate for whole files)",
            settings.max_lines,
        )
    for number, line in enumerate(lines, 1):
        if len(line) > settings.max_line_chars:
            raise LimitExceeded(
                "line_too_long",
                f"line {number} has {len(line)} characters; the limit is {settings.max_line_chars} characters per line",
                settings.max_line_chars,
            )


def in_language(answer: dict, lang: Lang) -> dict:
    """Keep one language in the bilingual fields; the keys and their shape stay the same."""
    if lang == "both":
        return answer
    out = dict(answer)
    for key in BILINGUAL_KEYS:
        if out.get(key) is not None:
            out[key] = {lang: out[key][lang]}
    out["verdicts"] = [{"when": v["when"], lang: v[lang]} for v in answer.get("verdicts") or []]
    return out
