"""Assemble and run the bots: standalone (uvicorn), Socket Mode, the Feishu long connection,
or as routes added to another Starlette/FastAPI app.

To serve the bots from the explainlog HTTP service instead of a separate process, run the
factory below (``uvicorn --factory service.chat.server:http_service_with_bots``), or add the
routes to any Starlette/FastAPI app yourself; nothing in that app needs to change::

    from service.chat.server import add_chat_routes, chat_routes_from_env
    add_chat_routes(app, chat_routes_from_env(explainer, platforms=("slack", "feishu")))

which serves ``POST /slack/events`` and ``POST /feishu/events`` next to the app's own routes.
"""

from __future__ import annotations

import logging
import os
import threading
from typing import Iterable, Sequence

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import PlainTextResponse
from starlette.routing import BaseRoute, Route

from service.chat.answers import Answerer
from service.chat.config import ChatOptions, FeishuSettings, SlackSettings
from service.chat.ratelimit import RateLimiter
from service.chat.store import ChatStore

log = logging.getLogger("explainlog.chat")


def build_answerer(explainer, options: ChatOptions) -> Answerer:
    return Answerer(explainer, ChatStore(options.store_path), options.web_url)


def warm_up(explainer) -> threading.Thread:
    """Load the semantic index and model in the background, so the first pasted line the regex
    tier cannot answer does not wait for them."""

    def load() -> None:
        try:
            explainer.warm_up()
        except Exception:
            log.exception("warming up the semantic tier failed; answers will fall back to loading it on demand")

    thread = threading.Thread(target=load, name="explainlog-warm-up", daemon=True)
    thread.start()
    return thread


def slack_parts(answerer: Answerer, options: ChatOptions, settings: SlackSettings, socket_mode: bool):
    from service.chat.slack import SlackBot, build_slack_app

    bot = SlackBot(answerer, RateLimiter(options.rate_per_minute), options.max_lines)
    return build_slack_app(settings, bot, socket_mode=socket_mode)


def feishu_parts(answerer: Answerer, options: ChatOptions, settings: FeishuSettings):
    from service.chat.feishu import FeishuBot, build_lark_client

    return FeishuBot(answerer, RateLimiter(options.rate_per_minute), build_lark_client(settings), options.max_lines)


def chat_routes_from_env(explainer, platforms: Sequence[str] = ("slack", "feishu"),
                         options: ChatOptions | None = None) -> list[BaseRoute]:
    """HTTP routes for the named bots, credentials read from the environment."""
    options = options or ChatOptions()
    answerer = build_answerer(explainer, options)
    routes: list[BaseRoute] = []
    if "slack" in platforms:
        from service.chat.slack import slack_route

        settings = SlackSettings.from_env("http")
        routes.append(slack_route(slack_parts(answerer, options, settings, socket_mode=False), settings.signing_secret))
    if "feishu" in platforms:
        from service.chat.feishu import feishu_route

        settings_f = FeishuSettings.from_env("http")
        routes.append(feishu_route(feishu_parts(answerer, options, settings_f), settings_f))
    return routes


def add_chat_routes(app: Starlette, routes: Iterable[BaseRoute]) -> None:
    """Add bot routes to an existing Starlette or FastAPI app (both keep them in app.router)."""
    app.router.routes.extend(routes)


# A bot is added to the HTTP service when the variable its HTTP mode cannot work without is set.
BOT_MARKERS = {"slack": "SLACK_SIGNING_SECRET", "feishu": "FEISHU_ENCRYPT_KEY"}


def http_service_with_bots():
    """uvicorn factory: the HTTP service (``service.http``, settings from ``EXPLAINLOG_*``) with
    the HTTP routes of every bot whose credentials are in the environment, sharing its explainer."""
    from service.http.app import create_app
    from service.http.settings import Settings

    app = create_app(Settings.from_environ())
    platforms = [name for name, variable in BOT_MARKERS.items() if os.environ.get(variable)]
    if platforms:
        add_chat_routes(app, chat_routes_from_env(app.state.service.explainer, platforms))
    log.info("chat bots mounted on the HTTP service: %s", ", ".join(platforms) or "none (no credentials set)")
    return app


async def _healthz(request: Request) -> PlainTextResponse:
    return PlainTextResponse("ok")


def standalone_app(routes: Iterable[BaseRoute]) -> Starlette:
    """The bots' routes plus ``GET /healthz``, for running without the HTTP service."""
    return Starlette(routes=[*routes, Route("/healthz", _healthz, methods=["GET"])])


def serve(app: Starlette, host: str, port: int) -> None:
    import uvicorn

    # log_config=None: uvicorn logs through the root handler, which scrubs secrets (logs.py).
    uvicorn.run(app, host=host, port=port, log_config=None)
