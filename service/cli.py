"""The ``explainlog`` command line: explain, kb check, index build, eval."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from indexer import paths

EPILOG = """examples:
  explainlog explain "host:133:202 [0] NCCL INFO Using network IB"
  printf 'LINE\\nLINE\\n' | explainlog explain --json -
  explainlog explain --lang zh --file train.log
  explainlog kb check
  explainlog index build
  explainlog eval tests/data/eval_spine.jsonl
"""


def _cmd_kb_check(args: argparse.Namespace) -> int:
    from indexer.kb_check import run_checks, summarize
    from indexer.kb_loader import KBLoadError

    try:
        kb, findings = run_checks(Path(args.kb))
    except KBLoadError as exc:
        print(f"kb check: {exc}", file=sys.stderr)
        return 2
    for finding in findings:
        print(finding)
    print(summarize(kb, findings), file=sys.stderr if findings else sys.stdout)
    return 1 if findings else 0


def _cmd_kb_schema(args: argparse.Namespace) -> int:
    import json

    from indexer.schema import json_schema

    print(json.dumps(json_schema(), indent=2, ensure_ascii=False))
    return 0


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="explainlog",
        description="Explain log lines from distributed deep-learning training, in English and Chinese.",
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--kb", default=str(paths.kb_dir()), help="knowledge base directory (env EXPLAINLOG_KB)")
    sub = parser.add_subparsers(dest="command", required=True)

    kb = sub.add_parser("kb", help="knowledge base tools")
    kb_sub = kb.add_subparsers(dest="kb_command", required=True)
    kb_sub.add_parser("check", help="validate every entry, example and negative").set_defaults(func=_cmd_kb_check)
    kb_sub.add_parser("schema", help="print the entry JSON Schema").set_defaults(func=_cmd_kb_schema)
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        return args.func(args)
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:
        return 0


if __name__ == "__main__":
    sys.exit(main())
