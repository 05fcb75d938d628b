"""``explainlog chat slack|feishu|feedback``: run a bot, or export what users said about answers.

Registered by ``service/cli.py``; imports nothing heavy until a command runs. Credentials come
only from environment variables (see ``config.py``); flags carry the non-secret settings.
"""

from __future__ import annotations

import argparse
import os
import sys

EPILOG = """environment:
  Slack:  SLACK_BOT_TOKEN, and SLACK_SIGNING_SECRET (http) or SLACK_APP_TOKEN (socket)
  Feishu: FEISHU_APP_ID, FEISHU_APP_SECRET, and for http FEISHU_ENCRYPT_KEY, FEISHU_VERIFICATION_TOKEN;
          FEISHU_DOMAIN=https://open.larksuite.com for Lark
  both:   EXPLAINLOG_CHAT_DB (answers/feedback SQLite), EXPLAINLOG_WEB_URL (link to the web page)

examples:
  explainlog chat slack --mode socket
  explainlog chat slack --mode http --host 0.0.0.0 --port 3000     # Request URL: https://HOST/slack/events
  explainlog chat feishu --mode ws
  explainlog chat feishu --mode http --port 3001                   # Request URL: https://HOST/feishu/events
  explainlog chat feedback > feedback.jsonl
"""


def _common(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--host", default="127.0.0.1", help="HTTP mode: address to listen on (default 127.0.0.1)")
    parser.add_argument("--port", type=int, default=3000, help="HTTP mode: TCP port (default 3000)")
    parser.add_argument("--db", default=None, help="SQLite file for answers, feedback and language choices (env EXPLAINLOG_CHAT_DB)")
    parser.add_argument("--web-url", default=None, help="base URL of the explainlog web page to link answers to (env EXPLAINLOG_WEB_URL)")
    parser.add_argument("--rate", type=int, default=6, help="requests per user per minute (default 6)")
    parser.add_argument("--max-lines", type=int, default=50, help="most lines explained per message (default 50)")
    parser.add_argument("--log-level", default="INFO", choices=("DEBUG", "INFO", "WARNING", "ERROR"))


def register(subparsers) -> None:
    chat = subparsers.add_parser(
        "chat", help="Slack and Feishu/Lark bots that answer pasted log lines",
        epilog=EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    sub = chat.add_subparsers(dest="chat_command", required=True)
    slack = sub.add_parser("slack", help="run the Slack bot", epilog=EPILOG,
                           formatter_class=argparse.RawDescriptionHelpFormatter)
    slack.add_argument("--mode", choices=("http", "socket"), required=True,
                       help="http: serve POST /slack/events; socket: Socket Mode, no public address needed")
    _common(slack)
    slack.set_defaults(func=_cmd_slack)
    feishu = sub.add_parser("feishu", help="run the Feishu/Lark bot", epilog=EPILOG,
                            formatter_class=argparse.RawDescriptionHelpFormatter)
    feishu.add_argument("--mode", choices=("http", "ws"), required=True,
                        help="http: serve POST /feishu/events; ws: long connection, no public address needed")
    _common(feishu)
    feishu.set_defaults(func=_cmd_feishu)
    feedback = sub.add_parser(
        "feedback", help="print every feedback click as JSONL, for curators",
        epilog="examples:\n  explainlog chat feedback > feedback.jsonl\n  explainlog chat feedback --db /var/lib/explainlog/chat.sqlite3",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    feedback.add_argument("--db", default=None, help="SQLite file (env EXPLAINLOG_CHAT_DB)")
    feedback.set_defaults(func=_cmd_feedback)


def _options(args: argparse.Namespace):
    from pathlib import Path

    from service.chat.config import ChatOptions, default_store_path

    if args.rate < 1 or args.max_lines < 1:
        raise ValueError("--rate and --max-lines must be at least 1")
    return ChatOptions(
        store_path=Path(args.db) if args.db else default_store_path(),
        web_url=args.web_url or os.environ.get("EXPLAINLOG_WEB_URL") or None,
        rate_per_minute=args.rate,
        max_lines=args.max_lines,
    )


def _explainer(args: argparse.Namespace):
    from service.explainer import Explainer

    return Explainer(kb_dir=args.kb, index_dir=args.index, model_path=args.model, index_policy=args.index_policy)


def _cmd_slack(args: argparse.Namespace) -> int:
    import logging

    from service.chat.config import SlackSettings
    from service.chat.logs import configure_logging
    from service.chat.server import build_answerer, serve, slack_parts, standalone_app, warm_up
    from service.chat.slack import run_socket_mode, slack_route

    settings = SlackSettings.from_env(args.mode)
    configure_logging(settings.secret_values(), getattr(logging, args.log_level))
    options = _options(args)
    explainer = _explainer(args)
    warm_up(explainer)
    app = slack_parts(build_answerer(explainer, options), options, settings, socket_mode=args.mode == "socket")
    if args.mode == "socket":
        run_socket_mode(app, settings.app_token or "")
    else:
        serve(standalone_app([slack_route(app, settings.signing_secret)]), args.host, args.port)
    return 0


def _cmd_feishu(args: argparse.Namespace) -> int:
    import logging

    from service.chat.config import FeishuSettings

    settings = FeishuSettings.from_env(args.mode)
    # lark-oapi installs its own log handler at import; import it before routing logs through ours.
    from service.chat.feishu import feishu_route, run_long_connection
    from service.chat.logs import configure_logging
    from service.chat.server import build_answerer, feishu_parts, serve, standalone_app, warm_up

    configure_logging(settings.secret_values(), getattr(logging, args.log_level))
    options = _options(args)
    explainer = _explainer(args)
    warm_up(explainer)
    bot = feishu_parts(build_answerer(explainer, options), options, settings)
    if args.mode == "ws":
        run_long_connection(settings, bot)
    else:
        serve(standalone_app([feishu_route(bot, settings)]), args.host, args.port)
    return 0


def _cmd_feedback(args: argparse.Namespace) -> int:
    import json
    from pathlib import Path

    from service.chat.config import default_store_path
    from service.chat.store import ChatStore

    path = Path(args.db) if args.db else default_store_path()
    if not path.exists():
        print(f"explainlog chat feedback: no store at {path} (set --db or EXPLAINLOG_CHAT_DB)", file=sys.stderr)
        return 2
    store = ChatStore(path)
    for record in store.feedback():
        sys.stdout.write(json.dumps(record, ensure_ascii=False) + "\n")
    return 0
