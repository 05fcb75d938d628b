"""Terminal rendering: lines fit the width in display columns, Chinese included."""

import re

from service.render import _width, wrap_display


def test_chinese_wraps_by_display_width():
    text = "每个 ZeRO-3 step 之后 rank 0 检查 num_alloc_retries：自上一步以来有 7 次 cudaMalloc 失败" * 3
    lines = wrap_display(text, 40)
    assert len(lines) > 3
    assert all(_width(line) <= 40 for line in lines)
    assert "".join(lines).replace(" ", "") == text.replace(" ", "")


def test_english_breaks_only_at_spaces():
    lines = wrap_display("alpha beta gamma delta epsilon", 12)
    assert lines == ["alpha beta", "gamma delta", "epsilon"]


def test_no_closing_punctuation_starts_a_line_and_no_opening_one_ends_it():
    """The Chinese line-breaking rules, on every KB zh text at several widths: no line starts
    with ，。；：、）” and the like, none ends with （“, no Latin word or number is split, and
    nothing is lost."""
    import random
    import re

    from indexer.kb_loader import load_kb
    from service.presentation import NO_LINE_END, NO_LINE_START

    kb = load_kb("kb")
    texts = [t.zh for l in kb.entries for t in (l.entry.explanation, l.entry.action) if t is not None]
    rng = random.Random(7)
    for text in rng.sample(texts, 150):
        words = set(re.findall(r"[A-Za-z0-9_]+", text))
        for width in (24, 41, 60, 93):
            lines = wrap_display(text, width)
            assert "".join(lines).replace(" ", "") == text.replace(" ", "")
            for i, line in enumerate(lines):
                assert i == 0 or line[0] not in NO_LINE_START, (width, lines[i - 1], line)
                assert i == len(lines) - 1 or line[-1] not in NO_LINE_END, (width, line)
                if i:  # a Latin word or number split across two lines would re-form here
                    tail = re.search(r"[A-Za-z0-9_]+$", lines[i - 1])
                    head = re.match(r"[A-Za-z0-9_]+", line)
                    if tail and head:
                        assert tail.group(0) + head.group(0) not in words, (lines[i - 1], line)
            long_words = [w for w in words if _width(w) > width]
            assert all(_width(l) <= width for l in lines) or long_words or any(
                l[-1] in NO_LINE_START for l in lines)


def test_a_word_moved_down_before_punctuation_keeps_its_spaces():
    """Closing punctuation takes the word before it down to the next line; the spaces between
    what moves stay ("error: ..." was printed "error:...", a reviewer's finding)."""
    lines = wrap_display("关键看原因文本：“NCCL error: ...”表示 NCCL 报告了通信失败", 30)
    assert any("error: ...”" in line for line in lines), lines
    text = "Check 'Unable to query ...' lines and more words here"
    for width in (12, 20, 26):
        assert " ".join(wrap_display(text, width)) == text, width


def test_the_meta_line_breaks_only_between_its_items():
    """'置信度 0.99' never splits across lines: the meta line breaks at its separators."""
    from service.render import _wrap_items

    items = ["torch_distributed.pgnccl.watchdog_terminated", "torch_distributed", "外层报错", "精确匹配", "置信度 0.99"]
    for width in (30, 50, 70, 98):
        lines = _wrap_items(items, width)
        assert " · ".join(lines) == " · ".join(items)
        assert any(line.endswith("置信度 0.99") for line in lines)
        assert all(_width(line) <= width or line in items for line in lines)  # an item wider than the line stands alone


def test_a_short_command_in_backticks_stays_whole_and_no_character_is_left_alone():
    """Reviewers' renderer notes: "`nvidia-smi\\n-q | grep -A8 Fabric`" was split, and a verdict
    ended with a line holding one character ("…不代表配置的精\\n度")."""
    text = "检查 `nvidia-smi -q | grep -A8 Fabric` 以及 Fabric Manager / IMEX 服务是否正常运行"
    for width in (34, 40, 50, 60):
        lines = wrap_display(text, width)
        assert any("`nvidia-smi -q | grep -A8 Fabric`" in line for line in lines), (width, lines)
        assert "".join(lines).replace(" ", "") == text.replace(" ", "")
    assert not any("`nvidia-smi -q | grep -A8 Fabric`" in line for line in wrap_display(text, 30))  # wider than the line
    text = "这只是 ZeRO 内部分片用的精度，不代表配置的精度"
    for width in range(12, 48):
        lines = wrap_display(text, width)
        assert "".join(lines) .replace(" ", "") == text.replace(" ", "")
        assert len(lines) == 1 or len(lines[-1].rstrip("。")) > 1, (width, lines)


def test_the_printed_by_line_breaks_only_between_its_parts_and_hangs():
    """A zh review found '函数' left at a line end with the function name on the next line and a
    release span alone: the parts stay whole, continuation lines are indented, nothing is lost."""
    from service.presentation import display_width, source_line, wrap_source

    source = {"repo": "NVIDIA/nccl", "file": "src/transport/net_ib.cc", "line": 611, "function": "ncclIbInitDevices",
              "versions": "NCCL v2.19.3-1–v2.27.7-1", "also": [{"repo": "ROCm/rccl", "versions": "rocm-5.0.0–rocm-6.2.2"}]}
    for lang in ("zh", "en"):
        for width in (100, 70, 50, 40):
            lines = wrap_source(source, lang, width)
            assert all(display_width(l) <= width for l in lines), (lang, width, lines)
            assert all(l.startswith("  ") for l in lines[1:]) and not lines[0].startswith(" ")
            joined = "".join(l.strip() for l in lines)
            assert joined.replace(" ", "") == source_line(source, lang).replace(" ", "")
            body = "\n".join(lines)
            assert "函数 ncclIbInitDevices" in body or "in ncclIbInitDevices" in body
            assert "v2.19.3-1–v2.27.7-1" in body
            assert width < 50 or "ROCm/rccl rocm-5.0.0" in body  # a part wider than the line wraps on its own
    assert wrap_source(None, "zh", 80) == []


def test_a_field_value_with_spaces_or_commas_is_quoted_in_the_fields_row():
    """'lr=0.0003, 0.0003 mom=(0.9, 0.999)' ran one value into the next (a zh review's note)."""
    from service.render import render_answer

    answer = {"line": "x", "known": True, "severity": "info", "title": {"en": "T", "zh": "T"}, "summary": None,
              "explanation": {"en": "E", "zh": "E"}, "action": None, "pattern_id": "demo.x", "component": "demo",
              "role": "context", "tier": "regex", "confidence": 0.99, "source": None,
              "fields": {"lr": "0.0003, 0.0003", "mom": "(0.9, 0.999)", "step": "12", "note": "it's", "empty": ""}}
    row = next(l for l in render_answer(answer, ("en",), verbose=True).splitlines() if "lr=" in l)
    assert "lr='0.0003, 0.0003' mom='(0.9, 0.999)' step=12 note=it's empty=''" in row


def test_a_number_stays_on_the_line_of_its_unit():
    """A zh review saw '1.200000/1.200000' end one line and 'GB/s' start the next."""
    text = "带宽 1.200000/1.200000 GB/s，耗时 0.095 毫秒，共 8 个 rank 参与；bandwidth 12.5 GB/s and 3 ms later"
    for width in range(20, 60):
        lines = wrap_display(text, width)
        for line in lines:
            assert not re.match(r"^(?:GB/s|毫秒|个|ms)", line.strip()), (width, lines)
        assert "".join(lines).replace(" ", "") == text.replace(" ", "")
