"""The Slack bot: ``/explain``, app mentions, the "Explain this log" shortcut, feedback buttons.

Slack wants every request acknowledged within 3 s, and the first line the regex tier cannot
answer loads the embedding model, which can take longer. So every entry point is split in two
(bolt's lazy listeners, ``process_before_response=True``): an ``ack`` step that only parses,
rate-limits and acknowledges, and a lazy step that explains and posts. That also works
unchanged in Socket Mode and on serverless hosts. Answers go into the thread of the message
they answer; the slash command answers in the channel through its ``response_url``.
"""

from __future__ import annotations

import json
import logging
from typing import Any, Callable
from urllib.parse import parse_qs

from slack_bolt import Ack, App, BoltContext, Respond
from slack_bolt.adapter.starlette.handler import to_bolt_request, to_starlette_response
from slack_sdk import WebClient
from slack_sdk.errors import SlackApiError
from slack_sdk.signature import SignatureVerifier
from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import JSONResponse, PlainTextResponse, Response
from starlette.routing import Route

from service.chat.answers import Answerer
from service.chat.blocks import DETAILS_ACTION, FEEDBACK_ACTIONS, details_blocks, fallback_text, question_blocks, question_text, reply_blocks
from service.chat.config import SlackSettings
from service.chat.guard import BodyTooLarge, ReplayGuard, read_body
from service.chat.labels import label
from service.chat.messages import ChatRequest, parse_request, unescape_slack
from service.chat.ratelimit import RateLimiter
from service.chat.store import UnknownAnswer

COMMAND = "/explain"
SHORTCUT_CALLBACK_ID = "explain_log"
EVENTS_PATH = "/slack/events"
MAX_BODY_BYTES = 1024 * 1024  # Slack payloads are small; a slash command's text is at most 4000 chars
log = logging.getLogger("explainlog.chat.slack")

# Context keys the ack step leaves for its lazy step (bolt copies them to the lazy request).
GO, LANG, REFUSAL, THANKS = "explainlog_go", "explainlog_lang", "explainlog_refusal", "explainlog_thanks"
DETAILS = "explainlog_details_answer"


class SlackBot:
    """The listeners, kept free of transport so HTTP and Socket Mode share every line of them."""

    def __init__(self, answerer: Answerer, limiter: RateLimiter, max_lines: int = 50) -> None:
        self.answerer = answerer
        self.limiter = limiter
        self.max_lines = max_lines

    def register(self, app: App) -> None:
        app.command(COMMAND)(ack=self.ack_command, lazy=[self.answer_command])
        app.event("app_mention")(ack=self.ack_mention, lazy=[self.answer_mention])
        app.shortcut(SHORTCUT_CALLBACK_ID)(ack=self.ack_shortcut, lazy=[self.answer_shortcut])
        for verdict, action_id in FEEDBACK_ACTIONS.items():
            app.action(action_id)(ack=self._feedback_ack(verdict), lazy=[self.thank])
        app.action(DETAILS_ACTION)(ack=self.ack_details, lazy=[self.details])

    # ---- shared steps ----------------------------------------------------------------------
    def _request(self, text: str) -> ChatRequest:
        return parse_request(unescape_slack(text or ""), self.max_lines)

    def _language(self, user: str, request: ChatRequest) -> str:
        return self.answerer.language_for(f"slack:{user}", request.lang, request.written_in)

    def _gate(self, user: str, request: ChatRequest, lang: str, context: BoltContext) -> str | None:
        """Decide in the ack step whether the lazy step will explain; return the text to tell the
        user instead (help, language switched, or the polite rate-limit note)."""
        refusal = None
        if not request.lines:
            refusal = label(lang, "lang_set") if request.lang else label(lang, "help")
        else:
            wait = self.limiter.acquire(f"slack:{user}")
            if wait is not None:
                refusal = self.limiter.message(wait, lang)
        context[LANG], context[GO], context[REFUSAL] = lang, refusal is None, refusal
        return refusal

    def _explain(self, text: str, lang: str) -> tuple[list[dict] | None, str]:
        """Blocks and fallback text for the message ``text``; on failure no blocks and an
        apology, so the asker is not left waiting after "Explaining…" (the traceback goes to the
        log, not to the channel)."""
        request = self._request(text)
        try:
            asked = self.answerer.question(request.lines, lang)
            if asked is not None:
                return question_blocks(asked, lang), question_text(asked, lang)
            reply = self.answerer.explain(request.lines, "slack", request.skipped, indented=request.pasted)
        except Exception as exc:
            log.exception("explaining %d line(s) failed", len(request.lines))
            return None, label(lang, "failed", error=type(exc).__name__)
        return reply_blocks(self.answerer, reply, lang), fallback_text(reply, lang)

    # ---- /explain --------------------------------------------------------------------------
    def ack_command(self, ack: Ack, body: dict, context: BoltContext) -> None:
        request = self._request(body.get("text", ""))
        lang = self._language(body["user_id"], request)
        refusal = self._gate(body["user_id"], request, lang, context)
        ack(text=refusal or label(lang, "working", n=len(request.lines)))

    def answer_command(self, body: dict, respond: Respond, context: BoltContext) -> None:
        if not context.get(GO):
            return
        blocks, text = self._explain(body.get("text", ""), context[LANG])
        if blocks is None:
            respond(text=text, response_type="ephemeral", replace_original=False)
            return
        respond(blocks=blocks, text=text, response_type="in_channel", replace_original=False)

    # ---- @explainlog <lines> ---------------------------------------------------------------
    def ack_mention(self, ack: Ack, event: dict, context: BoltContext) -> None:
        request = self._request(event.get("text", ""))
        self._gate(event["user"], request, self._language(event["user"], request), context)
        ack()

    def answer_mention(self, event: dict, client: WebClient, context: BoltContext) -> None:
        thread = event.get("thread_ts") or event["ts"]
        if not context.get(GO):
            client.chat_postEphemeral(channel=event["channel"], user=event["user"], thread_ts=thread, text=context[REFUSAL])
            return
        blocks, text = self._explain(event.get("text", ""), context[LANG])
        if blocks is None:
            client.chat_postEphemeral(channel=event["channel"], user=event["user"], thread_ts=thread, text=text)
            return
        client.chat_postMessage(channel=event["channel"], thread_ts=thread, blocks=blocks, text=text)

    # ---- message shortcut "Explain this log" ----------------------------------------------
    def ack_shortcut(self, ack: Ack, body: dict, context: BoltContext) -> None:
        request = self._request(body.get("message", {}).get("text", ""))
        user = body["user"]["id"]
        self._gate(user, request, self._language(user, request), context)
        ack()

    def answer_shortcut(self, body: dict, client: WebClient, respond: Respond, context: BoltContext) -> None:
        if not context.get(GO):
            respond(text=context[REFUSAL], response_type="ephemeral", replace_original=False)
            return
        message = body["message"]
        blocks, text = self._explain(message.get("text", ""), context[LANG])
        if blocks is None:
            respond(text=text, response_type="ephemeral", replace_original=False)
            return
        try:
            client.chat_postMessage(channel=body["channel"]["id"], thread_ts=message.get("thread_ts") or message["ts"],
                                    blocks=blocks, text=text)
        except SlackApiError as exc:
            if exc.response.get("error") not in ("not_in_channel", "channel_not_found"):
                raise
            # The bot is not in that channel: the asker still gets the answer, privately.
            blocks.insert(0, {"type": "context", "elements": [{"type": "mrkdwn", "text": label(context[LANG], "not_in_channel")}]})
            respond(blocks=blocks, text=text, response_type="ephemeral", replace_original=False)

    # ---- feedback buttons ------------------------------------------------------------------
    def _feedback_ack(self, verdict: str) -> Callable[..., None]:
        def ack_feedback(ack: Ack, body: dict, action: dict, context: BoltContext) -> None:
            """Stored before acknowledging, so a click Slack saw succeed is never lost."""
            user = body["user"]["id"]
            lang = self.answerer.store.language(f"slack:{user}") or "en"
            try:
                self.answerer.store.record_feedback(action["value"], verdict, user, "slack")
                context[THANKS] = label(lang, "thanks_" + verdict)
            except UnknownAnswer:
                context[THANKS] = label(lang, "expired")
            ack()

        ack_feedback.__name__ = f"ack_feedback_{verdict}"
        return ack_feedback

    def thank(self, respond: Respond, context: BoltContext) -> None:
        respond(text=context[THANKS], response_type="ephemeral", replace_original=False)

    # ---- details button: the long form of one answer, to the one who asked -------------------
    def ack_details(self, ack: Ack, body: dict, action: dict, context: BoltContext) -> None:
        user = body["user"]["id"]
        context[LANG] = self.answerer.store.language(f"slack:{user}") or "en"
        context[DETAILS] = action.get("value")
        ack()

    def details(self, respond: Respond, context: BoltContext) -> None:
        lang = context[LANG]
        try:
            answer = self.answerer.store.answer(str(context[DETAILS]))
        except UnknownAnswer:
            respond(text=label(lang, "expired"), response_type="ephemeral", replace_original=False)
            return
        respond(blocks=details_blocks(self.answerer, answer, lang), text=answer["title"][lang],
                response_type="ephemeral", replace_original=False)


def build_slack_app(settings: SlackSettings, bot: SlackBot, socket_mode: bool = False,
                    logger: logging.Logger | None = None) -> App:
    """A bolt App wired to ``bot``. ``SLACK_API_URL`` (settings.api_url) redirects Web API calls."""
    client_args: dict[str, Any] = {"token": settings.bot_token}
    if settings.api_url:
        client_args["base_url"] = settings.api_url.rstrip("/") + "/"
    app = App(
        client=WebClient(**client_args),
        signing_secret=settings.signing_secret or None,
        process_before_response=True,
        request_verification_enabled=not socket_mode,
        logger=logger or log,
    )
    bot.register(app)
    return app


def signature_ok(verifier: SignatureVerifier, body: bytes, headers: dict[str, str]) -> bool:
    """Slack's v0 signature over ``v0:{timestamp}:{body}`` with a timestamp at most 5 min old."""
    try:
        return verifier.is_valid_request(body, headers)
    except (ValueError, TypeError):  # a non-numeric timestamp, or a body that is not UTF-8
        return False


def payload_event_id(body: bytes, content_type: str) -> tuple[bool, str | None]:
    """(well formed, event id) of a verified body: a JSON object (Events API), or a form with a
    ``command`` (slash commands), a JSON-object ``payload`` (interactivity) or ``ssl_check``."""
    try:
        text = body.decode("utf-8")
        if "json" in content_type:
            data = json.loads(text)
            return isinstance(data, dict), (str(data["event_id"]) if isinstance(data, dict) and data.get("event_id") else None)
        form = parse_qs(text, keep_blank_values=True, strict_parsing=True)
        if "payload" in form:
            return isinstance(json.loads(form["payload"][0]), dict), None
        return ("command" in form or "ssl_check" in form), None
    except (ValueError, UnicodeDecodeError):
        return False, None


def slack_route(app: App, signing_secret: str) -> Route:
    """``POST /slack/events`` for every Slack HTTP delivery (commands, events, interactivity).

    The body is read as a stream with a 1 MiB limit and its signature checked on the raw bytes
    before anything parses them: bolt parses a body before its own verification middleware runs
    (which stays on, as a second check). A signed body that is no Slack payload gets 400; a
    request already seen (same signature and timestamp, or same event id: a replay inside the
    5-minute window, or Slack's own retry) gets 200 and nothing is done again. Bolt's dispatch
    is synchronous and may call the Web API, so it runs in the thread pool."""
    verifier = SignatureVerifier(signing_secret)
    seen = ReplayGuard()

    async def slack_events(request: Request) -> Response:
        try:
            body = await read_body(request, MAX_BODY_BYTES)
        except BodyTooLarge:
            return PlainTextResponse("request body too large", status_code=413)
        if not signature_ok(verifier, body, dict(request.headers)):
            log.warning("rejected a Slack request with a missing, invalid or stale signature")
            return PlainTextResponse("invalid or stale signature", status_code=401)
        well_formed, event_id = payload_event_id(body, request.headers.get("content-type", ""))
        if not well_formed:
            log.warning("rejected a signed Slack request whose body is no Slack payload")
            return JSONResponse({"error": "malformed payload"}, status_code=400)
        signed = f"sig:{request.headers.get('x-slack-request-timestamp')}:{request.headers.get('x-slack-signature')}"
        if not seen.first_time(signed, f"event:{event_id}" if event_id else None):
            log.info("ignored a Slack request seen before (replay or retry)")
            return Response(status_code=200)
        # A verified body is UTF-8: the signature is computed over its decoded text.
        try:
            response = await run_in_threadpool(app.dispatch, to_bolt_request(request, body))
        except Exception:  # noqa: BLE001 - a payload bolt cannot handle: the sender's fault, not ours
            log.exception("bolt could not handle a signed Slack payload")
            return JSONResponse({"error": "malformed payload"}, status_code=400)
        return to_starlette_response(response)

    return Route(EVENTS_PATH, slack_events, methods=["POST"])


def run_socket_mode(app: App, app_token: str) -> None:
    """Connect out to Slack over a WebSocket (no public address needed) and serve until killed."""
    from slack_bolt.adapter.socket_mode import SocketModeHandler

    SocketModeHandler(app, app_token).start()
