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
    from indexer.catalog.records import version_span
    from indexer.patterns import compile_pattern

    line = "Launching training on 8 CUDAs."
    answer = explainer.explain(line)
    assert answer["pattern_id"] == "accelerate.notebook.launching"
    entry = explainer.by_id["accelerate.notebook.launching"]
    first = explainer.kb.record_for(entry.formats[0], [])
    assert not compile_pattern(first.pattern).search(normalize_line(line).message)
    shown = explainer.kb.record_for(answer["source"]["record"], [])
    assert compile_pattern(shown.pattern).search(normalize_line(line).message)
    # the releases shown are the entry's, not only the print site's: a reader on another
    # version would otherwise take the text for not theirs (a zh review's note)
    assert answer["source"]["versions"] == entry.versions.split(" (", 1)[0].strip()
    assert answer["source"]["versions"] != version_span(shown.versions, shown.repo)


def test_a_catalogue_answer_shows_its_own_print_site_s_releases(explainer):
    from indexer.catalog.records import version_span

    # a real example line is a curated entry's (that entry answers it), so a record's own
    # answers are to lines built from its format
    for rec in explainer.kb.records.values():
        if rec.has_text and rec.matchable:
            answer = explainer.explain(rec.example.line)
            if answer.get("pattern_id") == rec.id:
                break
    else:
        raise AssertionError("no catalogue record answers its own example")
    assert answer["source"]["record"] == rec.id
    assert answer["source"]["versions"] == version_span(rec.versions, rec.repo)


def test_every_front_end_uses_the_same_terms():
    """Issue 18: the page's script, the batch report and the chat labels say the same thing the
    same way as ``service.presentation.TERMS`` (severity names, unknown, action, fields, details,
    confidence, tiers, roles)."""
    import re
    from pathlib import Path

    from service.chat.labels import LABELS
    from service.presentation import TERMS

    root = Path(__file__).resolve().parent.parent / "service"
    page = (root / "http" / "static" / "common.js").read_text(encoding="utf-8")
    report = (root / "batch" / "formats" / "report.js").read_text(encoding="utf-8")
    for lang in ("en", "zh"):
        terms = TERMS[lang]
        for key in ("fatal", "error", "warning", "info", "unknown", "action", "details", "confidence", "nearest"):
            assert LABELS[lang][key] == terms[key], (lang, key)
        assert LABELS[lang]["fields"] == terms["fields"] and LABELS[lang]["unknown_title"] == terms["unknown_title"]
        block = page.split(f"  {lang}: {{", 1)[1].split("\n  },", 1)[0]
        for key in ("unknown", "unknown_title", "action", "fields", "details", "nearest", "confidence"):
            assert re.search(rf'\b{key}: "{re.escape(terms[key])}"', block), (lang, key)
        for sev in ("info", "warning", "error", "fatal"):
            assert f'{sev}: "{terms[sev]}"' in block and f'{sev}: "{terms[sev]}"' in report, (lang, sev)
        for tier in ("regex", "catalog", "semantic"):
            assert f'{tier}: "{terms["tier." + tier]}"' in block and f'{tier}: "{terms["tier." + tier]}"' in report
        for role in ("context", "progress", "advice", "root_cause", "cascade", "wrapper"):
            assert f'{role}: "{terms["role." + role]}"' in report, (lang, role)
            assert f'{role}: "{terms["role." + role]}"' in block, (lang, role)


def test_severity_order_lives_in_one_place():
    from service.batch import options, summary
    from service.presentation import SEVERITY_RANK

    assert options.SEVERITY_RANK is SEVERITY_RANK and summary.SEVERITY_RANK is SEVERITY_RANK


def test_a_source_that_is_documentation_or_the_kernel_is_named_in_the_reader_s_language():
    """Entries cite ``docs: ...``, ``kernel: ...`` or ``vendor: ...`` where no repository prints
    the line: the frame says what kind of source it is instead of printing "docs:" raw."""
    from service.presentation import source_line

    docs = {"repo": "docs:", "file": "NVIDIA Compute Sanitizer user guide", "line": None, "function": None, "versions": None}
    assert source_line(docs, "zh") == "出处（文档）：NVIDIA Compute Sanitizer user guide"
    assert source_line(docs, "en") == "documented in NVIDIA Compute Sanitizer user guide"
    kernel = dict(docs, repo="kernel:", file="mm/oom_kill.c")
    assert "docs:" not in source_line(kernel, "zh") and source_line(kernel, "zh").startswith("出处（Linux 内核）：")
    repo = dict(docs, repo="NVIDIA/nccl", file="src/init.cc", line=7)
    assert source_line(repo, "zh") == "打印位置：NVIDIA/nccl src/init.cc:7"
