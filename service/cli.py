"""The ``explainlog`` command line: explain, kb check, index build, eval."""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path
from typing import Iterable, Iterator

from indexer import paths

# One table for every subcommand (README, "Exit codes"); annotate adds 4 (output locked) and
# 128 + signal (interrupted).
EXIT_OK, EXIT_FINDINGS, EXIT_USAGE, EXIT_LOST_INPUT, EXIT_CANNOT_RUN = 0, 1, 2, 3, 5

EPILOG = """examples:
  explainlog explain "host:133:202 [0] NCCL INFO Using network IB"
  printf 'LINE\\nLINE\\n' | explainlog explain --json -
  explainlog explain --lang zh --file train.log
  explainlog triage train.log
  explainlog annotate train.log -o report.html
  explainlog kb check
  explainlog index build
  explainlog eval tests/data/eval_nccl_init.jsonl      (in a checkout: the labelled sets)
  explainlog eval --heldout tests/data/heldout/*.jsonl

exit codes (every subcommand): 0 ok; 1 findings (kb check problems, annotate --fail-on reached,
a stale index for 'index status'); 2 usage error, bad setting, no input, closed stdin/stdout;
3 some input was lost (missing or unreadable file, truncated archive; the rest was read);
4 the output is locked by another run (annotate -o); 5 cannot run: the KB, the index or the
model is unusable; 128+N interrupted by signal N (130 Ctrl-C, 143 SIGTERM, 129 SIGHUP).
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
    print(summarize(kb, findings, Path(args.kb)), file=sys.stderr if findings else sys.stdout)
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


def _cmd_catalog_params(args: argparse.Namespace) -> int:
    from indexer.catalog.params import build_params

    sources = {}
    for item in args.source or []:
        name, _, path = item.partition("=")
        if not path:
            print(f"catalog params: --source wants NAME=PATH, got {item!r}", file=sys.stderr)
            return 2
        sources[name] = path
    folder = Path(args.kb) / "params"
    for component, n in build_params(folder, sources).items():
        print(f"{component}: {n} variables")
    if args.texts:
        from indexer.catalog.params import merge_texts

        merged, problems = merge_texts(folder, [Path(t) for t in args.texts])
        for problem in problems:
            print(problem, file=sys.stderr)
        print(f"{merged} variables have text merged; {len(problems)} rejected")
        return 1 if problems else 0
    return 0


def _cmd_ask(args: argparse.Namespace) -> int:
    import json

    from indexer.kb_cache import load_kb_cached
    from service.ask import Asker, render_text

    question = " ".join(args.question).strip()
    if question == "-":
        question = sys.stdin.read().strip()
    if not question:
        print("explainlog ask: give a question, e.g. explainlog ask 'what does NCCL_IB_GID_INDEX do'", file=sys.stderr)
        return 2
    from service.explainer import Explainer

    kb_dir = Path(args.kb)
    encoder = None
    if not args.no_model:
        from indexer.encoders import default_encoder

        encoder = default_encoder(args.model)
    explainer = Explainer(kb_dir=kb_dir, index_dir=args.index, model_path=args.model, encoder=encoder)
    asker = Asker(kb_dir, explainer.kb, encoder, explainer=explainer)
    result = asker.ask(question, lang=args.lang, top=args.top)
    if args.json:
        print(json.dumps(result, ensure_ascii=False))
    else:
        print(render_text(result))
    return 0


def _cmd_mcp(args: argparse.Namespace) -> int:
    from service.mcp_server import run

    run(_explainer(args), http_port=args.http)
    return 0


def _cmd_triage(args: argparse.Namespace) -> int:
    import json

    from service.triage import triage_paths

    sources = args.paths or ["-"]
    for path in sources:
        if path != "-" and not Path(path).exists() and not set("*?[") & set(path):
            print(f"triage: no such file: {path}", file=sys.stderr)
            return EXIT_USAGE
    result = triage_paths(_explainer(args), sources, semantic=not args.regex_only)
    for p in result["problems"]:
        print(f"triage: {p['file']}{':' + str(p['line']) if p['line'] else ''}: {p['message']}", file=sys.stderr)
    lost = any(p["lost_input"] for p in result["problems"])
    if args.json:
        print(json.dumps(result, ensure_ascii=False, indent=2))
        return EXIT_LOST_INPUT if lost else EXIT_OK
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
        return EXIT_LOST_INPUT
    return EXIT_OK


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


def _cmd_catalog_unrelated(args: argparse.Namespace) -> int:
    from indexer.catalog.unrelated import collect, collect_binaries, mark

    for option, what, write in (("collect_binaries", "file", collect_binaries), ("collect", "package folder", collect)):
        given = getattr(args, option)
        if not given:
            continue
        if len(given) < 2:
            print(f"explainlog catalog unrelated: --{option.replace('_', '-')} needs OUT and at least one {what}",
                  file=sys.stderr)
            return 2
        n = write([Path(p) for p in given[1:]], Path(given[0]))
        print(f"{n} messages written to {given[0]}")
        return 0
    lines, marked, unmarked = mark(Path(args.kb))
    if not lines:
        print("explainlog catalog unrelated: no messages under kb/unrelated/", file=sys.stderr)
        return 1
    print(f"{lines} messages of unrelated software read; {marked} records newly marked (they answer nothing), "
          f"{unmarked} marks dropped")
    return 0


def _explainer(args: argparse.Namespace):
    from service.explainer import Explainer

    return Explainer(
        kb_dir=args.kb, index_dir=args.index, model_path=args.model, index_policy=args.index_policy
    )


class _Inputs:
    """The lines of files or stdin ('-') as text, for ``explain``.

    Bytes that are not UTF-8 become U+FFFD rather than an error, so a line of binary junk still
    gets its answer; gzip, bzip2 and zstd files are read decompressed; a line longer than
    ``max_line`` bytes keeps its first ``max_line`` bytes (noted on stderr) and never costs
    more memory than that. A file that cannot be read (missing, a directory, unreadable, a
    truncated archive) is reported and counted in ``lost``; the other inputs are still read."""

    def __init__(self, sources: list[str], max_line: int) -> None:
        self.sources = sources
        self.max_line = max_line
        self.lost = 0
        self.lines = 0

    def _open(self, source: str):
        from service.batch.reader import detect_compression

        if source == "-":
            if sys.stdin is None:
                raise OSError("stdin is closed")
            return sys.stdin.buffer
        if os.path.isdir(source):
            raise IsADirectoryError(f"{source} is a directory (explainlog annotate reads directories)")
        raw = open(source, "rb")
        kind = detect_compression(raw.peek(8)[:8]) if hasattr(raw, "peek") else None
        if kind == "gzip":
            import gzip

            return gzip.GzipFile(fileobj=raw)
        if kind == "bzip2":
            import bz2

            return bz2.BZ2File(raw)
        if kind == "zstd":
            try:
                import zstandard
            except ImportError:
                raw.close()
                raise OSError("zstd-compressed, and the zstandard package is not installed "
                              "(pip install 'explainlog[batch]' or zstandard)") from None
            import io

            return io.BufferedReader(zstandard.ZstdDecompressor().stream_reader(raw, closefd=True))
        return raw

    def __iter__(self) -> Iterator[str]:
        for source in self.sources:
            name = "stdin" if source == "-" else source
            try:
                stream = self._open(source)
            except OSError as exc:
                self.lost += 1
                print(f"explainlog explain: {name}: {exc.strerror or exc}", file=sys.stderr)
                continue
            try:
                while True:
                    raw = stream.readline(self.max_line + 1)
                    if not raw:
                        break
                    self.lines += 1
                    if len(raw) > self.max_line and not raw.endswith(b"\n"):
                        skipped = 0
                        while True:  # drop the rest of the line without holding it
                            rest = stream.readline(1 << 20)
                            skipped += len(rest)
                            if not rest or rest.endswith(b"\n"):
                                break
                        print(f"explainlog explain: {name}: line {self.lines} cut to its first "
                              f"{self.max_line:,} bytes (of {len(raw) - 1 + skipped:,})", file=sys.stderr)
                        raw = raw[: self.max_line]
                    yield raw.rstrip(b"\n").rstrip(b"\r").decode("utf-8", errors="replace")
            except (OSError, EOFError) as exc:
                self.lost += 1
                detail = getattr(exc, "strerror", None) or str(exc) or type(exc).__name__
                print(f"explainlog explain: {name}: {detail} after line {self.lines}; the rest is lost",
                      file=sys.stderr)
            finally:
                if stream is not getattr(sys.stdin, "buffer", None):
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
        return EXIT_USAGE
    if args.max_line_bytes < 1:
        print("explainlog explain: --max-line-bytes must be at least 1", file=sys.stderr)
        return EXIT_USAGE
    inputs: _Inputs | None = None
    stdin_open = sys.stdin is not None
    if args.file:
        inputs = _Inputs(args.file, args.max_line_bytes)
    elif args.lines == ["-"] and not stdin_open:
        print("explainlog explain: '-' asks for stdin, and stdin is closed", file=sys.stderr)
        return EXIT_USAGE
    elif args.lines == ["-"] or (not args.lines and stdin_open and not sys.stdin.isatty()):
        inputs = _Inputs(["-"], args.max_line_bytes)
    elif args.lines:
        lines: Iterable[str] = args.lines
    else:
        why = "stdin is closed; " if not stdin_open else ""
        print(f"explainlog explain: no input ({why}give a LINE, --file FILE, or '-' for stdin)", file=sys.stderr)
        return EXIT_USAGE
    if inputs is not None:
        lines = inputs
    explainer = _explainer(args)
    langs = ("en", "zh") if args.lang == "both" else (args.lang,)
    if sys.stdout is None:
        print("explainlog explain: stdout is closed; nothing to write the answers to", file=sys.stderr)
        return EXIT_USAGE
    colour = sys.stdout.isatty() and not args.json
    out = sys.stdout.buffer
    answered = 0
    try:
        for batch in _batches(lines):
            for answer in explainer.explain_many(batch, semantic=not args.regex_only):
                if args.json:
                    out.write(orjson.dumps(answer) + b"\n")
                else:
                    out.write((render_answer(answer, langs, colour, verbose=args.verbose) + "\n\n").encode("utf-8"))
            answered += len(batch)
            out.flush()
    except BrokenPipeError:
        # The reader of our stdout went away (``| head``): not an error of ours.
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return EXIT_OK
    except OSError as exc:
        print(f"explainlog explain: cannot write the answers: {exc.strerror or exc}", file=sys.stderr)
        return EXIT_USAGE
    if inputs is not None and inputs.lost:
        return EXIT_LOST_INPUT
    if answered == 0:
        print("explainlog explain: the input had no lines", file=sys.stderr)
        return EXIT_USAGE
    return EXIT_OK


def _cmd_index_build(args: argparse.Namespace) -> int:
    from indexer.encoders import default_encoder
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

    from service.evaluate import evaluate, load_labelled

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
    # The labelled sets: eval lines, held-out lines, questions. Each report has lines(), and
    # a list of misses shown with --show-errors (in JSON only then).
    if args.questions:
        from service.ask_eval import evaluate_questions as score, load_questions as load

        hidden, miss_line = "misses", lambda m: f"{m['where']}: {m['question'][:80]!r} expected {m['expected']}, got {m['got']}"
    elif args.heldout:
        from service.heldout import evaluate_heldout as score, load_rows as load

        hidden, miss_line = "misses", lambda m: f"{m['where']}: {m['kind']}, got {m['got']}, concept {m.get('concept')}"
    else:
        load = load_labelled
        score = lambda explainer, records: evaluate(explainer, records, tier=args.tier)  # noqa: E731
        hidden, miss_line = "errors", lambda m: f"{m['where']}: expected {m['expected']}, got {m['got']} ({m['confidence']})"
    try:
        rows = load([Path(p) for p in args.files])
    except (OSError, ValueError) as exc:  # LabelledSetError is a ValueError
        print(f"eval: {exc}", file=sys.stderr)
        return 2
    if args.questions:
        from indexer.encoders import default_encoder
        from service.ask import Asker
        from service.explainer import Explainer

        encoder = default_encoder(args.model)
        explainer = Explainer(kb_dir=Path(args.kb), index_dir=args.index, model_path=args.model, encoder=encoder)
        report = score(Asker(Path(args.kb), explainer.kb, encoder, explainer=explainer), rows)
    else:
        report = score(_explainer(args), rows)
    if args.json:
        print(json.dumps({k: v for k, v in report.__dict__.items() if k != hidden or args.show_errors},
                         indent=2, ensure_ascii=False))
    else:
        print("\n".join(report.lines()))
        if args.show_errors:
            for miss in getattr(report, hidden):
                print("  " + miss_line(miss))
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

    explain = sub.add_parser(
        "explain", help="explain lines (arguments, --file, or '-' for stdin)", formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog="examples:\n  explainlog explain 'NCCL WARN Call to ibv_reg_mr failed with error Cannot allocate memory'\n"
               "  explainlog explain --lang zh --file train.log.gz\n"
               "  grep -h NCCL rank*.log | explainlog explain --json - > answers.jsonl\n"
               "exit codes: 0 ok; 2 no input, closed stdin/stdout; 3 a file was missing, unreadable or\n"
               "truncated (the rest was explained); 5 the KB, index or model is unusable",
    )
    explain.add_argument("lines", nargs="*", metavar="LINE", help="log lines; '-' reads stdin")
    explain.add_argument("--file", "-f", action="append", help="read lines from a file (repeatable)")
    explain.add_argument("--json", action="store_true", help="one JSON object per input line (JSONL), in order")
    explain.add_argument("--lang", choices=("en", "zh", "both"), default="both", help="language of the readable output")
    explain.add_argument("--regex-only", action="store_true", help="skip the semantic tier (no model load)")
    explain.add_argument("-v", "--verbose", action="store_true",
                         help="the long form: full explanation and fields after the summary and action")
    explain.add_argument("--max-line-bytes", type=int, default=1 << 20, metavar="N",
                         help="keep only the first N bytes of a longer line (default 1 MiB, as annotate)")
    explain.set_defaults(func=_cmd_explain)

    ask = sub.add_parser(
        "ask", help="answer a question in words from the KB (variables, concepts, messages)",
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog="examples:\n  explainlog ask 'what does NCCL_IB_GID_INDEX do'\n  explainlog ask 什么是 LL128？\n"
               "  explainlog ask --json 'NCCL_P2P_DISABLE=1 有什么副作用'\n"
               "a question the KB does not know is answered 'not in the knowledge base' (known: false)",
    )
    ask.add_argument("question", nargs="+", metavar="WORDS", help="the question ('-' reads stdin)")
    ask.add_argument("--json", action="store_true", help="{question, lang, known, answers: [{kind, id, title, text, score, source}]}")
    ask.add_argument("--lang", choices=("en", "zh"), default=None, help="answer language (default: the question's)")
    ask.add_argument("--top", type=int, default=5, help="at most this many answers (default 5)")
    ask.add_argument("--no-model", action="store_true", help="lexical search only (no sentence model)")
    ask.set_defaults(func=_cmd_ask)

    mcp = sub.add_parser(
        "mcp", help="serve explain, triage and ask to AI assistants (Model Context Protocol)",
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog="examples:\n  explainlog mcp                 # stdio: what an assistant's MCP config launches\n"
               "  explainlog mcp --http 8765     # streamable HTTP on http://127.0.0.1:8765/mcp\n"
               "tools: explain_line, explain_lines, triage_log, ask, get_entry; resources: explainlog://entries,\n"
               "explainlog://entry/{id}",
    )
    mcp.add_argument("--http", type=int, default=None, metavar="PORT",
                     help="serve streamable HTTP on 127.0.0.1:PORT instead of stdio")
    mcp.set_defaults(func=_cmd_mcp)

    tr = sub.add_parser(
        "triage", help="what killed the job: the first real failure, the cascade folded, the job's facts",
        epilog="examples:\n  explainlog triage train.log\n  explainlog triage --json rank0.log rank1.log.gz\n"
               "  explainlog triage 'logs/job-42/*.log.zst' --lang zh\n"
               "  kubectl logs job/train | explainlog triage -\n"
               "exit codes: 0 verdict given (with or without a failure); 2 usage error or no such\n"
               "file; 3 some input was lost (unreadable file, truncated archive; the rest was read)",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    tr.add_argument("paths", nargs="*", metavar="PATH",
                    help="log files of one job (plain, .gz, .zst, .bz2), directories, globs, or '-' (default)")
    tr.add_argument("--json", action="store_true", help="the whole verdict as one JSON object")
    tr.add_argument("--lang", choices=("en", "zh"), default="en")
    tr.add_argument("--regex-only", action="store_true", help="skip the semantic tier for unknown lines")
    tr.set_defaults(func=_cmd_triage)

    index = sub.add_parser(
        "index", help="semantic index tools", formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog="examples:\n  explainlog index build\n  explainlog index build --if-needed\n  explainlog index status",
    )
    index_sub = index.add_subparsers(dest="index_command", required=True)
    ib = index_sub.add_parser(
        "build", help="embed the KB and fit confidence calibration", formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog="examples:\n  explainlog index build\n  explainlog --kb my-kb/ index build --if-needed",
    )
    ib.add_argument("--if-needed", action="store_true",
                    help="do nothing when the index matches the KB and model and verifies (make run uses it)")
    ib.set_defaults(func=_cmd_index_build)
    index_sub.add_parser(
        "status", help="say whether the index matches the KB and model", formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog="example:\n  explainlog index status || explainlog index build\nexit codes: 0 up to date; 1 stale or missing",
    ).set_defaults(func=_cmd_index_status)

    ev = sub.add_parser(
        "eval", help="score a labelled JSONL set: accuracy, abstention, calibration", formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog="examples (in a checkout, where the labelled sets are):\n"
               "  explainlog eval tests/data/eval_*.jsonl\n"
               "  explainlog eval --tier semantic tests/data/eval_*.jsonl\n"
               "  explainlog eval --heldout tests/data/heldout/part1.jsonl tests/data/heldout/unrelated.jsonl\n"
               "  explainlog eval --triage tests/data/triage --show-errors",
    )
    ev.add_argument("files", nargs="+", metavar="FILE.jsonl")
    ev.add_argument("--json", action="store_true", help="machine-readable report")
    ev.add_argument("--triage", action="store_true",
                    help="the file is a folder of labelled log excerpts (labels.jsonl + case_NN.log): score triage")
    ev.add_argument("--questions", action="store_true",
                    help="the files are labelled questions (question, lang, expects): score 'ask' (first, top 3, declined)")
    ev.add_argument("--heldout", action="store_true",
                    help="the files are a held-out set (component, severity, concept terms): report answered / right / unrelated answered")
    ev.add_argument("--show-errors", action="store_true", help="list every wrong or missed line")
    ev.add_argument(
        "--tier", choices=("both", "semantic"), default="both",
        help="'semantic' answers every line with the embedding tier alone, to measure it",
    )
    ev.set_defaults(func=_cmd_eval)

    _register_frontends(sub)

    kb = sub.add_parser(
        "kb", help="knowledge base tools", formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog="examples:\n  explainlog kb check\n  explainlog --kb my-kb/ kb check\n  explainlog kb schema > entry.schema.json",
    )
    kb_sub = kb.add_subparsers(dest="kb_command", required=True)
    kb_sub.add_parser(
        "check", help="validate every entry, example and negative", formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog="examples:\n  explainlog kb check\n  explainlog --kb my-kb/ kb check\n"
               "exit codes: 0 valid; 1 problems (each printed as FILE:LINE: [entry id] problem); 2 no such KB",
    ).set_defaults(func=_cmd_kb_check)
    kb_sub.add_parser(
        "schema", help="print the entry JSON Schema", formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog="example:\n  explainlog kb schema > entry.schema.json",
    ).set_defaults(func=_cmd_kb_schema)

    catalog = sub.add_parser(
        "catalog", help="the source-derived message catalogue (kb/catalog/)",
        description="Regenerate kb/catalog/ from local source copies; texts are kept by record id.",
        epilog="example:\n  explainlog catalog build --source nccl=/src/nccl.git --source rccl=/src/rccl.git "
               "--source torch-wheels=/src/torch-wheels --source torch-src=/src/torch-src",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    catalog_sub = catalog.add_subparsers(dest="catalog_command", required=True)
    cb = catalog_sub.add_parser(
        "build", help="extract every message format at every release tag", formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog="example:\n  explainlog catalog build --source nccl=/src/nccl.git --source rccl=/src/rccl.git",
    )
    cb.add_argument("--source", action="append", metavar="NAME=PATH",
                    help="nccl, rccl (git dirs), torch-wheels, torch-src (directories); see docs/catalog.md")
    cb.set_defaults(func=_cmd_catalog_build)
    ct = catalog_sub.add_parser(
        "texts", help="merge written texts (JSONL by record id) into the records", formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog="example:\n  explainlog catalog texts written.jsonl --worklist work.jsonl",
    )
    ct.add_argument("files", nargs="+", metavar="TEXTS.jsonl")
    ct.add_argument("--worklist", action="append", default=[], metavar="WORK.jsonl",
                    help="the worklists the texts were written from (to follow records whose id changed)")
    ct.set_defaults(func=_cmd_catalog_texts)
    catalog_sub.add_parser(
        "link", help="write formats: links from curated entries to the records of their message", formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog="example:\n  explainlog catalog link && explainlog kb check",
    ).set_defaults(func=_cmd_catalog_link)
    cu = catalog_sub.add_parser(
        "unrelated", help="mark the records whose patterns take messages of unrelated software (kb/unrelated/)",
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog="example:\n  explainlog catalog unrelated && explainlog kb check\n"
               "  explainlog catalog unrelated --collect OUT.tsv.xz SITE_PACKAGES/pip SITE_PACKAGES/pandas ...",
    )
    cu.add_argument("--collect", nargs="+", metavar=("OUT", "PACKAGE_DIR"),
                    help="write a corpus file from these Python package folders instead of marking")
    cu.add_argument("--collect-binaries", nargs="+", metavar=("OUT", "FILE"),
                    help="write a corpus file from the strings of these programs and libraries instead of marking")
    cu.set_defaults(func=_cmd_catalog_unrelated)
    cp = catalog_sub.add_parser(
        "params", help="extract the environment variables each project reads, at every tag (kb/params/)",
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog="example:\n  explainlog catalog params --source nccl=/src/nccl.git --source rccl=/src/rccl.git "
               "--source torch-src=/src/torch-src --source deepspeed=/src/DeepSpeed.git",
    )
    cp.add_argument("--source", action="append", metavar="NAME=PATH",
                    help="nccl, rccl, deepspeed, accelerate, megatron, mmengine, xtuner (git dirs), torch-src (directory)")
    cp.add_argument("--texts", action="append", default=[], metavar="TEXTS.jsonl",
                    help="merge written texts (name, title {en, zh}, text {en, zh}) into the records")
    cp.set_defaults(func=_cmd_catalog_params)
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        return args.func(args)
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:
        return EXIT_OK
    except Exception as exc:
        if isinstance(exc, _cannot_run_errors()):
            # The tool cannot run here: its KB, index or model is unusable. One clear line.
            print(f"explainlog: {exc}", file=sys.stderr)
            return EXIT_CANNOT_RUN
        if isinstance(exc, (ValueError, RuntimeError, OSError)):
            # A setting or argument that does not work (a missing token, an unreadable file).
            print(f"explainlog: {exc}", file=sys.stderr)
            return EXIT_USAGE
        raise


def _cannot_run_errors() -> tuple[type[BaseException], ...]:
    """The errors that mean the KB, index or model is unusable. The encoder's and the index's
    are looked up only if their modules were loaded (nothing else can have raised them), so a
    line a pattern answers never imports numpy."""
    from indexer.kb_loader import KBLoadError
    from service.explainer import IndexUnavailable

    kinds: list[type[BaseException]] = [KBLoadError, IndexUnavailable]
    for module, name in (("indexer.encoders.base", "EncoderLoadError"), ("indexer.semantic_index", "IndexError_")):
        if module in sys.modules:
            kinds.append(getattr(sys.modules[module], name))
    return tuple(kinds)


def run() -> None:
    """The console entry point: ``main``, then exit without tearing the interpreter down.

    Unloading numpy and the model module by module takes 80-130 ms after any command that
    loaded the semantic tier (a tenth of a million-line summary) and frees nothing the OS
    would not. Every output is closed by then; standard streams are flushed here (a closed
    one is skipped), and a flush that fails (a closed pipe) falls back to a normal exit.
    """
    code = main()
    try:
        for stream in (sys.stdout, sys.stderr):
            if stream is not None:
                stream.flush()
    except (BrokenPipeError, ValueError, OSError):
        sys.exit(code)
    os._exit(code)


if __name__ == "__main__":
    run()
