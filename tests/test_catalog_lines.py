"""A multi-line message answers line by line: each printed line of a record whose format has
newlines inside becomes a record of its own (``indexer/catalog/lines.py``)."""

from __future__ import annotations

import json

import re2

from indexer.catalog.build import Merged, to_record
from indexer.catalog.extract import torch_cpp_file
from indexer.catalog.lines import line_parts, split_format
from indexer.catalog.python_src import python_file
from indexer.catalog.records import load_catalog

TEXT = {
    "title": {"en": "ProcessGroupNCCL options", "zh": "ProcessGroupNCCL 的选项"},
    "explanation": {"en": "Rank {rank} prints its options; timeout {count} ms.",
                    "zh": "rank {rank} 打印它的选项；超时 {count} 毫秒。"},
    "severity": "info", "role": "context",
}


def _record(source: str, text: dict | None = None) -> dict:
    occ = torch_cpp_file("torch/csrc/distributed/c10d/ProcessGroupNCCL.cpp", source)[0]
    merged = Merged("torch_distributed", "pytorch/pytorch", occ.level, occ.pieces, True, occ.kind, occ, ["v1.13.1"])
    rec = to_record(merged, {})
    if text:
        rec.update(text)
    return rec


OPTIONS = ('void f() { LOG(INFO) << "[Rank " << rank_ << "] ProcessGroupNCCL initialized with following options:"'
           ' << "\\nNCCL_ASYNC_ERROR_HANDLING: " << asyncErrorHandling_'
           ' << "\\nTIMEOUT(ms): " << options_->timeout.count() << "\\n  " << pad_; }')


def test_each_printed_line_gets_a_pattern_that_matches_it_and_nothing_else():
    rec = _record(OPTIONS, TEXT)
    # the record's own pattern is the whole message: one pasted line of it is not answered
    whole = re2.compile(rec["pattern"])
    assert not whole.search("TIMEOUT(ms): 1800000")
    parts = line_parts(rec)
    # the last line ("  {pad}") has no fixed text to recognise it by: left out
    assert [p["id"] for p in parts] == [rec["id"] + ".line1", rec["id"] + ".line2", rec["id"] + ".line3"]
    by_line = {p["id"].rsplit(".", 1)[1]: re2.compile(p["pattern"]) for p in parts}
    assert by_line["line1"].search("[Rank 3] ProcessGroupNCCL initialized with following options:")
    assert by_line["line2"].search("NCCL_ASYNC_ERROR_HANDLING: 1")
    m = by_line["line3"].search("TIMEOUT(ms): 1800000")
    assert m and m.group("count") == "1800000"
    assert not by_line["line3"].search("NCCL_ASYNC_ERROR_HANDLING: 1")
    assert not by_line["line2"].search("TIMEOUT(ms): 1800000")


def test_parts_keep_the_records_group_names_text_and_versions():
    rec = _record(OPTIONS, TEXT)
    line1, _line2, line3 = line_parts(rec)
    assert set(line3["groups"]) == {"count"} and line3["groups"]["count"] == rec["groups"]["count"]
    assert line1["versions"] == rec["versions"] and line1["file"] == rec["file"] and line1["line"] == rec["line"]
    # a placeholder this line fills stays; one another line fills prints as the group's name
    assert "{count}" in line3["explanation"]["en"] and "`rank`" in line3["explanation"]["en"]
    assert "{rank}" in line1["explanation"]["zh"] and "`count`" in line1["explanation"]["zh"]
    assert line3["example"] == {"line": "TIMEOUT(ms): count", "constructed": True}
    assert re2.compile(line3["pattern"]).search(line3["example"]["line"])


def test_one_line_formats_and_trailing_newlines_give_no_parts():
    rec = _record('void f() { LOG(INFO) << "ProcessGroupNCCL destroyed rank " << rank_ << "\\n"; }')
    assert split_format(rec["format"], rec["pattern"]) is None
    assert line_parts(rec) == []


def test_python_mapping_format_reads_as_values():
    """``logger.info("[%(role)s] ...\\n  group_rank=%(group_rank)s", {...})`` keeps ``%(x)s`` as
    literal text in the record; its line parts read them as the values they print."""
    src = ('import logging\nlogger = logging.getLogger(__name__)\n'
           'def f(role, gr):\n'
           '    logger.info("[%(role)s] Rendezvous complete for workers. Result:\\n"\n'
           '                "  restart_count=%(restart_count)s\\n  group_rank=%(group_rank)s\\n", {"role": role})\n')
    occ = python_file("torch/distributed/elastic/agent/server/api.py", src)[0]
    rec = to_record(Merged("torch_elastic", "pytorch/pytorch", occ.level, occ.pieces, True, occ.kind, occ, ["v2.6.0"]), {})
    parts = {p["id"].rsplit(".", 1)[1]: p for p in line_parts(rec)}
    assert set(parts) == {"line1", "line2", "line3"}
    m = re2.compile(parts["line3"]["pattern"]).search("  group_rank=1")
    assert m and m.group("group_rank") == "1"
    assert re2.compile(parts["line1"]["pattern"]).search("[default] Rendezvous complete for workers. Result:")


def test_load_catalog_lists_parts_after_their_record(tmp_path):
    cat = tmp_path / "catalog"
    cat.mkdir()
    rec = _record(OPTIONS, TEXT)
    (cat / "torch_distributed.jsonl").write_text(json.dumps(rec) + "\n")
    records, problems = load_catalog(tmp_path)
    assert problems == []
    assert [r.id for r, _f, _l in records] == [rec["id"]] + [rec["id"] + f".line{k}" for k in (1, 2, 3)]
    assert all(line == 1 for _r, _f, line in records)  # reported at the record's line of the file
    assert all(r.answers for r, _f, _l in records)


def test_real_kb_answers_a_line_of_a_multi_line_warning(explainer):
    """One line pasted from PyTorch's unwaited-collectives warning (three lines in the log):
    no curated entry holds it; the line part of the record does, at the record's place."""
    answer = explainer.explain("before the output tensors of the collective are used.")
    assert answer["known"], answer
    assert answer["tier"] == "catalog"
    assert answer["source"]["record"].endswith(".line4")
    assert answer["source"]["file"] == "torch/csrc/distributed/c10d/ProcessGroup.cpp"


def test_first_line_of_a_raised_message_follows_the_exception_class_name():
    src = ('def _lazy_init():\n'
           '    raise DeferredCudaCallError(f"CUDA call failed lazily at initialization with error: {e}\\n\\n'
           'CUDA call was originally invoked at:\\n\\n{tb}")\n')
    occ = python_file("torch/cuda/__init__.py", src)[0]
    merged = Merged("cuda", "pytorch/pytorch", occ.level, occ.pieces, occ.anchored, occ.kind, occ, ["v2.6.0"])
    parts = {p["id"].rsplit(".", 1)[1]: re2.compile(p["pattern"]) for p in line_parts(to_record(merged, {}))}
    # a raised message is not anchored: its first line is read after the class name too
    assert parts["line1"].search("torch.cuda.DeferredCudaCallError: CUDA call failed lazily at "
                                 "initialization with error: device >= 0 && device < num_gpus")
    # a later line starts a log line of its own
    assert parts["line3"].search("CUDA call was originally invoked at:")
    assert not parts["line3"].search("see: CUDA call was originally invoked at:")
