"""Terminal rendering: lines fit the width in display columns, Chinese included."""

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
