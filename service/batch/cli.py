"""``explainlog annotate``: annotate whole logs offline. Imports nothing heavy until it runs."""

from __future__ import annotations

import argparse
import os
import sys

from service.batch.output import AtomicOutput, OutputError  # stdlib only: nothing heavy

EPILOG = """examples:
  explainlog annotate train.log                          # summary table on a terminal
  explainlog annotate logs/ -o report.html               # every file under logs/, one HTML report
  explainlog annotate 'logs/**/*.log.gz' --format commented --lang zh -o annotated.txt
  zcat rank*.log.gz | explainlog annotate - > annotated.jsonl     # JSONL when piped
  explainlog annotate -j 2 big.log.zst --format jsonl --min-severity warning -o warnings.jsonl
  explainlog annotate train.log --fail-on error && echo "no errors"
  explainlog annotate --dask tcp://scheduler:8786 'fleet/**/*.log' -o out/ --format parquet

formats (default: summary on a terminal, else jsonl; with -o, by extension: .html -> html,
.json -> summary as JSON, .txt/.log -> commented, .jsonl/.ndjson -> jsonl; any other
extension needs --format):
  jsonl      one JSON object per input line: file, line_number, line + the explain contract
  commented  the original log unchanged, '# ...' explanations above explained lines
  html       one offline page: root cause, summary, first error/warning, filters, zh/en, paged log
  summary    root cause (see 'explainlog triage'), entries by count (errors first) with first/last
             lines; unknown lines by template; --no-triage leaves the root cause out
  parquet    (--dask only) partitioned Parquet instead of JSONL

exit codes: 0 ok; 1 --fail-on threshold reached; 2 usage error or no readable input;
3 some input was lost (unreadable file, truncated archive; the rest was annotated);
4 the output is being written by another run (-o FILE is locked);
130 / 143 / 129 interrupted by Ctrl-C / SIGTERM / SIGHUP (the output so far is valid; with
-o FILE it is kept as FILE.partial and FILE is left as it was).
-o FILE is written beside FILE and renamed over it only when the run completes.
"""

SEVERITIES = ("info", "warning", "error", "fatal")
EXIT_FAIL_ON, EXIT_USAGE, EXIT_LOST_INPUT, EXIT_BUSY, EXIT_INTERRUPTED = 1, 2, 3, 4, 130


def register(subparsers) -> None:
    annotate = subparsers.add_parser(
        "annotate", help="annotate whole logs offline (files, directories, globs, '-')",
        description="Annotate every line of whole logs with the knowledge base; streams, never loads a file into memory.",
        epilog=EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    annotate.add_argument("paths", nargs="+", metavar="PATH", help="file, directory (recursive), glob, or '-' for stdin")
    annotate.add_argument("-o", "--output", metavar="OUT", help="output file (a directory with --dask); default stdout")
    annotate.add_argument("--format", choices=("jsonl", "commented", "html", "summary", "parquet"), default=None)
    annotate.add_argument("--lang", choices=("en", "zh", "both"), default="both", help="language of comments and summary")
    annotate.add_argument("-j", "--jobs", type=int, default=1, metavar="N", help="worker processes (output order is kept)")
    annotate.add_argument("--only-known", action="store_true", help="explain only known lines; others get a compact record")
    annotate.add_argument("--min-severity", choices=SEVERITIES, help="explain only lines at least this severe")
    annotate.add_argument("--fail-on", choices=SEVERITIES, metavar="SEVERITY",
                          help="exit 1 if any line is at least this severe (info|warning|error|fatal)")
    annotate.add_argument("--hide-context", action="store_true", help="commented: no comment above context-role lines")
    annotate.add_argument("--regex-only", action="store_true", help="skip the semantic tier (no model load)")
    annotate.add_argument("--semantic-budget", type=float, default=20.0, metavar="SECONDS",
                          help="encoder time each process may spend on never-seen unknown templates; past it they "
                               "stay unknown (default 20; 0 for none, -1 for no limit)")
    annotate.add_argument("--max-line-bytes", type=int, default=1 << 20, metavar="N",
                          help="keep at most N bytes of a line (longer lines are cut and reported)")
    annotate.add_argument("--dask", metavar="ADDRESS", help="run on a Dask cluster (scheduler address, e.g. tcp://host:8786)")
    annotate.add_argument("--no-progress", action="store_true", help="no progress bar even on a terminal")
    annotate.add_argument("--no-triage", action="store_true",
                          help="summary/html: no root-cause section (it reads the log once more, at triage's speed)")
    annotate.set_defaults(func=run_annotate)


def _choose_format(args: argparse.Namespace) -> str | None:
    if args.format:
        return args.format
    if args.dask:
        return "jsonl"
    if args.output:
        lower = args.output.lower()
        if lower.endswith((".html", ".htm")):
            return "html"
        if lower.endswith(".json"):
            return "summary"
        if lower.endswith((".txt", ".log")):
            return "commented"
        if lower.endswith((".jsonl", ".ndjson")) or AtomicOutput.direct(args.output):
            return "jsonl"
        return None  # an extension that names no format: the caller asks for --format
    return "summary" if sys.stdout is not None and sys.stdout.isatty() else "jsonl"


def make_writer(fmt: str, out, options, multi: bool, as_json: bool = False):
    """The writer for ``fmt`` (``as_json``: the summary as JSON rather than a table)."""
    from service.batch import formats

    return formats.get(fmt).writer(out, options, multi, as_json)


def exit_code(summary, fail_on: str | None, had_input: bool) -> int:
    from service.batch.summary import SEVERITY_RANK

    if summary.interrupted:
        return 128 + summary.interrupt_signal if summary.interrupt_signal else EXIT_INTERRUPTED
    if not had_input:
        return EXIT_USAGE
    if summary.lost_input():
        return EXIT_LOST_INPUT
    if fail_on:
        worst = summary.worst_severity()
        if worst is not None and SEVERITY_RANK[worst] >= SEVERITY_RANK[fail_on]:
            return EXIT_FAIL_ON
    return 0


def run_annotate(args: argparse.Namespace) -> int:
    from service.batch.inputs import discover
    from service.batch.options import Options

    try:
        fmt = _choose_format(args)
    except OutputError as exc:
        print(f"explainlog annotate: {exc}", file=sys.stderr)
        return EXIT_USAGE
    if fmt is None:
        print(f"explainlog annotate: cannot tell the format from the name {args.output!r} "
              f"(.jsonl, .json, .html, .txt or .log); give --format", file=sys.stderr)
        return EXIT_USAGE
    if fmt == "parquet" and not args.dask:
        print("explainlog annotate: --format parquet needs --dask (use jsonl locally)", file=sys.stderr)
        return EXIT_USAGE
    if args.jobs < 1 or args.max_line_bytes < 1:
        print("explainlog annotate: -j and --max-line-bytes must be at least 1", file=sys.stderr)
        return EXIT_USAGE
    options = Options(
        format=fmt, lang=args.lang, only_known=args.only_known, min_severity=args.min_severity,
        hide_context=args.hide_context, semantic=not args.regex_only,
        semantic_budget=None if args.semantic_budget < 0 else args.semantic_budget,
    )
    if args.dask:
        return _run_dask(args, fmt, options)
    sources, problems = discover(args.paths)
    for problem in problems:
        print(f"explainlog: {problem}", file=sys.stderr)
    if not sources:
        print("explainlog annotate: no readable input", file=sys.stderr)
        return EXIT_USAGE
    return _run_local(args, fmt, options, sources, problems)


def _run_local(args, fmt, options, sources, problems) -> int:
    from service.batch.memory import tune_malloc
    from service.batch.pipeline import Limits, annotate_sources
    from service.batch.progress import Progress
    from service.explainer import Explainer

    tune_malloc()  # before the KB is loaded and -j workers fork: they inherit it

    explainer = Explainer(kb_dir=args.kb, index_dir=args.index, model_path=args.model, index_policy=args.index_policy)
    total = sum(s.size or 0 for s in sources) if all(not s.is_stdin for s in sources) else None
    progress = Progress(total, enabled=False if args.no_progress else None)
    from service.batch.output import AtomicOutput, OutputBusy, OutputError

    sink: AtomicOutput | None = None
    try:
        if not args.output:
            out = sys.stdout.buffer
        elif AtomicOutput.direct(args.output):
            out = open(args.output, "wb")
        else:
            sink = AtomicOutput(args.output).__enter__()
            out = sink.file
    except OutputBusy as exc:
        print(f"explainlog annotate: {exc}", file=sys.stderr)
        return EXIT_BUSY
    except (OutputError, OSError) as exc:
        print(f"explainlog annotate: {exc}", file=sys.stderr)
        return EXIT_USAGE
    kept = None
    try:
        as_json = bool(args.output and args.output.lower().endswith(".json"))
        writer = make_writer(fmt, out, options, multi=len(sources) > 1, as_json=as_json)
        triage = None
        if fmt in ("summary", "html") and not args.no_triage:
            from service.triage import TriageStream

            triage = TriageStream(explainer, semantic=options.semantic)
        summary = annotate_sources(
            sources, explainer, options, writer, jobs=args.jobs, progress=progress,
            limits=Limits(max_line=args.max_line_bytes), problems=problems, triage=triage,
        )
        out.flush()
        if sink is not None:
            kept = sink.keep_partial() if summary.interrupted else sink.commit()
    except BrokenPipeError:
        # The reader of our stdout went away (``| head``): not an error of ours.
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return 0
    finally:
        if sink is not None:
            sink.__exit__(None, None, None)  # a run that did not finish leaves the target alone
        elif out is not sys.stdout.buffer:
            out.close()
    if sys.stderr.isatty() and fmt != "summary":
        print(
            f"explainlog annotate: {summary.total_lines:,} lines, {summary.known_lines:,} explained; "
            f"worst severity: {summary.worst_severity() or 'none'}",
            file=sys.stderr,
        )
    if summary.interrupted:
        where = f"; it was kept as {kept} and {args.output} was left as it was" if sink is not None else ""
        print(f"explainlog annotate: interrupted after {summary.total_lines:,} lines; the output is valid up to "
              f"there{where}", file=sys.stderr)
    return exit_code(summary, args.fail_on, had_input=True)


def _run_dask(args, fmt, options) -> int:
    from service.batch.fleet import annotate_to_directory
    from service.batch.formats.summary import render_summary

    if not args.output:
        print("explainlog annotate: --dask needs -o DIRECTORY for the partitioned output", file=sys.stderr)
        return EXIT_USAGE
    if fmt not in ("jsonl", "parquet"):
        print("explainlog annotate: with --dask, --format is jsonl or parquet", file=sys.stderr)
        return EXIT_USAGE
    from dask.distributed import Client

    with Client(args.dask) as client:
        summary = annotate_to_directory(
            args.paths, args.output, fmt=fmt, client=client, kb_dir=args.kb, index_dir=args.index,
            model_path=args.model, index_policy=args.index_policy, semantic=options.semantic,
            only_known=options.only_known, min_severity=options.min_severity,
        )
    sys.stdout.write(render_summary(summary, "zh" if args.lang == "zh" else "en"))
    return exit_code(summary, args.fail_on, had_input=summary.total_lines > 0 or bool(summary.files))
