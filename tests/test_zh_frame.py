"""Chinese as a first-class language (issue 18): every front-end rendered in Chinese for the
seed log — terminal, batch commented and summary, chat blocks and cards — carries no English
frame word and no line that starts with closing punctuation. (The page and the batch html
report are rendered in Chromium by their own browser tests.)"""

from __future__ import annotations

import json
import re

import pytest

from batch_helpers import SEED_LOG, annotate
from service.presentation import NO_LINE_START
from service.render import render_answer

# Words of the English frame: none may appear in a Chinese rendering outside the log lines and
# the KB's own texts (which keep English terms where engineers keep them).
ENGLISH_FRAME = re.compile(
    r"\[(?:info|warning|error|fatal)\]|\b(?:role|tier|confidence|nearest|fields?|details|explained|"
    r"unknown|printed by|What to do|In short|SEVERITY|COUNT|FIRST|LAST|ENTRY|first error|first warning|"
    r"severity|Not in the knowledge base|This helped|Wrong answer|Open in explainlog)\b")


@pytest.fixture(scope="module")
def seed_lines():
    return [l for l in SEED_LOG.read_text(encoding="utf-8").splitlines() if l.strip()]


@pytest.fixture(scope="module")
def seed_answers(explainer, seed_lines):
    return explainer.explain_many(seed_lines + ["totally unrelated words zzz qqq"], semantic=False)


def _kb_texts(answers: list[dict]) -> set[str]:
    """The KB's own sentences in the answers (kept as written, English terms and all)."""
    texts = set()
    for a in answers:
        for key in ("title", "summary", "explanation", "action"):
            if a.get(key):
                texts.add(a[key]["zh"])
        if a.get("source"):
            texts.add(str(a["source"].get("versions") or ""))
    return texts


def _frame_only(text: str, answers: list[dict], lines: list[str]) -> str:
    """``text`` with the log lines, the KB texts and ids removed: what is left is the frame."""
    for piece in sorted(_kb_texts(answers) | set(lines), key=len, reverse=True):
        if piece:
            text = text.replace(piece, " ")
    text = re.sub(r"[\w.-]+\.[\w.-]+", " ", text)  # ids, files, versions
    return text


def _assert_chinese_frame(rendered: str, answers, lines, wrapped: bool = True):
    frame = _frame_only(rendered, answers, lines)
    assert not ENGLISH_FRAME.search(frame), ENGLISH_FRAME.search(frame).group(0)
    if wrapped:
        starts = [l.strip()[0] for l in rendered.splitlines() if l.strip()]
        bad = [l for l in rendered.splitlines() if l.strip() and l.strip()[0] in NO_LINE_START and l.strip()[0] in "，。；：、）》」』】！？"]
        assert bad == [], bad[:3]
        assert starts


def test_terminal_in_chinese(seed_answers, seed_lines):
    for verbose in (False, True):
        out = "\n\n".join(render_answer(a, ("zh",), verbose=verbose) for a in seed_answers)
        _assert_chinese_frame(out, seed_answers, seed_lines + [seed_answers[-1]["line"]])
        assert "[信息]" in out and "[警告]" in out and "未收录" in out


def test_batch_commented_and_summary_in_chinese(explainer, seed_answers, seed_lines):
    commented, _ = annotate(explainer, [str(SEED_LOG)], "commented", lang="zh", semantic=False)
    comments = "\n".join(l for l in commented.decode().splitlines() if l.startswith("# "))
    _assert_chinese_frame(comments.replace("# ", ""), seed_answers, seed_lines)
    assert "# [警告]" in comments
    summary, _ = annotate(explainer, [str(SEED_LOG)], "summary", lang="zh", semantic=False)
    text = summary.decode()
    _assert_chinese_frame(text, seed_answers, seed_lines, wrapped=False)
    assert text.startswith("explainlog 汇总：") and "严重程度" in text and "首个警告：" in text


def _texts(payload) -> list[str]:
    """What a reader sees of a chat payload: every "text"/"content" string in it."""
    out: list[str] = []
    if isinstance(payload, dict):
        for key, value in payload.items():
            if key in ("text", "content") and isinstance(value, str):
                out.append(value)
            else:
                out += _texts(value)
    elif isinstance(payload, list):
        for item in payload:
            out += _texts(item)
    return out


def test_chat_blocks_and_cards_in_chinese(explainer, seed_answers, seed_lines, tmp_path):
    from service.chat.answers import Answerer
    from service.chat.blocks import details_blocks, reply_blocks
    from service.chat.cards import reply_card
    from service.chat.store import ChatStore

    answerer = Answerer(explainer, ChatStore(tmp_path / "chat.sqlite3"))
    for lines in ([seed_lines[0]], seed_lines[:3], [seed_answers[-1]["line"]]):
        reply = answerer.explain(lines, "slack")
        for payload in (reply_blocks(answerer, reply, "zh"), reply_card(answerer, reply, "zh")):
            shown = "\n".join(_texts(payload)).replace("`", "").replace("*", "")
            _assert_chinese_frame(shown, seed_answers, seed_lines + lines, wrapped=False)
    known = next(a for a in seed_answers if a["known"] and a["fields"])
    details = json.dumps(details_blocks(answerer, known, "zh"), ensure_ascii=False)
    assert "字段" in details and "Fields" not in details
