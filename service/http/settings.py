"""Service configuration: one frozen object, read from flags or ``EXPLAINLOG_*`` variables.

Every setting has an environment variable so a container or a Kubernetes manifest can set it
without a command line; flags win over variables. With ``--workers N`` uvicorn starts fresh
processes that rebuild the app from the environment, so the CLI writes its flags back into the
environment (``to_environ``) before starting them.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Mapping

from indexer import paths

KiB = 1024
MiB = 1024 * KiB


class SettingsError(ValueError):
    """A setting has a value the service cannot use; the message names the variable."""


@dataclass(frozen=True)
class Setting:
    """Metadata for one setting: its variable, its flag, and the help text shown in both."""

    env: str
    flag: str
    help: str


SETTINGS: dict[str, Setting] = {
    "host": Setting("EXPLAINLOG_HOST", "--host", "address to listen on (0.0.0.0 in the container)"),
    "port": Setting("EXPLAINLOG_PORT", "--port", "TCP port"),
    "workers": Setting("EXPLAINLOG_WORKERS", "--workers", "worker processes; each loads the model and index once"),
    "kb_dir": Setting("EXPLAINLOG_KB", "--kb", "knowledge base directory"),
    "index_dir": Setting("EXPLAINLOG_INDEX", "--index", "semantic index directory"),
    "model_path": Setting("EXPLAINLOG_MODEL", "--model", "local sentence-transformers model directory (default: bundled MiniLM)"),
    "index_policy": Setting("EXPLAINLOG_INDEX_POLICY", "--index-policy", "rebuild or refuse a missing/stale index"),
    "max_body_bytes": Setting("EXPLAINLOG_MAX_BODY_BYTES", "--max-body-bytes", "largest /v1/explain request body"),
    "max_lines": Setting("EXPLAINLOG_MAX_LINES", "--max-lines", "most lines in one /v1/explain request"),
    "max_line_chars": Setting("EXPLAINLOG_MAX_LINE_CHARS", "--max-line-chars", "longest line /v1/explain accepts; /v1/annotate truncates longer lines"),
    "max_upload_bytes": Setting("EXPLAINLOG_MAX_UPLOAD_BYTES", "--max-upload-bytes", "largest /v1/annotate upload, counted both as received and after gunzip"),
    "embed_budget_chars": Setting("EXPLAINLOG_EMBED_BUDGET_CHARS", "--embed-budget-chars", "most characters of never-seen line templates one /v1/explain request may send to the embedding model (413 beyond it)"),
    "rate_limit": Setting("EXPLAINLOG_RATE_LIMIT", "--rate-limit", "requests per second each client may make to /v1/* on average (429 beyond it; 0 turns the limit off)"),
    "rate_burst": Setting("EXPLAINLOG_RATE_BURST", "--rate-burst", "requests a client may make at once before --rate-limit applies"),
    "client_header": Setting("EXPLAINLOG_CLIENT_HEADER", "--client-header", "header that names the client for the rate limit and fair sharing, set by a trusted proxy (e.g. X-Forwarded-For; default: the peer address)"),
    "cors_origins": Setting("EXPLAINLOG_CORS_ORIGINS", "--cors-origins", "comma-separated origins allowed to call the API from a browser (default: none)"),
    "api_token": Setting("EXPLAINLOG_API_TOKEN", "--api-token-file", "bearer token required on /v1/* (the flag names a file holding it, so it stays out of `ps`)"),
}


def _parse_int(name: str, raw: str) -> int:
    where = f"{SETTINGS[name].flag}/{SETTINGS[name].env}"
    try:
        value = int(raw.replace("_", ""))
    except ValueError:
        raise SettingsError(f"{where}={raw!r} is not an integer") from None
    if value < 1:
        raise SettingsError(f"{where}={value} must be at least 1")
    return value


def _parse_rate(raw: str) -> float:
    where = f"{SETTINGS['rate_limit'].flag}/{SETTINGS['rate_limit'].env}"
    try:
        value = float(raw)
    except ValueError:
        raise SettingsError(f"{where}={raw!r} is not a number") from None
    if value < 0 or value != value:
        raise SettingsError(f"{where}={value} must be 0 (off) or positive")
    return value


def _default_model() -> str | None:
    return os.environ.get("EXPLAINLOG_MODEL") or None


@dataclass(frozen=True)
class Settings:
    host: str = "127.0.0.1"
    port: int = 8000
    workers: int = 1
    kb_dir: Path = field(default_factory=paths.kb_dir)
    # None: the explainer's default, keyed by the model and the digest of kb_dir.
    index_dir: Path | None = None
    model_path: str | None = field(default_factory=_default_model)
    index_policy: str = "rebuild"
    max_body_bytes: int = 4 * MiB
    max_lines: int = 5000
    max_line_chars: int = 16 * KiB
    max_upload_bytes: int = 512 * MiB
    embed_budget_chars: int = 128 * KiB
    rate_limit: float = 20.0
    rate_burst: int = 40
    client_header: str | None = None
    cors_origins: tuple[str, ...] = ()
    api_token: str | None = field(default=None, repr=False)

    def __post_init__(self) -> None:
        if self.index_policy not in ("rebuild", "refuse"):
            raise SettingsError(f"index policy must be 'rebuild' or 'refuse', not {self.index_policy!r}")
        for name in ("port", "workers", "max_body_bytes", "max_lines", "max_line_chars", "max_upload_bytes",
                     "embed_budget_chars", "rate_burst"):
            if getattr(self, name) < 1:
                raise SettingsError(f"{SETTINGS[name].env} must be positive, got {getattr(self, name)}")
        if self.rate_limit < 0:
            raise SettingsError(f"EXPLAINLOG_RATE_LIMIT must be 0 (off) or positive, got {self.rate_limit}")

    @classmethod
    def from_mapping(cls, values: Mapping[str, str | None]) -> "Settings":
        """Build from raw strings keyed by field name; missing or None means the default."""
        kwargs: dict[str, object] = {}
        for f in fields(cls):
            raw = values.get(f.name)
            if raw is None or raw == "":
                continue
            if f.name in ("port", "workers", "max_body_bytes", "max_lines", "max_line_chars", "max_upload_bytes",
                          "embed_budget_chars", "rate_burst"):
                kwargs[f.name] = _parse_int(f.name, str(raw))
            elif f.name == "rate_limit":
                kwargs[f.name] = _parse_rate(str(raw))
            elif f.name in ("kb_dir", "index_dir"):
                kwargs[f.name] = Path(raw)
            elif f.name == "cors_origins":
                kwargs[f.name] = tuple(o.strip() for o in str(raw).split(",") if o.strip())
            else:
                kwargs[f.name] = str(raw).strip() if f.name == "api_token" else str(raw)
        return cls(**kwargs)  # type: ignore[arg-type]

    @classmethod
    def from_environ(cls, environ: Mapping[str, str] | None = None) -> "Settings":
        env = os.environ if environ is None else environ
        return cls.from_mapping({name: env.get(s.env) for name, s in SETTINGS.items()})

    def to_environ(self) -> dict[str, str]:
        """The variables that make ``from_environ`` rebuild exactly these settings."""
        out: dict[str, str] = {}
        for name, setting in SETTINGS.items():
            value = getattr(self, name)
            if value is None:
                continue
            out[setting.env] = ",".join(value) if isinstance(value, tuple) else str(value)
        return out
