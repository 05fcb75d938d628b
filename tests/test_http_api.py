"""The HTTP API over a real uvicorn server: the answer contract, the KB browser, operations
endpoints, offline docs, the optional token and CORS."""

from __future__ import annotations

import json
import re
import shutil
import time

import httpx

from http_testing import UNRELATED_LINE, serve
from seed_lines import AFFINITY_LINE, CDB_LINE, FLUSH_LINE, IB_LINE
from service.explainer import CONTRACT_KEYS, Explainer
from service.http.settings import Settings


def test_post_lines_answers_in_order_with_the_contract_keys(client):
    lines = [FLUSH_LINE, UNRELATED_LINE, IB_LINE, CDB_LINE]
    response = client.post("/v1/explain", json={"lines": lines})
    assert response.status_code == 200
    answers = response.json()["answers"]
    assert [a["line"] for a in answers] == lines
    assert all(tuple(a) == CONTRACT_KEYS for a in answers)
    assert [a["pattern_id"] for a in answers] == [
        "deepspeed.zero3.allocator_cache_flushes", None, "nccl.net.ib_devices", "deepspeed.comm.cdb_none"
    ]
    assert answers[0]["severity"] == "warning" and answers[0]["tier"] == "regex"
    assert "Relaxed Ordering" in answers[2]["explanation"]["en"]
    unknown = answers[1]
    assert unknown["known"] is False and unknown["tier"] is None and unknown["title"] is None
    assert 1 <= len(unknown["candidates"]) <= 3


def test_answers_match_the_explainer_exactly(client, explainer):
    lines = open("samples/seed_training.log", encoding="utf-8").read().splitlines()
    answers = client.post("/v1/explain", json={"lines": lines}).json()["answers"]
    assert answers == json.loads(json.dumps(explainer.explain_many(lines)))


def test_affinity_line_decodes_the_cpu_mask(client):
    answer = client.get("/v1/explain", params={"line": AFFINITY_LINE}).json()
    assert answer["pattern_id"] == "nccl.init.affinity"
    assert "16-23" in answer["explanation"]["en"]


def test_text_paste_skips_blank_lines_and_strips_crlf(client):
    text = f"{CDB_LINE}\r\n\r\n   \n{IB_LINE}\r\n"
    answers = client.post("/v1/explain", json={"text": text}).json()["answers"]
    assert [a["pattern_id"] for a in answers] == ["deepspeed.comm.cdb_none", "nccl.net.ib_devices"]


def test_plain_text_body_is_a_paste(client):
    response = client.post(
        "/v1/explain?lang=zh", content=f"{CDB_LINE}\n{IB_LINE}\n".encode(), headers={"content-type": "text/plain"}
    )
    answers = response.json()["answers"]
    assert [a["pattern_id"] for a in answers] == ["deepspeed.comm.cdb_none", "nccl.net.ib_devices"]
    assert set(answers[0]["title"]) == {"zh"}


def test_lang_keeps_one_language_with_the_same_shape(client):
    zh = client.post("/v1/explain", json={"lines": [IB_LINE], "lang": "zh"}).json()["answers"][0]
    en = client.get("/v1/explain", params={"line": IB_LINE, "lang": "en"}).json()
    assert set(zh["title"]) == {"zh"} and set(zh["explanation"]) == {"zh"} and set(zh["summary"]) == {"zh"}
    assert re.search(r"[\u4e00-\u9fff]", zh["explanation"]["zh"])
    assert set(en["title"]) == {"en"} and tuple(en) == CONTRACT_KEYS


def test_get_explain_requires_a_line(client):
    response = client.get("/v1/explain")
    assert response.status_code == 422
    assert "line" in response.json()["detail"]
    assert client.get("/v1/explain", params={"line": "  "}).status_code == 422


def test_errors_are_said_in_chinese_too(client):
    """Issue 18: every error body carries ``detail_zh`` beside the English ``detail``."""
    bodies = [client.post("/v1/explain", json={"lines": []}).json(),
              client.post("/v1/explain", content=b"{not json", headers={"content-type": "application/json"}).json(),
              client.post("/v1/explain", json={"lines": ["x"], "lang": "fr"}).json(),
              client.get("/v1/patterns/no.such.entry").json()]
    for body in bodies:
        assert body["detail"] and re.search(r"[\u4e00-\u9fff]", body["detail_zh"]), body


def test_patterns_list_filters_and_searches_both_languages(client, explainer):
    listing = client.get("/v1/patterns").json()
    assert listing["total"] == len(explainer.entries)
    assert sum(listing["facets"]["component"].values()) == len(explainer.entries)
    nccl = client.get("/v1/patterns", params={"component": "nccl"}).json()
    assert nccl["total"] > 0 and {p["component"] for p in nccl["patterns"]} == {"nccl"}
    found = client.get("/v1/patterns", params={"q": "Relaxed Ordering"}).json()
    assert "nccl.net.ib_devices" in [p["id"] for p in found["patterns"]]
    title_zh = explainer.by_id["nccl.net.ib_devices"].title.zh
    found_zh = client.get("/v1/patterns", params={"q": title_zh}).json()
    assert "nccl.net.ib_devices" in [p["id"] for p in found_zh["patterns"]]
    warnings = client.get("/v1/patterns", params={"severity": "warning"}).json()
    assert "deepspeed.zero3.allocator_cache_flushes" in [p["id"] for p in warnings["patterns"]]
    assert client.get("/v1/patterns", params={"severity": "loud"}).status_code == 422


def test_pattern_detail_has_texts_fields_source_and_references(client, explainer):
    entry = explainer.by_id["nccl.net.ib_devices"]
    detail = client.get("/v1/patterns/nccl.net.ib_devices").json()
    assert detail["id"] == entry.id
    assert detail["title"] == entry.title.model_dump()
    assert detail["source"] == entry.source and detail["references"] == entry.references
    assert detail["examples"] and set(detail["fields"]) == set(entry.fields)
    missing = client.get("/v1/patterns/no.such.entry")
    assert missing.status_code == 404 and "no.such.entry" in missing.json()["detail"]


def test_healthz_and_readyz(client, explainer):
    assert client.get("/healthz").json() == {"status": "ok"}
    ready = client.get("/readyz")
    assert ready.status_code == 200
    body = ready.json()
    assert body["ready"] is True and body["index_loaded"] is True
    assert body["kb_digest"] == explainer.kb.digest and body["kb_entries"] == len(explainer.entries)


def test_readyz_reports_an_index_that_no_longer_matches_the_kb(explainer, index_dir, kb_dir, tmp_path):
    copied = tmp_path / "index"
    shutil.copytree(index_dir, copied)
    stale = Explainer(kb_dir=kb_dir, index_dir=copied, index_policy="refuse", encoder=explainer.encoder)
    with serve(stale) as running:
        assert httpx.get(f"{running.url}/readyz", timeout=60).status_code == 200
        meta = json.loads((copied / "meta.json").read_text())
        meta["kb_digest"] = "0" * 64
        (copied / "meta.json").write_text(json.dumps(meta))
        response = httpx.get(f"{running.url}/readyz", timeout=60)
    assert response.status_code == 503
    assert "knowledge base changed" in response.json()["problem"]


def _readyz_once_loaded(url: str, timeout: float = 120.0) -> httpx.Response:
    """/readyz once the server has finished (or given up) loading the index: polled against a
    deadline, not a count of requests, since loading takes longer with a bigger catalogue on a
    busy machine (on CI's 2 cores at 4588957 a /readyz read timed out after httpx's default 5 s)."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            response = httpx.get(f"{url}/readyz", timeout=30.0)
        except httpx.TimeoutException:
            # the server verifying a big index can hold the GIL past a read timeout
            if time.monotonic() > deadline:
                raise
            continue
        if response.json()["problem"] != "the semantic index is still loading" or time.monotonic() > deadline:
            return response
        time.sleep(0.05)


def test_readyz_is_503_when_the_index_cannot_be_loaded(explainer, kb_dir, tmp_path):
    broken = Explainer(kb_dir=kb_dir, index_dir=tmp_path / "none", index_policy="refuse", encoder=explainer.encoder)
    with serve(broken) as running:
        report = _readyz_once_loaded(running.url).json()
        assert report["ready"] is False and "no index" in report["problem"]
        # The regex tier still answers; a line that needs the semantic tier gets a clear 503.
        assert httpx.post(f"{running.url}/v1/explain", timeout=60, json={"lines": [CDB_LINE]}).status_code == 200
        refused = httpx.post(f"{running.url}/v1/explain", timeout=60, json={"lines": [UNRELATED_LINE]})
        assert refused.status_code == 503 and "index build" in refused.json()["detail"]
        # Clients are not told where the server keeps its files.
        for text in (json.dumps(report), refused.text):
            assert str(tmp_path) not in text and str(kb_dir) not in text


def test_a_zero_byte_index_file_is_a_503_json_with_a_reason_and_no_path(explainer, index_dir, kb_dir, tmp_path):
    damaged = tmp_path / "index"
    shutil.copytree(index_dir, damaged)
    (damaged / "vectors.npy").write_bytes(b"")
    server_side = Explainer(kb_dir=kb_dir, index_dir=damaged, index_policy="refuse", encoder=explainer.encoder)
    with serve(server_side) as running:
        response = _readyz_once_loaded(running.url)
        assert response.status_code == 503 and response.headers["content-type"].startswith("application/json")
        assert "checksum" in response.json()["problem"] and str(tmp_path) not in response.text
        refused = httpx.post(f"{running.url}/v1/explain", timeout=60, json={"lines": [UNRELATED_LINE]})
        assert refused.status_code == 503 and refused.headers["content-type"].startswith("application/json")
        assert "corrupt" in refused.json()["detail"] and str(tmp_path) not in refused.text


def _metric(text: str, name: str, **labels: str) -> float:
    for line in text.splitlines():
        if line.startswith(name + "{") or line.startswith(name + " "):
            if all(f'{k}="{v}"' in line for k, v in labels.items()):
                return float(line.rsplit(" ", 1)[1])
    return 0.0


CATALOG_LINE = "node7:2211:2290 [1] NCCL INFO P2P not supported between GPU1 and GPU3"


def test_metrics_count_requests_latency_and_answers_by_tier(client):
    before = client.get("/metrics").text
    response = client.post("/v1/explain", json={"lines": [IB_LINE, CDB_LINE, UNRELATED_LINE, CATALOG_LINE]})
    # A catalogue answer once made the tier counter raise (500 for the whole request).
    assert response.status_code == 200 and response.json()["answers"][3]["tier"] == "catalog"
    client.get("/v1/patterns/nccl.net.ib_devices")
    after = client.get("/metrics").text
    assert _metric(after, "explainlog_answers_total", tier="catalog") - _metric(before, "explainlog_answers_total", tier="catalog") == 1
    assert _metric(after, "explainlog_answers_total", tier="regex") - _metric(before, "explainlog_answers_total", tier="regex") == 2
    assert _metric(after, "explainlog_answers_total", tier="unknown") - _metric(before, "explainlog_answers_total", tier="unknown") == 1
    requests = dict(route="/v1/explain", method="POST", status="200")
    assert _metric(after, "explainlog_http_requests_total", **requests) - _metric(before, "explainlog_http_requests_total", **requests) == 1
    assert _metric(after, "explainlog_http_requests_total", route="/v1/patterns/{pattern_id}") >= 1
    assert _metric(after, "explainlog_http_request_duration_seconds_count", route="/v1/explain") >= 1
    assert 'explainlog_http_request_duration_seconds_bucket{le="0.05",route="/v1/explain"}' in after


def test_docs_are_served_without_any_cdn(client):
    page = client.get("/docs")
    assert page.status_code == 200
    assets = re.findall(r'(?:src|href)="([^"]+)"', page.text)
    assert assets and all(a.startswith("/") for a in assets), assets
    for asset in assets:
        assert client.get(asset).status_code == 200, asset
    spec = client.get("/openapi.json").json()
    assert {"/v1/explain", "/v1/annotate", "/v1/patterns", "/v1/patterns/{pattern_id}", "/healthz", "/readyz", "/metrics"} <= set(spec["paths"])
    assert "text/plain" in spec["paths"]["/v1/explain"]["post"]["requestBody"]["content"]


def test_pages_are_local_only_and_locked_down_by_csp(client):
    for path in ("/", "/kb"):
        page = client.get(path)
        assert page.status_code == 200
        assert "default-src 'self'" in page.headers["content-security-policy"]
        assert not re.search(r'(?:src|href)="(?:https?:)?//', page.text)
    assert client.get("/static/app.js").status_code == 200


def test_bearer_token_guards_the_api_but_not_probes_or_page(explainer):
    settings = Settings(kb_dir=explainer.kb_dir, index_dir=explainer.index_dir, api_token="s3cret")
    with serve(explainer, settings) as running, httpx.Client(base_url=running.url, timeout=60) as c:
        denied = c.get("/v1/explain", params={"line": CDB_LINE})
        assert denied.status_code == 401 and denied.headers["www-authenticate"] == "Bearer"
        assert "Authorization: Bearer" in denied.json()["detail"]
        assert c.get("/v1/patterns", headers={"Authorization": "Bearer wrong"}).status_code == 401
        ok = c.get("/v1/explain", params={"line": CDB_LINE}, headers={"Authorization": "Bearer s3cret"})
        assert ok.status_code == 200
        assert c.get("/healthz").status_code == 200 and c.get("/").status_code == 200
        assert c.get("/metrics").status_code == 200


def test_cors_allows_only_configured_origins(explainer, server):
    settings = Settings(kb_dir=explainer.kb_dir, index_dir=explainer.index_dir, cors_origins=("https://ops.example",))
    with serve(explainer, settings) as running:
        allowed = httpx.get(f"{running.url}/v1/patterns", timeout=60, headers={"Origin": "https://ops.example"})
        other = httpx.get(f"{running.url}/v1/patterns", timeout=60, headers={"Origin": "https://evil.example"})
    assert allowed.headers["access-control-allow-origin"] == "https://ops.example"
    assert "access-control-allow-origin" not in other.headers
    default = httpx.get(f"{server.url}/v1/patterns", timeout=60, headers={"Origin": "https://ops.example"})
    assert "access-control-allow-origin" not in default.headers


def test_triage_names_the_root_cause_of_a_pasted_log(client):
    log = "\n".join([
        "Sending process 24901 closing signal SIGTERM",
        "Traceback (most recent call last):",
        '  File "train.py", line 3, in <module>',
        "KeyError: 'labels'",
        "failed (exitcode: 1) local_rank: 3 (pid: 33054) of binary: /bin/python",
    ])
    for response in (client.post("/v1/triage", content=log, headers={"Content-Type": "text/plain"}),
                     client.post("/v1/triage", json={"log": log})):
        assert response.status_code == 200
        result = response.json()
        assert result["root_cause"]["line_number"] == 4
        assert result["facts"]["lines"] == 5
        assert set(result["summary"]) == {"en", "zh"}
    assert client.post("/v1/triage", json={"log": "  \n"}).status_code == 422
    assert client.post("/v1/triage", json={"text": "x"}).status_code == 422
