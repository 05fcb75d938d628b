"""The Feishu/Lark bot end to end: encrypted, signed callbacks to uvicorn; replies at a fake
open platform; the long connection over a real WebSocket speaking lark's protobuf frames.

Forged, unsigned, tampered and replayed callbacks must be refused before any work: the
explainer is never called, nothing reaches the fake open platform (not even a token request)
and nothing is stored.
"""

from __future__ import annotations

from service.presentation import source_line
import base64
import json
import threading
import time
from dataclasses import dataclass

import pytest

from chat_fakes import (
    SEED_AFFINITY, SEED_CDB, SEED_FLUSHES, SEED_IB,
    CountingExplainer, FakeChatApis, ServerThread, feishu_encrypt, feishu_headers, post,
)
from indexer.texts import decode_value
from service.chat.answers import Answerer
from service.chat.config import FeishuSettings
from service.chat.feishu import FeishuBot, build_lark_client, feishu_route, long_connection_client
from service.chat.ratelimit import RateLimiter
from service.chat.server import standalone_app
from service.chat.store import ChatStore, StoredAnswer

APP_SECRET = "test-app-secret-77a1"
ENCRYPT_KEY = "test-encrypt-key-0c3e"
TOKEN = "test-verification-token-9d"
WEB = "https://explainlog.example"
RATE = 3


@dataclass
class FeishuStack:
    fake: FakeChatApis
    url: str
    explainer: CountingExplainer
    store: ChatStore

    def send(self, payload: dict, headers: dict[str, str] | None = None, body: bytes | None = None):
        body = feishu_encrypt(ENCRYPT_KEY, payload) if body is None else body
        return post(self.url + "/feishu/events", body, feishu_headers(ENCRYPT_KEY, body) if headers is None else headers)

    def reply(self, message_id: str = "om_1"):
        return self.fake.recorder.wait_for(lambda c: c.path == f"/open-apis/im/v1/messages/{message_id}/reply")


def _no_proxy(monkeypatch) -> None:
    for var in ("HTTP_PROXY", "HTTPS_PROXY", "http_proxy", "https_proxy"):
        monkeypatch.delenv(var, raising=False)


@pytest.fixture
def feishu(explainer, tmp_path, monkeypatch):
    _no_proxy(monkeypatch)
    fake = FakeChatApis()
    with ServerThread(fake.app()) as api:
        fake.base_url = api.url
        counting = CountingExplainer(explainer)
        store = ChatStore(tmp_path / "chat.sqlite3")
        settings = FeishuSettings("cli_test", APP_SECRET, ENCRYPT_KEY, TOKEN, api.url)
        bot = FeishuBot(Answerer(counting, store, WEB), RateLimiter(RATE), build_lark_client(settings))
        with ServerThread(standalone_app([feishu_route(bot, settings)])) as server:
            yield FeishuStack(fake, server.url, counting, store)


# ---- payloads, as Feishu sends them -----------------------------------------------------------
_ids = iter(range(1, 1_000_000))


def header(event_type: str, event_id: str | None = None) -> dict:
    return {"event_id": event_id or f"ev{next(_ids)}", "event_type": event_type, "create_time": "1726000000000",
            "token": TOKEN, "app_id": "cli_test", "tenant_key": "tk1"}


def message_event(text: str | None = None, content: dict | None = None, message_type: str = "text",
                  chat_type: str = "group", mentioned: bool = True, message_id: str = "om_1",
                  open_id: str = "ou_user", sender_type: str = "user", event_id: str | None = None) -> dict:
    message = {"message_id": message_id, "chat_id": "oc_1", "chat_type": chat_type, "message_type": message_type,
               "create_time": "1726000000000",
               "content": json.dumps(content if content is not None else {"text": ("@_user_1 " if mentioned else "") + text})}
    if mentioned:
        message["mentions"] = [{"key": "@_user_1", "id": {"open_id": "ou_bot"}, "name": "explainlog", "tenant_key": "tk1"}]
    return {"schema": "2.0", "header": header("im.message.receive_v1", event_id),
            "event": {"sender": {"sender_id": {"open_id": open_id}, "sender_type": sender_type, "tenant_key": "tk1"},
                      "message": message}}


def card_action(value: dict, open_id: str = "ou_user") -> dict:
    return {"schema": "2.0", "header": header("card.action.trigger"),
            "event": {"operator": {"open_id": open_id, "tenant_key": "tk1"}, "token": "c-token",
                      "action": {"tag": "button", "value": value},
                      "context": {"open_message_id": "om_reply", "open_chat_id": "oc_1"}}}


# ---- the exact card, built from the KB entry --------------------------------------------------
UI = {
    "zh": {"info": "信息", "warning": "警告", "fields": "字段", "action": "建议操作", "confidence": "置信度",
           "open": "在 explainlog 中打开", "helped": "有帮助", "wrong": "答案有误", "switch": "English",
           "details": "详情"},
    "en": {"info": "info", "warning": "warning", "fields": "Fields", "action": "What to do", "confidence": "confidence",
           "open": "Open in explainlog", "helped": "This helped", "wrong": "Wrong answer", "switch": "中文",
           "details": "Details"},
}
EMOJI = {"info": "ℹ️", "warning": "⚠️"}
COLOUR = {"info": "blue", "warning": "orange"}


def expected_card(explainer, line: str, lang: str, answer_id: str, reply_id: str, details: bool = False) -> dict:
    from urllib.parse import urlencode

    answer = explainer.explain(line)
    entry = explainer.by_id[answer["pattern_id"]]
    ui, severity = UI[lang], answer["severity"]
    shown = line if len(line) <= 300 else line[:299] + "…"
    elements = [
        {"tag": "note", "elements": [{"tag": "plain_text", "content": shown}]},
    ]
    if answer["summary"][lang] != answer["title"][lang]:  # the header says it already otherwise
        elements.append({"tag": "div", "text": {"tag": "plain_text", "content": answer["summary"][lang]}})
    if answer["action"]:
        elements += [{"tag": "div", "text": {"tag": "lark_md", "content": f"**{ui['action']}**"}},
                     {"tag": "div", "text": {"tag": "plain_text", "content": answer["action"][lang]}}]
    if details:  # the long form, unfolded by the "details" button
        elements += [{"tag": "div", "text": {"tag": "lark_md", "content": f"**{ui['details']}**"}},
                     {"tag": "div", "text": {"tag": "plain_text", "content": answer["explanation"][lang]}}]
        rows = []
        for name, value in answer["fields"].items():
            spec = entry.fields[name]
            decoded = decode_value(spec, value)
            rows.append(f"• {name} = {value.strip()} — {getattr(spec, lang)}" + (f" → {decoded[0 if lang == 'en' else 1]}" if decoded else ""))
        if rows:
            elements += [{"tag": "div", "text": {"tag": "lark_md", "content": f"**{ui['fields']}**"}},
                         {"tag": "div", "text": {"tag": "plain_text", "content": "\n".join(rows)}}]
        if answer["source"]:  # where the line is printed (the sentence itself: test_presentation.py)
            elements.append({"tag": "note", "elements": [{"tag": "plain_text", "content": source_line(answer["source"], lang)}]})
    buttons = [
        {"tag": "button", "text": {"tag": "plain_text", "content": ui["helped"]}, "type": "primary",
         "value": {"action": "feedback", "verdict": "helped", "answer": answer_id}},
        {"tag": "button", "text": {"tag": "plain_text", "content": ui["wrong"]}, "type": "danger",
         "value": {"action": "feedback", "verdict": "wrong", "answer": answer_id}},
    ]
    if not details:
        buttons.append({"tag": "button", "text": {"tag": "plain_text", "content": ui["details"]}, "type": "default",
                        "value": {"action": "details", "answer": answer_id, "reply": reply_id}})
    buttons.append({"tag": "button", "text": {"tag": "plain_text", "content": ui["open"]}, "type": "default",
                    "url": WEB + "/#" + urlencode({"q": line})})
    other = "en" if lang == "zh" else "zh"
    elements += [
        {"tag": "note", "elements": [{"tag": "plain_text", "content": f"{ui['confidence']} {answer['confidence']:.2f} · {answer['pattern_id']}"}]},
        {"tag": "action", "actions": buttons},
        {"tag": "action", "actions": [
            {"tag": "button", "text": {"tag": "plain_text", "content": ui["switch"]}, "type": "default",
             "value": {"action": "lang", "lang": other, "reply": reply_id}},
        ]},
    ]
    return {
        "config": {"wide_screen_mode": True, "update_multi": True},
        "header": {"template": COLOUR[severity],
                   "title": {"tag": "plain_text", "content": f"{EMOJI[severity]} [{ui[severity]}] {answer['title'][lang]}"}},
        "elements": elements,
    }


def ids(card: dict) -> tuple[str, str]:
    """(answer id, reply id) carried by a single-answer card's buttons."""
    feedback, switch = card["elements"][-2]["actions"][0]["value"], card["elements"][-1]["actions"][0]["value"]
    return feedback["answer"], switch["reply"]


# ---- the URL-verification handshake -----------------------------------------------------------
def test_url_verification_challenge_is_answered_with_the_right_token_only(feishu):
    status, body, _ = feishu.send({"challenge": "ch-42", "token": TOKEN, "type": "url_verification"}, headers={"Content-Type": "application/json"})
    assert status == 200 and json.loads(body) == {"challenge": "ch-42"}
    status, _, _ = feishu.send({"challenge": "ch-43", "token": "wrong-token", "type": "url_verification"}, headers={"Content-Type": "application/json"})
    assert status == 401
    assert feishu.fake.recorder.paths() == [] and feishu.explainer.calls == 0


# ---- messages ---------------------------------------------------------------------------------
def test_a_mention_in_a_group_gets_a_chinese_card_in_the_thread(feishu, explainer):
    # Feishu retries a callback not acknowledged within 3 s: the acknowledgement must not wait
    # for the explanation, which is held here until it has arrived.
    feishu.explainer.gate.clear()
    status, body, _ = feishu.send(message_event(SEED_AFFINITY))
    feishu.explainer.gate.set()
    assert status == 200 and json.loads(body) == {"msg": "success"}
    call = feishu.reply()
    assert call.headers["authorization"] == "Bearer t-fake-tenant"
    assert call.json["msg_type"] == "interactive" and call.json["reply_in_thread"] is True
    card = json.loads(call.json["content"])
    answer_id, reply_id = ids(card)
    assert call.json["uuid"] == reply_id
    assert card == expected_card(explainer, SEED_AFFINITY, "zh", answer_id, reply_id)
    token_call = feishu.fake.recorder.wait_for(lambda c: c.path.endswith("/tenant_access_token/internal"))
    assert json.loads(token_call.body) == {"app_id": "cli_test", "app_secret": APP_SECRET}


def test_explain_command_without_mention_and_the_english_choice_is_remembered(feishu, explainer):
    feishu.send(message_event("/explain --en " + SEED_CDB, mentioned=False, message_id="om_en"))
    card = json.loads(feishu.reply("om_en").json["content"])
    assert card == expected_card(explainer, SEED_CDB, "en", *ids(card))
    feishu.send(message_event(SEED_CDB, message_id="om_again"))
    card = json.loads(feishu.reply("om_again").json["content"])
    assert card["header"]["title"]["content"] == "ℹ️ [info] " + explainer.by_id["deepspeed.comm.cdb_none"].title.en


def test_rich_text_with_a_code_block_in_a_direct_chat(feishu, explainer):
    post_content = {"title": "", "content": [
        [{"tag": "text", "text": "训练日志里这两行什么意思？"}],
        [{"tag": "code_block", "language": "PLAIN_TEXT", "text": SEED_CDB + "\n" + SEED_FLUSHES + "\n"}],
    ]}
    feishu.send(message_event(content=post_content, message_type="post", chat_type="p2p", mentioned=False))
    card = json.loads(feishu.reply().json["content"])
    assert card["header"] == {"template": "orange", "title": {"tag": "plain_text", "content": "共解释 2 行（2 种），按严重程度排序：1 警告 · 1 信息"}}
    titles = [e["text"]["content"] for e in card["elements"] if e["tag"] == "div" and e["text"]["content"].startswith(("⚠️", "ℹ️"))]
    assert titles == ["⚠️ [警告] " + explainer.by_id["deepspeed.zero3.allocator_cache_flushes"].title.zh,
                      "ℹ️ [信息] " + explainer.by_id["deepspeed.comm.cdb_none"].title.zh]


def test_a_question_in_words_gets_the_kb_answer_as_text(feishu, explainer):
    from service.ask import NOT_KNOWN

    feishu.send(message_event("nginx 502 bad gateway 怎么解决？", message_id="om_q"))
    call = feishu.reply("om_q")
    assert call.json["msg_type"] == "text"
    assert json.loads(call.json["content"]) == {"text": NOT_KNOWN["zh"]}


def test_group_chatter_and_other_bots_are_ignored(feishu):
    feishu.send(message_event(SEED_CDB, mentioned=False, message_id="om_chat"))
    feishu.send(message_event(SEED_CDB, sender_type="app", message_id="om_bot"))
    feishu.send(message_event(content={"image_key": "img_1"}, message_type="image", message_id="om_img"))
    time.sleep(0.5)
    assert feishu.explainer.calls == 0 and feishu.fake.recorder.paths() == []


def test_a_redelivered_event_is_answered_once(feishu):
    event = message_event(SEED_CDB, event_id="ev-dup")
    assert feishu.send(event)[0] == 200 and feishu.send(event)[0] == 200
    feishu.reply()
    time.sleep(0.5)
    assert len([p for p in feishu.fake.recorder.paths() if p.endswith("/reply")]) == 1 and feishu.explainer.calls == 1


def test_rate_limit_replies_politely_in_text(feishu):
    for i in range(RATE + 1):
        feishu.send(message_event(SEED_CDB, message_id=f"om_r{i}", open_id="ou_fast"))
    last = feishu.reply(f"om_r{RATE}")
    assert last.json["msg_type"] == "text"
    assert "秒后再试" in json.loads(last.json["content"])["text"]
    for i in range(RATE):
        feishu.reply(f"om_r{i}")
    assert feishu.explainer.calls == RATE


# ---- card buttons -----------------------------------------------------------------------------
def test_language_switch_re_renders_the_same_answer_in_english_and_feedback_is_stored(feishu, explainer):
    feishu.send(message_event(SEED_IB))
    zh_card = json.loads(feishu.reply().json["content"])
    answer_id, reply_id = ids(zh_card)
    assert zh_card == expected_card(explainer, SEED_IB, "zh", answer_id, reply_id)

    status, body, _ = feishu.send(card_action({"action": "lang", "lang": "en", "reply": reply_id}))
    assert status == 200
    response = json.loads(body)
    assert response == {"card": {"type": "raw", "data": expected_card(explainer, SEED_IB, "en", answer_id, reply_id)}}
    assert response["card"]["data"]["header"]["title"]["content"].endswith(explainer.explain(SEED_IB)["title"]["en"])
    assert feishu.store.language("feishu:ou_user") == "en"
    calls = feishu.explainer.calls

    status, body, _ = feishu.send(card_action({"action": "feedback", "verdict": "wrong", "answer": answer_id}))
    assert status == 200 and json.loads(body) == {"toast": {"type": "success", "content": "Thanks — a curator will look at this answer."}}
    rows = list(feishu.store.feedback())
    assert [(r["user"], r["verdict"], r["platform"], r["line"], r["pattern_id"]) for r in rows] == [
        ("feishu:ou_user", "wrong", "feishu", SEED_IB, "nccl.net.ib_devices")]
    assert feishu.explainer.calls == calls  # buttons never re-explain


def test_the_details_button_unfolds_that_answer_in_the_same_card(feishu, explainer):
    """Issue 22: the card leads with the summary and action; "details" re-renders the card with
    the explanation, fields and source of that answer, without explaining again."""
    feishu.send(message_event(SEED_IB))
    card = json.loads(feishu.reply().json["content"])
    answer_id, reply_id = ids(card)
    assert explainer.explain(SEED_IB)["explanation"]["zh"] not in json.dumps(card, ensure_ascii=False)
    calls = feishu.explainer.calls
    status, body, _ = feishu.send(card_action({"action": "details", "answer": answer_id, "reply": reply_id}))
    assert status == 200
    assert json.loads(body) == {"card": {"type": "raw", "data": expected_card(explainer, SEED_IB, "zh", answer_id, reply_id, details=True)}}
    assert feishu.explainer.calls == calls
    status, body, _ = feishu.send(card_action({"action": "details", "answer": "a0", "reply": "gone"}))
    assert json.loads(body)["toast"]["type"] == "warning"


def test_feedback_on_an_unknown_answer_says_it_expired(feishu):
    status, body, _ = feishu.send(card_action({"action": "feedback", "verdict": "helped", "answer": "feedfacefeedface"}))
    assert status == 200 and json.loads(body)["toast"]["type"] == "warning"
    assert list(feishu.store.feedback()) == []


# ---- security ---------------------------------------------------------------------------------
def _attack(kind: str, payload: dict) -> tuple[bytes, dict[str, str]]:
    body = feishu_encrypt(ENCRYPT_KEY, payload)
    now = int(time.time())
    if kind == "unsigned":
        return body, {"Content-Type": "application/json"}
    if kind == "forged":
        return body, feishu_headers("not-the-encrypt-key", body)
    if kind == "replayed":
        return body, feishu_headers(ENCRYPT_KEY, body, timestamp=now - 301)
    if kind == "tampered":
        return feishu_encrypt(ENCRYPT_KEY, payload), feishu_headers(ENCRYPT_KEY, body)
    if kind == "no_nonce":
        headers = feishu_headers(ENCRYPT_KEY, body)
        del headers["X-Lark-Request-Nonce"]
        return body, headers
    if kind == "bad_timestamp":
        headers = feishu_headers(ENCRYPT_KEY, body)
        headers["X-Lark-Request-Timestamp"] = "soon"
        return body, headers
    raise AssertionError(kind)


@pytest.mark.parametrize("kind", ["unsigned", "forged", "replayed", "tampered", "no_nonce", "bad_timestamp"])
@pytest.mark.parametrize("entry", ["message", "card_feedback"])
def test_unauthenticated_callbacks_are_rejected_before_any_work(feishu, entry, kind):
    feishu.store.save_reply("r0", "feishu", 1, 0, [StoredAnswer("a0", 1, {"line": SEED_CDB})])
    payload = message_event(SEED_AFFINITY) if entry == "message" else card_action({"action": "feedback", "verdict": "helped", "answer": "a0"})
    body, headers = _attack(kind, payload)
    status, _, _ = feishu.send({}, headers=headers, body=body)
    assert status == 401
    time.sleep(0.5)
    assert feishu.explainer.calls == 0 and feishu.fake.recorder.paths() == [] and list(feishu.store.feedback()) == []
    # Control: the same payload, properly signed, is accepted.
    assert feishu.send(payload)[0] == 200
    if entry == "message":
        feishu.reply()
    else:
        assert [r["verdict"] for r in feishu.store.feedback()] == ["helped"]


# ---- the long connection, over a real WebSocket -------------------------------------------------
def _frame(payload: dict, message_id: str) -> bytes:
    from lark_oapi.ws.pb.pbbp2_pb2 import Frame

    frame = Frame(SeqID=1, LogID=1, service=7, method=1)  # method 1: data frame
    for key, value in (("type", "event"), ("message_id", message_id), ("sum", "1"), ("seq", "0"), ("trace_id", "tr1")):
        h = frame.headers.add()
        h.key, h.value = key, value
    frame.payload = json.dumps(payload).encode()
    return frame.SerializeToString()


def _data_frames(fake: FakeChatApis) -> list:
    from lark_oapi.ws.pb.pbbp2_pb2 import Frame

    frames = []
    for call in list(fake.recorder.calls):
        if call.path == "/feishu-ws":
            frame = Frame()
            frame.ParseFromString(call.body)
            if frame.method == 1:
                frames.append(frame)
    return frames


def test_long_connection_answers_events_and_card_clicks(explainer, tmp_path, monkeypatch):
    from lark_oapi.ws import client as ws_module

    _no_proxy(monkeypatch)
    fake = FakeChatApis()
    with ServerThread(fake.app()) as api:
        fake.base_url = api.url
        store = ChatStore(tmp_path / "chat.sqlite3")
        store.save_reply("r0", "feishu", 1, 0, [StoredAnswer("a0", 1, {"line": SEED_CDB, "pattern_id": "deepspeed.comm.cdb_none"})])
        fake.feishu_ws_frames += [
            _frame(message_event(SEED_FLUSHES, chat_type="p2p", mentioned=False, message_id="om_ws"), "m1"),
            _frame(card_action({"action": "feedback", "verdict": "helped", "answer": "a0"}), "m2"),
        ]
        settings = FeishuSettings.from_env("ws", {"FEISHU_APP_ID": "cli_test", "FEISHU_APP_SECRET": APP_SECRET, "FEISHU_DOMAIN": api.url})
        counting = CountingExplainer(explainer)
        bot = FeishuBot(Answerer(counting, store, WEB), RateLimiter(RATE), build_lark_client(settings))
        client = long_connection_client(settings, bot, auto_reconnect=False)
        stopped = threading.Event()

        def run() -> None:
            try:
                client.start()
            except RuntimeError:  # the loop was stopped by the test
                stopped.set()

        thread = threading.Thread(target=run, daemon=True)
        thread.start()
        try:
            endpoint = fake.recorder.wait_for(lambda c: c.path == "/callback/ws/endpoint")
            assert endpoint.json == {"AppID": "cli_test", "AppSecret": APP_SECRET}
            reply = fake.recorder.wait_for(lambda c: c.path == "/open-apis/im/v1/messages/om_ws/reply")
            card = json.loads(reply.json["content"])
            assert card == expected_card(explainer, SEED_FLUSHES, "zh", *ids(card))
            deadline = time.monotonic() + 30
            while len(_data_frames(fake)) < 2 and time.monotonic() < deadline:
                time.sleep(0.05)
            answers = {dict((h.key, h.value) for h in f.headers)["message_id"]: json.loads(f.payload) for f in _data_frames(fake)}
            assert answers["m1"]["code"] == 200
            toast = json.loads(base64.b64decode(answers["m2"]["data"]))
            assert toast == {"toast": {"type": "success", "content": "谢谢，已记录：这个回答有帮助。"}}
            assert [r["verdict"] for r in store.feedback()] == ["helped"]
        finally:
            ws_module.loop.call_soon_threadsafe(ws_module.loop.stop)
            thread.join(10)
        assert stopped.is_set()


def test_a_failing_explainer_gets_an_apology_not_silence(feishu):
    from service.explainer import IndexUnavailable

    def broken(lines, semantic=True):
        raise IndexUnavailable("index missing")

    feishu.explainer.explain_many = broken
    feishu.send(message_event(SEED_CDB))
    call = feishu.reply()
    assert call.json["msg_type"] == "text"
    assert json.loads(call.json["content"]) == {"text": "抱歉，服务端解释失败（IndexUnavailable），详情见服务日志。"}


# ---- a pasted log: root cause first, the cascade folded --------------------------------------
TRIAGE_DATA = __import__("pathlib").Path(__file__).resolve().parent / "data" / "triage"


def _contents(card: dict) -> list[str]:
    """Every text of a card, in the order it shows them."""
    out = [card["header"]["title"]["content"]]
    for element in card["elements"]:
        if "text" in element:
            out.append(element["text"]["content"])
        out += [e["content"] for e in element.get("elements", []) if "content" in e]
    return out


def test_a_pasted_log_gets_a_root_cause_card_with_the_cascade_folded(feishu, explainer):
    from service.triage import triage_lines

    text = (TRIAGE_DATA / "case_01.log").read_text(encoding="utf-8")  # 8 SIGTERM warnings, then the SIGKILL
    lines = text.splitlines()
    verdict = triage_lines(explainer, [("log", line) for line in lines])
    root, cascade = verdict["root_cause"], verdict["cascade"]
    assert root["line"] == lines[8] and "SIGKILL" in root["title"]["en"]
    sigterms = next(g for g in cascade if g["count"] > 1)
    assert sigterms["count"] == 8
    n = sum(g["count"] for g in cascade)
    post_content = {"title": "", "content": [
        [{"tag": "text", "text": "训练挂了，帮忙看看"}],
        [{"tag": "code_block", "language": "PLAIN_TEXT", "text": text}],
    ]}
    feishu.send(message_event(content=post_content, message_type="post", chat_type="p2p", mentioned=False))
    card = json.loads(feishu.reply().json["content"])
    assert card["header"] == {"template": "red", "title": {"tag": "plain_text", "content": f"🎯 根因：{root['title']['zh']}"}}
    texts = _contents(card)
    assert texts[1:6] == [lines[8], "**判断依据**", root["why"]["zh"], "**建议操作**", root["action"]["zh"]]
    folded = texts.index(f"**连带报错：{len(cascade)} 组，共 {n} 行**")
    # one row per group: the eight SIGTERM lines are one row with their count, after the root cause's line
    assert texts[folded + 1].count("\n") == len(cascade) - 1
    assert f"• {sigterms['title']['zh']} ×8 — {lines[0][:79]}…" in texts[folded + 1]
    assert json.dumps(card, ensure_ascii=False).count(f"{sigterms['title']['zh']} ×8") == 1
    assert texts.index(lines[8]) < folded
    assert texts[folded + 2].startswith("**共解释 14 行（6 种）")

    reply_id = card["elements"][-1]["actions"][0]["value"]["reply"]
    calls = feishu.explainer.calls
    status, body, _ = feishu.send(card_action({"action": "lang", "lang": "en", "reply": reply_id}))
    assert status == 200
    english = json.loads(body)["card"]["data"]
    assert english["header"]["title"]["content"] == f"🎯 Root cause: {root['title']['en']}"
    texts = _contents(english)
    assert texts[1:4] == [lines[8], "**Why this line**", root["why"]["en"]]
    folded = texts.index(f"**Cascade: {n} knock-on line(s) in {len(cascade)} group(s)**")
    assert f"• {sigterms['title']['en']} ×8 — {lines[0][:79]}…" in texts[folded + 1]
    assert feishu.explainer.calls == calls  # the switch re-reads nothing


def test_a_short_paste_gets_no_root_cause_section(feishu, explainer):
    lines = [SEED_AFFINITY, SEED_FLUSHES, SEED_CDB]
    feishu.send(message_event("\n".join(lines)))
    card = json.loads(feishu.reply().json["content"])
    assert card["header"]["title"]["content"].startswith("共解释 3 行（3 种）")
    shown = json.dumps(card, ensure_ascii=False)
    for word in ("🎯", "根因", "判断依据", "连带报错", "未发现故障"):
        assert word not in shown
    # the control: a fourth line makes it a log, and the card opens with the triage's verdict
    from service.triage import triage_lines

    root = triage_lines(explainer, [("log", line) for line in lines + [SEED_IB]])["root_cause"]
    feishu.send(message_event("\n".join(lines + [SEED_IB]), message_id="om_4"))
    card = json.loads(feishu.reply("om_4").json["content"])
    if root:
        assert card["header"]["title"]["content"] == f"🎯 根因：{root['title']['zh']}"
    else:
        assert card["elements"][0]["text"]["content"] == "**未发现故障：没有哪一行是错误、失败的 worker 或崩溃。**"
