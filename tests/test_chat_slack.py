"""The Slack bot end to end: real signed HTTP requests to uvicorn, Web API calls to a local fake.

Every entry point (slash command, app_mention event, message shortcut, feedback button) is
exercised with requests signed exactly as Slack signs them; forged, unsigned and replayed
requests must be refused before any work (the explainer is never called, nothing is posted,
nothing is stored). Socket Mode runs over a real WebSocket to the fake server.
"""

from __future__ import annotations

from service.presentation import source_line
import json
import logging
import time
from dataclasses import dataclass
from urllib.parse import urlencode

import pytest

from chat_fakes import (
    SEED_AFFINITY, SEED_CDB, SEED_FLUSHES, SEED_IB, UNRELATED,
    CountingExplainer, FakeChatApis, ServerThread, post, slack_headers, slack_texts,
)
from indexer.texts import decode_value
from service.chat.answers import Answerer
from service.chat.config import SlackSettings
from service.chat.ratelimit import RateLimiter
from service.chat.server import standalone_app
from service.chat.slack import SlackBot, build_slack_app, slack_route
from service.chat.store import ChatStore

SECRET = "test-signing-secret-8f2c41"
BOT_TOKEN = "xoxb-test-bot-token-51d9"
WEB = "https://explainlog.example"
RATE = 4


@dataclass
class SlackStack:
    fake: FakeChatApis
    api_url: str
    url: str
    explainer: CountingExplainer
    store: ChatStore

    def send(self, body: bytes, headers: dict[str, str] | None = None, content_type: str = "application/x-www-form-urlencoded"):
        return post(self.url + "/slack/events", body, headers if headers is not None else slack_headers(SECRET, body, content_type=content_type))

    def outgoing(self) -> list[str]:
        """Paths the bot called, apart from bolt's start-up token check."""
        return [p for p in self.fake.recorder.paths() if p != "/api/auth.test"]


@pytest.fixture
def slack(explainer, tmp_path, monkeypatch):
    for var in ("HTTP_PROXY", "HTTPS_PROXY", "http_proxy", "https_proxy"):
        monkeypatch.delenv(var, raising=False)
    fake = FakeChatApis()
    with ServerThread(fake.app()) as api:
        fake.base_url = api.url
        counting = CountingExplainer(explainer)
        store = ChatStore(tmp_path / "chat.sqlite3")
        settings = SlackSettings(BOT_TOKEN, SECRET, None, api.url + "/api/")
        app = build_slack_app(settings, SlackBot(Answerer(counting, store, WEB), RateLimiter(RATE)))
        with ServerThread(standalone_app([slack_route(app, SECRET)])) as server:
            yield SlackStack(fake, api.url, server.url, counting, store)


# ---- request bodies, as Slack sends them -----------------------------------------------------
def slack_escape(text: str) -> str:
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def slash(stack: SlackStack, text: str, user: str = "U1", rid: str = "cmd") -> bytes:
    return urlencode({
        "token": "legacy-unused", "team_id": "T1", "channel_id": "C1", "channel_name": "training",
        "user_id": user, "user_name": "alice", "command": "/explain", "text": slack_escape(text),
        "response_url": f"{stack.api_url}/response/{rid}", "trigger_id": "123.456.abc", "api_app_id": "A1",
    }).encode()


def mention(text: str, ts: str = "1726000000.000100", thread_ts: str | None = None, user: str = "U1") -> bytes:
    event = {"type": "app_mention", "user": user, "text": text, "ts": ts, "channel": "C1", "event_ts": ts}
    if thread_ts:
        event["thread_ts"] = thread_ts
    return json.dumps({
        "token": "legacy-unused", "team_id": "T1", "api_app_id": "A1", "type": "event_callback",
        "event_id": "Ev" + ts.replace(".", ""), "event_time": 1726000000, "event": event,
        "authorizations": [{"team_id": "T1", "user_id": "UBOT", "is_bot": True}],
    }).encode()


def interactive(payload: dict) -> bytes:
    return urlencode({"payload": json.dumps(payload)}).encode()


def shortcut(stack: SlackStack, text: str, ts: str = "1726000000.000300", thread_ts: str | None = None,
             channel: str = "C1", user: str = "U1", rid: str = "sc") -> bytes:
    message = {"type": "message", "user": "U7", "text": slack_escape(text), "ts": ts}
    if thread_ts:
        message["thread_ts"] = thread_ts
    return interactive({
        "type": "message_action", "callback_id": "explain_log", "trigger_id": "t1", "team": {"id": "T1"},
        "user": {"id": user}, "channel": {"id": channel, "name": "training"}, "message_ts": ts,
        "message": message, "response_url": f"{stack.api_url}/response/{rid}", "token": "legacy-unused",
    })


def button(stack: SlackStack, action_id: str, value: str, user: str = "U1", rid: str = "btn") -> bytes:
    return interactive({
        "type": "block_actions", "user": {"id": user}, "team": {"id": "T1"}, "api_app_id": "A1",
        "container": {"type": "message", "message_ts": "1726000000.000200", "channel_id": "C1"},
        "channel": {"id": "C1"}, "trigger_id": "t2", "response_url": f"{stack.api_url}/response/{rid}",
        "actions": [{"type": "button", "action_id": action_id, "block_id": f"feedback_{value}",
                     "value": value, "action_ts": "1726000001.0"}],
        "token": "legacy-unused",
    })


# ---- the exact Block Kit answer, built from the KB entry -------------------------------------
UI = {
    "en": {"info": "info", "warning": "warning", "fields": "Fields", "action": "What to do", "confidence": "confidence",
           "open": "Open in explainlog", "helped": "This helped", "wrong": "Wrong answer", "details": "Details"},
    "zh": {"info": "信息", "warning": "警告", "fields": "字段", "action": "建议操作", "confidence": "置信度",
           "open": "在 explainlog 中打开", "helped": "有帮助", "wrong": "答案有误", "details": "详情"},
}
EMOJI = {"info": ":information_source:", "warning": ":warning:"}


def expected_blocks(explainer, line: str, lang: str, answer_id: str) -> list[dict]:
    answer = explainer.explain(line)
    entry = explainer.by_id[answer["pattern_id"]]
    ui = UI[lang]
    shown = line if len(line) <= 300 else line[:299] + "…"  # long lines are clipped in the context block
    blocks = [
        {"type": "section", "text": {"type": "mrkdwn", "text": f"{EMOJI[answer['severity']]} *{slack_escape(answer['title'][lang])}*  `{ui[answer['severity']]}`"}},
        {"type": "context", "elements": [{"type": "mrkdwn", "text": f"`{slack_escape(shown)}`"}]},
    ]
    if answer["summary"][lang] != answer["title"][lang]:  # the title says it already otherwise
        blocks.append({"type": "section", "text": {"type": "mrkdwn", "text": slack_escape(answer["summary"][lang])}})
    if answer["action"]:
        blocks.append({"type": "section", "text": {"type": "mrkdwn", "text": f"*{ui['action']}*\n{slack_escape(answer['action'][lang])}"}})
    link = WEB + "/#" + urlencode({"q": line})
    blocks += [
        {"type": "context", "elements": [{"type": "mrkdwn", "text": f"{ui['confidence']} {answer['confidence']:.2f} · `{answer['pattern_id']}` · <{link}|{ui['open']}>"}]},
        {"type": "actions", "block_id": f"feedback_{answer_id}", "elements": [
            {"type": "button", "action_id": "explainlog_helped", "style": "primary",
             "text": {"type": "plain_text", "text": ui["helped"]}, "value": answer_id},
            {"type": "button", "action_id": "explainlog_wrong", "style": "danger",
             "text": {"type": "plain_text", "text": ui["wrong"]}, "value": answer_id},
            {"type": "button", "action_id": "explainlog_details",
             "text": {"type": "plain_text", "text": ui["details"]}, "value": answer_id},
        ]},
    ]
    return blocks


def expected_details(explainer, line: str, lang: str) -> list[dict]:
    """The long form the "details" button sends: title, explanation, fields, source."""
    answer = explainer.explain(line)
    entry = explainer.by_id[answer["pattern_id"]]
    rows = []
    for name, value in answer["fields"].items():
        spec = entry.fields[name]
        decoded = decode_value(spec, value)
        row = f"• `{name}` `{slack_escape(value.strip())}` — {slack_escape(getattr(spec, lang))}"
        rows.append(row + (f" → *{slack_escape(decoded[0 if lang == 'en' else 1])}*" if decoded else ""))
    blocks = [
        {"type": "section", "text": {"type": "mrkdwn", "text": f"*{slack_escape(answer['title'][lang])}*"}},
        {"type": "section", "text": {"type": "mrkdwn", "text": slack_escape(answer["explanation"][lang])}},
    ]
    if rows:
        blocks.append({"type": "section", "text": {"type": "mrkdwn", "text": f"*{UI[lang]['fields']}*\n" + "\n".join(rows)}})
    if answer["source"]:  # where the line is printed (the sentence itself: test_presentation.py)
        blocks.append({"type": "context", "elements": [{"type": "mrkdwn", "text": slack_escape(source_line(answer["source"], lang))}]})
    return blocks


def answer_id(blocks: list[dict]) -> str:
    return next(b for b in blocks if b["type"] == "actions")["elements"][0]["value"]


# ---- slash command ---------------------------------------------------------------------------
def test_slash_command_is_acknowledged_at_once_then_answered_in_channel(slack, explainer):
    # Slack wants the acknowledgement within 3 s: it must not wait for the explanation, which
    # is held here until the acknowledgement has arrived.
    slack.explainer.gate.clear()
    status, body, _ = slack.send(slash(slack, SEED_AFFINITY))
    slack.explainer.gate.set()
    assert status == 200 and body.decode() == "Explaining 1 line(s)…"
    call = slack.fake.recorder.wait_for(lambda c: c.path == "/response/cmd")
    blocks = call.json["blocks"]
    assert blocks == expected_blocks(explainer, SEED_AFFINITY, "en", answer_id(blocks))
    assert call.json["response_type"] == "in_channel"
    assert call.json["text"] == "[info] " + explainer.by_id["nccl.init.affinity"].title.en
    assert slack.store.answer(answer_id(blocks))["line"] == SEED_AFFINITY


def test_zh_flag_answers_in_chinese_and_the_choice_is_remembered(slack, explainer):
    slack.send(slash(slack, "--zh " + SEED_AFFINITY, rid="zh1"))
    blocks = slack.fake.recorder.wait_for(lambda c: c.path == "/response/zh1").json["blocks"]
    assert blocks == expected_blocks(explainer, SEED_AFFINITY, "zh", answer_id(blocks))
    assert blocks[0]["text"]["text"].endswith(f"*{explainer.by_id['nccl.init.affinity'].title.zh}*  `信息`")

    slack.send(slash(slack, SEED_CDB, rid="zh2"))  # no flag: the remembered choice
    blocks = slack.fake.recorder.wait_for(lambda c: c.path == "/response/zh2").json["blocks"]
    assert explainer.by_id["deepspeed.comm.cdb_none"].title.zh in blocks[0]["text"]["text"]

    calls = slack.explainer.calls
    status, body, _ = slack.send(slash(slack, "--en", rid="en0"))
    assert body.decode() == "Answers will be in English from now on."
    slack.send(slash(slack, SEED_CDB, rid="en1"))
    blocks = slack.fake.recorder.wait_for(lambda c: c.path == "/response/en1").json["blocks"]
    assert explainer.by_id["deepspeed.comm.cdb_none"].title.en in blocks[0]["text"]["text"]
    assert slack.explainer.calls == calls + 1  # the bare --en explained nothing
    assert "/response/en0" not in slack.fake.recorder.paths()


def test_a_question_in_words_is_asked_not_explained(slack, explainer):
    """A question gets the KB's answer to it (here: that the KB has none), not "unknown line"."""
    from service.ask import NOT_KNOWN, asker_for

    slack.send(slash(slack, "how do I center a div in CSS?", rid="q1"))
    call = slack.fake.recorder.wait_for(lambda c: c.path == "/response/q1")
    assert call.json["blocks"] == [{"type": "section", "text": {"type": "mrkdwn", "text": NOT_KNOWN["en"]}}]
    assert call.json["text"] == NOT_KNOWN["en"]
    # asked in Chinese, answered in Chinese, with the source of each answer named
    question = "ProcessGroupNCCL 的 watchdog 超时是什么原因？"
    expected = asker_for(explainer).ask(question, lang="zh")
    assert expected["known"]
    slack.send(slash(slack, "--zh " + question, rid="q2"))
    blocks = slack.fake.recorder.wait_for(lambda c: c.path == "/response/q2").json["blocks"]
    assert expected["answers"][0]["title"] in blocks[0]["text"]["text"]
    assert blocks[1]["elements"][0]["text"].startswith("来源：")


def test_empty_command_gets_help_and_does_no_work(slack):
    status, body, _ = slack.send(slash(slack, "   "))
    assert status == 200 and "/explain" in body.decode() and "--zh" in body.decode()
    time.sleep(0.3)
    assert slack.explainer.calls == 0 and slack.outgoing() == []


# ---- app mention -----------------------------------------------------------------------------
def test_mention_with_a_code_block_is_answered_in_the_thread(slack, explainer):
    text = "<@UBOT> what is this?\n```" + slack_escape(SEED_IB) + "```"
    slack.explainer.gate.clear()  # acknowledged while the explanation is still held
    status, _, _ = slack.send(mention(text), content_type="application/json")
    slack.explainer.gate.set()
    assert status == 200
    call = slack.fake.recorder.wait_for(lambda c: c.path == "/api/chat.postMessage")
    assert call.headers["authorization"] == f"Bearer {BOT_TOKEN}"
    assert call.json["channel"] == "C1" and call.json["thread_ts"] == "1726000000.000100"
    blocks = call.json["blocks"]
    assert blocks == expected_blocks(explainer, SEED_IB, "en", answer_id(blocks))
    assert "eth0:10.244.174.137&lt;0&gt;" in blocks[1]["elements"][0]["text"]


def test_mention_inside_a_thread_in_chinese_answers_there_in_chinese(slack, explainer):
    text = "<@UBOT> 这行日志是什么意思？\n```" + slack_escape(SEED_CDB) + "```"
    slack.send(mention(text, ts="1726000000.000900", thread_ts="1726000000.000001"), content_type="application/json")
    call = slack.fake.recorder.wait_for(lambda c: c.path == "/api/chat.postMessage")
    assert call.json["thread_ts"] == "1726000000.000001"
    assert call.json["blocks"] == expected_blocks(explainer, SEED_CDB, "zh", answer_id(call.json["blocks"]))


def test_a_bare_mention_gets_private_help_and_no_work(slack):
    slack.send(mention("<@UBOT>  "), content_type="application/json")
    call = slack.fake.recorder.wait_for(lambda c: c.path == "/api/chat.postEphemeral")
    assert call.json["user"] == "U1" and call.json["thread_ts"] == "1726000000.000100"
    assert call.json["text"].startswith("Paste log lines after `/explain`")
    assert slack.explainer.calls == 0 and "/api/chat.postMessage" not in slack.fake.recorder.paths()


def test_several_lines_collapse_into_a_summary_with_the_most_severe_first(slack, explainer):
    lines = [SEED_AFFINITY, SEED_CDB, UNRELATED, SEED_FLUSHES, SEED_AFFINITY]
    slack.send(mention("<@UBOT>\n" + "\n".join(slack_escape(l) for l in lines)), content_type="application/json")
    blocks = slack.fake.recorder.wait_for(lambda c: c.path == "/api/chat.postMessage").json["blocks"]
    flushes = explainer.by_id["deepspeed.zero3.allocator_cache_flushes"].title.en
    # more than three lines: the reply opens with the triage's verdict, then the per-line summary
    assert blocks[0]["text"]["text"] == _opening(explainer, lines)
    start = next(i for i, b in enumerate(blocks) if b["type"] == "section" and b["text"]["text"].startswith("*Explained"))
    assert blocks[start - 1] == {"type": "divider"}
    assert blocks[start]["text"]["text"] == "*Explained 5 lines (4 distinct), most severe first: 1 warning · 1 unknown · 3 info*"
    headings = [b["text"]["text"] for b in blocks[start:] if b["type"] == "section" and b["text"]["text"].startswith(":")]
    assert headings[0] == f":warning: *{flushes}*  `warning`"
    assert headings[1] == ":grey_question: *Not in the knowledge base*"
    unknown_body = blocks[blocks.index(next(b for b in blocks if b.get("text", {}).get("text") == headings[1])) + 2]["text"]["text"]
    assert unknown_body.startswith("explainlog has no curated explanation for this line.\n*Nearest entries*\n• ")
    # The third detailed answer is an info line; the fourth group is listed in one line.
    assert headings[2].startswith(":information_source: ")
    assert blocks[-1]["text"]["text"].startswith("*Also in the paste*\n• :information_source: ")
    assert sum(1 for b in blocks if b["type"] == "actions") == 3


# ---- message shortcut ------------------------------------------------------------------------
def test_shortcut_explains_the_message_in_its_thread(slack, explainer):
    status, _, _ = slack.send(shortcut(slack, SEED_FLUSHES, ts="1726000000.000300", thread_ts="1726000000.000002"))
    assert status == 200
    call = slack.fake.recorder.wait_for(lambda c: c.path == "/api/chat.postMessage")
    assert call.json["thread_ts"] == "1726000000.000002"
    blocks = call.json["blocks"]
    assert blocks == expected_blocks(explainer, SEED_FLUSHES, "en", answer_id(blocks))
    assert blocks[0]["text"]["text"].startswith(":warning: ") and any(
        b["type"] == "section" and b["text"]["text"].startswith("*What to do*\n") for b in blocks)


def test_shortcut_in_a_channel_without_the_bot_answers_the_asker_privately(slack, explainer):
    slack.fake.slack_channel_errors["CPRIV"] = "not_in_channel"
    slack.send(shortcut(slack, SEED_CDB, channel="CPRIV", rid="priv"))
    call = slack.fake.recorder.wait_for(lambda c: c.path == "/response/priv")
    assert call.json["response_type"] == "ephemeral"
    assert "/invite @explainlog" in call.json["blocks"][0]["elements"][0]["text"]
    assert call.json["blocks"][1:] == expected_blocks(explainer, SEED_CDB, "en", answer_id(call.json["blocks"]))


# ---- feedback buttons ------------------------------------------------------------------------
def test_button_clicks_are_stored_with_the_line_and_the_answer(slack):
    slack.send(slash(slack, SEED_AFFINITY))
    blocks = slack.fake.recorder.wait_for(lambda c: c.path == "/response/cmd").json["blocks"]
    aid = answer_id(blocks)
    status, _, _ = slack.send(button(slack, "explainlog_helped", aid, user="U1", rid="b1"))
    assert status == 200
    status, _, _ = slack.send(button(slack, "explainlog_wrong", aid, user="U2", rid="b2"))
    assert status == 200
    rows = list(slack.store.feedback())
    assert [(r["user"], r["verdict"], r["platform"]) for r in rows] == [("U1", "helped", "slack"), ("U2", "wrong", "slack")]
    assert rows[0]["line"] == SEED_AFFINITY and rows[0]["pattern_id"] == "nccl.init.affinity"
    assert rows[0]["answer"]["title"]["en"] in blocks[0]["text"]["text"]
    thanks = slack.fake.recorder.wait_for(lambda c: c.path == "/response/b1").json
    assert thanks == {"text": "Thanks — noted that this helped.", "response_type": "ephemeral", "replace_original": False}


def test_the_details_button_sends_the_long_form_to_the_asker(slack, explainer):
    """Issue 22: the answer leads with the summary and action; the explanation, fields and source
    come on demand, privately, without explaining the line again."""
    slack.send(slash(slack, SEED_AFFINITY))
    blocks = slack.fake.recorder.wait_for(lambda c: c.path == "/response/cmd").json["blocks"]
    assert not any(explainer.explain(SEED_AFFINITY)["explanation"]["en"] in json.dumps(b) for b in blocks)
    calls = slack.explainer.calls
    status, _, _ = slack.send(button(slack, "explainlog_details", answer_id(blocks), rid="d1"))
    assert status == 200
    sent = slack.fake.recorder.wait_for(lambda c: c.path == "/response/d1").json
    assert sent["response_type"] == "ephemeral" and sent["replace_original"] is False
    assert sent["blocks"] == expected_details(explainer, SEED_AFFINITY, "en")
    assert slack.explainer.calls == calls
    status, _, _ = slack.send(button(slack, "explainlog_details", "feedfacefeedface", rid="d2"))
    assert slack.fake.recorder.wait_for(lambda c: c.path == "/response/d2").json["text"].startswith("That answer is too old")


def test_a_click_on_a_forgotten_answer_says_so(slack):
    slack.send(button(slack, "explainlog_wrong", "0123456789abcdef", rid="old"))
    assert "too old" in slack.fake.recorder.wait_for(lambda c: c.path == "/response/old").json["text"]
    assert list(slack.store.feedback()) == []


# ---- rate limit ------------------------------------------------------------------------------
def test_rate_limit_answers_politely_without_explaining(slack):
    for i in range(RATE):
        slack.send(slash(slack, SEED_CDB, user="UFAST", rid=f"r{i}"))
    status, body, _ = slack.send(slash(slack, SEED_CDB, user="UFAST", rid="over"))
    assert status == 200 and "try again in" in body.decode() and f"{RATE} requests a minute" in body.decode()
    for i in range(RATE):
        slack.fake.recorder.wait_for(lambda c, i=i: c.path == f"/response/r{i}")
    time.sleep(0.3)
    assert slack.explainer.calls == RATE and "/response/over" not in slack.fake.recorder.paths()
    slack.send(slash(slack, SEED_CDB, user="UOTHER", rid="other"))  # others are not affected
    slack.fake.recorder.wait_for(lambda c: c.path == "/response/other")


# ---- security: nothing unsigned, forged or replayed is acted on -----------------------------
ENTRY_POINTS = {
    "slash_command": lambda s: (slash(s, SEED_AFFINITY), "application/x-www-form-urlencoded"),
    "app_mention": lambda s: (mention("<@UBOT> " + SEED_AFFINITY), "application/json"),
    "shortcut": lambda s: (shortcut(s, SEED_AFFINITY), "application/x-www-form-urlencoded"),
    "block_action": lambda s: (button(s, "explainlog_helped", s.store_seed), "application/x-www-form-urlencoded"),
}


def _attack_headers(kind: str, body: bytes, content_type: str) -> dict[str, str]:
    now = int(time.time())
    if kind == "unsigned":
        return {"Content-Type": content_type}
    if kind == "forged":
        return slack_headers("not-the-signing-secret", body, content_type=content_type)
    if kind == "replayed":  # a genuine signature, captured and re-sent 5 min 1 s later
        return slack_headers(SECRET, body, timestamp=now - 301, content_type=content_type)
    if kind == "tampered":  # signed, then the body was changed
        return slack_headers(SECRET, body + b"&x=1", content_type=content_type)
    if kind == "bad_timestamp":
        headers = slack_headers(SECRET, body, content_type=content_type)
        headers["X-Slack-Request-Timestamp"] = "yesterday"
        return headers
    raise AssertionError(kind)


@pytest.mark.parametrize("kind", ["unsigned", "forged", "replayed", "tampered", "bad_timestamp"])
@pytest.mark.parametrize("entry", sorted(ENTRY_POINTS))
def test_unauthenticated_requests_are_rejected_before_any_work(slack, entry, kind):
    from service.chat.store import StoredAnswer

    slack.store.save_reply("seedreply", "slack", 1, 0, [StoredAnswer("seedanswer000001", 1, {"line": SEED_CDB})])
    slack.store_seed = "seedanswer000001"
    body, content_type = ENTRY_POINTS[entry](slack)
    status, response, _ = slack.send(body, _attack_headers(kind, body, content_type))
    assert status == 401, response
    time.sleep(0.5)  # anything started in the background would have called out by now
    assert slack.explainer.calls == 0
    assert slack.outgoing() == []
    assert list(slack.store.feedback()) == []


def test_the_same_requests_signed_properly_are_accepted(slack):
    """The control for the test above: the only difference is the signature."""
    from service.chat.store import StoredAnswer

    slack.store.save_reply("seedreply", "slack", 1, 0, [StoredAnswer("seedanswer000001", 1, {"line": SEED_CDB})])
    slack.store_seed = "seedanswer000001"
    for entry in sorted(ENTRY_POINTS):
        body, content_type = ENTRY_POINTS[entry](slack)
        assert slack.send(body, content_type=content_type)[0] == 200
    slack.fake.recorder.wait_for(lambda c: c.path == "/response/cmd")
    assert [r["verdict"] for r in slack.store.feedback()] == ["helped"]


def test_url_verification_and_non_utf8_bodies(slack):
    body = json.dumps({"token": "x", "challenge": "c-123", "type": "url_verification"}).encode()
    status, response, _ = slack.send(body, content_type="application/json")
    assert status == 200 and json.loads(response)["challenge"] == "c-123"
    junk = b"payload=\xff\xfe\x00junk"  # Slack signs text; bytes that are not UTF-8 cannot verify
    assert slack.send(junk)[0] == 401
    assert slack.explainer.calls == 0


def test_no_secret_reaches_the_logs_even_at_debug(slack, caplog):
    caplog.set_level(logging.DEBUG)
    slack.send(slash(slack, SEED_AFFINITY))
    slack.fake.recorder.wait_for(lambda c: c.path == "/response/cmd")
    slack.send(mention("<@UBOT> " + SEED_CDB), content_type="application/json")
    slack.fake.recorder.wait_for(lambda c: c.path == "/api/chat.postMessage")
    slack.send(slash(slack, SEED_CDB), _attack_headers("forged", b"", "application/x-www-form-urlencoded"))
    assert caplog.records, "debug logging produced nothing; the check would be vacuous"
    assert BOT_TOKEN not in caplog.text and SECRET not in caplog.text


# ---- Socket Mode, over a real WebSocket -----------------------------------------------------
def test_socket_mode_receives_a_command_over_a_websocket_and_answers(explainer, tmp_path, monkeypatch):
    from slack_bolt.adapter.socket_mode import SocketModeHandler

    for var in ("HTTP_PROXY", "HTTPS_PROXY", "http_proxy", "https_proxy"):
        monkeypatch.delenv(var, raising=False)
    fake = FakeChatApis()
    with ServerThread(fake.app()) as api:
        fake.base_url = api.url
        fake.slack_socket_envelopes.append({
            "envelope_id": "env-1", "type": "slash_commands", "accepts_response_payload": True,
            "payload": {"command": "/explain", "text": "--zh " + slack_escape(SEED_IB), "user_id": "U9",
                        "channel_id": "C1", "team_id": "T1", "response_url": api.url + "/response/sock", "trigger_id": "t"},
        })
        counting = CountingExplainer(explainer)
        answerer = Answerer(counting, ChatStore(tmp_path / "chat.sqlite3"), WEB)
        settings = SlackSettings.from_env("socket", {"SLACK_BOT_TOKEN": BOT_TOKEN, "SLACK_APP_TOKEN": "xapp-1-test",
                                                      "SLACK_API_URL": api.url + "/api/"})
        app = build_slack_app(settings, SlackBot(answerer, RateLimiter(RATE)), socket_mode=True)
        handler = SocketModeHandler(app, settings.app_token)
        handler.connect()
        try:
            opened = fake.recorder.wait_for(lambda c: c.path == "/api/apps.connections.open")
            assert opened.headers["authorization"] == "Bearer xapp-1-test"
            ack = fake.recorder.wait_for(lambda c: c.path == "/slack-socket")
            assert ack.json == {"envelope_id": "env-1", "payload": {"text": "正在解释 1 行…"}}
            blocks = fake.recorder.wait_for(lambda c: c.path == "/response/sock").json["blocks"]
            assert blocks == expected_blocks(explainer, SEED_IB, "zh", answer_id(blocks))
        finally:
            handler.close()


# ---- mounted into the HTTP service ----------------------------------------------------------
def test_the_http_service_factory_serves_the_bot_next_to_its_api(kb_dir, index_dir, tmp_path, monkeypatch):
    from service.chat.server import http_service_with_bots

    _ = index_dir  # built by the session fixture; the service must find it, not rebuild it
    fake = FakeChatApis()
    with ServerThread(fake.app()) as api:
        fake.base_url = api.url
        for name, value in {"SLACK_BOT_TOKEN": BOT_TOKEN, "SLACK_SIGNING_SECRET": SECRET, "SLACK_API_URL": api.url + "/api/",
                            "EXPLAINLOG_KB": str(kb_dir), "EXPLAINLOG_INDEX": str(index_dir),
                            "EXPLAINLOG_INDEX_POLICY": "refuse", "EXPLAINLOG_CHAT_DB": str(tmp_path / "c.sqlite3")}.items():
            monkeypatch.setenv(name, value)
        monkeypatch.delenv("FEISHU_ENCRYPT_KEY", raising=False)
        with ServerThread(http_service_with_bots()) as server:
            body = urlencode({"command": "/explain", "text": SEED_CDB, "user_id": "U1", "channel_id": "C1",
                              "response_url": api.url + "/response/m", "trigger_id": "t"}).encode()
            assert post(server.url + "/slack/events", body, slack_headers(SECRET, body))[0] == 200
            assert post(server.url + "/slack/events", body, {"Content-Type": "application/x-www-form-urlencoded"})[0] == 401
            assert post(server.url + "/feishu/events", b"{}", {"Content-Type": "application/json"})[0] == 404
            blocks = fake.recorder.wait_for(lambda c: c.path == "/response/m").json["blocks"]
            assert "deepspeed.comm.cdb_none" in blocks[-2]["elements"][0]["text"]
            status, response, _ = post(server.url + "/v1/explain", json.dumps({"lines": [SEED_CDB]}).encode(),
                                       {"Content-Type": "application/json"})
            assert status == 200 and b"deepspeed.comm.cdb_none" in response


# ---- the app manifests match the code -------------------------------------------------------
@pytest.mark.parametrize("name", ["slack-manifest.yaml", "slack-manifest-socket.yaml"])
def test_the_slack_manifests_declare_what_the_bot_listens_for(name):
    from pathlib import Path

    import yaml

    from service.chat.slack import COMMAND, EVENTS_PATH, SHORTCUT_CALLBACK_ID

    manifest = yaml.safe_load((Path(__file__).resolve().parent.parent / "deploy" / name).read_text(encoding="utf-8"))
    features, settings = manifest["features"], manifest["settings"]
    assert [c["command"] for c in features["slash_commands"]] == [COMMAND]
    assert [(s["type"], s["callback_id"], s["name"]) for s in features["shortcuts"]] == [("message", SHORTCUT_CALLBACK_ID, "Explain this log")]
    assert settings["event_subscriptions"]["bot_events"] == ["app_mention"]
    assert settings["interactivity"]["is_enabled"] is True
    assert set(manifest["oauth_config"]["scopes"]["bot"]) == {"app_mentions:read", "chat:write", "commands"}
    urls = [features["slash_commands"][0].get("url"), settings["event_subscriptions"].get("request_url"),
            settings["interactivity"].get("request_url")]
    if settings["socket_mode_enabled"]:
        assert urls == [None, None, None]
    else:
        assert all(u == "https://YOUR-HOST" + EVENTS_PATH for u in urls)


def test_a_failing_explainer_gets_an_apology_not_silence(slack):
    from service.explainer import IndexUnavailable

    def broken(lines, semantic=True):
        raise IndexUnavailable("index missing")

    slack.explainer.explain_many = broken
    slack.send(slash(slack, SEED_CDB, rid="fail"))
    call = slack.fake.recorder.wait_for(lambda c: c.path == "/response/fail")
    assert call.json == {"text": "Sorry — explaining failed on the server (IndexUnavailable). Its log has the details.",
                         "response_type": "ephemeral", "replace_original": False}
    slack.send(mention("<@UBOT> " + SEED_CDB), content_type="application/json")
    call = slack.fake.recorder.wait_for(lambda c: c.path == "/api/chat.postEphemeral")
    assert call.json["user"] == "U1" and "IndexUnavailable" in call.json["text"]


# ---- a pasted log: root cause first, the cascade folded --------------------------------------
TRIAGE_DATA = __import__("pathlib").Path(__file__).resolve().parent / "data" / "triage"


def _triage_log(name: str) -> str:
    return (TRIAGE_DATA / f"{name}.log").read_text(encoding="utf-8")


def _verdict(explainer, text: str) -> dict:
    from service.triage import triage_lines

    return triage_lines(explainer, [("log", line) for line in text.splitlines()])


def _opening(explainer, lines: list[str]) -> str:
    """The first block's text of the reply to a paste of more than three lines (English)."""
    root = _verdict(explainer, "\n".join(lines))["root_cause"]
    return f":dart: *Root cause: {root['title']['en']}*" if root else "*No failure found: no line is an error, a failed worker or a crash.*"


def test_a_pasted_log_is_answered_root_cause_first_with_the_cascade_folded(slack, explainer):
    text = _triage_log("case_01")  # 8 SIGTERM warnings, then local_rank 4's SIGKILL
    lines = text.splitlines()
    verdict = _verdict(explainer, text)
    root, cascade = verdict["root_cause"], verdict["cascade"]
    assert root["line"] == lines[8] and "SIGKILL" in root["title"]["en"]
    sigterms = next(g for g in cascade if g["count"] > 1)
    assert sigterms["count"] == 8
    slack.send(mention("<@UBOT> why did this die?\n```" + slack_escape(text) + "```"), content_type="application/json")
    call = slack.fake.recorder.wait_for(lambda c: c.path == "/api/chat.postMessage")
    assert call.json["text"].startswith(f"Root cause: {root['title']['en']} — Explained 14 lines")
    blocks = call.json["blocks"]
    texts = slack_texts(blocks)
    assert texts[0] == f":dart: *Root cause: {root['title']['en']}*"
    assert texts[1] == f"`{lines[8]}`"
    assert texts[2] == f"*Why this line*\n{root['why']['en']}"
    assert texts[3] == f"*What to do*\n{slack_escape(root['action']['en'])}"
    n = sum(g["count"] for g in cascade)
    folded = texts[4]
    assert folded.startswith(f"*Cascade: {n} knock-on line(s) in {len(cascade)} group(s)*\n")
    # one row per group: the eight SIGTERM lines are one row with their count, after the root cause
    assert folded.count("\n") == len(cascade)
    assert f"• {sigterms['title']['en']} ×8 — `{lines[0][:79]}…`" in folded
    assert texts.index(f"`{lines[8]}`") < texts.index(folded)
    assert json.dumps(blocks, ensure_ascii=False).count(f"{sigterms['title']['en']} ×8") == 1
    assert blocks[5] == {"type": "divider"} and texts[5].startswith("*Explained 14 lines (6 distinct)")


def test_a_pasted_traceback_in_chinese_names_its_exception(slack, explainer):
    # the slash command's text keeps the traceback's indentation, which tells code from exception
    text = _triage_log("case_31")
    verdict = _verdict(explainer, text)
    assert verdict["root_cause"]["line"].startswith("FileNotFoundError: [Errno 2] No such file or directory")
    slack.send(slash(slack, "--zh\n```\n" + text + "```", rid="tb"))
    blocks = slack.fake.recorder.wait_for(lambda c: c.path == "/response/tb").json["blocks"]
    texts = slack_texts(blocks)
    assert texts[0] == f":dart: *根因：{slack_escape(verdict['root_cause']['title']['zh'])}*"
    assert texts[1] == "`" + slack_escape(verdict["root_cause"]["line"]) + "`"
    assert texts[2] == f"*判断依据*\n{verdict['root_cause']['why']['zh']}"
    n = sum(g["count"] for g in verdict["cascade"])
    assert any(t.startswith(f"*连带报错：{len(verdict['cascade'])} 组，共 {n} 行*\n") for t in texts)


def test_a_short_paste_has_no_root_cause_section(slack, explainer):
    lines = [SEED_AFFINITY, SEED_FLUSHES, SEED_CDB]
    slack.send(mention("<@UBOT>\n" + "\n".join(slack_escape(l) for l in lines)), content_type="application/json")
    call = slack.fake.recorder.wait_for(lambda c: c.path == "/api/chat.postMessage")
    blocks = call.json["blocks"]
    assert blocks[0]["text"]["text"].startswith("*Explained 3 lines (3 distinct)")
    shown = json.dumps(call.json, ensure_ascii=False)
    for word in (":dart:", "Root cause", "Why this line", "Cascade", "No failure found"):
        assert word not in shown
    # the control: a fourth line makes it a log, and the reply opens with the triage's verdict
    slack.send(mention("<@UBOT>\n" + "\n".join(slack_escape(l) for l in lines + [SEED_IB]), ts="1726000000.000500"),
               content_type="application/json")
    call = slack.fake.recorder.wait_for(lambda c: c.path == "/api/chat.postMessage" and c.json["thread_ts"] == "1726000000.000500")
    assert call.json["blocks"][0]["text"]["text"] == _opening(explainer, lines + [SEED_IB])
