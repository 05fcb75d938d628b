"""``explainlog annotate`` formats: the spine's answers, lines in = lines out, order kept."""

from __future__ import annotations

import io
import json
import random

import pytest

from batch_helpers import UNRELATED, annotate, page_rows, run_cli, seed_style_lines
from seed_lines import AFFINITY_LINE, CDB_LINE, FLUSH_LINE, IB_LINE
from service.batch.cli import make_writer
from service.batch.engine import Engine
from service.batch.inputs import discover
from service.batch.options import Options
from service.batch.pipeline import Limits, annotate_sources
from service.batch.reader import Chunk
from service.explainer import CONTRACT_KEYS


@pytest.fixture(scope="module")
def log(tmp_path_factory):
    path = tmp_path_factory.mktemp("batch") / "train.log"
    path.write_text("\n".join(seed_style_lines()) + "\n", encoding="utf-8")
    return path


def test_jsonl_is_the_spine_answer_for_every_line(explainer, log):
    out, summary = annotate(explainer, [str(log)], "jsonl")
    lines = log.read_text(encoding="utf-8").splitlines()
    records = [json.loads(r) for r in out.decode().splitlines()]
    assert len(records) == len(lines) == summary.total_lines
    expected = explainer.explain_many(lines)
    for number, (record, answer) in enumerate(zip(records, expected), start=1):
        assert record["file"] == str(log) and record["line_number"] == number
        assert tuple(record)[2:] == CONTRACT_KEYS
        assert {k: v for k, v in record.items() if k not in ("file", "line_number")} == answer
    by_line = {r["line"]: r for r in records}
    assert by_line[IB_LINE]["pattern_id"] == "nccl.net.ib_devices"
    assert "Relaxed Ordering" in by_line[IB_LINE]["explanation"]["en"]
    assert "16-23" in by_line[AFFINITY_LINE]["explanation"]["en"]
    assert by_line[CDB_LINE]["pattern_id"] == "deepspeed.comm.cdb_none"
    assert by_line[FLUSH_LINE]["severity"] == "warning"
    assert not by_line[UNRELATED[0]]["known"]


def test_engine_fast_path_agrees_with_the_spine_on_every_shape(explainer, log):
    engine = Engine(explainer, verify="all")
    data = log.read_bytes().rstrip(b"\n")
    engine.annotate(Chunk(0, 1, data, data.count(b"\n") + 1))
    engine.annotate(Chunk(0, 1, data, data.count(b"\n") + 1))  # second pass: all from caches
    assert engine.mismatches == 0


def test_only_known_and_min_severity_keep_a_compact_record_per_line(explainer, log):
    out, _ = annotate(explainer, [str(log)], "jsonl", min_severity="warning")
    records = [json.loads(r) for r in out.decode().splitlines()]
    assert len(records) == len(log.read_text().splitlines())
    full = [r for r in records if "explanation" in r]
    assert full and all(r["severity"] in ("warning", "error", "fatal") for r in full)
    compact = [r for r in records if "explanation" not in r]
    assert all(set(r) <= {"file", "line_number", "line", "known", "pattern_id", "severity"} for r in compact)
    out, _ = annotate(explainer, [str(log)], "jsonl", only_known=True)
    records = [json.loads(r) for r in out.decode().splitlines()]
    assert all(("explanation" in r) == r["known"] for r in records)


def test_commented_keeps_the_original_bytes_and_comments_runs_once(explainer, log):
    out, _ = annotate(explainer, [str(log)], "commented", lang="en")
    text = out.decode()
    original = [l for l in text.splitlines() if not l.startswith("# ")]
    assert original == log.read_text(encoding="utf-8").splitlines()  # lines in = lines out
    assert "# [info] nccl.init.affinity" in text
    assert "(5 lines of this entry follow)" in text  # 5 ranks' affinity lines: one comment
    assert text.count("# [info] nccl.init.affinity") == 2  # the seed's own run + ours
    assert "Relaxed Ordering" not in text  # the explanation is the html report's; comments are short
    assert explainer.by_id["nccl.net.ib_devices"].title.en in text
    zh, _ = annotate(explainer, [str(log)], "commented", lang="zh")
    assert "# [信息] nccl.init.affinity" in zh.decode()
    comments = [l for l in zh.decode().splitlines() if l.startswith("# ") and not l.startswith("# [")]
    chinese = [l for l in comments if any("\u4e00" <= ch <= "\u9fff" for ch in l)]
    assert comments and len(chinese) >= 0.8 * len(comments)  # wrapped lines may be all English terms


def test_commented_comment_cache_is_bounded_and_clearing_it_changes_nothing(explainer, log, monkeypatch):
    from service.batch.formats import commented as write_commented

    write_commented._COMMENTS.clear()
    full, _ = annotate(explainer, [str(log)], "commented", lang="both")
    sizes: list[int] = []
    original = write_commented.comment_lines

    def spy(data, langs):
        sizes.append(len(write_commented._COMMENTS))
        return original(data, langs)

    monkeypatch.setattr(write_commented, "COMMENT_CACHE_LIMIT", 3)
    monkeypatch.setattr(write_commented, "comment_lines", spy)
    write_commented._COMMENTS.clear()
    bounded, _ = annotate(explainer, [str(log)], "commented", lang="both")
    assert bounded == full
    assert len(sizes) > 3 and max(sizes) <= 3  # rendered more than 3 answers, never kept more


def _commented(explainer, path, monkeypatch, read_bytes, **options) -> bytes:
    """Chunks of about ``read_bytes``: the reader cuts a chunk after each block it reads."""
    from service.batch import reader

    monkeypatch.setattr(reader, "READ_BYTES", read_bytes)
    sources, _ = discover([str(path)])
    opts = Options(format="commented", **options)
    out = io.BytesIO()
    annotate_sources(sources, explainer, opts, make_writer("commented", out, opts, multi=False), jobs=1,
                     limits=Limits(chunk_bytes=1, max_line=3000), on_problem=lambda p: None)
    return out.getvalue()


@pytest.mark.parametrize("run_bytes", [8 << 20, 700])
def test_commented_runs_join_across_chunk_edges(explainer, tmp_path, monkeypatch, run_bytes):
    """Workers render each chunk but its first and last runs; the writer joins those across
    chunks. Chunks of ~one line (every run crosses edges) must give the bytes of one big chunk
    (no edges), with long runs, runs cut at RUN_BYTES, unexplained, undecodable and over-long
    lines, and context lines hidden or not."""
    from service.batch.formats import commented as write_commented

    monkeypatch.setattr(write_commented, "RUN_BYTES", run_bytes)
    rng = random.Random(7)
    lines = seed_style_lines()
    body = []
    for _ in range(400):
        roll = rng.random()
        if roll < 0.05:
            body.append(b"\xff bad bytes " + AFFINITY_LINE.encode())
        elif roll < 0.08:
            body.append(AFFINITY_LINE.encode() + b" " + b"x" * 4000)
        else:
            body += [rng.choice(lines).encode()] * rng.choice([1, 1, 2, 5, 30])
    path = tmp_path / "runs.log"
    path.write_bytes(b"\n".join(body) + b"\n")
    for hide in (False, True):
        whole = _commented(explainer, path, monkeypatch, 1 << 24, lang="en", hide_context=hide)
        assert b"lines of this entry follow" in whole and b"only the first 3,000 are kept" in whole
        if run_bytes < 1000:
            assert b"# (continued)" in whole
        for read_bytes in (1, 150, 2000):
            cut = _commented(explainer, path, monkeypatch, read_bytes, lang="en", hide_context=hide)
            assert cut == whole, (hide, read_bytes)


def test_commented_can_hide_context_lines(explainer, log):
    out, _ = annotate(explainer, [str(log)], "commented", lang="en", hide_context=True)
    entries = {e.id: e for e in explainer.entries}
    for line in out.decode().splitlines():
        if line.startswith("# [") and "] " in line:
            pattern_id = line.split("] ", 1)[1].split()[0]
            assert entries[pattern_id].role.value != "context"


def test_summary_counts_every_line_and_puts_errors_first(explainer, log):
    out, summary = annotate(explainer, [str(log)], "summary")
    text = out.decode()
    assert summary.total_lines == len(log.read_text().splitlines())
    assert summary.known_lines + summary.unknown_lines == summary.total_lines
    assert summary.entries["nccl.init.affinity"].count == 4 + 5
    assert summary.entries["deepspeed.comm.cdb_none"].count == 1 + 6
    assert summary.entries["deepspeed.comm.cdb_none"].first == (0, 4)
    severities = [s.severity for _, s in summary.ranked_entries()]
    ranks = [{"info": 0, "warning": 1, "error": 2, "fatal": 3}[s] for s in severities]
    assert ranks == sorted(ranks, reverse=True)
    assert f"{summary.total_lines:,} lines" in text and "lines nobody explains" in text
    assert summary.first_at_least("warning") is not None


def test_summary_fast_path_equals_the_per_line_tally(explainer, log):
    _, fast = annotate(explainer, [str(log)], "summary")
    _, slow = annotate(explainer, [str(log)], "jsonl")
    assert fast.to_json() == slow.to_json()


def test_html_embeds_every_line_once(explainer, log):
    out, summary = annotate(explainer, [str(log)], "html")
    html = out.decode()
    assert html.startswith("<!doctype html>") and html.rstrip().endswith("</html>")
    assert html.count('class="chunk"') >= 1 and "summary-data" in html
    blocks = [
        json.loads(b.split(">", 1)[1].split("</script>", 1)[0])
        for b in html.split("<script ")[1:] if 'class="chunk"' in b.split(">", 1)[0]
    ]
    texts = [t for b in blocks for t in b["t"]]
    assert texts == log.read_text(encoding="utf-8").splitlines()
    assert sum(len(b["a"]) for b in blocks) == summary.total_lines


def test_workers_give_the_same_bytes_as_one_process(kb_dir, index_dir, log, tmp_path):
    big = tmp_path / "big.log"
    big.write_text(("\n".join(seed_style_lines()) + "\n") * 400, encoding="utf-8")  # ~35k lines, several chunks
    outputs = {}
    for jobs in ("1", "2"):
        for fmt in ("jsonl", "commented", "summary"):
            result = run_cli(kb_dir, index_dir, ["annotate", str(big), "--format", fmt, "-j", jobs, "--regex-only",
                                                 "-o", str(tmp_path / f"out-{jobs}.{fmt}")])
            assert result.returncode == 0, result.stderr.decode()
            outputs[jobs, fmt] = (tmp_path / f"out-{jobs}.{fmt}").read_bytes()
    for fmt in ("jsonl", "commented", "summary"):
        assert outputs["1", fmt] == outputs["2", fmt], fmt
    assert outputs["1", "jsonl"].count(b"\n") == big.read_text().count("\n")


def test_html_from_workers_shows_what_one_process_shows(kb_dir, index_dir, tmp_path):
    """With -j 2 each worker numbers its answers apart from the other's and writes its blocks
    itself (the page differs in ids, not in content): every line resolves to the same answer."""
    big = tmp_path / "big.log"
    big.write_text(("\n".join(seed_style_lines()) + "\n") * 400, encoding="utf-8")  # several chunks
    pages = {}
    for jobs in ("1", "2"):
        out = tmp_path / f"out-{jobs}.html"
        result = run_cli(kb_dir, index_dir, ["annotate", str(big), "--format", "html", "-j", jobs, "--regex-only",
                                             "--min-severity", "info", "-o", str(out)])
        assert result.returncode == 0, result.stderr.decode()
        pages[jobs] = out.read_text(encoding="utf-8")
    one, two = page_rows(pages["1"]), page_rows(pages["2"])
    assert len(one) == big.read_text().count("\n") and any(row[3] for row in one)
    assert two == one
    assert pages["2"].rstrip().endswith("</html>")


def test_fail_on_and_exit_codes(kb_dir, index_dir, log, tmp_path):
    ok = run_cli(kb_dir, index_dir, ["annotate", str(log), "--fail-on", "error", "--format", "summary", "--regex-only"])
    assert ok.returncode == 0, ok.stderr.decode()
    warned = run_cli(kb_dir, index_dir, ["annotate", str(log), "--fail-on", "warning", "--format", "summary", "--regex-only"])
    assert warned.returncode == 1
    missing = run_cli(kb_dir, index_dir, ["annotate", str(tmp_path / "nope.log")])
    assert missing.returncode == 2 and b"nope.log" in missing.stderr
    bad = tmp_path / "cut.gz"
    import gzip

    whole = gzip.compress(log.read_bytes() * 50)
    bad.write_bytes(whole[: len(whole) // 2])
    lost = run_cli(kb_dir, index_dir, ["annotate", str(log), str(bad), "--format", "jsonl", "--regex-only"])
    assert lost.returncode == 3
    assert b"cut.gz:" in lost.stderr and b"truncated gzip" in lost.stderr


def test_piped_output_defaults_to_jsonl_and_has_no_progress_bar(kb_dir, index_dir):
    lines = "\n".join(seed_style_lines()) + "\n"
    result = run_cli(kb_dir, index_dir, ["annotate", "-", "--regex-only"], input=lines.encode())
    assert result.returncode == 0, result.stderr.decode()
    records = [json.loads(r) for r in result.stdout.decode().splitlines()]
    assert len(records) == len(lines.splitlines()) and records[0]["file"] == "<stdin>"
    assert b"lines/s" not in result.stderr


def test_a_fast_path_that_drifts_from_the_spine_is_caught_and_redone(explainer, log, monkeypatch):
    """If the engine's rebuilt answers ever disagree with the spine (e.g. the spine's text
    filling changes), verification demotes the shape and the chunk is redone the slow way."""
    import service.batch.engine as engine_module

    fill = engine_module.HeadTemplate.fill
    monkeypatch.setattr(engine_module.HeadTemplate, "fill",
                        lambda self, *args: fill(self, *args).replace(b'"en":"', b'"en":"x'))
    engine = Engine(explainer, verify="all")
    lines = log.read_text(encoding="utf-8").splitlines()
    data = "\n".join(lines).encode()
    annotated = engine.annotate(Chunk(0, 1, data, len(lines)))
    assert engine.mismatches > 0
    expected = explainer.explain_many(lines)
    for i, want in enumerate(expected):
        assert annotated.record(i) == want


def test_comment_wrapping_equals_textwrap_line_for_line(explainer):
    """``write_commented.wrap`` replaces textwrap for speed; on random texts (runs of spaces,
    words longer than a line, Chinese without spaces, tabs and ideographic spaces that take
    textwrap's own path) and on every KB text it gives textwrap's lines exactly."""
    import random
    import textwrap

    from service.batch.formats.commented import wrap

    rng = random.Random(3)
    words = ["a", "bb", "NCCL", "all-reduce", "ZeRO-3", "通信超时", "很长的中文说明没有空格" * 3, "x" * 30, "y" * 130,
             "0x7f3a5c00b2d0", "—", "\t", "\u3000"]
    texts = [
        " " * rng.choice([0, 1, 3, 12]) + "".join(rng.choice(words) + " " * rng.choice([0, 1, 1, 2, 7])
                                                  for _ in range(rng.randint(0, 25)))
        for _ in range(40000)
    ]
    for text in texts:
        width = rng.choice([100, 37, 10, 5, 3, 2, 1])
        assert wrap(text, width) == textwrap.wrap(text, width, break_on_hyphens=False), (text, width)
    kb_texts = [t for e in explainer.entries for b in (e.title, e.explanation, e.action) if b for t in (b.en, b.zh)]
    assert [wrap(t) for t in kb_texts] == [textwrap.wrap(t, 100, break_on_hyphens=False) for t in kb_texts]


# ---- the root-cause section of summaries (triage) ------------------------------------------
RC_TAIL = [
    "host-a:4100:4300 [1] NCCL INFO comm 0x5566aa00 rank 1 nranks 2 cudaDev 1 busId 2000 commId 0x1234 - Init COMPLETE",
    "host-a:4100:4300 [1] include/shm.h:28 NCCL WARN Error while creating shared memory segment /dev/shm/nccl-1YsMbG (size 7340384)",
    "torch.distributed.DistBackendError: NCCL error in: ../torch/csrc/distributed/c10d/ProcessGroupNCCL.cpp:1691, unhandled system error (run with NCCL_DEBUG=INFO for details), NCCL version 2.18.1",
    "[rank1]:[W socket.cpp:464] [c10d] Sending process 4101 closing signal SIGTERM",
]


@pytest.mark.parametrize("jobs", [1, 2])
def test_summary_names_the_root_cause_whether_read_in_ranges_or_chunks(explainer, tmp_path, jobs):
    """Summaries of plain files are counted in byte ranges (never passing lines to the parent);
    triage then reads the file once more. Small ranges force several per file."""
    from service.triage import TriageStream, triage_paths

    log = tmp_path / "job.log"
    lines = seed_style_lines() * 40 + RC_TAIL
    log.write_text("\n".join(lines) + "\n", encoding="utf-8")
    sources, _ = discover([str(log)])
    out = io.BytesIO()
    opts = Options(format="summary", semantic=False)
    summary = annotate_sources(sources, explainer, opts, make_writer("summary", out, opts, False), jobs=jobs,
                               limits=Limits(range_bytes=4096), on_problem=lambda p: None,
                               triage=TriageStream(explainer, semantic=False))
    alone = triage_paths(explainer, [str(log)], semantic=False)
    assert summary.triage == alone
    root = summary.triage["root_cause"]
    assert root["line_number"] == lines.index(RC_TAIL[1]) + 1
    text = out.getvalue().decode()
    assert text.index("root cause: ") < text.index("severity: ")
    assert RC_TAIL[1] in text and "cascade (folded)" in text


def test_summary_from_stdin_chunks_and_as_json(explainer, kb_dir, index_dir, tmp_path):
    body = ("\n".join(seed_style_lines() * 3 + RC_TAIL) + "\n").encode()
    out = run_cli(kb_dir, index_dir, ["annotate", "--regex-only", "--format", "summary", "-o", str(tmp_path / "s.json"), "-"],
                  input=body)
    assert out.returncode == 0, out.stderr
    data = json.loads((tmp_path / "s.json").read_text())
    assert data["triage"]["root_cause"]["line"] == RC_TAIL[1]
    assert data["triage"]["root_cause"]["file"] == "<stdin>"
    zh = run_cli(kb_dir, index_dir, ["annotate", "--regex-only", "--format", "summary", "--lang", "zh", "-"], input=body)
    assert "根因：" in zh.stdout.decode() and "连带报错（已折叠）" in zh.stdout.decode()
    off = run_cli(kb_dir, index_dir, ["annotate", "--regex-only", "--format", "summary", "--no-triage", "-"], input=body)
    assert off.returncode == 0 and b"root cause" not in off.stdout


def test_an_interrupted_summary_claims_no_root_cause(explainer, tmp_path):
    from service.triage import TriageStream

    class Stop(TriageStream):
        def feed_chunk(self, chunk, name):
            raise KeyboardInterrupt

    log = tmp_path / "job.log"
    log.write_text("\n".join(seed_style_lines() + RC_TAIL) + "\n", encoding="utf-8")
    sources, _ = discover(["-"])
    import sys
    real_stdin = sys.stdin
    try:
        sys.stdin = open(log, "r")
        opts = Options(format="summary", semantic=False)
        summary = annotate_sources(sources, explainer, opts, make_writer("summary", io.BytesIO(), opts, False),
                                   on_problem=lambda p: None, triage=Stop(explainer, semantic=False))
    finally:
        sys.stdin.close()
        sys.stdin = real_stdin
    assert summary.interrupted and summary.triage is None


def test_a_spent_semantic_budget_leaves_lines_unknown_and_says_how_many(kb_dir, index_dir, tmp_path):
    """A log of unique junk costs a bounded embedding time: with no budget at all, no unknown
    line is embedded, every line still gets its answer, and the summary counts those lines."""
    junk = tmp_path / "junk.log"
    lines = [f"the {w} replica {i} could not reach quorum while the {v} ledger was sealed"
             for i, (w, v) in enumerate(zip(["green", "blue", "amber", "violet"] * 5, ["old", "new", "cold", "warm", "odd"] * 4))]
    junk.write_text("\n".join(lines) + "\n", encoding="utf-8")
    jsonl = run_cli(kb_dir, index_dir, ["annotate", str(junk), "--format", "jsonl", "--semantic-budget", "0"])
    records = [json.loads(l) for l in jsonl.stdout.splitlines()]
    assert len(records) == len(lines) and not any(r["known"] for r in records), jsonl.stderr
    assert all(r["candidates"] == [] for r in records)
    for jobs in ("1", "2"):
        text = run_cli(kb_dir, index_dir, ["annotate", str(junk), "--format", "summary", "-j", jobs,
                                           "--semantic-budget", "0", "--no-triage"])
        assert f"semantic budget spent: {len(lines)} unknown line(s)" in text.stdout.decode(), text.stdout
    asked = run_cli(kb_dir, index_dir, ["annotate", str(junk), "--format", "summary", "--no-triage"])
    assert b"semantic budget spent" not in asked.stdout


def test_a_run_s_semantic_budget_ends_with_the_run(explainer, log):
    """The budget is the run's: an explainer shared with later runs and callers (a server, a
    test session) is not left with a spent one."""
    assert explainer.semantic_budget is None
    annotate(explainer, [str(log)], "summary")
    assert explainer.semantic_budget is None
