"""Logging for the bots with secrets scrubbed, whatever a library decides to log.

slack_sdk already redacts its Authorization header, but lark-oapi and future library versions
may log request bodies or URLs at DEBUG; a filter on the root handler replaces every configured
secret with ``[redacted]`` before any record is written, so raising the log level can never
leak a token.
"""

from __future__ import annotations

import logging
from typing import Iterable

REDACTED = "[redacted]"


class SecretFilter(logging.Filter):
    """Rewrites each record's final message with the given secrets masked."""

    def __init__(self, secrets: Iterable[str]) -> None:
        super().__init__()
        # Longest first so a secret containing another is masked whole.
        self.secrets = sorted({s for s in secrets if s and len(s) >= 6}, key=len, reverse=True)

    def filter(self, record: logging.LogRecord) -> bool:
        message = record.getMessage()
        scrubbed = message
        for secret in self.secrets:
            scrubbed = scrubbed.replace(secret, REDACTED)
        if scrubbed != message or record.exc_info:
            if record.exc_info:
                text = logging.Formatter().formatException(record.exc_info)
                for secret in self.secrets:
                    text = text.replace(secret, REDACTED)
                record.exc_text = text
                record.exc_info = None
            record.msg, record.args = scrubbed, None
        return True


# Loggers that install their own handlers at import time; their records are routed through the
# root handler instead, so they pass the same filter.
SELF_HANDLED_LOGGERS = ("Lark",)


def configure_logging(secrets: Iterable[str], level: int = logging.INFO) -> logging.Handler:
    """One stderr handler on the root logger, with the secret filter installed on it."""
    handler = logging.StreamHandler()
    handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))
    handler.addFilter(SecretFilter(secrets))
    root = logging.getLogger()
    root.addHandler(handler)
    root.setLevel(level)
    for name in SELF_HANDLED_LOGGERS:
        own = logging.getLogger(name)
        for existing in list(own.handlers):
            own.removeHandler(existing)
        own.propagate = True
    return handler
