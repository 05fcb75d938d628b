"""The one sentence every front-end uses to say where a line is printed."""

from service.presentation import source_line


def test_source_line_names_repo_file_function_and_releases_in_both_languages():
    source = {"repo": "NVIDIA/nccl", "file": "src/transport/net_ib.cc", "line": 611, "function": "ncclIbInit",
              "versions": "v2.19.3-1–v2.27.7-1", "also": [{"repo": "ROCm/rccl", "versions": "rocm-5.0.0–rocm-6.2.2"}]}
    assert source_line(source, "en") == (
        "printed by NVIDIA/nccl src/transport/net_ib.cc:611, in ncclIbInit, v2.19.3-1–v2.27.7-1 "
        "(also ROCm/rccl rocm-5.0.0–rocm-6.2.2)")
    assert source_line(source, "zh") == (
        "打印位置：NVIDIA/nccl src/transport/net_ib.cc:611，函数 ncclIbInit，v2.19.3-1–v2.27.7-1"
        "（另见 ROCm/rccl rocm-5.0.0–rocm-6.2.2）")


def test_a_curated_entry_without_a_linked_format_names_only_its_file():
    assert source_line({"repo": "NVIDIA/nccl", "file": "src/init.cc", "line": None, "function": None,
                        "versions": "NCCL 2.x"}, "en") == "printed by NVIDIA/nccl src/init.cc, NCCL 2.x"
    assert source_line(None) is None and source_line({"repo": ""}) is None


def test_a_curated_answer_names_the_format_that_prints_its_line(explainer):
    """An entry linking several formats (the old and the new wording) shows, as where the line
    is printed, the format that prints this line, not the first one it links."""
    from indexer.normalize import normalize_line
    from indexer.patterns import compile_pattern

    line = "Launching training on 8 CUDAs."
    answer = explainer.explain(line)
    assert answer["pattern_id"] == "accelerate.notebook.launching"
    entry = explainer.by_id["accelerate.notebook.launching"]
    first = explainer.kb.record_for(entry.formats[0], [])
    assert not compile_pattern(first.pattern).search(normalize_line(line).message)
    shown = explainer.kb.record_for(answer["source"]["record"], [])
    assert compile_pattern(shown.pattern).search(normalize_line(line).message)
