"""Shared helpers for the batch tests: a seed-style log and an in-process annotate call."""

from __future__ import annotations

import io
import json
import subprocess
import sys
from pathlib import Path

from seed_lines import AFFINITY_LINE, CDB_LINE, FLUSH_LINE, IB_LINE
from service.batch.cli import make_writer
from service.batch.inputs import discover
from service.batch.options import Options
from service.batch.pipeline import annotate_sources
from service.batch.summary import Summary

REPO = Path(__file__).resolve().parent.parent
SEED_LOG = REPO / "samples" / "seed_training.log"
UNRELATED = [
    '10.0.0.7 - - [11/Mar/2024:09:12:44 +0000] "GET /index.html HTTP/1.1" 200 612 "-" "curl/8.5.0"',
    "at org.apache.catalina.core.StandardWrapperValve.invoke(StandardWrapperValve.java:199)",
]


def seed_style_lines() -> list[str]:
    """The bundled seed log, the seed lines with ids, runs of repeats from several ranks, and
    unrelated software: every path of the engine (fixed, per-message, unknown) gets exercised."""
    lines = SEED_LOG.read_text(encoding="utf-8").splitlines()
    lines += [CDB_LINE.replace("19,059", f"19,{i:03d}") for i in range(6)]
    lines += [AFFINITY_LINE.replace("task0-0:135", f"task0-{i}:135") for i in range(5)]
    lines += [IB_LINE, FLUSH_LINE, FLUSH_LINE.replace(" 7 pytorch", " 3 pytorch")]
    lines += UNRELATED * 3
    return lines


def annotate(explainer, paths: list[str], fmt: str, jobs: int = 1, triage=None, **options) -> tuple[bytes, Summary]:
    sources, problems = discover(paths)
    out = io.BytesIO()
    opts = Options(format=fmt, **options)
    writer = make_writer(fmt, out, opts, multi=len(sources) > 1)
    summary = annotate_sources(sources, explainer, opts, writer, jobs=jobs, on_problem=lambda p: None,
                               problems=problems, triage=triage)
    return out.getvalue(), summary


def run_cli(kb_dir, index_dir, args: list[str], **kwargs) -> subprocess.CompletedProcess:
    cmd = [sys.executable, "-m", "service.cli", "--kb", str(kb_dir), "--index", str(index_dir),
           "--index-policy", "refuse", *args]
    return subprocess.run(cmd, capture_output=True, timeout=600, **kwargs)


def page_rows(html: str) -> list[tuple]:
    """(source, line number, text, answer or None) per line, answers looked up by id as the
    page script does."""
    answers, rows = {}, []
    for block in html.split("<script ")[1:]:
        tag, rest = block.split(">", 1)
        body = rest.split("</script>", 1)[0]
        if 'class="answers"' in tag:
            for gid, answer in json.loads(body):
                assert gid not in answers or answers[gid] == answer, "an id names two answers"
                answers[gid] = answer
        elif 'class="chunk"' in tag:
            data = json.loads(body)
            rows += [(data["f"], data["s"] + i, t, r) for i, (t, r) in enumerate(zip(data["t"], data["a"]))]
    return [(f, n, t, answers[r] if r >= 0 else None) for f, n, t, r in rows]
