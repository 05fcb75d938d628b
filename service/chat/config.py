"""Chat bot credentials and settings, read only from environment variables.

Secrets never come from command-line flags (they would show in ``ps`` and shell history), are
kept out of ``repr()`` so a logged settings object cannot leak them, and are registered with
``secret_values()`` so the log filter in ``logs.py`` can scrub them from any log record.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Mapping

from indexer import paths

FEISHU_DOMAIN = "https://open.feishu.cn"
LARK_DOMAIN = "https://open.larksuite.com"


class ChatConfigError(ValueError):
    """A required variable is missing or unusable; the message names the variable, never its value."""


def _required(env: Mapping[str, str], name: str, what: str) -> str:
    value = (env.get(name) or "").strip()
    if not value:
        raise ChatConfigError(f"set {name} ({what}) in the environment")
    return value


def _optional(env: Mapping[str, str], name: str) -> str | None:
    value = (env.get(name) or "").strip()
    return value or None


@dataclass(frozen=True)
class SlackSettings:
    """``SLACK_BOT_TOKEN`` always; ``SLACK_SIGNING_SECRET`` for HTTP mode, ``SLACK_APP_TOKEN``
    for Socket Mode. ``SLACK_API_URL`` redirects Web API calls (a proxy, or a test server)."""

    bot_token: str = field(repr=False)
    signing_secret: str = field(default="", repr=False)
    app_token: str | None = field(default=None, repr=False)
    api_url: str | None = None

    @classmethod
    def from_env(cls, mode: str, env: Mapping[str, str] | None = None) -> "SlackSettings":
        env = os.environ if env is None else env
        bot_token = _required(env, "SLACK_BOT_TOKEN", "the Bot User OAuth Token, xoxb-...")
        if mode == "socket":
            app_token = _required(env, "SLACK_APP_TOKEN", "an app-level token with connections:write, xapp-...")
            if not app_token.startswith("xapp-"):
                raise ChatConfigError("SLACK_APP_TOKEN must be an app-level token (it starts with xapp-)")
            return cls(bot_token, _optional(env, "SLACK_SIGNING_SECRET") or "", app_token, _optional(env, "SLACK_API_URL"))
        secret = _required(env, "SLACK_SIGNING_SECRET", "the Signing Secret from the app's Basic Information page")
        return cls(bot_token, secret, None, _optional(env, "SLACK_API_URL"))

    def secret_values(self) -> list[str]:
        return [v for v in (self.bot_token, self.signing_secret, self.app_token) if v]


@dataclass(frozen=True)
class FeishuSettings:
    """``FEISHU_APP_ID`` and ``FEISHU_APP_SECRET`` always; the HTTP callback mode also needs
    ``FEISHU_ENCRYPT_KEY`` (signatures exist only with it) and ``FEISHU_VERIFICATION_TOKEN``.
    ``FEISHU_DOMAIN`` is ``https://open.feishu.cn`` (Feishu) or ``https://open.larksuite.com`` (Lark)."""

    app_id: str
    app_secret: str = field(repr=False)
    encrypt_key: str = field(default="", repr=False)
    verification_token: str = field(default="", repr=False)
    domain: str = FEISHU_DOMAIN

    @classmethod
    def from_env(cls, mode: str, env: Mapping[str, str] | None = None) -> "FeishuSettings":
        env = os.environ if env is None else env
        app_id = _required(env, "FEISHU_APP_ID", "the App ID, cli_...")
        app_secret = _required(env, "FEISHU_APP_SECRET", "the App Secret")
        domain = (_optional(env, "FEISHU_DOMAIN") or FEISHU_DOMAIN).rstrip("/")
        if mode == "http":
            # Without an Encrypt Key Feishu does not sign callbacks, so anyone could post events.
            encrypt_key = _required(env, "FEISHU_ENCRYPT_KEY", "the Encrypt Key from Events & Callbacks > Encryption Strategy")
            token = _required(env, "FEISHU_VERIFICATION_TOKEN", "the Verification Token from the same page")
            return cls(app_id, app_secret, encrypt_key, token, domain)
        return cls(app_id, app_secret, "", "", domain)

    def secret_values(self) -> list[str]:
        return [v for v in (self.app_secret, self.encrypt_key, self.verification_token) if v]


def default_store_path() -> Path:
    """Where answers, feedback and language choices live unless ``EXPLAINLOG_CHAT_DB`` says otherwise."""
    raw = os.environ.get("EXPLAINLOG_CHAT_DB")
    return Path(raw) if raw else paths.state_dir() / "chat.sqlite3"


@dataclass(frozen=True)
class ChatOptions:
    """Settings shared by both bots; none is secret, so flags may set them too."""

    store_path: Path = field(default_factory=default_store_path)
    web_url: str | None = field(default_factory=lambda: _optional(os.environ, "EXPLAINLOG_WEB_URL"))
    rate_per_minute: int = 6
    max_lines: int = 50
