"""Fault injection in one place: the hostile corpus (``tests/hostile.py``) against every way in.

Every input must get a 2xx or a 4xx with a JSON reason — never a 5xx, a dropped connection or a
traceback — and every line that is answered is answered once, in order (nothing lost). The
tally is printed (``pytest -s``) and README states it. Kills, concurrent runs, corrupt indexes
and closed stdio have their own tests (test_batch_nothing_lost, test_semantic_index, test_cli);
this file is the wide net over input.
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

import httpx
import pytest

from chat_fakes import SEED_CDB, feishu_encrypt, feishu_headers, slack_headers
from hostile import corpus
from http_testing import serve
from service.http.explain_body import split_paste
from service.http.settings import Settings
from test_chat_feishu import ENCRYPT_KEY, feishu, message_event  # noqa: F401 - the fixture
from test_chat_slack import SECRET, slack, slash  # noqa: F401 - the fixture

REPO = Path(__file__).resolve().parent.parent
CORPUS = corpus()
TALLY: Counter = Counter()


def _utf8(blob: bytes) -> bool:
    try:
        blob.decode("utf-8")
    except UnicodeDecodeError:
        return False
    return True


def _upload_lines(blob: bytes) -> int:
    """Lines /v1/annotate and the CLI read from a blob: split on LF, a last line without one counts."""
    if not blob:
        return 0
    return blob.count(b"\n") + (0 if blob.endswith(b"\n") else 1)


@pytest.fixture(scope="module", autouse=True)
def tally():
    """After the module: how many hostile inputs went where (printed with -s, and written to
    test-artifacts/fault_injection.json), the figure README quotes."""
    yield TALLY
    report = {"hostile_inputs": sum(TALLY.values()), "by_target": dict(TALLY)}
    print("\nhostile inputs tried:", json.dumps(report))
    out = REPO / "test-artifacts"
    out.mkdir(exist_ok=True)
    (out / "fault_injection.json").write_text(json.dumps(report, indent=2) + "\n")


@pytest.fixture(scope="module")
def api(explainer):
    # The rate limit is off: this file sends thousands of requests from one address on purpose.
    settings = Settings(kb_dir=explainer.kb_dir, index_dir=explainer.index_dir, rate_limit=0)
    with serve(explainer, settings) as running, httpx.Client(base_url=running.url, timeout=300) as client:
        yield client


def _no_5xx(response: httpx.Response, what: str) -> None:
    TALLY[what] += 1
    assert response.status_code < 500, (what, response.status_code, response.text[:300])
    if response.status_code >= 400:
        body = response.json()
        assert body["error"] and body["detail"], body
        assert "Traceback" not in response.text


def test_every_hostile_paste_is_answered_line_for_line_or_refused_with_a_reason(api):
    for blob in CORPUS:
        response = api.post("/v1/explain", content=blob, headers={"content-type": "text/plain"})
        _no_5xx(response, "POST /v1/explain text/plain")
        expected = split_paste(blob.decode("utf-8", errors="replace"))
        if response.status_code == 200:
            assert [a["line"] for a in response.json()["answers"]] == expected
        else:
            assert response.status_code in (413, 422), response.text[:300]
            assert response.status_code == 413 or not expected


def test_every_hostile_line_list_is_answered_item_for_item_or_refused(api):
    for blob in CORPUS:
        text = blob.decode("utf-8", errors="replace")
        items = [text, text[:100], ""] if len(text) < 16_384 else [text]
        response = api.post("/v1/explain", json={"lines": items})
        _no_5xx(response, "POST /v1/explain json")
        if response.status_code == 200:
            assert [a["line"] for a in response.json()["answers"]] == items
        else:
            assert response.status_code == 413 and len(text) > 16_384, response.text[:300]


def test_every_hostile_upload_streams_every_line_in_order(api):
    for blob in CORPUS:
        response = api.post("/v1/annotate", content=blob, headers={"content-type": "application/octet-stream"})
        _no_5xx(response, "POST /v1/annotate")
        if response.status_code != 200:
            # Only an empty upload has nothing to answer, and a "gzip" that is corrupt from its first block.
            assert (response.status_code == 422 and not blob) or (
                response.status_code == 400 and response.json()["error"] == "corrupt_gzip" and blob[:2] == b"\x1f\x8b"
            ), response.text[:300]
            continue
        # Split on LF only: str.splitlines would also cut at U+2028 or U+0085 inside a record.
        records = [json.loads(line) for line in response.content.split(b"\n") if line]
        answered = [r for r in records if "error" not in r]
        assert [r["line_number"] for r in answered] == list(range(1, len(answered) + 1))
        if len(answered) != _upload_lines(blob):
            # Only a stream that says why may stop early (a gzip magic number with junk after it).
            assert "error" in records[-1] and records[-1]["after_line"] == len(answered), records[-1]


def test_every_hostile_log_gets_a_triage_verdict_or_a_reason(api):
    for blob in CORPUS:
        response = api.post("/v1/triage", content=blob, headers={"content-type": "text/plain"})
        _no_5xx(response, "POST /v1/triage")
        if response.status_code == 200:
            verdict = response.json()
            assert "root_cause" in verdict and verdict["summary"]["en"] and verdict["summary"]["zh"]
        else:
            assert response.status_code == 422 and not blob.strip(), response.text[:300]


def test_every_hostile_search_answers(api):
    for blob in CORPUS:
        query = blob.decode("utf-8", errors="replace")[:300]
        response = api.get("/v1/patterns", params={"q": query})
        _no_5xx(response, "GET /v1/patterns")
        assert response.status_code in (200, 422)
    assert api.get("/readyz").status_code == 200  # and the server is still whole


def test_signed_hostile_chat_requests_get_400_or_an_answer_never_a_crash(slack, feishu):
    for blob in CORPUS[:200]:
        for age, content_type in ((0, "application/json"), (1, "application/x-www-form-urlencoded")):
            # Another timestamp for the second, so it is not the first one replayed (also a 4xx).
            headers = slack_headers(SECRET, blob, timestamp=int(time.time()) - age, content_type=content_type)
            status, response, _ = slack.send(blob, headers)
            TALLY["Slack /slack/events, signed junk"] += 1
            # Slack signs UTF-8 text: a body that is not UTF-8 cannot carry a valid signature (401).
            assert status in (200, 400) or (status == 401 and not _utf8(blob)), (status, response[:300])
        status, response, _ = feishu.send({}, headers=feishu_headers(ENCRYPT_KEY, blob), body=blob)
        TALLY["Feishu /feishu/events, signed junk"] += 1
        assert status in (200, 400) and b"Traceback" not in response, (status, response[:300])
    # Well-formed, signed requests whose text is hostile: acknowledged, and the bot replies to each.
    sample = [b.decode("utf-8", errors="replace")[:3000] for b in CORPUS[150:190] if b.strip()][:20]
    for n, text in enumerate(sample):
        body = slash(slack, f"{text} {n}", user=f"U{n}")  # one user each: the bot's per-user rate limit
        status, response, _ = slack.send(body, slack_headers(SECRET, body))
        TALLY["Slack slash command, hostile text"] += 1
        assert status == 200, response[:300]
    slack.fake.recorder.wait_for(
        lambda c: sum(p == "/response/cmd" for p in slack.fake.recorder.paths()) >= len(sample), timeout=300
    )
    for n, text in enumerate(sample):
        body = feishu_encrypt(ENCRYPT_KEY, message_event(f"{text} {n}", event_id=f"ev-hostile-{n}", message_id=f"om_h{n}"))
        status, response, _ = feishu.send({}, headers=feishu_headers(ENCRYPT_KEY, body, nonce=f"h{n}"), body=body)
        TALLY["Feishu message, hostile text"] += 1
        assert status == 200, response[:300]
    # Still whole: an ordinary line gets its ordinary answer.
    body = slash(slack, SEED_CDB)
    assert slack.send(body, slack_headers(SECRET, body))[0] == 200


def test_the_cli_annotates_every_hostile_file_and_loses_no_line(index_dir, tmp_path):
    root = tmp_path / "hostile"
    root.mkdir()
    expected = 0
    for n, blob in enumerate(CORPUS):
        (root / f"{n:04d}.log").write_bytes(blob)
        expected += _upload_lines(blob)
    out = tmp_path / "out.jsonl"
    result = subprocess.run(
        [sys.executable, "-m", "service.cli", "--index", str(index_dir), "--index-policy", "refuse",
         "annotate", str(root), "--format", "jsonl", "-j", "2", "-o", str(out)],
        cwd=REPO, capture_output=True, timeout=1800,
    )
    TALLY["CLI annotate, one file each"] += len(CORPUS)
    # The corpus holds a "gzip" that is corrupt from its first block: input lost, exit 3 (README,
    # "Exit codes"), said on stderr; every other file is annotated whole.
    corrupt = {n for n, blob in enumerate(CORPUS) if blob[:2] == b"\x1f\x8b"}
    stderr = result.stderr.decode(errors="replace")
    assert result.returncode == 3, stderr[-2000:]
    assert b"Traceback" not in result.stderr
    for n in corrupt:
        assert f"{n:04d}.log: corrupt gzip data" in stderr
    records = [json.loads(line) for line in out.read_bytes().split(b"\n") if line]
    per_file = Counter(r["file"] for r in records)
    for n, blob in enumerate(CORPUS):
        if n not in corrupt:
            assert per_file[str(root / f"{n:04d}.log")] == _upload_lines(blob), n
    assert len(records) == expected - sum(_upload_lines(CORPUS[n]) for n in corrupt)
