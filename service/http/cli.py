"""``explainlog serve``: the HTTP service and web page. Imports nothing heavy until it runs."""

from __future__ import annotations

import argparse
import os
import sys
import tempfile

from service.http.settings import SETTINGS, Settings, SettingsError

EPILOG = """examples:
  explainlog serve                                  # http://127.0.0.1:8000/
  explainlog serve --host 0.0.0.0 --port 8080 --workers 2
  EXPLAINLOG_API_TOKEN=s3cret explainlog serve      # require 'Authorization: Bearer s3cret' on /v1/*
  explainlog --index-policy refuse serve            # never rebuild the index at start-up
  explainlog serve --rate-limit 5 --rate-burst 10   # each client: 5 requests/s, 10 at once
  explainlog serve --client-header X-Forwarded-For  # behind a proxy that sets it: one limit per user

every flag also reads an environment variable (flags win):
""" + "\n".join(f"  {s.flag:<20} {s.env}" for s in SETTINGS.values() if s.flag not in ("--kb", "--index", "--model", "--index-policy"))


SERVE_FLAGS = ("host", "port", "workers", "max_body_bytes", "max_lines", "max_line_chars", "max_upload_bytes",
               "embed_budget_chars", "rate_limit", "rate_burst", "client_header", "cors_origins")


def register(subparsers) -> None:
    serve = subparsers.add_parser(
        "serve", help="run the HTTP API and web page (FastAPI + uvicorn)",
        description="Serve /v1/explain, /v1/annotate, /v1/patterns, the web page at / and the API docs at /docs.",
        epilog=EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    for name in SERVE_FLAGS:
        setting = SETTINGS[name]
        serve.add_argument(setting.flag, dest=f"serve_{name}", default=None, metavar=name.split("_")[-1].upper().replace("HEADER", "NAME"),
                           help=f"{setting.help} (env {setting.env})")
    serve.add_argument("--api-token-file", dest="serve_api_token_file", default=None, metavar="FILE",
                       help=f"{SETTINGS['api_token'].help} (env {SETTINGS['api_token'].env} holds the token itself)")
    serve.add_argument("--log-level", default="info", choices=("critical", "error", "warning", "info", "debug"))
    serve.add_argument("--no-access-log", action="store_true", help="do not log every request (saves CPU under load)")
    serve.set_defaults(func=run_serve)


def settings_from_args(args: argparse.Namespace, environ: dict[str, str] | None = None) -> Settings:
    """Flags first, then ``EXPLAINLOG_*`` variables, then defaults. --kb/--index/--model come
    from the global options, which already read their variables."""
    env = dict(os.environ if environ is None else environ)
    raw: dict[str, str | None] = {name: env.get(s.env) for name, s in SETTINGS.items()}
    for name in SERVE_FLAGS:
        flag_value = getattr(args, f"serve_{name}", None)
        if flag_value is not None:
            raw[name] = flag_value
    if args.serve_api_token_file:
        with open(args.serve_api_token_file, encoding="utf-8") as handle:
            raw["api_token"] = handle.read().strip()
    raw["kb_dir"] = args.kb
    raw["index_dir"] = args.index
    raw["model_path"] = args.model or env.get("EXPLAINLOG_MODEL")
    raw["index_policy"] = args.index_policy
    return Settings.from_mapping(raw)


def run_serve(args: argparse.Namespace) -> int:
    try:
        settings = settings_from_args(args)
    except (SettingsError, OSError) as exc:
        print(f"explainlog serve: {exc}", file=sys.stderr)
        return 2
    import uvicorn

    common = dict(host=settings.host, port=settings.port, log_level=args.log_level,
                  access_log=not args.no_access_log, server_header=False)
    if settings.workers == 1:
        from service.http.app import create_app

        uvicorn.run(create_app(settings), **common)
        return 0
    # Worker processes rebuild the app from the environment; their metrics meet in one directory.
    os.environ.update(settings.to_environ())
    os.environ.setdefault("PROMETHEUS_MULTIPROC_DIR", tempfile.mkdtemp(prefix="explainlog-metrics-"))
    uvicorn.run("service.http.app:app_from_environ", factory=True, workers=settings.workers, **common)
    return 0
