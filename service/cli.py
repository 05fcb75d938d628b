"""The ``explainlog`` command line: explain, kb check, index build, eval."""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path
from typing import Iterable, Iterator

from indexer import paths

EPILOG = """examples:
  explainlog explain "host:133:202 [0] NCCL INFO Using network IB"
  printf 'LINE\\nLINE\\n' | explainlog explain --json -
  explainlog explain --lang zh --file train.log
  explainlog kb check
  explainlog index build
  explainlog eval tests/data/eval_nccl_init.jsonl
  explainlog eval --heldout tests/data/heldout/*.jsonl
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


def _cmd_catalog_build(args: argparse.Namespace) -> int:
    from indexer.catalog.run import build

    sources = {}
    for item in args.source or []:
        name, _, path = item.partition("=")
        if not path:
            print(f"catalog build: --source wants NAME=PATH, got {item!r}", file=sys.stderr)
            return 2
        sources[name] = path
    counts = build(Path(args.kb) / "catalog", sources)
    for component, row in counts.items():
        levels = ", ".join(f"{k} {v}" for k, v in row["by_level"].items())
        print(f"{component}: {row['records']} records ({levels})")
    return 0


def _cmd_triage(args: argparse.Namespace) -> int:
    import json

    from service.triage import triage_paths

    sources = args.paths or ["-"]
    for path in sources:
        if path != "-" and not Path(path).exists() and not set("*?[") & set(path):
            print(f"triage: no such file: {path}", file=sys.stderr)
            return 2
    result = triage_paths(_explainer(args), sources, semantic=not args.regex_only)
    for p in result["problems"]:
        print(f"triage: {p['file']}{':' + str(p['line']) if p['line'] else ''}: {p['message']}", file=sys.stderr)
    lost = any(p["lost_input"] for p in result["problems"])
    if args.json:
        print(json.dumps(result, ensure_ascii=False, indent=2))
        return 1 if lost else 0
    lang = 1 if args.lang == "zh" else 0
    key = ("en", "zh")[lang]
    root = result["root_cause"]
    print(result["summary"][key])
    if root:
        print()
        print(("root cause", "根因")[lang] + f"  {root['file']}:{root['line_number']}")
        print(f"  {root['line']}")
        if root.get("explanation"):
            print(f"  {root['explanation'][key]}")
        if root.get("action"):
            print(f"  → {root['action'][key]}")
        print(f"  {root['why'][key]}")
    if result["cascade"]:
        print()
        print(("cascade (folded)", "级联（已折叠）")[lang])
        for g in result["cascade"][:15]:
            title = (g["title"] or {}).get(key) or g["sample_lines"][0][:100]
            print(f"  ×{g['count']:<5} lines {g['first_line']}-{g['last_line']}  {title}")
    if lost:
        return 1
    return 0


def _cmd_catalog_texts(args: argparse.Namespace) -> int:
    from indexer.catalog.texts import import_texts

    report = import_texts(Path(args.kb), [Path(f) for f in args.files], [Path(w) for w in args.worklist])
    for problem in report["rejected"]:
        print(f"rejected: {problem}", file=sys.stderr)
    print(f"{report['merged']} texts merged ({report['remapped']} by place), {report['unmatched']} unmatched, "
          f"{len(report['rejected'])} rejected")
    return 1 if report["rejected"] else 0


def _cmd_catalog_link(args: argparse.Namespace) -> int:
    from indexer.catalog.link import write_links

    report = write_links(Path(args.kb))
    print(f"{report['entries_linked']} entries linked to {report['links']} records; "
          f"{report['examples_taken']} records took a real example line from their entry")
    return 0


def _explainer(args: argparse.Namespace):
    from service.explainer import Explainer

    return Explainer(
        kb_dir=args.kb, index_dir=args.index, model_path=args.model, index_policy=args.index_policy
    )


def _read_lines(sources: list[str]) -> Iterator[str]:
    """Yield lines from files or stdin ('-') as text; bytes that are not UTF-8 become U+FFFD
    rather than an error, so a line of binary junk still gets its answer."""
    for source in sources:
        stream = sys.stdin.buffer if source == "-" else open(source, "rb")
        try:
            for raw in stream:
                yield raw.rstrip(b"\n").decode("utf-8", errors="replace")
        finally:
            if stream is not sys.stdin.buffer:
                stream.close()


def _batches(lines: Iterable[str], size: int = 512) -> Iterator[list[str]]:
    batch: list[str] = []
    for line in lines:
        batch.append(line)
        if len(batch) >= size:
            yield batch
            batch = []
    if batch:
        yield batch


def _cmd_explain(args: argparse.Namespace) -> int:
    import orjson

    from service.render import render_answer

    if args.lines and args.file:
        print("explainlog explain: give LINE arguments or --file, not both", file=sys.stderr)
        return 2
    if args.file:
        lines: Iterable[str] = _read_lines(args.file)
    elif args.lines == ["-"] or (not args.lines and not sys.stdin.isatty()):
        lines = _read_lines(["-"])
    elif args.lines:
        lines = args.lines
    else:
        print("explainlog explain: no input (give a LINE, --file FILE, or '-' for stdin)", file=sys.stderr)
        return 2
    explainer = _explainer(args)
    langs = ("en", "zh") if args.lang == "both" else (args.lang,)
    colour = sys.stdout.isatty() and not args.json
    out = sys.stdout.buffer
    for batch in _batches(lines):
        for answer in explainer.explain_many(batch, semantic=not args.regex_only):
            if args.json:
                out.write(orjson.dumps(answer) + b"\n")
            else:
                out.write((render_answer(answer, langs, colour) + "\n\n").encode("utf-8"))
        out.flush()
    return 0


def _cmd_index_build(args: argparse.Namespace) -> int:
    from indexer.encoder import default_encoder
    from indexer.kb_loader import load_kb
    from indexer.semantic_index import (
        IndexError_, SemanticIndex, build_index, prune_older_builds, read_stamp, spot_check, stamp_problem,
    )

    kb = load_kb(Path(args.kb))
    if kb.findings:
        print(f"index build: the KB has problems; run 'explainlog kb check' ({kb.findings[0]})", file=sys.stderr)
        return 1
    encoder = default_encoder(args.model)
    index_dir = Path(args.index or paths.index_dir(encoder.name, kb.digest))
    if getattr(args, "if_needed", False) and stamp_problem(read_stamp(index_dir), kb.digest, encoder.name) is None:
        try:
            spot_check(SemanticIndex.load(index_dir), encoder)
        except IndexError_ as exc:
            print(f"index build: {exc.reason}; rebuilding", file=sys.stderr)
        else:
            print(f"index build: up to date -> {index_dir}")
            return 0
    meta = build_index(kb, Path(args.kb), index_dir, encoder, progress=_progress_bar("index build: embedding"))
    if not args.index and "EXPLAINLOG_INDEX" not in os.environ:
        prune_older_builds(index_dir)
    report = meta["calibration"]["report"]
    print(
        f"index build: {meta['n_items']} vectors for {meta['n_entries']} entries, model {meta['model_name']}, "
        f"{meta['built_seconds']} s -> {index_dir}\n"
        f"calibration: {report['method']}; fitted on {report['n']} held-out queries "
        f"({report['n_positive']} right, {report['n_unrelated']} unrelated-software lines); "
        f"weights {[round(w, 3) for w in meta['calibration']['weights']]}"
    )
    return 0


def _progress_bar(label: str):
    """A progress callback for stderr: a redrawn bar on a terminal, a line per quarter otherwise."""
    tty = sys.stderr.isatty()
    shown = {"quarter": -1}

    def report(done: int, total: int) -> None:
        if total <= 0:
            return
        if tty:
            width = 30
            filled = width * done // total
            end = "\n" if done >= total else ""
            print(f"\r{label} [{'#' * filled}{'.' * (width - filled)}] {done}/{total} texts", end=end,
                  file=sys.stderr, flush=True)
        elif 4 * done // total > shown["quarter"]:
            shown["quarter"] = 4 * done // total
            print(f"{label} {done}/{total} texts", file=sys.stderr, flush=True)

    return report


def _cmd_index_status(args: argparse.Namespace) -> int:
    from indexer.kb_loader import load_kb
    from indexer.semantic_index import read_stamp, stamp_problem

    kb = load_kb(Path(args.kb))
    name = paths.model_name(args.model or paths.model_path())
    index_dir = Path(args.index or paths.index_dir(name, kb.digest))
    problem = stamp_problem(read_stamp(index_dir), kb.digest, name)
    print(f"index {index_dir}: {problem or 'up to date'}")
    return 1 if problem else 0


def _cmd_eval(args: argparse.Namespace) -> int:
    import json

    from service.evaluate import LabelledSetError, evaluate, load_labelled

    if args.triage:
        from service.triage_eval import evaluate_triage, report_lines

        result = evaluate_triage(_explainer(args), Path(args.files[0]))
        if args.json:
            print(json.dumps(result if args.show_errors else {k: v for k, v in result.items() if k != "results"},
                             indent=2, ensure_ascii=False))
        else:
            print("\n".join(report_lines(result)))
            if args.show_errors:
                for r in result["results"]:
                    if r["verdict"] != "right":
                        print(f"  {r['case']} ({r['kind']}): {r['verdict']}\n    expected: {r['expected']}\n    got:      {(r['got'] or '')[:160]}  [{r['got_pattern']}]")
        return 0
    if args.heldout:
        from service.heldout import evaluate_heldout, load_rows

        try:
            rows = load_rows([Path(p) for p in args.files])
        except (OSError, ValueError) as exc:
            print(f"eval: {exc}", file=sys.stderr)
            return 2
        held = evaluate_heldout(_explainer(args), rows)
        if args.json:
            print(json.dumps({k: v for k, v in held.__dict__.items() if k != "misses" or args.show_errors},
                             indent=2, default=dict))
        else:
            print("\n".join(held.lines()))
            if args.show_errors:
                for miss in held.misses:
                    print(f"  {miss['where']}: {miss['kind']}, got {miss['got']}, concept {miss.get('concept')}")
        return 0
    try:
        records = load_labelled([Path(p) for p in args.files])
    except (OSError, LabelledSetError) as exc:
        print(f"eval: {exc}", file=sys.stderr)
        return 2
    report = evaluate(_explainer(args), records, tier=args.tier)
    if args.json:
        print(json.dumps({k: v for k, v in report.__dict__.items() if k != "errors" or args.show_errors}, indent=2))
    else:
        print("\n".join(report.lines()))
        if args.show_errors:
            for error in report.errors:
                print(f"  {error['where']}: expected {error['expected']}, got {error['got']} ({error['confidence']})")
    return 0


# Front-ends add their own subcommands; each module's register() must import nothing heavy.
FRONTEND_CLIS = ("service.http.cli", "service.batch.cli", "service.chat.cli")


def _register_frontends(sub) -> None:
    import importlib

    for name in FRONTEND_CLIS:
        try:
            module = importlib.import_module(name)
        except ModuleNotFoundError as exc:
            if exc.name and name.startswith(exc.name):
                continue  # that front-end is not part of this checkout
            raise
        module.register(sub)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="explainlog",
        description="Explain log lines from distributed deep-learning training, in English and Chinese.",
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--kb", default=str(paths.kb_dir()), help="knowledge base directory (env EXPLAINLOG_KB)")
    parser.add_argument("--index", default=None, help="semantic index directory (env EXPLAINLOG_INDEX; default build/index/<model>)")
    parser.add_argument("--model", default=None, help="local sentence-transformers model directory (env EXPLAINLOG_MODEL; default: bundled all-MiniLM-L6-v2)")
    parser.add_argument(
        "--index-policy", choices=("rebuild", "refuse"), default="rebuild",
        help="what to do when the index is missing or built from another KB/model (default: rebuild)",
    )
    sub = parser.add_subparsers(dest="command", required=True)

    explain = sub.add_parser("explain", help="explain lines (arguments, --file, or '-' for stdin)")
    explain.add_argument("lines", nargs="*", metavar="LINE", help="log lines; '-' reads stdin")
    explain.add_argument("--file", "-f", action="append", help="read lines from a file (repeatable)")
    explain.add_argument("--json", action="store_true", help="one JSON object per input line (JSONL), in order")
    explain.add_argument("--lang", choices=("en", "zh", "both"), default="both", help="language of the readable output")
    explain.add_argument("--regex-only", action="store_true", help="skip the semantic tier (no model load)")
    explain.set_defaults(func=_cmd_explain)

    tr = sub.add_parser(
        "triage", help="what killed the job: the first real failure, the cascade folded, the job's facts",
        epilog="examples:\n  explainlog triage train.log\n  explainlog triage --json rank0.log rank1.log.gz\n"
               "  explainlog triage 'logs/job-42/*.log.zst' --lang zh\n"
               "  kubectl logs job/train | explainlog triage -\n"
               "exit codes: 0 verdict given (with or without a failure); 1 some input was lost\n"
               "(unreadable file, truncated archive; the rest was read); 2 no such file",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    tr.add_argument("paths", nargs="*", metavar="PATH",
                    help="log files of one job (plain, .gz, .zst, .bz2), directories, globs, or '-' (default)")
    tr.add_argument("--json", action="store_true", help="the whole verdict as one JSON object")
    tr.add_argument("--lang", choices=("en", "zh"), default="en")
    tr.add_argument("--regex-only", action="store_true", help="skip the semantic tier for unknown lines")
    tr.set_defaults(func=_cmd_triage)

    index = sub.add_parser("index", help="semantic index tools")
    index_sub = index.add_subparsers(dest="index_command", required=True)
    ib = index_sub.add_parser("build", help="embed the KB and fit confidence calibration")
    ib.add_argument("--if-needed", action="store_true",
                    help="do nothing when the index matches the KB and model and verifies (make run uses it)")
    ib.set_defaults(func=_cmd_index_build)
    index_sub.add_parser("status", help="say whether the index matches the KB and model").set_defaults(func=_cmd_index_status)

    ev = sub.add_parser("eval", help="score a labelled JSONL set: accuracy, abstention, calibration")
    ev.add_argument("files", nargs="+", metavar="FILE.jsonl")
    ev.add_argument("--json", action="store_true", help="machine-readable report")
    ev.add_argument("--triage", action="store_true",
                    help="the file is a folder of labelled log excerpts (labels.jsonl + case_NN.log): score triage")
    ev.add_argument("--heldout", action="store_true",
                    help="the files are a held-out set (component, severity, concept terms): report answered / right / unrelated answered")
    ev.add_argument("--show-errors", action="store_true", help="list every wrong or missed line")
    ev.add_argument(
        "--tier", choices=("both", "semantic"), default="both",
        help="'semantic' answers every line with the embedding tier alone, to measure it",
    )
    ev.set_defaults(func=_cmd_eval)

    _register_frontends(sub)

    kb = sub.add_parser("kb", help="knowledge base tools")
    kb_sub = kb.add_subparsers(dest="kb_command", required=True)
    kb_sub.add_parser("check", help="validate every entry, example and negative").set_defaults(func=_cmd_kb_check)
    kb_sub.add_parser("schema", help="print the entry JSON Schema").set_defaults(func=_cmd_kb_schema)

    catalog = sub.add_parser(
        "catalog", help="the source-derived message catalogue (kb/catalog/)",
        description="Regenerate kb/catalog/ from local source copies; texts are kept by record id.",
        epilog="example:\n  explainlog catalog build --source nccl=/src/nccl.git --source rccl=/src/rccl.git "
               "--source torch-wheels=/src/torch-wheels --source torch-src=/src/torch-src",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    catalog_sub = catalog.add_subparsers(dest="catalog_command", required=True)
    cb = catalog_sub.add_parser("build", help="extract every message format at every release tag")
    cb.add_argument("--source", action="append", metavar="NAME=PATH",
                    help="nccl, rccl (git dirs), torch-wheels, torch-src (directories); see docs/catalog.md")
    cb.set_defaults(func=_cmd_catalog_build)
    ct = catalog_sub.add_parser("texts", help="merge written texts (JSONL by record id) into the records")
    ct.add_argument("files", nargs="+", metavar="TEXTS.jsonl")
    ct.add_argument("--worklist", action="append", default=[], metavar="WORK.jsonl",
                    help="the worklists the texts were written from (to follow records whose id changed)")
    ct.set_defaults(func=_cmd_catalog_texts)
    catalog_sub.add_parser(
        "link", help="write formats: links from curated entries to the records of their message",
    ).set_defaults(func=_cmd_catalog_link)
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    from indexer.kb_loader import KBLoadError

    try:
        return args.func(args)
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:
        return 0
    except (KBLoadError, ValueError, RuntimeError, OSError) as exc:
        # Expected failures (bad KB, unusable index, unreadable file) get one clear line.
        print(f"explainlog: {exc}", file=sys.stderr)
        return 1


def run() -> None:
    """The console entry point: ``main``, then exit without tearing the interpreter down.

    Unloading numpy, faiss, scipy and the tokenizer module by module takes 80-130 ms after
    any command that loaded the semantic tier (a tenth of a million-line summary) and frees
    nothing the OS would not. Every output is closed by then; standard streams are flushed
    here, and a flush that fails (a closed pipe) falls back to a normal exit.
    """
    code = main()
    try:
        sys.stdout.flush()
        sys.stderr.flush()
    except (BrokenPipeError, ValueError):
        sys.exit(code)
    os._exit(code)


if __name__ == "__main__":
    run()
