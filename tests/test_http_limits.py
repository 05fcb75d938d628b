"""Hostile and oversized input over real HTTP: every limit answers 413 naming the limit, every
malformed body a clear 4xx, binary junk still gets answers, and nothing takes the server down.
Also: concurrent clients get their own answers, and embedding never blocks the event loop."""

from __future__ import annotations

import asyncio
import os
import threading

import httpx
import numpy as np
import pytest

from http_testing import UNRELATED_LINE, serve
from seed_lines import CDB_LINE, IB_LINE
from service.explainer import Explainer
from service.http.settings import Settings


def _error(response: httpx.Response, status: int, code: str) -> dict:
    assert response.status_code == status, response.text[:300]
    body = response.json()
    assert body["error"] == code
    return body


def test_ten_thousand_lines_exceed_the_default_line_limit(client):
    lines = [CDB_LINE] * 10_000
    body = _error(client.post("/v1/explain", json={"lines": lines}), 413, "too_many_lines")
    assert body["limit"] == 5000 and "10000 lines" in body["detail"] and "limit is 5000" in body["detail"]
    assert client.get("/healthz").status_code == 200


def test_ten_thousand_lines_are_answered_in_order_when_allowed(explainer):
    seed = open("samples/seed_training.log", encoding="utf-8").read().splitlines()
    lines = (seed * 250)[:10_000]
    settings = Settings(kb_dir=explainer.kb_dir, index_dir=explainer.index_dir, max_lines=10_000)
    with serve(explainer, settings) as running:
        response = httpx.post(f"{running.url}/v1/explain", json={"lines": lines}, timeout=300)
    answers = response.json()["answers"]
    assert len(answers) == 10_000 and [a["line"] for a in answers] == lines


def test_a_one_megabyte_line_is_refused_with_the_line_limit(client):
    body = _error(client.post("/v1/explain", json={"lines": [CDB_LINE, "x" * 1_048_576]}), 413, "line_too_long")
    assert body["limit"] == 16384
    assert "line 2 has 1048576 characters" in body["detail"] and "16384" in body["detail"]
    get = _error(client.get("/v1/explain", params={"line": "y" * 20_000}), 413, "line_too_long")
    assert "16384" in get["detail"]


def test_a_body_over_the_size_limit_is_refused_while_reading(explainer):
    settings = Settings(kb_dir=explainer.kb_dir, index_dir=explainer.index_dir, max_body_bytes=1000)
    with serve(explainer, settings) as running, httpx.Client(base_url=running.url, timeout=60) as c:
        declared = _error(c.post("/v1/explain", json={"text": "z" * 5000}), 413, "body_too_large")
        assert declared["limit"] == 1000 and "limit is 1000 bytes" in declared["detail"]

        def chunks():  # no Content-Length: the limit must hold while streaming
            for _ in range(50):
                yield b"a" * 100

        streamed = _error(c.post("/v1/explain", content=chunks(), headers={"content-type": "text/plain"}), 413, "body_too_large")
        assert "1000 bytes" in streamed["detail"]


@pytest.mark.parametrize(
    "body, code",
    [
        (b'{"lines": ["a", ', "malformed_json"),
        (b"not json at all", "malformed_json"),
        (b'{"lines": ["\xff\xfe broken utf-8"]}', "malformed_json"),
        (b'{"lines": "one string"}', "invalid_request"),
        (b'{"lines": [1, 2]}', "invalid_request"),
        (b'{"lines": ["a"], "text": "b"}', "invalid_request"),
        (b'{"lines": ["a"], "lang": "fr"}', "invalid_request"),
        (b'{"lines": ["a"], "colour": true}', "invalid_request"),
        (b"[]", "invalid_request"),
        (b'{"lines": []}', "no_lines"),
        (b'{"text": "\\n  \\n"}', "no_lines"),
    ],
)
def test_malformed_requests_get_a_clear_422(client, body, code):
    response = client.post("/v1/explain", content=body, headers={"content-type": "application/json"})
    detail = _error(response, 422, code)["detail"]
    assert len(detail) > 10


def test_unsupported_content_type_is_415(client):
    response = client.post("/v1/explain", data={"lines": "x"})
    assert _error(response, 415, "unsupported_media_type")["detail"].startswith("send application/json")


def test_binary_junk_and_invalid_utf8_still_get_one_answer_per_line(client):
    junk = os.urandom(4096).replace(b"\n", b"")
    body = b"\n".join([junk[:2000], CDB_LINE.encode(), b"\xff\xfe\xfd invalid utf-8 \xc3\x28", junk[2000:], b"\x1b[31mred\x1b[0m\x00"])
    response = client.post("/v1/explain", content=body, headers={"content-type": "text/plain"})
    assert response.status_code == 200
    answers = response.json()["answers"]
    assert len(answers) == 5
    assert answers[1]["pattern_id"] == "deepspeed.comm.cdb_none"
    assert "\ufffd" in answers[2]["line"]
    control = "".join(chr(c) for c in range(32)) + "\u2028\u0085\ufeff"
    via_json = client.post("/v1/explain", json={"lines": [control, "\U0001F600" * 100, "汉字" * 50]})
    assert via_json.status_code == 200 and len(via_json.json()["answers"]) == 3


def test_concurrent_clients_each_get_their_own_answers(explainer):
    lines = [IB_LINE, CDB_LINE, UNRELATED_LINE] + [f"unrelated java line {i}: java.lang.IllegalStateException at Foo.bar(Foo.java:{i})" for i in range(20)]
    # 69 requests at once from one address: over the default rate limit (tested below), so off.
    settings = Settings(kb_dir=explainer.kb_dir, index_dir=explainer.index_dir, rate_limit=0)

    async def one(client: httpx.AsyncClient, line: str) -> tuple[str, dict]:
        response = await client.post("/v1/explain", json={"lines": [line]})
        return line, response.json()["answers"][0]

    async def all_at_once() -> list[tuple[str, dict]]:
        async with httpx.AsyncClient(base_url=running.url, timeout=120) as client:
            return await asyncio.gather(*(one(client, line) for line in lines * 3))

    with serve(explainer, settings) as running:
        results = asyncio.run(all_at_once())
    assert len(results) == len(lines) * 3
    assert all(answer["line"] == line for line, answer in results)
    by_line = {line: answer["pattern_id"] for line, answer in results}
    assert by_line[IB_LINE] == "nccl.net.ib_devices" and by_line[CDB_LINE] == "deepspeed.comm.cdb_none"


class GatedEncoder:
    """Wraps the real encoder; blocks on texts containing GATE until released."""

    def __init__(self, inner) -> None:
        self.inner = inner
        self.name = inner.name
        self.release = threading.Event()
        self.entered = threading.Event()

    def encode(self, texts) -> np.ndarray:
        if any("GATE" in t for t in texts):
            self.entered.set()
            assert self.release.wait(30), "test never released the encoder"
        return self.inner.encode(texts)


def test_embedding_work_never_blocks_the_event_loop(explainer, kb_dir, index_dir):
    gated = GatedEncoder(explainer.encoder)
    slow = Explainer(kb_dir=kb_dir, index_dir=index_dir, index_policy="refuse", encoder=gated)
    with serve(slow) as running:
        async def scenario() -> tuple[int, int, int]:
            async with httpx.AsyncClient(base_url=running.url, timeout=60) as client:
                stuck = asyncio.create_task(client.post("/v1/explain", json={"lines": ["GATE some unknown words here"]}))
                while not gated.entered.is_set():
                    await asyncio.sleep(0.01)
                # The encoder is busy in a worker thread; the loop must still serve others.
                health = await client.get("/healthz")
                regex = await client.get("/v1/explain", params={"line": CDB_LINE})
                gated.release.set()
                return health.status_code, regex.status_code, (await stuck).status_code

        assert asyncio.run(scenario()) == (200, 200, 200)


def test_a_client_over_the_rate_limit_gets_429_with_retry_after_and_others_do_not(explainer):
    # One token per 100 s after a burst of 3: the fourth request is over the limit however
    # slowly this machine runs the first three.
    settings = Settings(kb_dir=explainer.kb_dir, index_dir=explainer.index_dir, rate_limit=0.01, rate_burst=3,
                        client_header="X-Forwarded-For")
    first, second = {"X-Forwarded-For": "10.0.0.1"}, {"X-Forwarded-For": "10.0.0.2, 10.9.9.9"}
    with serve(explainer, settings) as running, httpx.Client(base_url=running.url, timeout=60) as c:
        codes = [c.get("/v1/explain", params={"line": CDB_LINE}, headers=first).status_code for _ in range(3)]
        assert codes == [200, 200, 200]
        refused = c.post("/v1/explain", json={"lines": [CDB_LINE]}, headers=first)
        body = _error(refused, 429, "rate_limited")
        assert "0.01 per second" in body["detail"] and "bursts of 3" in body["detail"]
        assert 90 <= int(refused.headers["retry-after"]) <= 101
        assert c.post("/v1/explain", json={"lines": [CDB_LINE]}, headers=second).status_code == 200
        assert c.get("/healthz").status_code == 200 and c.get("/").status_code == 200  # not rate limited


def test_never_seen_text_over_the_embedding_budget_is_refused_before_encoding(explainer, kb_dir, index_dir):
    counting = CountingEncoder(explainer.encoder)
    fresh = Explainer(kb_dir=kb_dir, index_dir=index_dir, index_policy="refuse", encoder=counting)
    settings = Settings(kb_dir=kb_dir, index_dir=index_dir, embed_budget_chars=400)
    words = ["ghost", "kiwi", "lumen", "prism", "quartz", "rover", "tundra", "vortex", "willow", "zephyr"]
    new_lines = [f"the {a} and the {b} went over the hill together" for a in words for b in words[:3]]
    with serve(fresh, settings) as running, httpx.Client(base_url=running.url, timeout=120) as c:
        calls_before = counting.texts
        body = _error(c.post("/v1/explain", json={"lines": new_lines}), 413, "embedding_budget")
        assert body["limit"] == 400 and "30 line templates" in body["detail"] and "/v1/annotate" in body["detail"]
        assert counting.texts == calls_before  # refused before anything was encoded
        # Lines the regex tier knows cost no budget, and a small never-seen part fits.
        ok = c.post("/v1/explain", json={"lines": [CDB_LINE] * 200 + new_lines[:3]})
        assert ok.status_code == 200 and len(ok.json()["answers"]) == 203
        # Once seen, the same lines are cached and no longer count.
        again = c.post("/v1/explain", json={"lines": new_lines[:3] * 50})
        assert again.status_code == 200


class CountingEncoder:
    def __init__(self, inner) -> None:
        self.inner = inner
        self.name = inner.name
        self.texts = 0

    def encode(self, texts) -> np.ndarray:
        self.texts += len(texts)
        return self.inner.encode(texts)
