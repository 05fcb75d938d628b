"""The catalogue extractor: formats to patterns, log calls found in C/C++/Python, builds that
are reproducible and keep their texts, and the checks ``kb check`` runs on records."""

from __future__ import annotations

import json
import shutil
import subprocess
import textwrap
from pathlib import Path

import pytest
import re2

from indexer.catalog.build import Merged, collect, to_record
from indexer.normalize import normalize_line
from indexer.catalog.clike import Source, literal_concat, printf_from_args
from indexer.catalog.extract import nccl_file, torch_cpp_file
from indexer.catalog.formats import Slot, brace_pieces, example_line, printf_pieces, to_pattern
from indexer.catalog.python_src import python_file
from indexer.catalog.records import load_catalog
from indexer.catalog.sources import GitRepo

ROOT = Path(__file__).resolve().parents[1]


def _matches(pieces, line):
    pattern, groups = to_pattern(pieces)
    m = re2.compile(pattern).search(line)
    return m and {name: m.group(name) for name, _ in groups}


def test_printf_conversions_become_named_groups_that_match_printed_lines():
    pieces = printf_pieces("NET/IB : Using [%d]%s:%d/%s ; OOB %s:%s", ["i", "devName", "port", "link", "ifName", "addr"])
    got = _matches(pieces, "NET/IB : Using [0]mlx5_0:1/IB ; OOB eth0:10.0.0.1<0>")
    assert got and got["dev_name"] == "mlx5_0" and got["port"] == "1" and got["addr"] == "10.0.0.1<0>"
    assert not _matches(pieces, "NET/IB : Using mlx5_0")


def test_percent_escape_width_and_star_consume_the_right_arguments():
    pieces = printf_pieces("%5.1f%% of %*d in %-8s|", ["pct", "width", "n", "name"])
    slots = [p for p in pieces if isinstance(p, Slot)]
    assert [s.arg for s in slots] == ["pct", "n", "name"]
    assert _matches(pieces, " 12.5% of     7 in ib      |")


def test_adjacent_literals_and_pri_macros_concatenate():
    assert literal_concat('"busId %" PRIx64 " rank %d"') == "busId %lx rank %d"
    assert literal_concat('"a" "b"') == "ab"
    assert literal_concat("name") is None
    assert literal_concat('"x" STR(y)') is None
    pieces = printf_from_args('"len %" PRIu64 " at %p"', ["size", "ptr"])
    assert _matches(pieces, "len 4096 at 0x7f3a2c000000")


def test_brace_formats_positional_named_and_escaped():
    pieces = brace_pieces("{} of {n} {{x}} {0:.2f}", ["a", "b"], {"n": "count"})
    assert [p.arg for p in pieces if isinstance(p, Slot)] == ["a", "count", "a"]
    assert _matches(pieces, "3 of 4 {x} 1.50")


def test_example_line_is_matched_by_its_own_pattern():
    for fmt, args in [("Channel %02d/%02d : %d %d", list("abcd")), ("%s:%d -> %d", ["f", "l", "r"]),
                      ("Connected all rings, use ring PXN %d GDR %d\n", ["p", "g"])]:
        pieces = printf_pieces(fmt, args)
        pattern, _ = to_pattern(pieces)
        assert re2.compile(pattern).search(example_line(pieces)), fmt


C_SOURCE = textwrap.dedent(r'''
    // INFO(NCCL_INIT, "in a comment %d", x);
    static const char* s = "WARN(\"in a string\")";
    ncclResult_t ncclIbInit(ncclDebugLogger_t logFunction) {
      if (ncclNIbDevs == 0) {
        WARN("NET/IB : No device found.");
      } else {
        INFO(NCCL_INIT|NCCL_NET,
             "NET/IB : Using%s %s; OOB %s:%s", line,
             relaxed ? "[RO]" : "", ifName, addr);
      }
      auto f = [&](int x) { WARN("lambda %d", x); };
      return ncclSuccess;
    }
    #define NCCLCHECK(call) do { \
      ncclResult_t RES = call; \
      if (RES != ncclSuccess) { INFO(NCCL_ALL,"%s:%d -> %d", __FILE__, __LINE__, RES); } \
    } while (0)
''')


def test_c_calls_found_in_code_only_with_enclosing_function_and_macro():
    occs = nccl_file("src/transport/net_ib.cc", C_SOURCE)
    by_text = {"".join(p if isinstance(p, str) else "{}" for p in o.pieces): o for o in occs}
    assert set(by_text) == {"NET/IB : No device found.", "NET/IB : Using{} {}; OOB {}:{}", "lambda {}", "{}:{} -> {}"}
    assert by_text["NET/IB : No device found."].function == "ncclIbInit"
    assert by_text["NET/IB : No device found."].level == "WARN"
    assert by_text["NET/IB : Using{} {}; OOB {}:{}"].level == "INFO"
    assert by_text["NET/IB : Using{} {}; OOB {}:{}"].line == 8
    assert by_text["lambda {}"].function == "ncclIbInit"
    assert by_text["{}:{} -> {}"].function == "NCCLCHECK"


def test_torch_cpp_checks_streams_and_brace_logs():
    src = textwrap.dedent(r'''
        void TCPStore::doWait(std::vector<std::string> keys) {
          TORCH_CHECK(keys.size() > 0, "wait: ", keys.size(), " keys, timeout ", timeout_.count(), "ms");
          LOG(WARNING) << "[Rank " << rank_ << "] Watchdog caught collective operation timeout: " << work;
          C10D_WARNING("The server socket has failed to listen on {}:{} (errno: {} - {}).", host, port, err, msg);
          VLOG(1) << "not in release logs";
        }
    ''')
    occs = {o.kind: o for o in torch_cpp_file("torch/csrc/distributed/c10d/TCPStore.cpp", src)}
    assert set(occs) == {"TORCH_CHECK", "LOG", "C10D_WARNING"}
    assert occs["LOG"].level == "WARNING" and occs["LOG"].function == "TCPStore::doWait"
    pattern, _ = to_pattern(list(occs["C10D_WARNING"].pieces))
    assert re2.compile(pattern).search(
        "The server socket has failed to listen on [::]:29500 (errno: 98 - Address already in use).")
    pattern, _ = to_pattern(list(occs["TORCH_CHECK"].pieces), anchor_start=False)
    assert re2.compile(pattern).search("RuntimeError: wait: 3 keys, timeout 300000ms")


def test_torch_cpp_debug_and_trace_levels_of_c10d_logging():
    """C10D_DEBUG / C10D_TRACE print "[c10d - debug] ..." at INFO when TORCH_DISTRIBUTED_DEBUG
    is set: users paste them from debugging sessions, so they are catalogued with their level."""
    src = textwrap.dedent(r'''
        std::unique_ptr<SocketImpl> SocketListenOp::run() {
          C10D_DEBUG("The server socket will attempt to listen on an IPv6 address.");
          C10D_TRACE("The server socket on {} is not yet listening {}, will retry.", addr, err);
        }
    ''')
    occs = {o.kind: o for o in torch_cpp_file("torch/csrc/distributed/c10d/socket.cpp", src)}
    assert occs["C10D_DEBUG"].level == "DEBUG" and occs["C10D_TRACE"].level == "TRACE"
    assert occs["C10D_DEBUG"].function == "SocketListenOp::run"
    pattern, _ = to_pattern(list(occs["C10D_TRACE"].pieces))
    assert re2.compile(pattern).search("The server socket on [::1]:29500 is not yet listening "
                                       "Connection refused, will retry.")


PY_SOURCE = textwrap.dedent('''
    import logging, warnings
    logger = logging.getLogger(__name__)

    class Agent:
        def _restart(self, spec):
            logger.info("[%s] Worker group %s. %s/%s attempts left;", spec.role, state, left, total)
            msg = f"Default process group has not been initialized, please call {fn}."
            if bad:
                raise ValueError(msg)
            warnings.warn("Setting OMP_NUM_THREADS to {} for each process".format(n), category=UserWarning)
            raise RuntimeError("static " + name + " done")
''')


def test_python_logging_fstrings_format_and_bound_names():
    occs = python_file("torch/distributed/elastic/agent/server/api.py", PY_SOURCE)
    got = {(o.level, "".join(p if isinstance(p, str) else "{}" for p in o.pieces), o.function) for o in occs}
    assert ("info", "[{}] Worker group {}. {}/{} attempts left;", "Agent._restart") in got
    assert ("raise ValueError", "Default process group has not been initialized, please call {}.", "Agent._restart") in got
    assert ("warn UserWarning", "Setting OMP_NUM_THREADS to {} for each process", "Agent._restart") in got
    assert ("raise RuntimeError", "static {} done", "Agent._restart") in got


def _git(repo: Path, *args: str) -> None:
    subprocess.run(["git", "-C", str(repo), *args], check=True, capture_output=True,
                   env={"GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@t", "GIT_COMMITTER_NAME": "t",
                        "GIT_COMMITTER_EMAIL": "t@t", "GIT_AUTHOR_DATE": "2020-01-01T00:00:00",
                        "GIT_COMMITTER_DATE": "2020-01-01T00:00:00", "PATH": "/usr/bin:/bin"})


@pytest.fixture()
def tagged_repo(tmp_path):
    if not shutil.which("git"):
        pytest.fail("git is needed to test the tag reader")
    repo = tmp_path / "nccl"
    (repo / "src").mkdir(parents=True)
    _git(repo, "init", "-q")
    (repo / "src" / "init.cc").write_text('void f() { WARN("old wording %d", x); INFO(NCCL_INIT, "kept %s", s); }\n')
    _git(repo, "add", "-A")
    _git(repo, "commit", "-qm", "a")
    _git(repo, "tag", "v2.4.2-1")
    (repo / "src" / "init.cc").write_text('void f() { WARN("new wording %d", x); INFO(NCCL_INIT, "kept %s", s); }\n')
    _git(repo, "commit", "-qam", "b")
    _git(repo, "tag", "v2.10.3-1")
    _git(repo, "tag", "rocm-5.0.0")  # the same tree read as an RCCL release
    return repo / ".git"


def test_versions_are_the_tags_that_hold_each_format(tagged_repo):
    repo = GitRepo(tagged_repo)
    from indexer.catalog.spec import nccl_tags

    trees = [repo.tree(t, ("src",), (".cc",)) for t in nccl_tags(repo.tags())]
    merged = collect("nccl", "NVIDIA/nccl", trees, nccl_file)
    versions = {fmt: m.versions for (level, fmt), m in merged.items()}
    assert versions == {
        "old wording {x}": ["v2.4.2-1"],
        "new wording {x}": ["v2.10.3-1"],
        "kept {s}": ["v2.4.2-1", "v2.10.3-1"],  # numeric order, not string order
    }


def test_build_is_reproducible_and_keeps_texts_by_id(tagged_repo, tmp_path):
    from indexer.catalog.run import build

    out = tmp_path / "kb" / "catalog"
    sources = {"nccl": str(tagged_repo), "rccl": str(tagged_repo)}
    build(out, sources)
    first = (out / "nccl.jsonl").read_bytes()
    build(out, sources)
    assert (out / "nccl.jsonl").read_bytes() == first
    rows = [json.loads(line) for line in first.decode().splitlines()]
    # formats both projects print are one record with both projects' versions; RCCL keeps none
    assert {r["format"]: r.get("other_versions") for r in rows} == {
        "old wording {x}": None,
        "new wording {x}": {"ROCm/rccl": ["rocm-5.0.0", "develop-2020-01-01"]},
        "kept {s}": {"ROCm/rccl": ["rocm-5.0.0", "develop-2020-01-01"]},
    }
    assert (out / "rccl.jsonl").read_text() == ""
    rows[0]["title"] = {"en": "A title", "zh": "一个标题"}
    rows[0]["explanation"] = {"en": "Written from the code.", "zh": "根据代码编写。"}
    (out / "nccl.jsonl").write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows))
    build(out, sources)
    again = {json.loads(l)["id"]: json.loads(l) for l in (out / "nccl.jsonl").read_text().splitlines()}
    assert again[rows[0]["id"]]["title"]["zh"] == "一个标题"
    manifest = json.loads((out / "manifest.json").read_text())
    assert {(t["repo"], t["version"]) for t in manifest["read"]["nccl+rccl"]} == {
        ("NVIDIA/nccl", "v2.4.2-1"), ("NVIDIA/nccl", "v2.10.3-1"), ("ROCm/rccl", "rocm-5.0.0"),
        ("ROCm/rccl", "develop-2020-01-01")}  # the default branch, read as a dated version
    assert all(len(t["origin"]) == 40 for t in manifest["read"]["nccl+rccl"])


def test_torch_warn_records_accept_the_warning_handler_frame():
    from indexer.catalog.build import Merged

    occ = torch_cpp_file("x.cpp", 'void f() { TORCH_WARN("TORCH_NCCL_AVOID_RECORD_STREAMS=1 has no effect for point-to-point"); }')[0]
    rec = to_record(Merged("torch_distributed", "pytorch/pytorch", occ.level, occ.pieces, True, occ.kind, occ, ["v2.6.0"]), {})
    rx = re2.compile(rec["pattern"])
    assert rx.search("Warning: TORCH_NCCL_AVOID_RECORD_STREAMS=1 has no effect for point-to-point (function operator())")
    assert rx.search("TORCH_NCCL_AVOID_RECORD_STREAMS=1 has no effect for point-to-point")


def test_malformed_catalogue_lines_are_reported_with_file_and_line(tmp_path):
    cat = tmp_path / "catalog"
    cat.mkdir()
    occ = nccl_file("src/init.cc", 'void f() { WARN("NET/IB : No device found."); }')[0]
    from indexer.catalog.build import Merged

    good = to_record(Merged("nccl", "NVIDIA/nccl", occ.level, occ.pieces, True, occ.kind, occ, ["v2.4.2-1"]), {})
    (cat / "nccl.jsonl").write_text(json.dumps(good) + "\n{not json\n" + json.dumps({**good, "severity": "loud"}) + "\n")
    records, problems = load_catalog(tmp_path)
    assert len(records) == 1
    assert [(Path(p.file).name, p.line) for p in problems] == [("nccl.jsonl", 2), ("nccl.jsonl", 3)]
    assert "severity" in str(problems[1])


def test_no_held_out_line_is_anywhere_in_kb():
    """Held-out means held out: none of its lines may appear anywhere under kb/, in any field.

    Fifteen lines (fourteen collected for part 2, three of them Open MPI help-text headlines
    found when its help files were read on 2026-12-05; one of part 1) turned out to be constant strings of the source (a message
    with no run-time value prints exactly its format, so the record extracted from the code
    holds the line word for word). A verbatim match says nothing about how the tool does on
    lines it was not built from, so they were moved out of the held-out set into
    tests/data/heldout_constant.jsonl and are not scored; this test keeps the rest clean. A
    sixteenth, a DeepSpeed warning collected for part 3, was already a curated example when it
    was collected (the collector's grep missed it) and was moved the same way. A seventeenth and
    an eighteenth (part 2) are constants too: accelerate's Megatron-LM start-up note, which came
    in with the twelfth session's reading of utils/megatron_lm.py, and perftest's "Completion with
    error at client", which a curated entry written that session matches word for word."""
    held = [json.loads(l)["line"].strip() for f in sorted((ROOT / "tests" / "data" / "heldout").glob("*.jsonl"))
            for l in f.read_text(encoding="utf-8").splitlines() if l.strip()]
    assert len(held) > 800
    kb_text = "\n".join(p.read_text(encoding="utf-8") for p in sorted((ROOT / "kb").rglob("*"))
                        if p.is_file() and p.suffix in (".yaml", ".jsonl", ".txt", ".json"))
    assert [line for line in held if len(line) > 30 and line in kb_text] == []
    moved = [json.loads(l) for l in (ROOT / "tests" / "data" / "heldout_constant.jsonl")
             .read_text(encoding="utf-8").splitlines()]
    assert moved and all(row["line"].strip() not in held for row in moved)


PROJECT_SOURCE = textwrap.dedent('''
    import logging
    from megatron.core.utils import log_single_rank

    def validate_args(args):
        assert args.world_size % args.tp == 0, "world size ({}) is not divisible by tp ({})".format(args.world_size, args.tp)
        assert args.ok
        print_rank_0(f"> building {args.tokenizer_type} tokenizer ...")
        log_single_rank(logger, logging.WARNING, "Dataset %s has %d samples", name, n)
        log_dist(f"Using {kind} optimizer", ranks=[0], level=logging.WARNING)
        log_dist(message=f"Saving model checkpoint: {save_path}", ranks=[0])
        print_log("Loads checkpoint by local backend from path: " + filename, logger="current")
        logger.warning_once("only once: %s" % what)
''')


def test_project_helpers_levels_and_argument_asserts():
    from indexer.catalog.python_src import python_file
    from indexer.catalog.spec import PY_PROJECTS

    def found(project, path):
        occs = python_file(path, PROJECT_SOURCE, PY_PROJECTS[project].dialect)
        return {(o.level, "".join(p if isinstance(p, str) else "{}" for p in o.pieces), o.kind, o.anchored)
                for o in occs}

    mg = found("megatron", "megatron/training/arguments.py")
    assert ("raise AssertionError", "world size ({}) is not divisible by tp ({})", "assert", False) in mg
    assert ("info", "> building {} tokenizer ...", "print_rank_0", True) in mg
    # the level is the second argument; the rest are printf arguments of the third
    assert ("warning", "Dataset {} has {} samples", "log_single_rank", False) in mg
    assert ("warning", "only once: {}", "logger.warning_once", True) in mg
    # an assert without a message prints nothing worth a record; asserts outside argument
    # validation are internal invariants and stay out
    assert not any(level == "raise AssertionError" for level, *_ in found("megatron", "megatron/core/models/x.py"))
    ds = found("deepspeed", "deepspeed/runtime/engine.py")
    assert ("warning", "Using {} optimizer", "log_dist", False) in ds  # level= keyword; "[Rank 0] " may lead
    # the message given by keyword (engine.py's _save_checkpoint in every release from 0.3)
    assert ("info", "Saving model checkpoint: {}", "log_dist", False) in ds
    # engine.py checks how the engine is used: its asserts with a message are messages there,
    # while the same code in another file is an internal invariant
    assert any(kind == "assert" for *_, kind, _a in ds)
    assert not any(kind == "assert" for *_, kind, _a in found("deepspeed", "deepspeed/runtime/zero/stage3.py"))
    mm = found("mmengine", "mmengine/runner/checkpoint.py")
    assert ("info", "Loads checkpoint by local backend from path: {}", "print_log", True) in mm


def test_python_project_is_read_at_its_release_tags(tmp_path):
    from indexer.catalog.run import build

    repo = tmp_path / "ds"
    (repo / "deepspeed" / "runtime").mkdir(parents=True)
    (repo / "deepspeed" / "inference").mkdir(parents=True)
    (repo / "deepspeed" / "runtime" / "engine.py").write_text('logger.info(f"DeepSpeed Flops Profiler Enabled: {x}")\n')
    (repo / "deepspeed" / "inference" / "engine.py").write_text('logger.info("inference only")\n')
    _git(repo, "init", "-q")
    _git(repo, "add", "-A")
    _git(repo, "commit", "-qm", "a")
    for tag in ("grad-norm-test", "v0.2.0", "v0.8.3", "v0.10.0rc1"):
        _git(repo, "tag", tag)
    (repo / "deepspeed" / "runtime" / "engine.py").write_text('logger.info(f"DeepSpeed Flops Profiler Enabled: {x}")\nlog_dist("new", ranks=[0])\n')
    _git(repo, "commit", "-qam", "b")
    _git(repo, "tag", "v0.10.0")
    out = tmp_path / "kb" / "catalog"
    build(out, {"deepspeed": str(repo / ".git")})
    rows = {json.loads(l)["format"]: json.loads(l) for l in (out / "deepspeed.jsonl").read_text().splitlines()}
    # every release from the first, final tags only; inference code is out of scope
    assert {f: r["versions"] for f, r in rows.items()} == {
        "DeepSpeed Flops Profiler Enabled: {x}": ["v0.2.0", "v0.8.3", "v0.10.0"], "new": ["v0.10.0"]}
    assert rows["new"]["repo"] == "deepspeedai/DeepSpeed" and rows["new"]["component"] == "deepspeed"
    manifest = json.loads((out / "manifest.json").read_text())
    assert [t["version"] for t in manifest["read"]["deepspeed"]] == ["v0.2.0", "v0.8.3", "v0.10.0"]


def test_deepspeed_config_asserts_and_the_throughput_timer_are_messages():
    from indexer.catalog.python_src import python_file
    from indexer.catalog.spec import PY_PROJECTS

    dialect = PY_PROJECTS["deepspeed"].dialect
    config = textwrap.dedent('''
        def _batch_assertion(self):
            assert train_batch == micro_batch * grad_acc * self.world_size, (
                f"Check batch related parameters. train_batch_size is not equal "
                f"to micro_batch_per_gpu * gradient_acc_step * world_size "
                f"{train_batch} != {micro_batch} * {grad_acc} * {self.world_size}")
    ''')
    [occ] = python_file("deepspeed/runtime/config.py", config, dialect)
    assert occ.level == "raise AssertionError" and display(occ.pieces).startswith("Check batch related parameters.")
    # the same assert elsewhere is an internal invariant, not a message
    assert python_file("deepspeed/runtime/zero/stage3.py", config, dialect) == []
    timer = textwrap.dedent('''
        class ThroughputTimer:
            def stop(self, global_step=False, report_speed=True):
                self.logging("{}/{}, SamplesPerSec={}".format(self.epoch_count, self.local_step_count,
                                                             self.avg_samples_per_sec()))
    ''')
    [occ] = python_file("deepspeed/utils/timer.py", timer, dialect)
    assert occ.level == "info" and "SamplesPerSec=" in display(occ.pieces)


def test_messages_built_in_steps_inlined_constants_and_print_arguments():
    from indexer.catalog.python_src import python_file
    from indexer.catalog.spec import PY_PROJECTS

    src = textwrap.dedent('''
        def f(args, it):
            print("Virtual model parallel size ", args.vpp, flush=True)
            print("written to a file", file=handle)
            err = "{mode} mixed precision requires {requirement}"
            raise ValueError(err.format(mode="fp16", requirement="a GPU"))

        def g(it):
            log_string = f" iteration {it:8d}/{total:8d} |"
            if loss:
                log_string += f" lm loss: {loss:.6E} |"
            log_string += " skipped: {}".format(n)
            print_rank_last(log_string)
            print_log("There is no ema_state_dict in checkpoint", "current", logging.WARNING)
    ''')
    dialect = PY_PROJECTS["megatron"].dialect
    occs = {o.kind: o for o in python_file("megatron/training/training.py", src, dialect)}
    printed = "".join(p if isinstance(p, str) else "{}" for p in occs["print"].pieces)
    assert printed == "Virtual model parallel size  {}"  # print's own separator; the file print is not a log line
    assert occs["raise"].pieces == ("fp16 mixed precision requires a GPU",)
    last = occs["print_rank_last"].pieces
    pattern, groups = to_pattern(list(last))
    # blank-padded numbers, and whatever the later `+=` appended, conditionally or not
    line = " iteration      120/    1000 | lm loss: 2.305E+00 | skipped: 0"
    assert re2.compile(pattern).search(line) and [n for n, _ in groups] == ["it", "total", "more"]
    mm = {o.kind: o for o in python_file("mmengine/hooks/ema_hook.py", src, PY_PROJECTS["mmengine"].dialect)}
    assert mm["print_log"].level == "warning"  # the level passed by position


def test_slurm_log_calls_percent_m_step_ids_and_error_table():
    from indexer.catalog.extract import slurm_file

    c = textwrap.dedent('''
        static void _alloc(void) {
            error("Unable to allocate resources: %m");
            error("%ps exceeded memory limit (%"PRIu64" > %"PRIu64"), being killed", &step_id, total, limit);
            debug("not a user-facing line %d", x);
        }
    ''')
    got = {(o.level, display(o.pieces)) for o in slurm_file("src/srun/allocate.c", c)}
    assert got == {("error", "Unable to allocate resources: {strerror(errno)}"),
                   ("error", "{&step_id} exceeded memory limit ({total} > {limit}), being killed")}
    table = textwrap.dedent('''
        slurm_errtab_t slurm_errtab[] = {
            { ERRTAB_ENTRY(SLURM_ERROR), "Unspecified error"},
            { SLURM_PROTOCOL_SOCKET_IMPL_TIMEOUT,
              "Socket timed out on send/recv operation"		},
            {
                ERRTAB_ENTRY(ESLURM_INVALID_TIME_LIMIT),
                "Requested time limit is invalid (missing or exceeds some limit)",
            },
        };
    ''')
    rows = {o.function: display(o.pieces) for o in slurm_file("src/common/slurm_errno.c", table)}
    # both table styles (before and after 23.02); too-common texts are left out
    assert rows == {"SLURM_PROTOCOL_SOCKET_IMPL_TIMEOUT": "Socket timed out on send/recv operation",
                    "ESLURM_INVALID_TIME_LIMIT": "Requested time limit is invalid (missing or exceeds some limit)"}
    pattern, _ = to_pattern(["Unable to allocate resources: ", Slot("str", "strerror(errno)")], anchor_start=False)
    assert re2.compile(pattern).search("srun: error: Unable to allocate resources: Socket timed out on send/recv operation")


def display(pieces):
    from indexer.catalog.formats import display_format

    return display_format(list(pieces))


def test_a_text_follows_its_call_when_the_id_changes(tmp_path):
    from indexer.catalog.build import load_texts

    path = tmp_path / "x.jsonl"
    row = {"id": "deepspeed.engine.00000000", "component": "deepspeed", "file": "deepspeed/runtime/engine.py",
           "line": 12, "title": {"en": "T", "zh": "标题"}, "explanation": {"en": "E", "zh": "解释"},
           "example": {"line": "x", "constructed": True}}
    twin = dict(row, id="deepspeed.engine.11111111", line=40)
    path.write_text(json.dumps(row) + "\n" + json.dumps(twin) + "\n" + json.dumps(dict(twin, id="deepspeed.engine.22222222")) + "\n")
    texts = load_texts(path)
    assert texts[("at", "deepspeed", "deepspeed/runtime/engine.py", 12)]["title"]["zh"] == "标题"
    assert texts[("at", "deepspeed", "deepspeed/runtime/engine.py", 40)] is None  # two texts at one place: neither


def test_hip_runtime_log_macros_and_error_strings():
    from indexer.catalog.extract import clr_file

    code = textwrap.dedent(r'''
        #define HIP_ERROR_PRINT(err, ...)                                                  \
          ClPrint(amd::LOG_INFO, amd::LOG_API, "%s: Returned %s : %s",                     \
                  __func__, hip::ihipGetErrorName(err), ToString( __VA_ARGS__ ).c_str());
        bool init() {
          LogPrintfError("Cannot find CO in the bundle for ISA: %s", isa.c_str());
          ClPrint(amd::LOG_DEBUG, amd::LOG_CODE, "debug only %d", x);
          LogWarning("HSA_XNACK is set but the device does not support it");
        }
    ''')
    got = {(o.level, display(o.pieces)) for o in clr_file("hipamd/src/hip_code_object.cpp", code)}
    assert got == {("info", "{__func__}: Returned {hip::ihipGetErrorName(err)} : {ToString( __VA_ARGS__ ).c_str()}"),
                   ("error", "Cannot find CO in the bundle for ISA: {isa.c_str()}"),
                   ("warning", "HSA_XNACK is set but the device does not support it")}
    returned = next(o for o in clr_file("hipamd/src/x.cpp", code) if "Returned" in display(o.pieces))
    pattern, _ = to_pattern(list(returned.pieces))
    assert re2.compile(pattern).search("hipLaunchKernel: Returned hipSuccess :")  # nothing after the last ':'
    table = textwrap.dedent('''
        const char* ihipGetErrorName(hipError_t e) { switch (e) { case hipErrorNoBinaryForGpu: return "hipErrorNoBinaryForGpu"; } }
        const char* ihipGetErrorString(hipError_t e) { switch (e) {
            case hipErrorNoBinaryForGpu:
                return "no kernel image is available for execution on the device";
            case hipErrorMapFailed: return "map failed"; } }
    ''')
    rows = {o.function: display(o.pieces) for o in clr_file("hipamd/src/hip_error.cpp", table)}
    assert rows == {"hipErrorNoBinaryForGpu": "no kernel image is available for execution on the device"}


def test_verbs_stderr_warnings_provider_errors_and_devinfo_fields():
    from indexer.catalog.extract import rdma_file

    lib = textwrap.dedent('''
        #define PFX "libibverbs: "
        static void load(const char *name) {
            fprintf(stderr, PFX "Warning: couldn't load driver '%s'.\\n", name);
            fprintf(fp, "to a file %d", x);
            printf("debug print %d", y);
            mlx5_err(ctx->dbg_fp, "Failed to create QP, ret %d\\n", ret);
        }
    ''')
    got = {(o.level, display(o.pieces)) for o in rdma_file("libibverbs/dynamic_driver.c", lib)}
    # PFX is the library's own tag (ibverbs.h), not a wildcard a host prefix could fill
    assert got == {("warning", "libibverbs: Warning: couldn't load driver '{name}'.\n"),
                   ("error", "Failed to create QP, ret {ret}\n")}
    cq = 'void dump(void) { mlx5_err(mctx->dbg_fp, PFX "%s: got completion with error:\\n", mctx->hostname); }'
    [occ] = rdma_file("providers/mlx5/cq.c", cq)
    rec = to_record(Merged("infiniband", "linux-rdma/rdma-core", occ.level, occ.pieces, False, occ.kind, occ, ["v64.0"]), {})
    assert rec["format"] == "mlx5: {mctx->hostname}: got completion with error:\n" and rec["call"] == "mlx5_err"
    assert rec["matchable"] and rec["groups"] == {"hostname": "mctx->hostname"}
    rx = re2.compile(rec["pattern"])
    # the line as printed, and what is left once a launcher's or pdsh's prefix took the head
    for line in ("mlx5: gpu-node-17: got completion with error:", "gpu-node-17: got completion with error:",
                 "got completion with error:"):
        assert rx.search(normalize_line(line).message), line
    assert rx.search(normalize_line("mlx5: gpu-node-17: got completion with error:").message).group("hostname") == "gpu-node-17"
    assert not rx.search("mlx5: gpu-node-17: got completion with error: extra")
    tool = 'int main() { printf("\\t\\t\\tphys_state:\\t\\t%s (%d)\\n", port_phy_state_str(s), s); }'
    [field] = rdma_file("libibverbs/examples/devinfo.c", tool)
    assert field.anchored  # a tool's printed line starts the line, not the middle of another's
    pattern, _ = to_pattern(list(field.pieces), anchor_start=False)
    assert field.level == "print" and re2.compile(pattern).search("phys_state:   LINK_UP (5)")
    # a snake_case key names the field well enough to answer on; a bare "port:" does not
    keyed = 'int main() { printf("\\tfw_ver:\\t\\t\\t\\t%s\\n", attr.fw_ver); printf("\\t\\tport:\\t%d\\n", port); }'
    fw, port = rdma_file("libibverbs/examples/devinfo.c", keyed)
    merged = [Merged("infiniband", "linux-rdma/rdma-core", o.level, o.pieces, o.anchored, o.kind, o, ["v64.0"]) for o in (fw, port)]
    rec_fw, rec_port = (to_record(m, {}) for m in merged)
    assert rec_fw["matchable"] and not rec_port["matchable"]
    assert re2.compile(rec_fw["pattern"]).search(normalize_line("fw_ver:\t\t\t\t20.31.1014").message)
    import dataclasses
    other = dataclasses.replace(fw, file="providers/mlx5/mlx5.c")
    elsewhere = Merged("infiniband", "linux-rdma/rdma-core", fw.level, fw.pieces, fw.anchored, fw.kind, other, ["v64.0"])
    assert not to_record(elsewhere, {})["matchable"]


def test_infiniband_diags_reports_and_libibmad_field_dumps():
    from indexer.catalog.extract import rdma_file

    tool = textwrap.dedent('''
        static void get_port_info(ib_portid_t *dest) {
            if (!smp_query_via(data, dest, IB_ATTR_PORT_INFO, portnum, 0, srcport))
                IBEXIT("smp query portinfo failed");
            IBWARN("PerfMgt ClassPortInfo CapMask 0x%02X; No extended counter support", cap);
            IBPANIC("can't open UMAD port (%s:%d)", ca, port);
        }
    ''')
    got = {(o.level, display(o.pieces)) for o in rdma_file("infiniband-diags/ibportstate.c", tool)}
    assert got == {("error", "{tool}: iberror: failed: smp query portinfo failed"),
                   ("warning", "ibwarn: [{pid}] {function}: PerfMgt ClassPortInfo CapMask 0x{cap}; No extended counter support"),
                   ("fatal", "ibpanic: [{pid}] {function}: can't open UMAD port ({ca}:{port}): {strerror(errno)}")}
    fields = textwrap.dedent('''
        static const ib_field_t ib_mad_f[] = {
            {},
            {BITSOFFS(156, 4), "PhysLinkState", mad_dump_physportstate},
            {BITSOFFS(16, 16), "SymbolErrorCounter", mad_dump_uint},
        };
    ''')
    rows = {o.function: o for o in rdma_file("libibmad/fields.c", fields)}
    assert set(rows) == {"mad_dump_physportstate", "mad_dump_uint"}
    pattern, _ = to_pattern(list(rows["mad_dump_physportstate"].pieces), anchor_start=True)
    # the name is padded with dots to 32 characters, then the value
    assert re2.compile(pattern).search("PhysLinkState:...................Disabled")
    assert not re2.compile(pattern).search("PhysLinkState:..Disabled")
    assert rows["mad_dump_physportstate"].line == 4


def test_hsa_runtime_status_texts_and_stderr_reports():
    from indexer.catalog.extract import rocr_file

    table = textwrap.dedent(r'''
        hsa_status_t hsa_status_string(hsa_status_t status, const char** status_string) {
          switch (status) {
            case HSA_STATUS_ERROR_OUT_OF_RESOURCES:
              *status_string =
                  "HSA_STATUS_ERROR_OUT_OF_RESOURCES: The runtime failed to allocate the necessary resources. "
                  "This error may also occur when the core runtime library needs to spawn threads.";
              break;
            case HSA_STATUS_INFO_BREAK:
              *status_string = "HSA_STATUS_INFO_BREAK: A traversal over a list of elements has been interrupted.";
              break;
            default: *status_string = "unknown"; } }
    ''')
    rows = {o.function: display(o.pieces) for o in rocr_file("src/core/runtime/hsa.cpp", table)}
    assert set(rows) == {"HSA_STATUS_ERROR_OUT_OF_RESOURCES", "HSA_STATUS_INFO_BREAK"}
    assert rows["HSA_STATUS_ERROR_OUT_OF_RESOURCES"].endswith("needs to spawn threads.")
    fault = textwrap.dedent(r'''
        void Runtime::VMFaultHandler() {
          fprintf(stderr,
                  "Memory access fault by GPU node-%u (Agent handle: %p) on address %p%s. Reason: %s.\n",
                  fault.NodeId, agent, addr, note, reason);
          printf("not a rocminfo line %d", x);
        }
    ''')
    [occ] = rocr_file("src/core/runtime/runtime.cpp", fault)
    pattern, _ = to_pattern(list(occ.pieces), anchor_start=False)
    line = "Memory access fault by GPU node-4 (Agent handle: 0x55d0c5f0) on address 0x7f9a00000000. Reason: Page not present or supervisor privilege."
    assert occ.level == "error" and re2.compile(pattern).search(line)


def test_wheel_project_reads_each_release_directory_and_keeps_only_its_files(tmp_path):
    """transformers is read from unpacked release wheels: a message's versions are the release
    directories that print it; the TensorFlow/Flax halves and the model families not chosen
    are not read; a message printed by several modules is placed at the shallowest one."""
    from indexer.catalog.run import build_wheel_project
    from indexer.catalog.spec import WHEEL_PROJECTS

    trainer_old = 'logger = logging.get_logger(__name__)\ndef train():\n    logger.warning_once("Gradient accumulation steps mismatch")\n'
    trainer_new = trainer_old + 'def save():\n    logger.info(f"Saving model checkpoint to {output_dir}")\n'
    for version, text in (("4.30.2", trainer_old), ("4.46.3", trainer_new)):
        pkg = tmp_path / version / "transformers"
        for d in ("models/bert", "models/whisper", "integrations", "generation"):
            (pkg / d).mkdir(parents=True)
        (pkg / "trainer.py").write_text(text)
        (pkg / "trainer_tf.py").write_text('logger.warning("TensorFlow trainer only")\n')
        (pkg / "generation" / "flax_utils.py").write_text('logger.warning("Flax generation only")\n')
        (pkg / "models" / "bert" / "modeling_bert.py").write_text('logger.warning("a model file")\n')
        (pkg / "models" / "whisper" / "modeling_whisper.py").write_text('logger.warning("a family not read")\n')
        (pkg / "integrations" / "tpu.py").write_text('logger.info(f"Saving model checkpoint to {output_dir}")\n')
    records, manifest = build_wheel_project(WHEEL_PROJECTS["transformers-wheels"], str(tmp_path), {})
    by_format = {r["format"]: r for r in records}
    assert set(by_format) == {"Gradient accumulation steps mismatch", "Saving model checkpoint to {output_dir}",
                              "a model file"}
    assert by_format["Gradient accumulation steps mismatch"]["versions"] == ["v4.30.2", "v4.46.3"]
    assert by_format["Gradient accumulation steps mismatch"]["level"] == "warning"
    saving = by_format["Saving model checkpoint to {output_dir}"]
    assert saving["versions"] == ["v4.30.2", "v4.46.3"]  # tpu.py prints it in both
    assert saving["file"] == "transformers/trainer.py" and saving["also_in"] == ["transformers/integrations/tpu.py"]
    assert all(r["component"] == "transformers" and r["repo"] == "huggingface/transformers" for r in records)
    assert [m["version"] for m in manifest] == ["v4.30.2", "v4.46.3"]


def test_torch_python_trees_read_what_a_training_script_hears_from_once(tmp_path):
    """PyTorch's Python beyond torch.distributed: DDP under torch_distributed; optimizers,
    serialization, the package's own modules and dynamo's front end under other; distributed
    checkpointing, DTensor, torch.cuda's modules and Inductor's own modules and runtime read;
    Inductor's code generators, dynamo's subpackages, RPC and the _shard prototypes not read; a
    file listed by two folders is read once."""
    from indexer.catalog.run import _torch_py_trees
    from indexer.catalog.spec import torch_component

    root = tmp_path / "2.6.0" / "torch"
    for rel in ("distributed/distributed_c10d.py", "nn/parallel/distributed.py", "optim/lr_scheduler.py",
                "serialization.py", "_dynamo/convert_frame.py", "_dynamo/variables/misc.py",
                "_inductor/compile_fx.py", "utils/data/sampler.py", "distributed/checkpoint/state_dict_saver.py",
                "distributed/tensor/_api.py", "distributed/rpc/api.py", "distributed/_shard/api.py",
                "cuda/memory.py", "cuda/amp/grad_scaler.py", "_inductor/codegen/triton.py",
                "_inductor/runtime/triton_heuristics.py"):
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text("x = 1\n")
    trees, _ = _torch_py_trees(tmp_path)
    paths = [f.path for f in trees[0].files]
    assert sorted(paths) == sorted(["torch/distributed/distributed_c10d.py", "torch/nn/parallel/distributed.py",
                                    "torch/optim/lr_scheduler.py", "torch/serialization.py",
                                    "torch/_dynamo/convert_frame.py", "torch/utils/data/sampler.py",
                                    "torch/distributed/checkpoint/state_dict_saver.py",
                                    "torch/distributed/tensor/_api.py", "torch/cuda/memory.py",
                                    "torch/cuda/amp/grad_scaler.py", "torch/_inductor/compile_fx.py",
                                    "torch/_inductor/runtime/triton_heuristics.py"])
    assert len(paths) == len(set(paths))
    assert [torch_component(p) for p in ("torch/nn/parallel/distributed.py", "torch/optim/lr_scheduler.py",
                                         "torch/serialization.py", "torch/distributed/distributed_c10d.py",
                                         "torch/cuda/__init__.py", "torch/cuda/memory.py",
                                         "torch/distributed/checkpoint/state_dict_saver.py",
                                         "torch/_inductor/compile_fx.py")] == \
        ["torch_distributed", "other", "other", "torch_distributed", "cuda", "cuda", "torch_distributed", "other"]


def test_environment_variables_are_read_from_params_getenv_and_python():
    """catalog params: NCCL_PARAM with its default, a name passed to a helper, getenv, and
    Python's os.environ forms; the variable's function is the one that reads it."""
    from indexer.catalog.params import c_reads, py_reads

    c = textwrap.dedent(r'''
        NCCL_PARAM(IbGidIndex, "IB_GID_INDEX", -1);
        RCCL_PARAM(EnableClique, "ENABLE_CLIQUE", 0); // comment
        ncclResult_t ncclGetUserP2pLevel(int* level) {
          NCCLCHECK(ncclGetLevel(&ncclTopoUserP2pLevel, "NCCL_P2P_DISABLE", "NCCL_P2P_LEVEL"));
          const char* env = ncclGetEnv("NCCL_SOCKET_IFNAME");
          WARN("set NCCL_DEBUG=INFO for details");
        }
    ''')
    reads = {r.name: r for r in c_reads("src/graph/paths.cc", c, "nccl")}
    assert reads["NCCL_IB_GID_INDEX"].default == "-1" and reads["NCCL_IB_GID_INDEX"].kind == "NCCL_PARAM int64"
    assert reads["RCCL_ENABLE_CLIQUE"].default == "0"
    assert reads["NCCL_P2P_DISABLE"].kind == "read by name" and "NCCL_P2P_LEVEL" in reads
    assert reads["NCCL_SOCKET_IFNAME"].kind == "getenv string"
    assert "NCCL_DEBUG" not in reads  # named inside a message, not read
    py = "import os\ndef launch():\n    n = os.environ.get('LOCAL_RANK')\n    m = os.environ[\"MASTER_ADDR\"]\n    os.getenv('DS_ACCELERATOR')\n"
    names = {r.name for r in py_reads("deepspeed/launcher/launch.py", py)}
    assert names == {"LOCAL_RANK", "MASTER_ADDR", "DS_ACCELERATOR"}


def test_a_build_of_one_project_keeps_the_other_projects_records_in_a_shared_component_file(tmp_path):
    from indexer.catalog.run import _with_other_projects

    path = tmp_path / "cuda.jsonl"
    old = [{"id": "cuda.a.1", "repo": "pytorch/pytorch"}, {"id": "cuda.b.2", "repo": "NVIDIA/open-gpu-kernel-modules"}]
    path.write_text("".join(json.dumps(r) + "\n" for r in old), encoding="utf-8")
    new = [{"id": "cuda.a.3", "repo": "pytorch/pytorch"}]
    assert [r["id"] for r in _with_other_projects(path, new)] == ["cuda.a.3", "cuda.b.2"]
    assert _with_other_projects(tmp_path / "none.jsonl", new) == new


@pytest.mark.parametrize("fmt, answers", [
    ("{peer} disconnected\n", False), ("Resumed {step}", False), ("console", False), ("HANDLE {h}", False),
    ("cudaDriverVersion {v}", True), ("Connection to {peer} closed", True), ("setegid: {err}", True),
    # free text first and one word any program says: "X failed: Y", "X is finished."
    ("{message} failed: {err}", False), ("{comp} is finished.", False), ("{func}: Failed in {t}s", False),
    ("{func}: Returned {status} : {args}", True), ("{net}/Plugin: {err}", True), ("{hosts}: {tasks}: Completed", True),
    ("ibv_reg_mr failed: {err}", True),
    # or of a name it was given: "X does not exist", "X not found", "X is not supported"
    ("{self.__name__}.{name} does not exist", False), ("{libpath} not found\n", False),
    ("{platform.system()} is not supported!!!", False), ("{__func__}: invalid {step_id}", False),
    ("{name} does not exist in the checkpoint shard {shard}", True),
])
def test_a_record_whose_only_fixed_text_is_one_plain_word_answers_nothing(fmt, answers):
    from indexer.catalog.records import CatalogRecord

    row = json.loads((ROOT / "kb" / "catalog" / "nccl.jsonl").read_text(encoding="utf-8").splitlines()[0])
    row.update(format=fmt, matchable=True, title={"en": "t", "zh": "标题"}, explanation={"en": "e", "zh": "说明"})
    assert CatalogRecord.model_validate(row).answers is answers


NVIDIA_SOURCE = r'''
static void f(nv_state_t *nv, NV_STATUS status)
{
    NV_DEV_PRINTF(NV_DBG_ERRORS, nv, "RmInitAdapter failed! (0x%x:0x%x:%d)\n", a, b, c);
    NV_DEV_PRINTF_STATUS(NV_DBG_ERRORS, nv, status, "Failed to allocate event");
    nv_printf(NV_DBG_INFO, "NVRM: only printed with a verbose debug level\n");
    nv_printf(debuglevel, "NVRM: %s", msg);
    #define XID_PRINT_WITH_ATTR(attr, ...)                                          \
        do {                                                                        \
            portDbgPrintf("NVRM: Xid (" attr "): %d, pid=%s, name=%s, %s%s\n",  \
                          __VA_ARGS__, context.xid, pidStr, procName,           \
                          pMsg, rootCauseXidStr);                                   \
        } while (0)
}
'''


def test_nvidia_driver_prints_with_their_prefixes_and_the_xid_macro():
    from indexer.catalog.extract import nvidia_file

    occ = nvidia_file("src/nvidia/arch/nvalloc/unix/src/osinit.c", NVIDIA_SOURCE)
    by_kind = {o.kind: o for o in occ}
    assert [o.kind for o in occ] == ["NV_DEV_PRINTF", "NV_DEV_PRINTF_STATUS", "nv_printf", "portDbgPrintf"]
    rx = {o.kind: re2.compile(to_pattern(list(o.pieces))[0]) for o in occ}
    assert rx["NV_DEV_PRINTF"].search("NVRM: GPU 0000:a1:00.0: RmInitAdapter failed! (0x62:0x40:2168)")
    assert rx["NV_DEV_PRINTF_STATUS"].search("NVRM: GPU 0000:a1:00.0: Failed to allocate event (0x51)")
    assert by_kind["nv_printf"].level == "INFO" and by_kind["NV_DEV_PRINTF"].level == "ERROR"
    # the macro's own argument (the PCI / GPU-instance text) is a wildcard; the values after it
    # are named after their own arguments, not shifted onto __VA_ARGS__
    m = rx["portDbgPrintf"].search("NVRM: Xid (PCI:0000:01:00 GPU-I:05): 94, pid=7194, name=python, Contained: CE")
    assert m and m.group("xid") == "94" and m.group("proc_name") == "python"
    assert rx["portDbgPrintf"].search("NVRM: Xid (PCI:0000:05:00): 79, pid='<unknown>', name=<unknown>, GPU has fallen off the bus.")


def test_nvidia_tags_are_the_first_and_last_release_of_each_branch():
    from indexer.catalog.spec import nvidia_tags

    assert nvidia_tags(["515.43.04", "515.48.07", "515.105.01", "595.45.04", "595.44.02", "vdpau-1"]) == [
        "515.43.04", "515.105.01", "595.44.02", "595.45.04"]


LINUX_SOURCE = r'''
#define pr_fmt(fmt) "oomtest: " fmt
static void f(struct mlx5_core_dev *dev, struct pci_dev *pdev, struct amdgpu_device *adev)
{
	pr_err("%s: Killed process %d (%s) total-vm:%lukB\n", message, pid, comm, vm);
	pr_warn("%s invoked oom-killer: gfp_mask=%#x(%pGg), order=%d\n", comm, gfp, &gfp, order);
	mlx5_core_err(dev, "device's health compromised - reached miss count\n");
	mlx5_core_info(dev, "Port module event: module %u, %s\n", module, status);
	pci_info(pdev, "%u.%03u Gb/s available PCIe bandwidth\n", bw / 1000, bw % 1000);
	DRM_ERROR("ring %s timeout\n", name);
	DRM_INFO("VRAM is lost due to GPU reset!\n");
	pr_debug("never in a release log\n");
}
'''


def test_linux_driver_prints_carry_their_prefixes():
    from indexer.catalog.extract import linux_file

    occ = linux_file("drivers/net/x.c", LINUX_SOURCE)
    assert [o.kind for o in occ] == ["pr_err", "pr_warn", "mlx5_core_err", "mlx5_core_info", "pci_info",
                                     "DRM_ERROR", "DRM_INFO"]
    rx = [re2.compile(to_pattern(list(o.pieces))[0]) for o in occ]
    assert rx[0].search("oomtest: Out of memory: Killed process 698405 (python) total-vm:49978204kB")
    # the kernel's %pGg prints a flag list: a text conversion, not a pointer
    assert rx[1].search("oomtest: python invoked oom-killer: gfp_mask=0x100cca(GFP_HIGHUSER_MOVABLE), order=0")
    assert rx[2].search("mlx5_core 0000:41:00.0: poll_health:852:(pid 0): device's health compromised - reached miss count")
    assert rx[3].search("mlx5_core 0004:01:00.0: Port module event: module 0, Cable plugged")
    assert rx[4].search("mlx5_core 0004:01:00.0: 63.008 Gb/s available PCIe bandwidth")
    assert rx[5].search("[drm:amdgpu_job_timedout [amdgpu]] *ERROR* ring gfx_0.0.0 timeout")
    assert rx[6].search("[drm] VRAM is lost due to GPU reset!")
    assert [o.level for o in occ][:3] == ["error", "warning", "error"]


def test_netdev_ibdev_and_mlx5_ib_prints_carry_their_prefixes():
    from indexer.catalog.extract import linux_file

    src = textwrap.dedent('''
        static void f(struct mlx5e_priv *priv, struct mlx5_ib_dev *dev, struct ib_device *ibdev)
        {
            netdev_info(priv->netdev, "Link down\\n");
            mlx5_ib_warn(dev, "%s error cqe on cqn 0x%x:\\n", kind, cqn);
            mlx5_ib_dbg(dev, "syndrome 0x%x, vendor syndrome 0x%x\\n", s, v);
            ibdev_warn(ibdev, "port %d is not active\\n", port);
            netdev_dbg(priv->netdev, "not printed without dynamic debug\\n");
        }
    ''')
    occ = linux_file("drivers/infiniband/hw/mlx5/cq.c", src)
    assert [(o.kind, o.level) for o in occ] == [("netdev_info", "info"), ("mlx5_ib_warn", "warning"),
                                                ("mlx5_ib_dbg", "debug"), ("ibdev_warn", "warning")]
    rx = [re2.compile(to_pattern(list(o.pieces))[0]) for o in occ]
    m = rx[0].search("mlx5_core 0000:af:00.1 enp175s0f1: Link down")
    assert m and m.group("device") == "mlx5_core 0000:af:00.1" and m.group("netdev") == "enp175s0f1"
    assert rx[1].search("infiniband mlx5_2: mlx5_poll_one:611:(pid 4121): Requester error cqe on cqn 0x1a2:")
    assert rx[2].search("infiniband mlx5_2: mlx5_poll_one:614:(pid 4121): syndrome 0x4, vendor syndrome 0x51")
    assert rx[3].search("infiniband mlx5_1: port 1 is not active")
    assert not rx[1].search("infiniband mlx5_2: Requester error cqe on cqn 0x1a2:")


def test_amdgpu_files_print_with_amdgpus_dev_fmt():
    from indexer.catalog.extract import linux_file

    occ = linux_file("drivers/gpu/drm/amd/amdgpu/amdgpu_device.c",
                     'void f(struct amdgpu_device *adev) { dev_info(adev->dev, "GPU reset begin!\\n"); }')
    assert re2.compile(to_pattern(list(occ[0].pieces))[0]).search("amdgpu 0000:08:00.0: amdgpu: GPU reset begin!")


def test_kernel_printk_levels_string_macros_and_module_names():
    """printk(KERN_CRIT "...") is a message at that level and a bare printk (a continuation)
    is not; HW_ERR prints "[Hardware Error]: "; a built-in object's KBUILD_MODNAME is its file's
    name (traps.c prints "traps: "), and the machine-check files take "mce: " from the header
    they include."""
    from indexer.catalog.extract import linux_file

    src = textwrap.dedent('''
        #define pr_fmt(fmt) KBUILD_MODNAME ": " fmt
        static void f(int cpu, int pct)
        {
            printk(KERN_CRIT "CPU#%d Utilization every %llus during lockup:\\n", cpu, s);
            printk("continued %d\\n", cpu);
            printk(level, "level in a variable %d\\n", cpu);
            pr_info("%s[%d] general protection fault ip:%lx sp:%lx error:%lx", comm, pid, ip, sp, err);
        }
    ''')
    occ = linux_file("arch/x86/kernel/traps.c", src)
    assert [(o.kind, o.level) for o in occ] == [("printk", "fatal"), ("pr_info", "info")]
    rx = [re2.compile(to_pattern(list(o.pieces))[0]) for o in occ]
    assert rx[0].search("CPU#3 Utilization every 4s during lockup:")
    assert not str(occ[0].pieces[0]).startswith("traps")  # printk does not apply pr_fmt
    assert "traps: " in occ[1].pieces[0]
    assert rx[1].search("traps: python[4242] general protection fault ip:7f3a sp:7ffd error:0")
    mce = linux_file("arch/x86/kernel/cpu/mce/core.c",
                     'static void p(struct mce *m) { pr_emerg(HW_ERR "CPU %d: Machine Check: %Lx Bank %d: %016Lx\\n",'
                     ' m->extcpu, m->mcgstatus, m->bank, m->status); }')
    m = re2.compile(to_pattern(list(mce[0].pieces))[0]).search(
        "mce: [Hardware Error]: CPU 12: Machine Check: 0 Bank 7: be00000000800400")
    assert m and m.group("bank") == "7"
    # a pr_fmt redefined further down applies below its definition only (mm/memory-failure.c)
    mf = linux_file("mm/memory-failure.c", '#define pr_fmt(fmt) "Memory failure: " fmt\n'
                    'void a(void) { pr_err("%#lx: already hardware poisoned\\n", pfn); }\n'
                    '#undef pr_fmt\n#define pr_fmt(fmt) "Soft offline: " fmt\n'
                    'void b(void) { pr_info("%#lx: invalidated\\n", pfn); }\n')
    assert [o.pieces[0] for o in mf] == ["Memory failure: ", "Soft offline: "]
    # a multi-file module's name is not its file's: mlx5 files keep the old reading
    mlx = linux_file("drivers/net/ethernet/mellanox/mlx5/core/x.c",
                     '#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt\nvoid f(void) { pr_err("boom %d\\n", 1); }')
    assert "x: " not in "".join(p for p in mlx[0].pieces if isinstance(p, str))


def test_nvidia_64bit_conversion_macros_and_the_pci_address_pair():
    """``"%" NvU64_fmtu`` is one conversion and ``NV_PCI_DEV_FMT`` with ``NV_PCI_DEV_FMT_ARGS(nv)``
    prints four values: the values after them keep their own names."""
    from indexer.catalog.extract import nvidia_file

    src = ('void f(void) { nv_printf(NV_DBG_ERRORS, "NVRM: BAR%d is %" NvU64_fmtu "M @ 0x%" NvU64_fmtx " (PCI:"'
           ' NV_PCI_DEV_FMT ")\\n", i, size, addr, NV_PCI_DEV_FMT_ARGS(nv)); }')
    occ = nvidia_file("kernel-open/nvidia/nv-pci.c", src)[0]
    pattern, groups = to_pattern(list(occ.pieces))
    m = re2.compile(pattern).search("NVRM: BAR1 is 0M @ 0x0 (PCI:0000:3b:00.0)")
    assert m and m.group("value") == "0" and m.group("addr") == "0"  # "size" is a skipped name
    assert [arg for _name, arg in groups][-4:] == [f"nv->pci_info.{f}" for f in ("domain", "bus", "slot", "function")]


def _one_file_tree(version: str, path: str, text: str):
    from indexer.catalog.sources import Tree, TreeFile

    return Tree(version, "test", (TreeFile(path, "0" * 40, lambda: text),))


TEMPLATE_SOURCE = textwrap.dedent('''
    from string import Template

    _FAILURE_FORMAT_TEMPLATE = """[${idx}]:
      time      : ${time}
      rank      : ${rank} (local_rank: ${local_rank})
      traceback : ${message}"""

    class ProcessFailure:
        def __post_init__(self):
            if self.exitcode < 0:
                self.message = f"Signal {-self.exitcode} ({self.signal_name()}) received by PID {self.pid}"
            else:
                self.message = "To enable traceback see: https://pytorch.org/docs/stable/elastic/errors.html"
            self.other = "not a message attribute"

    class ChildFailedError(Exception):
        def format_msg(self):
            title = f"{self.name} FAILED"
            return Template("""
    ${title}
    Root Cause (first observed failure):
    ${root} costs $$5""").substitute(title=title, root=self.root)

        def _format_failure(self, idx, rank, failure):
            return Template(_FAILURE_FORMAT_TEMPLATE).substitute(
                idx=idx, time=failure.timestamp_isoformat(), rank=rank,
                local_rank=failure.local_rank, message=failure.message)
''')


def test_string_templates_and_message_attributes_are_messages():
    from indexer.catalog.formats import display_format

    path = "torch/distributed/elastic/multiprocessing/errors/__init__.py"
    occs = python_file(path, TEMPLATE_SOURCE)
    got = {(o.kind, display_format(list(o.pieces))) for o in occs}
    assert ("Template.substitute", "[{idx}]:\n  time      : {time}\n  rank      : {rank} (local_rank: "
            "{local_rank})\n  traceback : {message}") in got
    # a substituted value that is itself a string we can read is inlined, ``$$`` is a dollar
    assert ("Template.substitute", "\n{self.name} FAILED\nRoot Cause (first observed failure):\n{root} costs $5") in got
    assert ("self.message =", "Signal {-self.exitcode} ({self.signal_name()}) received by PID {self.pid}") in got
    assert ("self.message =", "To enable traceback see: https://pytorch.org/docs/stable/elastic/errors.html") in got
    assert not any("not a message attribute" in f for _, f in got)
    # outside the files chosen for it, an attribute assignment is not a message
    assert not any(o.kind == "self.message =" for o in python_file("torch/distributed/other.py", TEMPLATE_SOURCE))
    # each printed line of the report is matched by its own part
    merged = collect("torch_elastic", "pytorch/pytorch",
                     [_one_file_tree("v2.6.0", path, TEMPLATE_SOURCE)], python_file)
    rows = [to_record(m, {}) for m in merged.values()]
    report = next(r for r in rows if r["format"].startswith("[{idx}]"))
    from indexer.catalog.lines import line_parts

    parts = {p["format"].strip(): re2.compile(p["pattern"]) for p in line_parts(report)}
    assert parts["rank      : {rank} (local_rank: {local_rank})"].search("  rank      : 3 (local_rank: 3)")
    assert parts["traceback : {message}"].search("  traceback : Signal 9 (SIGKILL) received by PID 1234")
    # a line with too little fixed text to be recognised alone gets no part
    assert "time      : {time}" not in parts


def test_deepspeed_op_builder_warnings_are_read_through_self_warning():
    from indexer.catalog.formats import display_format
    from indexer.catalog.spec import PY_PROJECTS

    src = textwrap.dedent('''
        class AsyncIOBuilder(OpBuilder):
            def is_compatible(self, verbose=False):
                if not found:
                    self.warning(f"{self.NAME} requires the dev libaio .so object and headers but these were not found.")
                other.warning("a receiver that is not the builder")
                self.warning(f"only 2.3.{0,1} and 3.0.0 are known")
    ''')
    occs = python_file("op_builder/async_io.py", src, PY_PROJECTS["deepspeed"].dialect)
    got = {(o.level, display_format(list(o.pieces))) for o in occs}
    assert ("warning", "{self.NAME} requires the dev libaio .so object and headers but these were not found.") in got
    # an f-string field holding a tuple literal prints the tuple
    assert ("warning", "only 2.3.(0, 1) and 3.0.0 are known") in got
    assert not any("receiver" in f for _, f in got)


def test_a_logger_named_after_its_area_is_a_logger():
    src = 'def get_accelerator():\n    accel_logger.info(f"Setting ds_accelerator to {name} ({how})")\n    accelerator.info("not a logger")\n'
    occs = python_file("accelerator/real_accelerator.py", src)
    assert [(o.level, o.kind) for o in occs] == [("info", "logger.info")]


def test_torch_cpp_messages_built_in_a_variable_and_socket_record_error():
    from indexer.catalog.formats import display_format

    src = textwrap.dedent(r'''
        #define C10D_NCCL_CHECK(cmd, failureReason)                                   \
          do {                                                                        \
            if (result != ncclSuccess) {                                              \
              std::string err = "NCCL error in: " + std::string(__FILE__) + ":" +     \
                  std::to_string(__LINE__) + ", " + ncclGetErrorWithVersion(result) + \
                  "\n" + getNcclErrorDetailStr(result, failureReason);                \
              TORCH_CHECK_WITH(DistBackendError, false, err);                         \
            }                                                                         \
          } while (0)
        std::string getNcclErrorDetailStr(ncclResult_t error) {
          std::string interpret;
          switch (error) {
            case ncclInternalError:
              interpret = "ncclInternalError: Internal check failed.";
              break;
          }
          std::string name = "short";
          int count = 3;
          return interpret;
        }
        bool SocketListenOp::tryListen(const ::addrinfo& addr) {
          if (::bind(socket_->handle(), addr.ai_addr, addr.ai_addrlen) != 0) {
            recordError(
                "The server socket has failed to bind to {} {}.",
                addr,
                getSocketError());
          }
        }
    ''')
    occs = torch_cpp_file("torch/csrc/distributed/c10d/NCCLUtils.hpp", src)
    got = {(o.level, o.kind, display_format(list(o.pieces))) for o in occs}
    assert ("text", "err =", "NCCL error in: {std::string(__FILE__)}:{std::to_string(__LINE__)}, "
            "{ncclGetErrorWithVersion(result)}\n{getNcclErrorDetailStr(result, failureReason)}") in got
    assert ("text", "interpret =", "ncclInternalError: Internal check failed.") in got
    assert ("WARNING", "recordError", "The server socket has failed to bind to {addr} {getSocketError()}.") in got
    # a variable whose name does not say it holds a message, or a short literal, is not one
    assert not any("short" in f for _, _, f in got)


def test_torch_cpp_append_runs_returned_hints_and_stringified_macro_arguments():
    from indexer.catalog.formats import display_format

    src = textwrap.dedent(r'''
        void c10_cuda_check_implementation(const int32_t err) {
          std::string check_message;
        #ifndef STRIP_ERROR_MESSAGES
          check_message.append("CUDA error: ");
          check_message.append(cudaGetErrorString(cuda_error));
          check_message.append(c10::cuda::get_cuda_check_suffix());
        #endif
          if (include_device_assertions) {
            check_message.append(c10_retrieve_device_side_assertion_info());
          }
          TORCH_CHECK(false, check_message);
        }
        const char* get_cuda_check_suffix() noexcept {
          if (blocking_enabled) {
            return "";
          } else {
            return "\nCUDA kernel errors might be asynchronously reported at some"
                   " other API call, so the stacktrace below might be incorrect.";
          }
        }
        #define TORCH_CUDABLAS_CHECK(EXPR)                              \
          do {                                                          \
            cublasStatus_t __err = EXPR;                                \
            TORCH_CHECK(__err == CUBLAS_STATUS_SUCCESS,                 \
                        "CUDA error: ",                                 \
                        at::cuda::blas::_cublasGetErrorEnum(__err),     \
                        " when calling `" #EXPR "`");                   \
          } while (0)
    ''')
    occs = torch_cpp_file("c10/cuda/CUDAException.cpp", src)
    got = {(o.kind, display_format(list(o.pieces))) for o in occs}
    # the appends before the #endif are one message; the one under the `if` is not part of it
    assert ("check_message.append", "CUDA error: {cudaGetErrorString(cuda_error)}{c10::cuda::get_cuda_check_suffix()}") in got
    assert ("return", "\nCUDA kernel errors might be asynchronously reported at some other API call, "
            "so the stacktrace below might be incorrect.") in got
    assert ("TORCH_CHECK", "CUDA error: {at::cuda::blas::_cublasGetErrorEnum(__err)} when calling `{EXPR}`") in got


UCX_SOURCE = r'''
#define UCT_IB_IFACE_FMT "%s:%d/%s"
static void f(uct_ib_iface_t *iface, int ret, size_t len, ucs_log_level_t log_level)
{
    ucs_error("ibv_create_cq(cqe=%d) failed: %m", cqe);
    ucs_warn("unused environment variable%s: %s", plural, names);
    ucs_diag("memory is detached - UCX may not work correctly");
    ucs_fatal("failed to allocate %zu bytes for " UCT_IB_IFACE_FMT, len, UCT_IB_IFACE_ARG(iface));
    ucs_log(log_level, "%s on " UCT_IB_IFACE_FMT " (synd 0x%x vend 0x%x)",
            err_info, UCT_IB_IFACE_ARG(iface), synd, vend);
    ucs_log_fatal_error("Caught signal %d (%s: %s%s)", signo, strsignal(signo), cause, buf);
    ucs_debug("never in a release build %" PRIu64, n);
}
'''


def test_ucx_log_calls_levels_and_format_macros():
    from indexer.catalog.extract import ucx_file

    occ = ucx_file("src/uct/ib/base/ib_iface.c", UCX_SOURCE)
    assert [o.kind for o in occ] == ["ucs_error", "ucs_warn", "ucs_diag", "ucs_fatal", "ucs_log", "ucs_log_fatal_error"]
    assert [o.level for o in occ] == ["error", "warning", "diag", "fatal", "error", "fatal"]
    rx = [re2.compile(to_pattern(list(o.pieces))[0]) for o in occ]
    # ucs_fatal prepends "Fatal: "; the interface macro expands to "device:port/IB|RoCE"
    m = rx[3].search("Fatal: failed to allocate 4096 bytes for mlx5_2:1/RoCE")
    assert m and m.group("device") == "mlx5_2" and m.group("port") == "1" and m.group("link_layer") == "RoCE"
    m = rx[4].search("Transport retry count exceeded on mlx5_0:1/IB (synd 0x15 vend 0x81)")
    assert m and m.group("device") == "mlx5_0" and m.group("link_layer") == "IB"
    assert rx[5].search("Caught signal 11 (Segmentation fault: address not mapped to object at address 0x8)")


def test_ucx_and_nccl_tests_tags():
    from indexer.catalog.spec import nccl_tests_tags, ucx_tags

    assert ucx_tags(["v1.1.0", "v1.7.0", "v1.8.0", "v1.8.1", "v1.9.0-rc1", "v1.9.0", "v1.10.1", "v1.10.0"]) == [
        "v1.7.0", "v1.8.1", "v1.9.0", "v1.10.1"]
    assert nccl_tests_tags(["v2.0.0", "v2.9.0", "v2.10.0", "v2.13.9", "delete"]) == ["v2.10.0", "v2.13.9"]


NCCL_TESTS_SOURCE = r'''
#define NCCLCHECK(cmd) do { ncclResult_t res = cmd; if (res != ncclSuccess) { \
    printf("%s: Test NCCL failure %s:%d '%s'\n", hostname, __FILE__, __LINE__, ncclGetErrorString(res)); \
    return testNcclError; } } while(0)
void report() {
  len += snprintf(line+len, MAX_LINE-len, "#  Rank %2d Group %2d Pid %6d on %10s device %2d [0x%02x] %s\n",
                  rank, color, getpid(), hostname, cudaDev, prop.pciBusID, prop.name);
  snprintf(name, 64, "%s", other);
  PRINT("# Avg bus bandwidth    : %g %s\n", bw[0], ok);
}
'''


def test_nccl_tests_prints_headers_and_failures():
    from indexer.catalog.extract import nccl_tests_file

    occ = nccl_tests_file("src/common.h", NCCL_TESTS_SOURCE)
    assert [(o.kind, o.level) for o in occ] == [("printf", "error"), ("snprintf", "print"), ("PRINT", "print")]
    rx = [re2.compile(to_pattern(list(o.pieces))[0]) for o in occ]
    assert rx[0].search("node1: Test NCCL failure common.cu:1005 'unhandled system error (run with NCCL_DEBUG=INFO for details)'")
    m = rx[1].search("#  Rank  0 Group  0 Pid   1320 on ip-172-31-20-228 device  0 [0x00] Tesla V100-SXM2-16GB")
    assert m and m.group("getpid") == "1320"
    assert rx[2].search("# Avg bus bandwidth    : 142.652 ")


OFI_SOURCE = r'''
int nccl_net_ofi_init(ncclDebugLogger_t logFunction)
{
    NCCL_OFI_INFO(NCCL_INIT | NCCL_NET, "Initializing " PACKAGE_STRING);
    NCCL_OFI_INFO(NCCL_INIT | NCCL_NET, "Using Libfabric version %u.%u",
                  FI_MAJOR(fab_version), FI_MINOR(fab_version));
    NCCL_OFI_WARN("Failed to register memory of size %" PRIu64 " on device %d", size, dev_id);
    NCCL_OFI_TRACE(NCCL_NET, "compiled out of releases %d", n);
}
'''


def test_aws_ofi_nccl_logs_carry_the_net_ofi_prefix():
    from indexer.catalog.extract import ofi_nccl_file

    occ = ofi_nccl_file("src/nccl_ofi_net.cpp", OFI_SOURCE)
    assert [(o.kind, o.level) for o in occ] == [("NCCL_OFI_INFO", "INFO"), ("NCCL_OFI_INFO", "INFO"), ("NCCL_OFI_WARN", "WARN")]
    rx = [re2.compile(to_pattern(list(o.pieces))[0]) for o in occ]
    # the macro prepends "NET/OFI " (include/nccl_ofi_log.h); PACKAGE_STRING is a value, not text
    assert rx[0].search("NET/OFI Initializing aws-ofi-nccl 1.17.1")
    assert rx[1].search("NET/OFI Using Libfabric version 1.22")
    assert not rx[1].search("Using Libfabric version 1.22")
    assert rx[2].search("NET/OFI Failed to register memory of size 4096 on device 3")


def test_aws_ofi_nccl_tags_one_per_minor_plain_tag_first():
    from indexer.catalog.spec import ofi_nccl_tags

    tags = ["v1.3.0", "v1.3.0-aws", "v1.4.0", "v1.4.0aws", "v1.4.0-aws", "v1.7.3-aws", "v1.7.4-aws", "v1.14.0",
            "v1.14.2", "v1.7.0rc1-aws"]
    assert ofi_nccl_tags(tags) == ["v1.4.0", "v1.7.4-aws", "v1.14.2"]


def test_nccl_tags_start_at_the_first_published_nccl2_source():
    from indexer.catalog.spec import nccl_tags

    tags = ["v1.3.4-1", "v2.2.13-1", "v2.3.5-5", "v2.3.7-1", "v2.4.2-1", "v2.30.7-1", "nccl4py-v0.1.1", "inc_nsteps_v2.16"]
    assert nccl_tags(tags) == ["v2.3.5-5", "v2.3.7-1", "v2.4.2-1", "v2.30.7-1"]


def _torch_src(root, version, body):
    d = root / version / "torch" / "csrc" / "distributed" / "c10d"
    d.mkdir(parents=True, exist_ok=True)
    (d / "Store.cpp").write_text(body)


def test_source_archive_records_are_versioned_by_the_archives_read_now(tmp_path):
    from indexer.catalog.run import build

    out, src = tmp_path / "catalog", tmp_path / "torch-src"
    out.mkdir()
    # a record a full build gave versions to: kept as it is
    full = {"id": "torch_distributed.store.0", "repo": "pytorch/pytorch", "file": "torch/csrc/distributed/c10d/Store.cpp",
            "line": 1, "level": "error", "format": "old", "versions": ["v2.0.1"]}
    (out / "torch_distributed.jsonl").write_text(json.dumps(full) + "\n")
    _torch_src(src, "2.6.0", 'void f() { TORCH_CHECK(x, "store key missing in the map"); }\n')
    build(out, {"torch-src": str(src)})
    rows = {json.loads(l)["format"]: json.loads(l) for l in (out / "torch_distributed.jsonl").read_text().splitlines()}
    assert rows["store key missing in the map"]["versions"] == ["v2.6.0"]
    assert rows["store key missing in the map"]["versions_from"] == "source archives"
    # a newer archive that still holds the message extends its versions; a new message is added
    _torch_src(src, "2.12.1", 'void f() { TORCH_CHECK(x, "store key missing in the map"); '
                              'TORCH_CHECK(y, "store value is too large to send"); }\n')
    build(out, {"torch-src": str(src)})
    rows = {json.loads(l)["format"]: json.loads(l) for l in (out / "torch_distributed.jsonl").read_text().splitlines()}
    assert rows["store key missing in the map"]["versions"] == ["v2.6.0", "v2.12.1"]
    assert rows["store value is too large to send"]["versions"] == ["v2.12.1"]
    assert rows["old"]["versions"] == ["v2.0.1"]


def test_net_plugin_adds_its_own_formats_and_leaves_copied_nccl_code_to_nccl(tagged_repo, tmp_path):
    """nccl-rdma-sharp-plugins carries copies of NCCL's socket code: a format NCCL prints too
    stays NCCL's record; the plugin's own are added, with its tags and its default branch as a
    dated version; a second build gives the same bytes."""
    from indexer.catalog.run import build
    from indexer.catalog.spec import sharp_plugin_tags

    assert sharp_plugin_tags(["v1.0", "v2.1.0", "hpcx-v2.8.0", "v2.0.0-rc1"]) == ["v1.0", "v2.1.0"]
    plugin = tmp_path / "plugin"
    (plugin / "src").mkdir(parents=True)
    _git(plugin, "init", "-q")
    (plugin / "src" / "init.cc").write_text('void f() { INFO(NCCL_INIT, "kept %s", s); }\n')  # NCCL's copy
    (plugin / "src" / "ucx_plugin.c").write_text('void g() { WARN("Failed: UCX error %s:%d \'%d\' %s", f, l, e, s); }\n')
    _git(plugin, "add", "-A")
    _git(plugin, "commit", "-qm", "a")
    _git(plugin, "tag", "v2.1.0")
    out = tmp_path / "kb" / "catalog"
    build(out, {"nccl": str(tagged_repo), "rccl": str(tagged_repo)})
    sources = {"nccl-rdma-sharp-plugins": str(plugin / ".git")}
    build(out, sources)
    first = (out / "nccl.jsonl").read_bytes()
    build(out, sources)
    assert (out / "nccl.jsonl").read_bytes() == first
    rows = [json.loads(line) for line in first.decode().splitlines()]
    by_format = {r["format"]: r for r in rows}
    assert by_format["kept {s}"]["repo"] == "NVIDIA/nccl"
    assert sum(r["format"] == "kept {s}" for r in rows) == 1
    own = by_format["Failed: UCX error {f}:{l} '{e}' {s}"]
    assert own["repo"] == "Mellanox/nccl-rdma-sharp-plugins"
    assert own["versions"][0] == "v2.1.0" and own["versions"][1].startswith("master-")


def test_gloo_error_messages_enforce_checks_and_stderr_logs():
    """Gloo's macros print their own "[file:line] " head: GLOO_ERROR_MSG (thrown or handed to
    signalException), GLOO_ENFORCE's "[enforce fail at file:line] <condition>. <msg>", the
    comparing forms' "<x> vs <y>", and GLOO_WARN's "[file:line] WARN msg"."""
    from indexer.catalog.extract import gloo_file

    code = textwrap.dedent('''
        bool Pair::read() {
          signalException(GLOO_ERROR_MSG("Read error ", peer_.str(), ": ", strerror(errno)));
          GLOO_THROW_IO_EXCEPTION(GLOO_ERROR_MSG("Nested message from ", x));
          GLOO_ENFORCE(op.preamble.length <= op.nbytes, "short ", n);
          GLOO_ENFORCE_EQ(inputs.size(), outputs.size(), "size mismatch");
          GLOO_ENFORCE_EQ(recvCount, sendCount);
          GLOO_ENFORCE_EQ(a, b);  // too little fixed text to know a line by
          GLOO_WARN("Ignoring unknown slot ", slot);
          GLOO_THROW_INVALID_OPERATION_EXCEPTION("Unexpected state: ", state_);
        }
    ''')
    lines = {
        "[../third_party/gloo/gloo/transport/tcp/pair.cc:589] Read error [10.0.0.2]:25266: Connection reset by peer": "text",
        "[enforce fail at ../third_party/gloo/gloo/transport/tcp/pair.cc:446] op.preamble.length <= op.nbytes. short 4": "raise gloo::EnforceNotMet",
        "[enforce fail at gloo/allreduce.cc:80] inputs.size() == outputs.size(). 2 vs 1. size mismatch": "raise gloo::EnforceNotMet",
        "[enforce fail at gloo/allreduce.cc:81] recvCount == sendCount. 2 vs 1": "raise gloo::EnforceNotMet",
        "[gloo/transport/tcp/pair.cc:12] WARN Ignoring unknown slot 7": "WARN",
        "[gloo/transport/tcp/pair.cc:99] Unexpected state: 3": "raise gloo::InvalidOperationException",
        "[gloo/x.cc:1] Nested message from 3": "text",
    }
    found = gloo_file("gloo/transport/tcp/pair.cc", code)
    assert len(found) == 7  # the GLOO_THROW around a GLOO_ERROR_MSG is read once, at the inner call
    for line, level in lines.items():
        hits = [o for o in found if _matches(o.pieces, line)]
        assert [o.level for o in hits] == [level], line
    assert not any(_matches(o.pieces, "Read error [10.0.0.2]:25266: Connection reset by peer") for o in found)


def test_a_project_without_tags_is_read_at_the_last_commit_of_each_year(tmp_path):
    from indexer.catalog.run import _yearly_trees

    repo = tmp_path / "gloo"
    (repo / "gloo").mkdir(parents=True)
    _git(repo, "init", "-q")
    for i, date in enumerate(["2017-05-01", "2018-03-01", "2018-11-30", "2020-02-02"]):
        (repo / "gloo" / "a.cc").write_text(f"// {i}\n")
        _git(repo, "add", "-A")
        subprocess.run(["git", "-C", str(repo), "commit", "-qm", str(i)], check=True, capture_output=True,
                       env={"GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@t", "GIT_COMMITTER_NAME": "t",
                            "GIT_COMMITTER_EMAIL": "t@t", "GIT_AUTHOR_DATE": f"{date}T12:00:00",
                            "GIT_COMMITTER_DATE": f"{date}T12:00:00", "PATH": "/usr/bin:/bin"})
    trees = _yearly_trees(GitRepo(repo / ".git"), "gloo", ("gloo",), (".cc",), 2018)
    # 2017 is before the first year; 2018's last commit; 2020's, which is also the newest (read once)
    assert [t.version for t in trees] == ["gloo-2018-11-30", "gloo-2020-02-02"]


def test_torchelastic_messages_pytorch_still_prints_stay_pytorchs_record(tmp_path):
    """torchelastic 0.2's agent became torch.distributed.elastic: a message both print is one
    record, PyTorch's, with torchelastic's releases as other_versions; torchelastic's own
    messages are added as its records; a rebuild gives the same bytes."""
    from indexer.catalog.run import build

    out = tmp_path / "kb" / "catalog"
    out.mkdir(parents=True)
    torch_rec = to_record(next(iter(collect(
        "torch_elastic", "pytorch/pytorch", [_one_file_tree("v2.6.0", "torch/distributed/elastic/agent/server/api.py",
                                                            'log.error(f"[{role}] Worker group failed")\n')],
        python_file).values())), {})
    (out / "torch_elastic.jsonl").write_text(json.dumps(torch_rec) + "\n")
    repo = tmp_path / "elastic"
    (repo / "torchelastic" / "agent").mkdir(parents=True)
    _git(repo, "init", "-q")
    (repo / "torchelastic" / "agent" / "api.py").write_text(
        'log.error(f"[{role}] Worker group failed")\nlog.info(f"[{role}] All workers successfully finished.")\n')
    _git(repo, "add", "-A")
    _git(repo, "commit", "-qm", "a")
    _git(repo, "tag", "v0.2.1")
    build(out, {"torchelastic": str(repo / ".git")})
    first = (out / "torch_elastic.jsonl").read_bytes()
    build(out, {"torchelastic": str(repo / ".git")})
    assert (out / "torch_elastic.jsonl").read_bytes() == first
    rows = [json.loads(line) for line in first.decode().splitlines()]
    failed = [r for r in rows if r["format"] == "[{role}] Worker group failed"]
    assert len(failed) == 1 and failed[0]["repo"] == "pytorch/pytorch"
    assert failed[0]["other_versions"] == {"pytorch/elastic": ["v0.2.1"]}
    own = [r for r in rows if r["repo"] == "pytorch/elastic"]
    assert [r["format"] for r in own] == ["[{role}] All workers successfully finished."]


def test_older_wheels_add_their_messages_and_extend_the_span_of_shared_ones(tmp_path):
    """PyTorch wheels given alone (--source torch-wheels=DIR) add the formats no record holds,
    versioned by the wheels that print them, and a record they share gains those releases;
    the releases it had are kept, and the manifest keeps the wheels read by earlier runs."""
    from indexer.catalog.run import build

    out = tmp_path / "kb" / "catalog"
    def wheel(root, version, body):
        path = root / version / "torch" / "distributed" / "run.py"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(body)
    new = tmp_path / "new"
    wheel(new, "2.6.0", 'log.info(f"Using nproc_per_node={nproc_per_node}.")\n')
    build(out, {"torch-wheels": str(new)})
    old = tmp_path / "old"
    wheel(old, "1.9.0", 'log.info(f"Running torch.distributed.run with args: {sys.argv}")\n'
                        'log.info(f"Using nproc_per_node={nproc_per_node}.")\n')
    wheel(old, "1.10.2", 'log.info(f"Using nproc_per_node={nproc_per_node}.")\n')
    build(out, {"torch-wheels": str(old)})
    rows = {r["format"]: r for r in map(json.loads, (out / "torch_elastic.jsonl").read_text().splitlines())}
    assert rows["Using nproc_per_node={nproc_per_node}."]["versions"] == ["v1.9.0", "v1.10.2", "v2.6.0"]
    assert rows["Running torch.distributed.run with args: {sys.argv}"]["versions"] == ["v1.9.0"]
    manifest = json.loads((out / "manifest.json").read_text())
    assert [r["version"] for r in manifest["read"]["pytorch-python-additions"]] == ["v1.9.0", "v1.10.2", "v2.6.0"]


OMPI_HELP = """# -*- text -*-
# Copyright (c) 2004-2005 The Trustees of Indiana University.
#
[error in device init]
WARNING: There was an error initializing an OpenFabrics device.

  Local host:   %s
  Local device: %s
#
[short]
%s
#
[orterun:proc-aborted]
%s noticed that process rank %lu with PID %lu on node %s exited on signal %d.
#
"""

OMPI_SHOW_HELP = r'''
static void show_accumulated_duplicates(int fd, short event, void *context)
{
    for (item = opal_list_get_first(&abd_tuples);
         opal_list_get_end(&abd_tuples) != item;
         item = opal_list_get_next(item)) {
        if (tli->tli_display) {
            opal_output(0, "%d more process%s sent help message %s / %s",
                        tli->tli_count_since_last_display,
                        (tli->tli_count_since_last_display > 1) ? "es have" : " has",
                        tli->tli_filename, tli->tli_topic);
            opal_output(5, "debug stream output %s", x);
        }
    }
}
'''


def test_ompi_help_topics_become_their_headlines():
    """A help topic prints line by line: its first line is the record; the later field lines
    and topics too generic to recognise (a bare "%s") give none."""
    from indexer.catalog.extract import ompi_file

    occ = ompi_file("opal/mca/btl/openib/help-mpi-btl-openib.txt", OMPI_HELP)
    assert [(o.function, o.level, o.line) for o in occ] == [
        ("error in device init", "warning", 5), ("orterun:proc-aborted", "error", 14)]
    rx = re2.compile(to_pattern(list(occ[1].pieces), anchor_start=True)[0])
    assert rx.search("mpirun noticed that process rank 5 with PID 4242 on node gpu-2 exited on signal 9.")
    assert not ompi_file("ompi/runtime/ompi_mpi_init.c", OMPI_HELP)  # not a help file


def test_ompi_aggregated_help_line_has_one_record_per_branch():
    """``cond ? "es have" : " has"`` prints one of two texts: both become records, not a
    wildcard; the enclosing function is the definition, not the loop header's call."""
    from indexer.catalog.extract import ompi_file
    from indexer.catalog.spec import ompi_tags

    occ = ompi_file("orte/util/show_help.c", OMPI_SHOW_HELP)
    assert len(occ) == 2 and {o.function for o in occ} == {"show_accumulated_duplicates"}
    assert not any(o.anchored for o in occ)  # mpirun prints them after "[host:pid] "
    rxs = [re2.compile(to_pattern(list(o.pieces), anchor_start=False)[0]) for o in occ]
    line = "[node-3:12345] 3 more processes have sent help message help-mpi-btl-openib.txt / no device params found"
    assert sum(bool(rx.search(line)) for rx in rxs) == 1
    assert sum(bool(rx.search("[n:1] 1 more process has sent help message f.txt / t")) for rx in rxs) == 1
    assert ompi_tags(["v2.1.6", "v3.0.5", "v3.0.6", "v4.1.8", "v5.0.0rc1", "v5.0.10", "v5.0.9"]) == [
        "v3.0.6", "v4.1.8", "v5.0.10"]


def test_text_placeholders_keep_a_group_name_that_is_also_another_groups_argument():
    """In "{cid} (0x{cid_2})" the group cid prints the client's name (a lookup by cid) and
    cid_2 prints the argument `cid`. A writer's {cid} names the group, as writers are told;
    only a quoted argument that is no group's name is rewritten to its group."""
    from indexer.catalog.texts import _name_fields

    groups = {"cid": 'cid >= N ? "unknown" : names[cid]', "cid_2": "cid", "scope": "self.scope"}
    text = {"title": {"en": "client {cid} (0x{cid_2})", "zh": "client {cid}（0x{cid_2}）"},
            "explanation": {"en": "in {scope}, {other}", "zh": "在 {scope} 中"}}
    out = _name_fields(text, groups)
    assert out["title"]["en"] == "client {cid} (0x{cid_2})"
    assert out["explanation"]["en"] == "in {scope}, `other`"
    text = {"title": {"en": "in {self.scope}", "zh": "在 {self.scope} 中"}}
    assert _name_fields(text, groups)["title"]["en"] == "in {scope}"
    # written in arguments (it quotes {__name__}, which no group is named after): {name} is
    # the argument `name`, printed by group name_2
    groups = {"name": "__name__", "name_2": "name"}
    text = {"title": {"en": "{__name__} has no attribute {name}", "zh": "{__name__} 没有属性 {name}"}}
    assert _name_fields(text, groups)["title"]["en"] == "{name} has no attribute {name_2}"


def test_a_text_follows_its_place_only_to_a_record_that_prints_its_values():
    """Texts follow a record by (component, file, line) when a better reading changed its id;
    two formats of one line in different releases share that place, and the text of one must
    not land on the other (a title naming {num_actions} on a line that prints no count)."""
    from indexer.catalog.extract import linux_file

    src = 'void f(void) { netdev_warn(priv->netdev, "can\'t offload tuple modification with non-clear ct()\\n"); }'
    [occ] = linux_file("drivers/net/ethernet/mellanox/mlx5/core/en_tc.c", src)
    written = {"title": {"en": "mlx5e TC: {num_actions} pedit actions parsed", "zh": "mlx5e TC：已解析 {num_actions} 个 pedit 动作"},
               "explanation": {"en": "x", "zh": "x"}, "severity": "warning", "role": "root_cause"}
    place = ("at", "infiniband", occ.file, occ.line)
    merged = Merged("infiniband", "torvalds/linux", occ.level, occ.pieces, True, occ.kind, occ, ["v6.1.192"])
    assert to_record(merged, {place: written})["title"] is None
    fitting = dict(written, title={"en": "mlx5e TC: tuple rewrite on {netdev} refused", "zh": "mlx5e TC：{netdev} 上的 tuple 改写被拒绝"})
    assert to_record(merged, {place: fitting})["title"] == fitting["title"]



def test_a_text_follows_its_message_when_a_newly_read_file_prints_it_too(tmp_path):
    """A record's id names the file of its newest call; reading one more directory can move that
    call (Slurm's slurmctld prints messages that src/api printed before) and so the id. The text
    written for the message follows it by (component, level, format), and only where its
    placeholders fit; a format two old records shared says nothing about whose text it is."""
    import json

    from indexer.catalog.build import load_texts
    from indexer.catalog.extract import linux_file

    src = 'void f(void) { netdev_warn(priv->netdev, "can\'t offload tuple modification with non-clear ct()\\n"); }'
    [occ] = linux_file("drivers/net/ethernet/mellanox/mlx5/core/en_tc.c", src)
    merged = Merged("infiniband", "torvalds/linux", occ.level, occ.pieces, True, occ.kind, occ, ["v6.1.192"])
    fmt = to_record(merged, {})["format"]
    text = {"title": {"en": "mlx5e TC: tuple rewrite on {netdev} refused", "zh": "mlx5e TC：{netdev} 上的 tuple 改写被拒绝"},
            "explanation": {"en": "x", "zh": "x"}, "severity": "warning", "role": "root_cause"}
    old = dict(text, id="infiniband.elsewhere.0000", component="infiniband", file="drivers/other.c", line=7,
               level=occ.level, format=fmt)
    path = tmp_path / "infiniband.jsonl"
    path.write_text(json.dumps(old) + "\n", encoding="utf-8")
    assert to_record(merged, load_texts(path))["title"] == text["title"]
    twice = dict(old, id="infiniband.third.0001", file="drivers/third.c")
    path.write_text(json.dumps(old) + "\n" + json.dumps(twice) + "\n", encoding="utf-8")
    assert to_record(merged, load_texts(path))["title"] is None


def test_a_borrowed_text_stays_with_its_own_record_while_that_record_is_built(tmp_path):
    """A format read from an older tag can sit at the line of a written record (Slurm 1.1's
    pthread_create error at src/srun/launch.c:342, where a newer tag's "Received task exit
    notification" text was written): the text follows the place only when its own record is
    gone from the build, never to a second record while the first is still there."""
    import json

    from indexer.catalog.build import load_texts, write_records
    from indexer.catalog.extract import linux_file

    src = 'void f(void) { netdev_warn(priv->netdev, "can\'t offload tuple modification with non-clear ct()\\n"); }'
    [occ] = linux_file("drivers/net/ethernet/mellanox/mlx5/core/en_tc.c", src)
    merged = Merged("infiniband", "torvalds/linux", occ.level, occ.pieces, True, occ.kind, occ, ["v6.1.192"])
    text = {"title": {"en": "mlx5e TC: tuple rewrite on {netdev} refused", "zh": "mlx5e TC：{netdev} 上的 tuple 改写被拒绝"},
            "explanation": {"en": "x", "zh": "x"}, "severity": "warning", "role": "root_cause",
            "example": {"line": "mlx5_core 0000:08:00.0 eth2: a real line", "constructed": False}}
    # another message at that line number (PyTorch 2.12's abort at 2.6's trace-dump line) is not
    # this one: its text and example stay where they were written
    other = dict(text, id="infiniband.en_tc.00000000", component="infiniband", repo="torvalds/linux", file=occ.file,
                 line=occ.line, level=occ.level, format="another message at this line {x}")
    path = tmp_path / "infiniband.jsonl"
    path.write_text(json.dumps(other) + "\n", encoding="utf-8")
    assert to_record(merged, load_texts(path))["title"] is None
    # the same words read better (a placeholder the extractor now names): the text is a candidate
    owner = dict(other, format=to_record(merged, {})["format"] + " {x}")
    path.write_text(json.dumps(owner) + "\n", encoding="utf-8")
    borrowed = to_record(merged, load_texts(path))
    assert borrowed["title"] == text["title"]              # by place, as far as to_record can tell
    write_records(path, [borrowed, owner])                 # ... but its own record is built too
    rows = {r["id"]: r for r in map(json.loads, path.read_text(encoding="utf-8").splitlines())}
    mine = rows[borrowed["id"]]
    assert mine["title"] is None and mine["explanation"] is None and mine["example"]["constructed"] is True
    assert "_borrowed" not in mine and rows[owner["id"]]["title"] == text["title"]
    write_records(path, [to_record(merged, load_texts(tmp_path / "gone.jsonl") or {("at", "infiniband", occ.file, occ.line):
                                                                                 dict(text, _owner=owner["id"])})])
    [alone] = map(json.loads, path.read_text(encoding="utf-8").splitlines())
    assert alone["title"] == text["title"]                 # its own record gone: the text follows its place


def test_rocm_smi_log_and_print_helpers():
    """rocm-smi prints metrics through printLog ("GPU[0]\\t\\t: name: value") and errors through
    printErrLog and logging under basicConfig's "LEVEL: " format."""
    from indexer.catalog.python_src import rocm_smi_file

    src = textwrap.dedent('''
        def printErrLog(device, err):
            for line in err.split('\\n'):
                logging.error('GPU[%s]\\t: %s' % (device, line))
        def resetFans(deviceList):
            for device in deviceList:
                printLog(device, 'Successfully reset fan speed to driver control', None)
                printErrLog(device, 'Unable to reset fan speed to driver control')
                printLog(device, 'Current Socket Graphics Package Power (W)', power)
                printLog(None, 'Experimental feature', None)
                printLog(device, metricName, value)
            logging.warning('GPU[%s]\\t: RAS control is not available', device)
            logging.info('not printed at the default level')
    ''')
    got = {(o.level, display(o.pieces), o.function) for o in rocm_smi_file("python_smi_tools/rocm_smi.py", src)}
    assert got == {
        ("print", "GPU[{device}]\t\t: Successfully reset fan speed to driver control", "resetFans"),
        ("error", "ERROR: GPU[{device}]\t: Unable to reset fan speed to driver control", "resetFans"),
        ("print", "GPU[{device}]\t\t: Current Socket Graphics Package Power (W): {power}", "resetFans"),
        ("print", "Experimental feature", "resetFans"),
        ("warning", "WARNING: GPU[{device}]\t: RAS control is not available", "resetFans"),
    }
    occ = next(o for o in rocm_smi_file("python_smi_tools/rocm_smi.py", src) if "Package Power" in display(o.pieces))
    pattern, _ = to_pattern(list(occ.pieces))
    assert re2.compile(pattern).search(normalize_line("GPU[0]\t\t: Current Socket Graphics Package Power (W): 35.0").message)


def test_ucx_reads_the_ib_iface_format_of_each_release():
    """ib_iface.h's UCT_IB_IFACE_FMT was "%s:%d" (device:port) before v1.12.0 and "%s:%d/%s"
    (with the link layer) since: a release's lines are read with its own macro."""
    from indexer.catalog.extract import ucx_release_file

    src = 'void f(void) { ucs_error("iface "UCT_IB_IFACE_FMT" failed to create QP", UCT_IB_IFACE_ARG(iface)); }'
    old = [display(o.pieces) for o in ucx_release_file("src/uct/ib/base/ib_iface.c", src, ucx_release_file.flavor("v1.11.2"))]
    new = [display(o.pieces) for o in ucx_release_file("src/uct/ib/base/ib_iface.c", src, ucx_release_file.flavor("v1.12.0"))]
    assert old == ["iface {device}:{port} failed to create QP"]
    assert new == ["iface {device}:{port}/{link_layer} failed to create QP"]


def test_slurm_job_state_reasons_from_both_table_layouts():
    """A submission refused by an association/QOS limit prints the reason's name as its error
    ("sbatch: error: AssocMaxSubmitJobLimit"); the names come from job_state_reason.c's table
    (23.11 on) or job_reason_string's switch (before). Short generic names are left out."""
    from indexer.catalog.extract import slurm_file

    new = textwrap.dedent('''
        const static entry_t jsra[] = {
            [WAIT_NO_REASON] = {
                .str = "None",
            },
            [WAIT_ASSOC_MAX_SUB_JOB] = {
                .flags = JSR_QOS_ASSOC,
                .str = "AssocMaxSubmitJobLimit",
            },
        };
    ''')
    old = textwrap.dedent('''
        extern char *job_reason_string(enum job_state_reason inx)
        {
            switch (inx) {
            case WAIT_RESOURCES:
                return "Resources";
            case WAIT_QOS_MAX_SUB_JOB:
                return "QOSMaxSubmitJobPerUserLimit";
            }
        }
        extern char *job_state_string(uint32_t inx) { switch (inx) { case JOB_PENDING: return "PENDING"; } }
    ''')
    got_new = [(o.level, display(o.pieces), o.function) for o in slurm_file("src/common/job_state_reason.c", new)]
    got_old = [(o.level, display(o.pieces), o.function) for o in slurm_file("src/common/slurm_protocol_defs.c", old)]
    assert got_new == [("reason", "AssocMaxSubmitJobLimit", "WAIT_ASSOC_MAX_SUB_JOB")]
    assert got_old == [("reason", "QOSMaxSubmitJobPerUserLimit", "WAIT_QOS_MAX_SUB_JOB")]
    [occ] = slurm_file("src/common/job_state_reason.c", new)
    rec = to_record(Merged("slurm", "SchedMD/slurm", occ.level, occ.pieces, True, occ.kind, occ, ["slurm-25-11-7-1"]), {})
    rx = re2.compile(rec["pattern"])
    assert rx.search("sbatch: error: AssocMaxSubmitJobLimit") and rx.search("AssocMaxSubmitJobLimit")
    assert not rx.search("JobState=PENDING Reason=AssocMaxSubmitJobLimit Dependency=(null)")


def test_slurm_func_slot_is_a_c_function_name():
    """Slurm's "%s: ..." with __func__ prints one of its C functions (snake_case): the slot
    takes an identifier starting in lower case, not any text before a colon."""
    from indexer.catalog.extract import slurm_file

    src = 'static int _create_ns(void) { error("%s: Failed to create %s, %m", __func__, path); }'
    [occ] = slurm_file("src/plugins/job_container/tmpfs/job_container_tmpfs.c", src)
    pattern, _ = to_pattern(list(occ.pieces), anchor_start=occ.anchored)
    rx = re2.compile(pattern)
    assert rx.search("slurmstepd: error: _create_ns: Failed to create /tmp/slurm/1234, Permission denied")
    assert not rx.search("GLFW: Failed to create window (800 x 600), error 65543")


def test_srun_script_access_denied_takes_a_path_not_a_database_user():
    """srun's 'Access denied for %s: %m' names the prolog/epilog script; a rebuild must keep
    the slot a path (it answered a database's 'Access denied for user ...' when it was free text)."""
    from indexer.catalog.extract import slurm_file

    src = 'static void _run_srun_script(char *script) { error("Access denied for %s: %m", script); }'
    [occ] = slurm_file("src/srun/srun_job.c", src)
    rx = re2.compile(to_pattern(list(occ.pieces), anchor_start=occ.anchored)[0])
    assert rx.search("srun: error: Access denied for /etc/slurm/srun_prolog.sh: Permission denied")
    assert not rx.search("ERROR 1045 (28000): Access denied for user 'app'@'db01' (using password: NO)")


def test_slurm_memory_limit_notify_text_is_a_record():
    """A memory-limit kill does not log to the job: jobacct_gather sends REQUEST_JOB_NOTIFY with
    a fixed text, and srun/salloc print what slurmctld forwards ("srun: Exceeded job memory
    limit"). The assigned text is read as an info record that starts the line."""
    from indexer.catalog.extract import slurm_file

    src = textwrap.dedent('''
        static void _acct_kill_step(void)
        {
            job_notify_msg_t notify_req;
            notify_req.message     = "Exceeded job memory limit";
            msg.msg_type    = REQUEST_JOB_NOTIFY;
        }
    ''')
    [occ] = slurm_file("src/interfaces/jobacct_gather.c", src)
    assert (occ.level, display(occ.pieces), occ.function, occ.kind) == (
        "info", "Exceeded job memory limit", "_acct_kill_step", "job_notify")
    rx = re2.compile(to_pattern(list(occ.pieces), anchor_start=occ.anchored)[0])
    assert rx.search("Exceeded job memory limit")
    assert not rx.search("Job 12 exceeded memory limit (4096 > 2048), being killed")
    # the record's pattern takes the client's "srun: " / "salloc: " in front (info() prints no
    # level word, and the normalizer leaves a bare program name alone)
    rec = to_record(Merged("slurm", "SchedMD/slurm", occ.level, occ.pieces, True, occ.kind, occ, ["slurm-24-05-8-1"]), {})
    rx = re2.compile(rec["pattern"])
    for line in ("srun: Exceeded job memory limit", "salloc: Exceeded job memory limit", "Exceeded job memory limit"):
        assert rx.search(normalize_line(line).message), line
    assert not rx.search(normalize_line("srun: Exceeded job memory limit at some point.").message)
    assert not rx.search(normalize_line("mysrun: Exceeded job memory limit").message)


def test_slurm_tags_take_the_last_release_of_every_major():
    """The last release of each major version, from the first (1.0) on: a message srun printed
    in 2.x must not show as new in 15.08; release candidates stay out."""
    from indexer.catalog.spec import slurm_tags

    tags = ["slurm-1-0-0-1", "slurm-1-0-17-1", "slurm-2-6-9-1", "slurm-14-11-11-1", "slurm-15-08-1-1",
            "slurm-15-08-13-1", "slurm-17-02-11-1", "slurm-17-02-9-1", "slurm-20-02-0-0rc1", "slurm-20-02-7-1"]
    assert slurm_tags(tags) == ["slurm-1-0-17-1", "slurm-2-6-9-1", "slurm-14-11-11-1", "slurm-15-08-13-1",
                                "slurm-17-02-11-1", "slurm-20-02-7-1"]


def test_rccl_tags_start_at_the_nccl2_port_and_show_as_rocm_releases():
    """RCCL's tags before rocm-3.3.0 name the ROCm release without a prefix (2.5.0 ... 3.1.0);
    0.x is RCCL 1, 2.7 and 3.6beta are not releases, 3.3.0 is the commit rocm-3.3.0 tags. The
    bare ones show as rocm-X.Y.Z so they do not read as RCCL library versions."""
    from indexer.catalog.spec import rccl_label, rccl_tags

    tags = ["0.7.5", "2.5.0", "2.10.0", "2.7", "2.7.0", "3.3.0", "3.6beta", "hipclang-3.2.0", "rocm-3.3.0",
            "rocm-5.0.0", "rocm-4.5.2"]
    picked = rccl_tags(tags)
    assert picked == ["2.5.0", "2.7.0", "2.10.0", "rocm-3.3.0", "rocm-4.5.2", "rocm-5.0.0"]
    assert [rccl_label(t) for t in picked] == ["rocm-2.5.0", "rocm-2.7.0", "rocm-2.10.0", "rocm-3.3.0",
                                              "rocm-4.5.2", "rocm-5.0.0"]


def test_torch_strings_extend_cpp_records_back(tmp_path):
    """Library strings of releases older than the oldest archive (torch-strings=DIR) extend a C++
    record that starts at v1.13.1 back release by release, newest first, while the libraries
    hold its longest literal; a gap ends it. A record that starts later (not in the 1.13.1
    source), a Python record and another project's record are left alone."""
    from indexer.catalog.run import add_torch_strings

    out = tmp_path / "catalog"
    out.mkdir()
    timeout = "Watchdog caught collective operation timeout: "
    rows = [
        {"id": "td.pg.1", "repo": "pytorch/pytorch", "file": "torch/csrc/distributed/c10d/ProcessGroupNCCL.cpp",
         "format": "[Rank {rank}] " + timeout + "{work}", "versions": ["v1.13.1", "v2.0.1"],
         "versions_from": "source and library strings"},
        {"id": "td.pg.2", "repo": "pytorch/pytorch", "file": "torch/csrc/distributed/c10d/ProcessGroupNCCL.cpp",
         "format": "Tensors must be CUDA and dense on {x}", "versions": ["v1.13.1"]},
        {"id": "td.pg.3", "repo": "pytorch/pytorch", "file": "torch/csrc/distributed/c10d/ProcessGroupNCCL.cpp",
         "format": "symmetric memory rendezvous failed on {x}", "versions": ["v2.12.1"],
         "versions_from": "source archives"},
        {"id": "td.py.4", "repo": "pytorch/pytorch", "file": "torch/distributed/distributed_c10d.py",
         "format": timeout + "{x}", "versions": ["v1.13.1"]},
        {"id": "td.gloo.5", "repo": "facebookincubator/gloo", "file": "gloo/pair.cc",
         "format": timeout + "{x}", "versions": ["gloo-2020-12-31"]},
    ]
    (out / "torch_distributed.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    strings = tmp_path / "strings"
    timeout = "] " + timeout  # the probe: the longest piece of fixed text, "] Watchdog ... timeout:"
    libs = {"1.9.0": timeout + "\nTensors must be CUDA and dense on \nsymmetric memory rendezvous failed on \n",
            "1.10.2": "Tensors must be CUDA and dense on \n",
            "1.11.0": timeout + "\nTensors must be CUDA and dense on \nsymmetric memory rendezvous failed on \n",
            "1.12.1": timeout + "\nTensors must be CUDA and dense on \n"}
    for version, text in libs.items():
        (strings / version).mkdir(parents=True)
        (strings / version / "strings.txt").write_text(text)
    produced, read = add_torch_strings(out, strings)
    by_id = {r["id"]: r for r in produced["torch_distributed"]}
    assert set(by_id) == {r["id"] for r in rows if r["repo"] == "pytorch/pytorch"}  # gloo's stays in the file
    # 1.10.2 lacks the timeout literal: the extension stops at 1.11.0, 1.9.0 is not added across the gap
    assert by_id["td.pg.1"]["versions"] == ["v1.11.0", "v1.12.1", "v1.13.1", "v2.0.1"]
    assert by_id["td.pg.2"]["versions"] == ["v1.9.0", "v1.10.2", "v1.11.0", "v1.12.1", "v1.13.1"]
    assert by_id["td.pg.2"]["versions_from"] == "source and library strings"
    assert by_id["td.pg.3"] == rows[2]                       # starts later: a different message holds the text
    assert by_id["td.py.4"]["versions"] == ["v1.13.1"]       # Python: not probed
    assert [r["version"] for r in read] == ["v1.9.0", "v1.10.2", "v1.11.0", "v1.12.1"]


def test_nvidia_rm_nv_printf_errors_with_the_function_name():
    """The RM's NV_PRINTF keeps its strings (the driver's Makefile allows them) and a release
    build prints LEVEL_ERROR and above as 'NVRM: <function>: <message>', with 'GPU<n> ' before
    the function in later releases; warnings and info are below the threshold. Inside a macro
    the function is the caller's, so it becomes a C-identifier slot. A #define right before a
    function is not the function's name."""
    from indexer.catalog.extract import nvidia_file

    src = textwrap.dedent('''
        #define BOOT_TIMEOUT_US      (START_TIMEOUT + \\
                                      COMPLETE_TIMEOUT)
        NV_STATUS
        gpuWaitForGfwBootComplete_TU102(OBJGPU *pGpu)
        {
            NV_PRINTF(LEVEL_ERROR, "failed to wait for GFW_BOOT: (progress 0x%x)\\n", val);
            NV_PRINTF(LEVEL_WARNING, "retrying GFW_BOOT wait\\n");
            NV_PRINTF(LEVEL_INFO, "GFW_BOOT done\\n");
        }
        #define CHECK_OR_FAIL(x) do { if (!(x)) NV_PRINTF(LEVEL_ERROR, "check failed: %s\\n", #x); } while (0)
    ''')
    occs = nvidia_file("src/nvidia/src/kernel/gpu/arch/turing/kern_gpu_tu102.c", src)
    assert [(o.function, o.level) for o in occs] == [
        ("gpuWaitForGfwBootComplete_TU102", "ERROR"), ("CHECK_OR_FAIL", "ERROR")]
    direct, in_macro = (to_record(Merged("cuda", "NVIDIA/open-gpu-kernel-modules", o.level, o.pieces, o.anchored,
                                         o.kind, o, ["570.144"]), {}) for o in occs)
    rx = re2.compile(direct["pattern"])
    assert rx.search("NVRM: gpuWaitForGfwBootComplete_TU102: failed to wait for GFW_BOOT: (progress 0x3)")
    assert rx.search("NVRM: GPU0 gpuWaitForGfwBootComplete_TU102: failed to wait for GFW_BOOT: (progress 0x3)")
    assert not rx.search("NVRM: kbusFlush_GM107: failed to wait for GFW_BOOT: (progress 0x3)")
    rx = re2.compile(in_macro["pattern"])
    assert rx.search("NVRM: kgspInitRm_IMPL: check failed: status == NV_OK")
    assert not rx.search("NVRM: two words: check failed: x")


def test_libfabric_log_calls_and_provider_wrappers():
    """FI_WARN/FI_INFO(prov, subsys, fmt, ...) and the providers' wrappers (VERBS_INFO(subsys,
    fmt), CXIP_WARN(fmt)) are read by their first string-literal argument; the wrappers'
    own definitions and the *_ERRNO helpers (whose format is built from a parameter) are not."""
    from indexer.catalog.extract import libfabric_file

    src = textwrap.dedent('''
        #define VERBS_WARN(subsys, ...) FI_WARN(&fi_ibv_prov, subsys, __VA_ARGS__)
        #define VERBS_INFO_ERRNO(subsys, fn, errno) VERBS_INFO(subsys, fn ": %s(%d)\\n", strerror(errno), errno)
        static int fi_ibv_get_device_attrs(struct ibv_context *ctx)
        {
            if (port_num == cnt + 1) {
                VERBS_INFO(FI_LOG_FABRIC, "There are no active ports\\n");
                return -FI_ENODATA;
            }
            FI_WARN(&rxm_prov, FI_LOG_CQ, "fi_cq_readerr: err: %s (%d)\\n", fi_strerror(err), err);
            CXIP_WARN("Failed to allocate %d bytes\\n", len);
            VERBS_INFO_ERRNO(FI_LOG_FABRIC, "ibv_query_port", errno);
        }
    ''')
    occs = libfabric_file("prov/verbs/src/verbs_info.c", src)
    assert [(o.level, o.kind, o.function) for o in occs] == [
        ("INFO", "VERBS_INFO", "fi_ibv_get_device_attrs"), ("WARN", "FI_WARN", "fi_ibv_get_device_attrs"),
        ("WARN", "CXIP_WARN", "fi_ibv_get_device_attrs")]
    rx = re2.compile(to_pattern(list(occs[1].pieces), anchor_start=True)[0])
    assert rx.search("fi_cq_readerr: err: Input/output error (5)")
    assert not rx.search("cq_readerr: err: x (5)")


def test_ompi_ucx_component_errors_are_records():
    """Open MPI's pml/osc/common UCX code logs "<file>:<line>  Error: <msg>" through
    opal_output_verbose (after mpirun's "[host:pid] "); the records keep the level word, match
    wherever the line starts, and a 3.x line with one space before "Error:" too."""
    from indexer.catalog.extract import ompi_file

    src = textwrap.dedent('''
        int mca_pml_ucx_open(void)
        {
            if (status != UCS_OK) {
                PML_UCX_ERROR("Failed to create UCP worker");
                return OMPI_ERROR;
            }
            PML_UCX_ERROR("ucp_ep_create(proc=%d) failed: %s",
                          proc->super.proc_name.vpid, ucs_status_string(status));
            MCA_COMMON_UCX_WARN("UCX is unable to handle VM_UNMAP event. "
                                "This may cause performance degradation or data corruption.");
            PML_UCX_ERROR("x");
        }
    ''')
    occs = ompi_file("ompi/mca/pml/ucx/pml_ucx.c", src)
    assert [(o.level, display(o.pieces), o.function) for o in occs] == [
        ("error", "Error: Failed to create UCP worker", "mca_pml_ucx_open"),
        ("error", "Error: ucp_ep_create(proc={proc->super.proc_name.vpid}) failed: {ucs_status_string(status)}",
         "mca_pml_ucx_open"),
        ("warning", "Warning: UCX is unable to handle VM_UNMAP event. This may cause performance degradation or data corruption.",
         "mca_pml_ucx_open"),
    ]
    assert ompi_file("ompi/mca/pml/ob1/pml_ob1.c", src) == []
    rx = re2.compile(to_pattern(list(occs[1].pieces), anchor_start=occs[1].anchored)[0])
    for line in ("[node7.cluster:55412] pml_ucx.c:424  Error: ucp_ep_create(proc=12) failed: Destination is unreachable",
                 "[a01:3311] ../../../../../ompi/mca/pml/ucx/pml_ucx.c:380 Error: ucp_ep_create(proc=3) failed: Input/output error"):
        assert rx.search(normalize_line(line).message), line
    assert not rx.search("ucp_ep_create(proc=3) failed")


def test_slurm_one_word_records_start_the_line():
    """A Slurm call whose only fixed text is one word ("socket: %m") must not match that word in
    the middle of another program's line; after srun's "<program>: error: " it still does."""
    from indexer.catalog.extract import slurm_file

    src = 'static int _connect(void) { if (fd < 0) { error("socket: %m"); return -1; } error("Unable to connect to the node socket: %m"); }'
    one, longer = slurm_file("src/common/net.c", src)
    rec = to_record(Merged("slurm", "SchedMD/slurm", one.level, one.pieces, False, one.kind, one, ["slurm-24-05-8-1"]), {})
    rx = re2.compile(rec["pattern"])
    for line in ("srun: error: socket: Connection refused", "socket: Too many open files",
                 "[2024-05-01T10:00:00.123] error: socket: Permission denied"):
        assert rx.search(normalize_line(line).message), line
    assert not rx.search(normalize_line("Writing to socket: Connection refused").message)
    # more fixed text keeps the record matching wherever it sits
    rec2 = to_record(Merged("slurm", "SchedMD/slurm", longer.level, longer.pieces, False, longer.kind, longer, ["slurm-24-05-8-1"]), {})
    assert re2.compile(rec2["pattern"]).search("0: slurmstepd: error: Unable to connect to the node socket: Connection refused")


def test_catalogue_files_are_read_plain_gzipped_or_xz(tmp_path):
    """The wheel carries the catalogue xz-compressed (gzip put the installed core over its size
    budget); a checkout has plain files; older wheels had .gz. All three read the same."""
    import gzip
    import lzma

    from indexer.catalog.records import CATALOG_DIR, catalog_files, read_catalog_file

    folder = tmp_path / CATALOG_DIR
    folder.mkdir(parents=True)
    text = '{"id": "x.y.1"}\n{"id": "x.y.2", "zh": "中文"}\n'
    (folder / "a.jsonl").write_text(text, encoding="utf-8")
    (folder / "b.jsonl.gz").write_bytes(gzip.compress(text.encode("utf-8")))
    (folder / "c.jsonl.xz").write_bytes(lzma.compress(text.encode("utf-8")))
    (folder / "manifest.json").write_text("{}", encoding="utf-8")
    files = catalog_files(tmp_path)
    assert [f.name for f in files] == ["a.jsonl", "b.jsonl.gz", "c.jsonl.xz"]
    assert {read_catalog_file(f) for f in files} == {text}


def test_a_variables_asked_phrases_survive_a_rebuild_and_new_texts(tmp_path):
    """`asked:` phrases are written by hand into kb/params rows; `catalog params` (which
    regenerates the rows from the sources) and `catalog params-texts`-style merges keep them."""
    import json

    from indexer.catalog.params import _existing_texts, merge_texts

    row = {"name": "NCCL_P2P_LEVEL", "component": "nccl", "repo": "NVIDIA/nccl", "file": "src/graph/paths.cc",
           "line": 1, "kind": "read by name", "versions": ["v2.4.2-1"], "asked": ["PXB"],
           "title": {"en": "old", "zh": "旧"}, "text": {"en": "old text", "zh": "旧的说明"}}
    (tmp_path / "nccl.jsonl").write_text(json.dumps(row, ensure_ascii=False) + "\n", encoding="utf-8")
    assert _existing_texts(tmp_path)["NCCL_P2P_LEVEL"]["asked"] == ["PXB"]
    new = tmp_path / "new.jsonl.in"
    new.write_text(json.dumps({"name": "NCCL_P2P_LEVEL", "title": {"en": "new", "zh": "新"},
                               "text": {"en": "new text", "zh": "新的说明"}}, ensure_ascii=False) + "\n", encoding="utf-8")
    merged, problems = merge_texts(tmp_path, [new])
    got = json.loads((tmp_path / "nccl.jsonl").read_text(encoding="utf-8"))
    assert (merged, problems) == (1, []) and got["text"]["en"] == "new text" and got["asked"] == ["PXB"]


def test_code_under_if_0_prints_nothing():
    """Slurm keeps retired code under ``#if 0``: no build compiles it, so its log calls are not
    messages; the ``#else`` branch, nested conditionals and ``#if 1`` stay live, offsets and
    line numbers unchanged."""
    from indexer.catalog.clike import dead_blanked
    from indexer.catalog.extract import slurm_file

    src = textwrap.dedent('''\
        static void _f(int x)
        {
        #if 0
            error("old path taken for %d", x);
        #ifdef HAVE_X
            error("nested dead line");
        #endif
        #else
            error("new path taken for %d", x);
        #endif
        #if 0 /* disabled */
            info("retired debug line %d", x);
        #endif
        #if 1
            info("kept under if 1 for %d", x);
        #endif
        }
        ''')
    assert len(dead_blanked(src)) == len(src) and dead_blanked(src).count("\n") == src.count("\n")
    found = {o.pieces[0].strip(): o.line for o in slurm_file("src/slurmctld/x.c", src)}
    assert set(found) == {"new path taken for", "kept under if 1 for"}
    assert found["new path taken for"] == 9 and found["kept under if 1 for"] == 15


def test_rccl_reads_only_the_hip_branches_an_amd_build_compiles():
    """RCCL keeps NCCL's CUDA code in the ``#else`` of ``#if defined(__HIP_PLATFORM_AMD__) ||
    defined(__HIPCC__)``; an RCCL build (hipcc, AMD) never compiles it, so those calls are not
    RCCL messages. A macro known not to be defined counts as 0 in a comparison. NCCL's own reading of the same text keeps both branches; a condition the
    build decides (a CUDA version) keeps both; ``#else`` after a known-true ``#if 1`` is dead."""
    from indexer.catalog.clike import dead_blanked
    from indexer.catalog.extract import RCCL_DEFINES, nccl_file, rccl_file

    src = textwrap.dedent('''\
        ncclResult_t f(int a, int b) {
        #if defined(__HIP_PLATFORM_AMD__) || defined(__HCC__) || defined(__HIPCC__)
          INFO(NCCL_INIT, "HIP path %d", a);
        #else
          INFO(NCCL_INIT, "P2P is disabled between connected GPUs %d and %d.", a, b);
        #if CUDART_VERSION >= 11030
          WARN("nested under the CUDA branch %d", a);
        #endif
        #endif
        #if ROCM_VERSION >= 60100
          INFO(NCCL_INIT, "decided by the build %d", a);
        #elif !defined(__HIP_PLATFORM_HCC__)
          WARN("not on HIP %d", a);
        #else
          WARN("else of an unknown chain %d", a);
        #endif
        #if 1
          INFO(NCCL_INIT, "always %d", a);
        #else
          INFO(NCCL_INIT, "never %d", a);
        #endif
        #if CUDART_VERSION >= 12010
          INFO(NCCL_INIT, "NVLS path %d", a);
        #endif
          return ncclSuccess;
        }
        ''')
    blanked = dead_blanked(src, RCCL_DEFINES)
    assert len(blanked) == len(src) and blanked.count("\n") == src.count("\n")

    def messages(occs):
        return {o.pieces[0].strip(): o.line for o in occs}

    rccl_all = messages(rccl_file("src/graph/paths.cc", src))
    rccl = {k: v for k, v in rccl_all.items() if k != "NVLS path"}
    assert set(rccl) == {"HIP path", "decided by the build", "else of an unknown chain", "always"}
    assert rccl["HIP path"] == 3 and rccl["always"] == 18
    nccl = messages(nccl_file("src/graph/paths.cc", src))
    assert "P2P is disabled between connected GPUs" in nccl and "nested under the CUDA branch" in nccl
    assert "not on HIP" in nccl and "never" not in nccl and "NVLS path" in nccl
    assert "NVLS path" in rccl_all  # CUDART_VERSION: unknown for RCCL, so kept
    from indexer.catalog.clike import _expression
    assert _expression("CUDART_VERSION >= 12010", {"CUDART_VERSION": False}) is False
    assert _expression("!(CUDA_VERSION < 11070) || 0", {"CUDA_VERSION": False}) is False
    assert _expression("CUDART_VERSION >= 12010", {}) is None


def test_megatron_reads_its_old_series_and_top_level_scripts_in_release_order():
    """Megatron-LM's v1.0-v2.6 and 23.04/23.06 tags come before its core_v0.x tags (the
    seeds line "> initializing model parallel cuda seeds ..." exists only there), and the
    training scripts at the top of the tree ("building GPT model ...") are read."""
    from indexer.catalog.spec import PY_PROJECTS
    from indexer.catalog.versions import version_key

    tags = ["core_v0.10.0", "v0.15.3", "23.04", "v2.6", "core_v0.4.0", "v1.0", "24.09-alpha.rc0", "23.06", "NVLM-1.0"]
    project = PY_PROJECTS["megatron"]
    assert sorted(project.tags(tags), key=version_key) == ["v1.0", "v2.6", "23.04", "23.06", "core_v0.4.0", "core_v0.10.0"]
    assert version_key("v2.19.3-1") == (2, 19, 3, 1)  # other projects' tags keep their plain order
    assert "pretrain_gpt.py" in project.under and "gpt_builders.py" in project.under
    src = "from megatron.training import print_rank_0\n\ndef model_provider():\n    print_rank_0('building GPT model ...')\n    print('plain print in a script')\n"
    found = {"".join(p if isinstance(p, str) else "{}" for p in o.pieces) for o in python_file("pretrain_gpt.py", src, project.dialect)}
    assert {"building GPT model ...", "plain print in a script"} <= found


def test_deepspeed_reads_the_triton_matmul_cache_check_but_not_other_inference_kernels():
    """``import deepspeed`` with Triton installed loads triton/matmul_ext.py, whose cache check
    prints "Warning: The cache directory for DeepSpeed Triton autotune, ..., appears to be on an
    NFS system ..."; the rest of the inference kernels stays out."""
    from indexer.catalog.spec import PY_PROJECTS

    project = PY_PROJECTS["deepspeed"]
    ext = "deepspeed/ops/transformer/inference/triton/matmul_ext.py"
    assert not project.skip.search(ext)
    assert project.skip.search("deepspeed/ops/transformer/inference/triton/attention.py")
    assert project.skip.search("deepspeed/ops/transformer/inference/ds_attention.py")
    src = ("class TritonCacheDir:\n    @staticmethod\n    def warn_if_nfs(cache_dir):\n        print(\n"
           "            f\"Warning: The cache directory for DeepSpeed Triton autotune, {cache_dir}, appears to be on an NFS system.\"\n"
           "        )\n")
    found = {"".join(p if isinstance(p, str) else "{}" for p in o.pieces) for o in python_file(ext, src, project.dialect)}
    assert "Warning: The cache directory for DeepSpeed Triton autotune, {}, appears to be on an NFS system." in found


def test_nvidia_peermem_errors_carry_the_module_function_and_line_head():
    """nvidia-peermem's peer_err prints "nvidia-peermem <function>:<line> ERROR <message>"
    (printk KERN_ERR with __FUNCTION__ and __LINE__); the macro's own definition is no message."""
    from indexer.catalog.extract import nvidia_file

    src = textwrap.dedent('''\
        #define peer_err(FMT, ARGS...) printk(KERN_ERR "nvidia-peermem" " %s:%d ERROR " FMT, __FUNCTION__, __LINE__, ## ARGS)
        static void nv_get_p2p_free_callback(void *data)
        {
            if (!nv_mem_context) {
                peer_err("detected invalid context, skipping further processing\\n");
            }
            if (ret)
                peer_err("nv_get_p2p_free_callback -- error %d while calling nvidia_p2p_free_dma_mapping()\\n", ret);
        }
        ''')
    occs = nvidia_file("kernel-open/nvidia-peermem/nvidia-peermem.c", src)
    assert len(occs) == 2 and {o.level for o in occs} == {"ERROR"}
    merged = collect("cuda", "NVIDIA/open-gpu-kernel-modules",
                     [_one_file_tree("595.45.04", "kernel-open/nvidia-peermem/nvidia-peermem.c", src)], nvidia_file)
    patterns = [re2.compile(to_record(m, {})["pattern"]) for m in merged.values()]
    line = "nvidia-peermem nv_get_p2p_free_callback:139 ERROR detected invalid context, skipping further processing"
    assert any(p.search(line) for p in patterns)
    assert not any(p.search("nv_get_p2p_free_callback:139 detected invalid context") for p in patterns)


def test_rdma_core_is_read_from_its_first_release():
    """rdma-core's major releases are rdma-core-12, v13 ... v23, then v24.0 ...: all of them are
    read (ibv_devinfo printed its lines from the first), point releases and candidates are not."""
    from indexer.catalog.spec import rdma_tags

    tags = ["rdma-core-12", "rdma-core-12-rc1", "v12-rc1", "v13", "v13-rc1", "v15.1", "v23", "v23.10", "v24.0",
            "v24.1", "v64.0", "debian/24.0-1"]
    assert rdma_tags(tags) == ["rdma-core-12", "v13", "v23", "v24.0", "v64.0"]
