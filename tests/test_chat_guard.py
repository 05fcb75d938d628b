"""Both chat routes before any bot sees a request: the body is streamed under a 1 MiB limit,
signatures are checked before parsing, a signed body that is no payload gets 400 without an
exception's text, and a replay inside the signature window (or a platform retry of the same
event) is acted on once."""

from __future__ import annotations

import asyncio
import http.client
import json
import time
from urllib.parse import urlencode, urlsplit

import pytest

from chat_fakes import SEED_AFFINITY, SEED_CDB, feishu_encrypt, feishu_headers, post, slack_headers
from service.chat.guard import BodyTooLarge, ReplayGuard, read_body
from test_chat_feishu import ENCRYPT_KEY, feishu, message_event  # noqa: F401 - the fixture
from test_chat_slack import SECRET, mention, slack, slash  # noqa: F401 - the fixture


class _StreamingRequest:
    """What read_body needs of a starlette Request: headers and an async chunk stream."""

    def __init__(self, chunks: int, chunk_size: int = 64 * 1024, declared: str | None = None) -> None:
        self.headers = {"content-length": declared} if declared is not None else {}
        self.chunks, self.chunk_size, self.consumed = chunks, chunk_size, 0

    async def stream(self):
        for _ in range(self.chunks):
            self.consumed += 1
            yield b"x" * self.chunk_size


def test_an_endless_body_is_cut_after_the_limit_without_reading_on():
    request = _StreamingRequest(chunks=6400)  # 400 MiB, sent in 64 KiB pieces, no length
    with pytest.raises(BodyTooLarge):
        asyncio.run(read_body(request, 1 << 20))
    assert request.consumed == 17  # the limit, plus the one chunk that crossed it: memory bound
    declared = _StreamingRequest(chunks=6400, declared=str(400 << 20))
    with pytest.raises(BodyTooLarge):
        asyncio.run(read_body(declared, 1 << 20))
    assert declared.consumed == 0  # refused on its Content-Length before a byte is read
    assert asyncio.run(read_body(_StreamingRequest(chunks=3), 1 << 20)) == b"x" * (3 * 64 * 1024)


def _oversized_post(url: str, path: str) -> int:
    """An unsigned POST announcing 400 MB; the answer must come before the body is sent."""
    parts = urlsplit(url)
    conn = http.client.HTTPConnection(parts.hostname, parts.port, timeout=30)
    conn.putrequest("POST", path)
    conn.putheader("Content-Type", "application/json")
    conn.putheader("Content-Length", str(400 << 20))
    conn.endheaders()
    conn.send(b"{" * 4096)
    status = conn.getresponse().status
    conn.close()
    return status


def test_slack_oversized_malformed_and_replayed(slack):
    # Answered on the declared length, before the body: the client sends 4 KiB of 400 MB and
    # then waits for the answer, which would never come if the server waited for the rest.
    assert _oversized_post(slack.url, "/slack/events") == 413
    for body, content_type in [
        (b"[1, 2, 3]", "application/json"),  # JSON, but no object
        (b"not=a&slack=payload", "application/x-www-form-urlencoded"),
        (b"payload=%7Bnot+json", "application/x-www-form-urlencoded"),
        (b"\x00\x01", "application/octet-stream"),
    ]:
        status, response, _ = slack.send(body, slack_headers(SECRET, body, content_type=content_type))
        assert status == 400 and json.loads(response) == {"error": "malformed payload"}, (body, response)
    assert slack.explainer.calls == 0
    # A captured slash command re-sent inside the 5-minute window: acknowledged, not redone.
    body = slash(slack, SEED_AFFINITY)
    headers = slack_headers(SECRET, body)
    assert slack.send(body, headers)[0] == 200 and slack.send(body, headers)[0] == 200
    slack.fake.recorder.wait_for(lambda c: c.path == "/response/cmd")
    time.sleep(0.5)
    assert slack.explainer.calls == 1
    assert [p for p in slack.fake.recorder.paths() if p == "/response/cmd"] == ["/response/cmd"]
    # Slack's own retry of an event: a new signature, the same event id.
    event = mention("<@UBOT> " + SEED_CDB)
    data = json.loads(event)
    data["event_id"] = "Ev0RETRY"
    event = json.dumps(data).encode()
    assert slack.send(event, content_type="application/json")[0] == 200
    retry = slack_headers(SECRET, event, timestamp=int(time.time()) + 1, content_type="application/json")
    assert slack.send(event, retry)[0] == 200
    slack.fake.recorder.wait_for(lambda c: c.path == "/api/chat.postMessage")
    time.sleep(0.5)
    assert [p for p in slack.fake.recorder.paths() if p == "/api/chat.postMessage"] == ["/api/chat.postMessage"]


def test_feishu_oversized_malformed_and_replayed(feishu):
    assert _oversized_post(feishu.url, "/feishu/events") == 413
    for body in [b"[]", b"not json", json.dumps({"encrypt": "bm90IGNpcGhlcnRleHQ="}).encode()]:
        status, response, _ = feishu.send({}, headers=feishu_headers(ENCRYPT_KEY, body), body=body)
        assert status == 400 and json.loads(response) == {"error": "malformed payload"}, (body, response)
        assert b"Traceback" not in response and b"Error" not in response
    # A payload lark-oapi cannot dispatch, signed and encrypted properly: 400, no exception text.
    odd = feishu_encrypt(ENCRYPT_KEY, {"schema": "2.0", "header": {"event_id": "ev-odd", "event_type": 42}})
    status, response, _ = feishu.send({}, headers=feishu_headers(ENCRYPT_KEY, odd), body=odd)
    assert status in (200, 400) and b"Traceback" not in response and b"Error" not in response
    assert feishu.explainer.calls == 0
    # The same signed request replayed (same timestamp, nonce and signature): answered once.
    body = feishu_encrypt(ENCRYPT_KEY, message_event(SEED_CDB))
    headers = feishu_headers(ENCRYPT_KEY, body, nonce="replayed")
    assert feishu.send({}, headers=headers, body=body)[0] == 200
    assert feishu.send({}, headers=headers, body=body)[0] == 200
    feishu.reply()
    time.sleep(0.5)
    assert feishu.explainer.calls == 1


def test_the_replay_guard_forgets_after_its_window():
    guard = ReplayGuard(window=0.2)
    assert guard.first_time("a", "b") and not guard.first_time("b") and not guard.first_time("x", "a")
    time.sleep(0.3)
    assert guard.first_time("a")
    small = ReplayGuard(max_keys=3)
    for key in "pqrst":
        assert small.first_time(key)
    assert small.first_time("p")  # the oldest were dropped to keep the set bounded
