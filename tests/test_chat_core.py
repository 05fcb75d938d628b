"""The chat bots' shared core: reading pasted text, languages, ordering, limits, store, secrets."""

from __future__ import annotations

import json
import logging

import pytest

from chat_fakes import SEED_AFFINITY, SEED_CDB, SEED_FLUSHES, SEED_IB, UNRELATED, slack_texts
from service.chat.answers import Answerer
from service.chat.blocks import fallback_text, reply_blocks
from service.chat.cards import reply_card
from service.chat.config import ChatConfigError, FeishuSettings, SlackSettings
from service.chat.logs import REDACTED, SecretFilter
from service.chat.messages import parse_request, strip_feishu_mentions, unescape_slack, written_language
from service.chat.ratelimit import RateLimiter
from service.chat.store import ChatStore, UnknownAnswer

SEED_LOG = __import__("pathlib").Path(__file__).resolve().parent.parent / "samples" / "seed_training.log"


# ---- reading a message -----------------------------------------------------------------------
def test_slack_escaping_is_undone_so_the_explainer_sees_the_real_line():
    slack_text = ("<@U0BOT> cc0af148112143078d5c88b5e68679fd-task0-0:133:202 [0] NCCL INFO NET/IB : Using "
                  "[0]mlx5_0:1/IB [1]mlx5_1:1/IB [2]mlx5_2:1/IB [3]mlx5_3:1/IB [RO]; OOB eth0:10.244.174.137&lt;0&gt;")
    request = parse_request(unescape_slack(slack_text))
    assert request.lines == [SEED_IB]


def test_slack_links_become_their_text_and_ampersands_survive():
    text = unescape_slack("see <http://10.0.0.1:8080/x|10.0.0.1:8080/x> and <mailto:a@b.c|a@b.c> a &amp;&amp; b &amp;lt;")
    assert text == "see 10.0.0.1:8080/x and a@b.c a && b &lt;"


def test_code_fences_hold_the_lines_and_the_words_around_them_set_the_language():
    text = f"这几行是什么意思？\n```\n{SEED_AFFINITY}\n\n{SEED_CDB}\n```"
    request = parse_request(text)
    assert request.lines == [SEED_AFFINITY, SEED_CDB]
    assert request.written_in == "zh"
    assert request.lang is None


def test_leading_flags_choose_a_language_and_are_not_lines():
    request = parse_request(f"/explain --en --zh {SEED_CDB}")
    assert request.lang == "zh"
    assert request.lines == [SEED_CDB]
    assert parse_request("--en").lines == []
    # A flag-looking token inside a line is part of the line.
    assert parse_request("python train.py --zh").lines == ["python train.py --zh"]


def test_crlf_inline_code_and_blank_lines():
    request = parse_request(f"`{SEED_CDB}`\r\n\r\n  {SEED_AFFINITY}  \r\n")
    assert request.lines == [SEED_CDB, SEED_AFFINITY]


def test_lines_beyond_the_limit_are_counted_not_lost_silently():
    request = parse_request("\n".join(f"line {i}" for i in range(60)), max_lines=50)
    assert len(request.lines) == 50 and request.skipped == 10


def test_one_chinese_file_name_does_not_make_an_english_message_chinese():
    assert written_language("OSError: /data/数/x.bin not found") == "en"
    assert written_language("训练挂了 NCCL timeout") == "zh"


def test_feishu_mention_keys_are_removed():
    assert strip_feishu_mentions("@_user_1 /explain x").strip() == "/explain x"


# ---- rate limit ------------------------------------------------------------------------------
def test_rate_limit_per_user_with_a_polite_wait():
    now = [1000.0]
    limiter = RateLimiter(2, window=60, clock=lambda: now[0])
    assert limiter.acquire("slack:U1") is None
    assert limiter.acquire("slack:U1") is None
    wait = limiter.acquire("slack:U1")
    assert wait == pytest.approx(60.0)
    assert limiter.acquire("slack:U2") is None  # other users are unaffected
    assert "60" in limiter.message(wait, "en") and "try again" in limiter.message(wait, "en")
    assert "秒后再试" in limiter.message(wait, "zh")
    now[0] += 60.5
    assert limiter.acquire("slack:U1") is None


# ---- store -----------------------------------------------------------------------------------
def _reply(store: ChatStore, answer: dict) -> str:
    from service.chat.store import StoredAnswer

    store.save_reply("r1", "slack", 1, 0, [StoredAnswer("a1", 1, answer)])
    return "a1"


def test_feedback_rows_carry_the_line_and_the_answer_and_a_second_click_replaces_the_first(tmp_path):
    store = ChatStore(tmp_path / "chat.sqlite3")
    answer = {"line": "x", "pattern_id": "p.q", "confidence": 0.9, "known": True}
    _reply(store, answer)
    store.record_feedback("a1", "wrong", "U1", "slack")
    store.record_feedback("a1", "helped", "U1", "slack")
    store.record_feedback("a1", "wrong", "U2", "slack")
    reopened = ChatStore(tmp_path / "chat.sqlite3")
    rows = list(reopened.feedback())
    assert [(r["user"], r["verdict"]) for r in rows] == [("U1", "helped"), ("U2", "wrong")]
    assert rows[0]["line"] == "x" and rows[0]["answer"] == answer and rows[0]["pattern_id"] == "p.q"
    with pytest.raises(UnknownAnswer):
        reopened.record_feedback("nope", "helped", "U1", "slack")
    with pytest.raises(ValueError):
        reopened.record_feedback("a1", "meh", "U1", "slack")


def test_language_choice_is_remembered_across_restarts(tmp_path):
    ChatStore(tmp_path / "c.sqlite3").set_language("slack:U1", "zh")
    assert ChatStore(tmp_path / "c.sqlite3").language("slack:U1") == "zh"
    assert ChatStore(tmp_path / "c.sqlite3").language("slack:U2") is None


# ---- secrets ---------------------------------------------------------------------------------
def test_settings_never_show_secrets_and_name_missing_variables():
    settings = SlackSettings.from_env("http", {"SLACK_BOT_TOKEN": "xoxb-1-secret-token", "SLACK_SIGNING_SECRET": "sign-secret-value"})
    assert "secret" not in repr(settings)
    with pytest.raises(ChatConfigError, match="SLACK_SIGNING_SECRET"):
        SlackSettings.from_env("http", {"SLACK_BOT_TOKEN": "xoxb-1"})
    with pytest.raises(ChatConfigError, match="xapp-"):
        SlackSettings.from_env("socket", {"SLACK_BOT_TOKEN": "xoxb-1", "SLACK_APP_TOKEN": "xoxb-wrong-kind"})
    with pytest.raises(ChatConfigError, match="FEISHU_ENCRYPT_KEY"):
        FeishuSettings.from_env("http", {"FEISHU_APP_ID": "cli_1", "FEISHU_APP_SECRET": "s3cret-app"})
    feishu = FeishuSettings.from_env("ws", {"FEISHU_APP_ID": "cli_1", "FEISHU_APP_SECRET": "s3cret-app"})
    assert "s3cret" not in repr(feishu) and feishu.domain == "https://open.feishu.cn"


def test_log_filter_scrubs_secrets_from_messages_arguments_and_tracebacks():
    records: list[str] = []

    class Collect(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            records.append(self.format(record))

    handler = Collect()
    handler.addFilter(SecretFilter(["xoxb-very-secret", "enc-key-123456"]))
    logger = logging.getLogger("test.chat.secrets")
    logger.addHandler(handler)
    logger.propagate = False
    try:
        logger.warning("token %s in args", "xoxb-very-secret")
        try:
            raise RuntimeError("failed with enc-key-123456")
        except RuntimeError:
            logger.exception("boom")
    finally:
        logger.removeHandler(handler)
    text = "\n".join(records)
    assert "xoxb-very-secret" not in text and "enc-key-123456" not in text
    assert f"token {REDACTED} in args" in text
    assert f"RuntimeError: failed with {REDACTED}" in text


# ---- answers ---------------------------------------------------------------------------------
@pytest.fixture
def answerer(explainer, tmp_path):
    return Answerer(explainer, ChatStore(tmp_path / "chat.sqlite3"), "https://explainlog.example/")


def test_several_lines_are_grouped_most_severe_first(answerer):
    lines = [SEED_AFFINITY, SEED_CDB, SEED_AFFINITY.replace("GPU 2 to ff0000", "GPU 0 to ff"), UNRELATED, SEED_FLUSHES]
    reply = answerer.explain(lines, "slack")
    assert reply.total == 5
    order = [(g.severity, g.answer["pattern_id"], g.count) for g in reply.groups]
    assert order[0] == ("warning", "deepspeed.zero3.allocator_cache_flushes", 1)
    assert order[1] == ("unknown", None, 1)
    assert set(order[2:]) == {("info", "nccl.init.affinity", 2), ("info", "deepspeed.comm.cdb_none", 1)}
    assert reply.severity_counts() == {"warning": 1, "unknown": 1, "info": 3}
    # The stored reply is exactly what was shown.
    assert answerer.reload(reply.id).groups == reply.groups


def test_decoded_fields_and_the_web_permalink(answerer):
    reply = answerer.explain([SEED_AFFINITY], "slack")
    answer = reply.groups[0].answer
    notes = {n.name: n for n in answerer.field_notes(answer, "en")}
    decoded = [n.decoded for n in notes.values() if n.decoded]
    assert any("16-23" in d for d in decoded), notes
    assert answerer.link(answer).startswith("https://explainlog.example/#q=cc0af148112143078d5c88b5e68679fd-task0-0%3A135")


def test_the_whole_seed_log_fits_slack_and_feishu_limits(answerer):
    lines = SEED_LOG.read_text(encoding="utf-8").splitlines()
    reply = answerer.explain(lines, "slack")
    assert reply.total == len(lines) == 40
    for lang in ("en", "zh"):
        blocks = reply_blocks(answerer, reply, lang)
        assert len(blocks) <= 50
        for block in blocks:
            for text in [block.get("text", {}).get("text", "")] + [e.get("text", "") for e in block.get("elements", []) if isinstance(e.get("text"), str)]:
                assert len(text) <= 3000
        card = reply_card(answerer, reply, lang)
        assert len(json.dumps(card, ensure_ascii=False).encode()) < 30_000


def test_colour_codes_and_control_characters_are_not_shown_but_the_line_is_still_explained(answerer):
    from service.chat.messages import displayable

    assert displayable("\x1b[31mNCCL WARN\x1b[0m x\x07\ty") == "NCCL WARN x\ty"
    coloured = "\x1b[32m" + SEED_CDB + "\x1b[0m\x00"
    reply = answerer.explain([coloured], "slack")
    assert reply.groups[0].answer["pattern_id"] == "deepspeed.comm.cdb_none"
    shown = reply_blocks(answerer, reply, "en")[1]["elements"][0]["text"]
    assert shown == f"`{SEED_CDB}`"
    assert reply_card(answerer, reply, "en")["elements"][0]["elements"][0]["content"] == SEED_CDB


# ---- a pasted log: root cause first, the cascade folded ---------------------------------------
TRIAGE_DATA = __import__("pathlib").Path(__file__).resolve().parent / "data" / "triage"


def triage_case(name: str) -> tuple[str, dict]:
    """A log of the triage set and its hand label."""
    labels = {row["case"]: row for row in map(json.loads, (TRIAGE_DATA / "labels.jsonl").read_text(encoding="utf-8").splitlines())}
    return (TRIAGE_DATA / f"{name}.log").read_text(encoding="utf-8"), labels[name]


def _explain_paste(answerer, text: str):
    request = parse_request(text)
    return answerer.explain(request.lines, "slack", request.skipped, indented=request.pasted)


def test_a_pasted_log_opens_with_its_root_cause_and_the_cascade_folded(answerer):
    text, label = triage_case("case_01")  # local_rank 4 SIGKILLed; 8 SIGTERM lines printed before it
    root_line = next(line for line in text.splitlines() if label["root_cause"] in line)
    reply = _explain_paste(answerer, text)
    root, cascade = reply.triage["root_cause"], reply.triage["cascade"]
    assert root["line"] == root_line and "SIGKILL" in root["title"]["en"]
    sigterms = next(g for g in cascade if g["count"] > 1)
    assert sigterms["count"] == 8 and "SIGTERM" in sigterms["sample"]
    n = sum(g["count"] for g in cascade)
    for lang, heading, why, cascade_head in (
            ("en", f"Root cause: {root['title']['en']}", "*Why this line*", f"*Cascade: {n} knock-on line(s) in {len(cascade)} group(s)*"),
            ("zh", f"根因：{root['title']['zh']}", "*判断依据*", f"*连带报错：{len(cascade)} 组，共 {n} 行*")):
        texts = slack_texts(reply_blocks(answerer, reply, lang))
        assert texts[0] == f":dart: *{heading}*"
        assert texts[1] == f"`{root_line}`"
        assert texts[2] == f"{why}\n{root['why'][lang]}"
        assert texts[3].endswith(root["action"][lang])
        folded = [t for t in texts if t.startswith(cascade_head)]
        assert len(folded) == 1 and folded[0].count("\n") == len(cascade)
        row = f"• {sigterms['title'][lang]} ×8 — `{sigterms['sample'][:79]}…`"
        assert row in folded[0] and sum(t.count(f"{sigterms['title'][lang]} ×8") for t in texts) == 1
        # the root cause's line comes before any cascade line; the per-line answers follow
        assert texts.index(f"`{root_line}`") < texts.index(folded[0])
        assert texts.index(folded[0]) < next(i for i, t in enumerate(texts) if t.startswith("*Explained" if lang == "en" else "*共解释"))

        card = reply_card(answerer, reply, lang)
        assert card["header"] == {"template": "red", "title": {"tag": "plain_text", "content": "🎯 " + heading}}
        assert card["elements"][0] == {"tag": "note", "elements": [{"tag": "plain_text", "content": root_line}]}
        shown = json.dumps(card, ensure_ascii=False)
        row = f"• {sigterms['title'][lang]} ×8 — "
        assert shown.count(row) == 1 and shown.index(root_line) < shown.index(row)
    assert fallback_text(reply, "en").startswith(f"Root cause: {root['title']['en']} — Explained 14 lines")
    # the language switch re-renders from the store: the verdict is kept with the reply
    again = answerer.reload(reply.id)
    assert again.triage == reply.triage and again.groups == reply.groups
    assert reply_card(answerer, again, "en") == reply_card(answerer, reply, "en")


def test_a_pasted_traceback_keeps_its_indentation_for_the_root_cause(answerer):
    # stripped of its indentation, a traceback's code lines look like its final exception line
    text, label = triage_case("case_31")
    reply = _explain_paste(answerer, "```\n" + text + "```")
    assert label["root_cause"] in reply.triage["root_cause"]["line"]
    assert reply.triage["root_cause"]["line"].startswith("FileNotFoundError: ")
    assert [g["sample"] for g in reply.triage["cascade"]] == [text.splitlines()[-1]]


def test_three_lines_or_fewer_get_no_root_cause_section(answerer):
    lines = [SEED_AFFINITY, SEED_CDB, SEED_FLUSHES]
    reply = answerer.explain(lines, "slack")
    assert reply.triage is None and answerer.reload(reply.id).triage is None
    for lang in ("en", "zh"):
        texts = slack_texts(reply_blocks(answerer, reply, lang))
        assert texts[0].startswith("*Explained 3 lines" if lang == "en" else "*共解释 3 行")
        shown = json.dumps(reply_blocks(answerer, reply, lang), ensure_ascii=False) + json.dumps(reply_card(answerer, reply, lang), ensure_ascii=False)
        for word in (":dart:", "🎯", "Root cause", "根因", "Cascade", "连带报错", "No failure found", "未发现故障"):
            assert word not in shown


def test_a_log_with_no_failure_says_so_first(answerer):
    text, label = triage_case("case_22")
    assert label["root_cause"] is None
    reply = _explain_paste(answerer, text)
    assert reply.triage["root_cause"] is None
    assert reply_blocks(answerer, reply, "en")[0]["text"]["text"] == "*No failure found: no line is an error, a failed worker or a crash.*"
    card = reply_card(answerer, reply, "zh")
    assert card["elements"][0]["text"]["content"] == "**未发现故障：没有哪一行是错误、失败的 worker 或崩溃。**"
    assert card["header"]["title"]["content"].startswith("共解释 9 行")


def test_a_failing_triage_costs_only_the_root_cause_section(answerer, monkeypatch, caplog):
    import service.triage

    def broken(*args, **kwargs):
        raise RuntimeError("triage broke")

    monkeypatch.setattr(service.triage, "triage_lines", broken)
    text, _ = triage_case("case_01")
    reply = _explain_paste(answerer, text)
    assert reply.triage is None and reply.total == 14
    assert reply_blocks(answerer, reply, "en")[0]["text"]["text"].startswith("*Explained 14 lines")
    assert "triage of 14 pasted line(s) failed" in caplog.text
