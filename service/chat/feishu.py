"""The Feishu/Lark bot: answers @-mentions and ``/explain`` with an interactive card.

Two delivery modes share one lark-oapi event dispatcher: the long connection (``ws``, the
bot dials out, no public address needed) and the HTTP callback (``/feishu/events``). Feishu
retries a callback not answered within 3 s, and explaining may load the embedding model, so
messages are answered on a worker pool and the callback returns at once; repeated deliveries
of one event are dropped by event id. Card button clicks (feedback, language switch) are
answered inline: they only touch SQLite.

HTTP callbacks are verified here before lark-oapi sees them, because the SDK neither checks
the timestamp's age nor copes with missing signature headers: a signed request must carry
``X-Lark-Request-Timestamp/-Nonce/-Signature`` with ``sha256(timestamp + nonce + encrypt_key +
body)`` and a timestamp at most 5 minutes old; the only unsigned request accepted is Feishu's
URL-verification handshake, and only with the right verification token.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import logging
import threading
import time
from collections import OrderedDict
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import lark_oapi as lark
from lark_oapi.api.im.v1 import (
    P2ImMessageReceiveV1,
    ReplyMessageRequest,
    ReplyMessageRequestBody,
)
from lark_oapi.core.model import RawRequest
from lark_oapi.core.utils import AESCipher
from lark_oapi.event.callback.model.p2_card_action_trigger import (
    P2CardActionTrigger,
    P2CardActionTriggerResponse,
)
from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import JSONResponse, PlainTextResponse, Response
from starlette.routing import Route

from service.chat.answers import Answerer
from service.chat.cards import reply_card, text_content
from service.chat.config import FeishuSettings
from service.chat.guard import BodyTooLarge, ReplayGuard, read_body
from service.chat.labels import label
from service.chat.messages import COMMAND, parse_request, strip_feishu_mentions
from service.chat.ratelimit import RateLimiter
from service.chat.store import UnknownAnswer

EVENTS_PATH = "/feishu/events"
MAX_BODY_BYTES = 1024 * 1024
MAX_AGE_S = 300
DEFAULT_LANG = "zh"
log = logging.getLogger("explainlog.chat.feishu")


class CallbackRejected(Exception):
    """An HTTP callback failed verification; nothing in it was acted on."""


def verify_callback(settings: FeishuSettings, headers: dict[str, str], body: bytes, now: float | None = None) -> None:
    """Raise ``CallbackRejected`` unless the request is signed and fresh, or is the
    URL-verification handshake carrying our verification token."""
    now = time.time() if now is None else now
    ts = headers.get("x-lark-request-timestamp")
    nonce = headers.get("x-lark-request-nonce")
    signature = headers.get("x-lark-signature")
    if ts or nonce or signature:
        if not (ts and nonce and signature):
            raise CallbackRejected("incomplete signature headers")
        try:
            age = abs(now - int(ts))
        except ValueError:
            raise CallbackRejected("timestamp is not a number") from None
        if age > MAX_AGE_S:
            raise CallbackRejected("timestamp older than 5 minutes")
        expected = hashlib.sha256((ts + nonce + settings.encrypt_key).encode("utf-8") + body).hexdigest()
        if not hmac.compare_digest(expected, signature):
            raise CallbackRejected("signature mismatch")
        return
    try:
        payload = json.loads(body)
        if isinstance(payload, dict) and "encrypt" in payload:
            payload = json.loads(AESCipher(settings.encrypt_key).decrypt_str(payload["encrypt"]))
    except (ValueError, TypeError, KeyError):
        raise CallbackRejected("unsigned request that is not a readable handshake") from None
    if not isinstance(payload, dict) or payload.get("type") != "url_verification":
        raise CallbackRejected("unsigned request")
    if not hmac.compare_digest(str(payload.get("token", "")).encode(), settings.verification_token.encode()):
        raise CallbackRejected("wrong verification token")


def message_text(message_type: str | None, content: str | None) -> str | None:
    """The text of a text or rich-text (post) message; code blocks come back as ``` fences so
    ``parse_request`` treats their contents as the lines. Other message types: None."""
    try:
        body = json.loads(content or "")
    except ValueError:
        return None
    if not isinstance(body, dict):
        return None
    if message_type == "text":
        return str(body.get("text", ""))
    if message_type != "post":
        return None
    paragraphs = body.get("content") or []
    out: list[str] = []
    for paragraph in paragraphs if isinstance(paragraphs, list) else []:
        parts: list[str] = []
        for element in paragraph if isinstance(paragraph, list) else []:
            tag = element.get("tag") if isinstance(element, dict) else None
            if tag in ("text", "a"):
                parts.append(str(element.get("text", "")))
            elif tag == "code_block":
                parts.append("\n```\n" + str(element.get("text", "")) + "\n```\n")
        out.append("".join(parts))
    return "\n".join(out)


class FeishuBot:
    """Handlers for ``im.message.receive_v1`` and ``card.action.trigger``."""

    def __init__(self, answerer: Answerer, limiter: RateLimiter, client: lark.Client,
                 max_lines: int = 50, workers: int = 4) -> None:
        self.answerer = answerer
        self.limiter = limiter
        self.client = client
        self.max_lines = max_lines
        self._pool = ThreadPoolExecutor(max_workers=workers, thread_name_prefix="feishu-answer")
        self._seen: OrderedDict[str, None] = OrderedDict()
        self._seen_lock = threading.Lock()

    def dispatcher(self, settings: FeishuSettings | None = None) -> lark.EventDispatcherHandler:
        """For HTTP mode pass the settings (encrypt key and token); the long connection is
        authenticated by the connection itself and needs neither."""
        key, token = (settings.encrypt_key, settings.verification_token) if settings else ("", "")
        return (
            lark.EventDispatcherHandler.builder(key, token)
            .register_p2_im_message_receive_v1(self.on_message)
            .register_p2_card_action_trigger(self.on_card_action)
            .build()
        )

    def _first_delivery(self, event_id: str | None) -> bool:
        if not event_id:
            return True
        with self._seen_lock:
            if event_id in self._seen:
                return False
            self._seen[event_id] = None
            while len(self._seen) > 4096:
                self._seen.popitem(last=False)
            return True

    # ---- messages --------------------------------------------------------------------------
    def on_message(self, data: P2ImMessageReceiveV1) -> None:
        if self._first_delivery(data.header.event_id if data.header else None):
            self._pool.submit(self._answer_logged, data)

    def _answer_logged(self, data: P2ImMessageReceiveV1) -> None:
        try:
            self.answer_message(data)
        except Exception:
            log.exception("answering a Feishu message failed")

    def answer_message(self, data: P2ImMessageReceiveV1) -> None:
        event = data.event
        sender, message = event.sender, event.message
        if sender is None or message is None or sender.sender_type != "user":
            return  # other bots, including this one
        text = message_text(message.message_type, message.content)
        if text is None:
            return
        text = strip_feishu_mentions(text)
        if message.chat_type != "p2p" and not message.mentions and not COMMAND.match(text):
            return
        request = parse_request(text, self.max_lines)
        user = f"feishu:{sender.sender_id.open_id if sender.sender_id else 'unknown'}"
        lang = self.answerer.language_for(user, request.lang, DEFAULT_LANG)
        if not request.lines:
            self._reply(message.message_id, "text", text_content(label(lang, "lang_set") if request.lang else label(lang, "help")))
            return
        wait = self.limiter.acquire(user)
        if wait is not None:
            self._reply(message.message_id, "text", text_content(self.limiter.message(wait, lang)))
            return
        try:
            asked = self.answerer.question(request.lines, lang)
            if asked is not None:
                from service.ask import render_text

                self._reply(message.message_id, "text", text_content(render_text(asked)))
                return
            reply = self.answerer.explain(request.lines, "feishu", request.skipped, indented=request.pasted)
        except Exception as exc:
            log.exception("explaining %d line(s) failed", len(request.lines))
            self._reply(message.message_id, "text", text_content(label(lang, "failed", error=type(exc).__name__)))
            return
        self._reply(message.message_id, "interactive", reply_card(self.answerer, reply, lang), uuid=reply.id)

    def _reply(self, message_id: str, msg_type: str, content: dict, uuid: str | None = None) -> None:
        body = ReplyMessageRequestBody.builder().msg_type(msg_type).reply_in_thread(True) \
            .content(json.dumps(content, ensure_ascii=False))
        if uuid:
            body = body.uuid(uuid)
        request = ReplyMessageRequest.builder().message_id(message_id).request_body(body.build()).build()
        response = self.client.im.v1.message.reply(request)
        if not response.success():
            log.error("Feishu reply failed: code %s, msg %s, log_id %s", response.code, response.msg, response.get_log_id())

    # ---- card buttons ----------------------------------------------------------------------
    def on_card_action(self, data: P2CardActionTrigger) -> P2CardActionTriggerResponse:
        event = data.event
        value: dict[str, Any] = (event.action.value if event and event.action else None) or {}
        user = f"feishu:{event.operator.open_id if event and event.operator else 'unknown'}"
        kind = value.get("action")
        if kind == "lang" and value.get("lang") in ("en", "zh"):
            self.answerer.store.set_language(user, value["lang"])
            try:
                reply = self.answerer.reload(str(value.get("reply")))
            except UnknownAnswer:
                return _toast("warning", label(value["lang"], "expired"))
            return P2CardActionTriggerResponse({"card": {"type": "raw", "data": reply_card(self.answerer, reply, value["lang"])}})
        lang = self.answerer.store.language(user) or DEFAULT_LANG
        if kind == "details":
            try:
                reply = self.answerer.reload(str(value.get("reply")))
            except UnknownAnswer:
                return _toast("warning", label(lang, "expired"))
            card = reply_card(self.answerer, reply, lang, expanded=frozenset([str(value.get("answer"))]))
            return P2CardActionTriggerResponse({"card": {"type": "raw", "data": card}})
        if kind == "feedback":
            try:
                self.answerer.store.record_feedback(str(value.get("answer")), str(value.get("verdict")), user, "feishu")
            except UnknownAnswer:
                return _toast("warning", label(lang, "expired"))
            except ValueError:  # a verdict our cards never send
                return P2CardActionTriggerResponse({})
            return _toast("success", label(lang, "thanks_" + str(value["verdict"])))
        return P2CardActionTriggerResponse({})


def _toast(kind: str, text: str) -> P2CardActionTriggerResponse:
    return P2CardActionTriggerResponse({"toast": {"type": kind, "content": text}})


def build_lark_client(settings: FeishuSettings) -> lark.Client:
    return (lark.Client.builder().app_id(settings.app_id).app_secret(settings.app_secret)
            .domain(settings.domain).log_level(lark.LogLevel.WARNING).build())


# lark-oapi reads these header names with this exact spelling.
LARK_HEADERS = ("X-Lark-Request-Timestamp", "X-Lark-Request-Nonce", "X-Lark-Signature", "X-Request-Id")


def callback_event_id(settings: FeishuSettings, body: bytes) -> str | None | bool:
    """The event id of a verified callback (``header.event_id`` in schema 2.0, ``uuid`` in 1.0),
    None for callbacks without one (card actions, the handshake), False if the body is no
    Feishu payload (not a JSON object, or an ``encrypt`` that does not decrypt to one)."""
    try:
        payload = json.loads(body)
        if isinstance(payload, dict) and "encrypt" in payload:
            payload = json.loads(AESCipher(settings.encrypt_key).decrypt_str(payload["encrypt"]))
    except (ValueError, TypeError, KeyError, UnicodeDecodeError):
        return False
    if not isinstance(payload, dict):
        return False
    header = payload.get("header")
    if isinstance(header, dict) and header.get("event_id"):
        return str(header["event_id"])
    return str(payload["uuid"]) if payload.get("uuid") else None


def feishu_route(bot: FeishuBot, settings: FeishuSettings) -> Route:
    """``POST /feishu/events``: events and card callbacks, verified before dispatch.

    As for Slack (``service.chat.guard``): the body is streamed with a 1 MiB limit and verified
    before it is parsed; a verified body that is no Feishu payload, or that lark-oapi cannot
    handle, gets 400 with no exception text; a callback seen before (same timestamp, nonce and
    signature, or same event id) gets 200 and nothing is done again."""
    dispatcher = bot.dispatcher(settings)
    seen = ReplayGuard()

    async def feishu_events(request: Request) -> Response:
        try:
            body = await read_body(request, MAX_BODY_BYTES)
        except BodyTooLarge:
            return PlainTextResponse("request body too large", status_code=413)
        try:
            verify_callback(settings, dict(request.headers), body)
        except CallbackRejected as exc:
            log.warning("rejected a Feishu callback: %s", exc)
            return PlainTextResponse("invalid or stale signature", status_code=401)
        event_id = callback_event_id(settings, body)
        if event_id is False:
            log.warning("rejected a verified Feishu callback whose body is no Feishu payload")
            return JSONResponse({"error": "malformed payload"}, status_code=400)
        headers = request.headers
        signed = (f"sig:{headers.get('x-lark-request-timestamp')}:{headers.get('x-lark-request-nonce')}:"
                  f"{headers.get('x-lark-signature')}") if headers.get("x-lark-signature") else None
        if not seen.first_time(signed, f"event:{event_id}" if event_id else None):
            log.info("ignored a Feishu callback seen before (replay or retry)")
            return JSONResponse({}, status_code=200)
        raw = RawRequest()
        raw.uri = request.url.path
        raw.body = body
        raw.headers = {name: request.headers[name] for name in LARK_HEADERS if name in request.headers}
        try:
            result = await run_in_threadpool(dispatcher.do, raw)
        except Exception:  # noqa: BLE001 - never echo an exception's text to the sender
            log.exception("the Feishu dispatcher could not handle a verified callback")
            return JSONResponse({"error": "malformed payload"}, status_code=400)
        status = result.status_code or 200
        if status >= 500:
            # lark-oapi answers a payload it cannot handle with 500 and the exception's text.
            log.warning("the Feishu dispatcher refused a verified callback (%s)", status)
            return JSONResponse({"error": "malformed payload"}, status_code=400)
        return Response(result.content, status_code=status, media_type="application/json")

    return Route(EVENTS_PATH, feishu_events, methods=["POST"])


def long_connection_client(settings: FeishuSettings, bot: FeishuBot, auto_reconnect: bool = True) -> "lark.ws.Client":
    """lark-oapi's WebSocket client: it asks ``{domain}/callback/ws/endpoint`` for a socket URL,
    dials out, and feeds each event frame to the same dispatcher the HTTP mode uses."""
    return lark.ws.Client(settings.app_id, settings.app_secret, event_handler=bot.dispatcher(),
                          domain=settings.domain, log_level=lark.LogLevel.INFO, auto_reconnect=auto_reconnect)


def run_long_connection(settings: FeishuSettings, bot: FeishuBot) -> None:
    """Dial out to Feishu over its long connection (no public address needed); serve until killed."""
    long_connection_client(settings, bot).start()
