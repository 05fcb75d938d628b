"""``POST /v1/annotate`` over real HTTP: plain, gzip and multipart uploads streamed back as
JSONL; truncated or corrupt gzip, oversized uploads and over-long lines end in clear errors
without losing the lines read before them."""

from __future__ import annotations

import gzip
import json
import zlib
from pathlib import Path

import httpx

from http_testing import serve
from seed_lines import CDB_LINE, IB_LINE
from service.explainer import CONTRACT_KEYS
from service.http.settings import Settings
from service.http.upload_stream import Inflater, LineSplitter, UploadError

SEED = Path("samples/seed_training.log")


def _records(response: httpx.Response) -> list[dict]:
    assert response.status_code == 200, response.text[:300]
    assert response.headers["content-type"].startswith("application/x-ndjson")
    return [json.loads(line) for line in response.text.splitlines()]


def test_plain_upload_gives_one_record_per_line_in_order(client, explainer):
    data = SEED.read_bytes()
    lines = data.decode().splitlines()
    records = _records(client.post("/v1/annotate", content=data))
    assert [r["line_number"] for r in records] == list(range(1, len(lines) + 1))
    assert [r["line"] for r in records] == lines
    expected = explainer.explain_many(lines)
    for record, answer in zip(records, expected):
        assert record["truncated"] is False
        assert {k: record[k] for k in CONTRACT_KEYS} == json.loads(json.dumps(answer))


def test_gzip_and_multipart_uploads_read_the_same_lines(client):
    data = SEED.read_bytes()
    plain = _records(client.post("/v1/annotate", content=data))
    gz = _records(client.post("/v1/annotate", content=gzip.compress(data)))
    form = _records(client.post("/v1/annotate", files={"file": ("train.log.gz", gzip.compress(data), "application/gzip")},
                                data={"note": "ignored"}))
    assert gz == plain and form == plain


def test_concatenated_gzip_members_are_one_stream(client):
    first, second = f"{CDB_LINE}\n".encode(), f"{IB_LINE}\n".encode()
    records = _records(client.post("/v1/annotate", content=gzip.compress(first) + gzip.compress(second)))
    assert [r["pattern_id"] for r in records] == ["deepspeed.comm.cdb_none", "nccl.net.ib_devices"]


def test_truncated_gzip_ends_with_an_error_line_after_the_lines_before_the_cut(client):
    data = SEED.read_bytes()
    cut = gzip.compress(data)[:-200]
    records = _records(client.post("/v1/annotate", content=cut))
    error = records[-1]
    assert error["error"] == "truncated_gzip" and "truncated" in error["detail"]
    lines = records[:-1]
    assert len(lines) >= 10 and error["after_line"] == lines[-1]["line_number"]
    assert [r["line"] for r in lines[:-1]] == data.decode().splitlines()[: len(lines) - 1]


def test_corrupt_gzip_is_reported(client):
    body = gzip.compress(SEED.read_bytes())
    corrupt = body[:20] + bytes(b ^ 0xFF for b in body[20:60]) + body[60:]
    response = client.post("/v1/annotate", content=corrupt)
    if response.status_code == 200:  # damage found after some lines: reported as the last record
        assert _records(response)[-1]["error"] == "corrupt_gzip"
    else:
        assert response.status_code == 400 and response.json()["error"] == "corrupt_gzip"


def test_binary_crlf_and_over_long_lines(explainer):
    settings = Settings(kb_dir=explainer.kb_dir, index_dir=explainer.index_dir, max_line_chars=1000)
    body = b"\r\n".join([CDB_LINE.encode(), b"\x00\xff\xfe binary \x80", b"q" * 1_048_576, IB_LINE.encode()])
    with serve(explainer, settings) as running:
        records = _records(httpx.post(f"{running.url}/v1/annotate", content=body, timeout=60))
    assert [r["line_number"] for r in records] == [1, 2, 3, 4]
    assert records[0]["pattern_id"] == "deepspeed.comm.cdb_none" and records[0]["line"] == CDB_LINE
    assert "\ufffd" in records[1]["line"]
    assert records[2]["truncated"] is True and len(records[2]["line"]) == 1000
    assert records[3]["pattern_id"] == "nccl.net.ib_devices" and records[3]["truncated"] is False


def test_upload_limits_before_and_during_the_stream(explainer):
    settings = Settings(kb_dir=explainer.kb_dir, index_dir=explainer.index_dir, max_upload_bytes=4096)
    with serve(explainer, settings) as running, httpx.Client(base_url=running.url, timeout=60) as c:
        declared = c.post("/v1/annotate", content=b"x\n" * 4000)
        assert declared.status_code == 413 and "limit is 4096 bytes" in declared.json()["detail"]

        def chunks():  # no Content-Length: the limit is found mid-stream
            for _ in range(100):
                yield (CDB_LINE + "\n").encode()

        records = _records(c.post("/v1/annotate", content=chunks()))
        assert records[-1]["error"] == "upload_too_large" and records[-1]["limit"] == 4096
        assert all(r["pattern_id"] == "deepspeed.comm.cdb_none" for r in records[:-1]) and len(records) > 10

        bomb = gzip.compress(b"\n" * 3_000_000)  # ~3 KB that inflates to 3 MB
        assert len(bomb) < 4096
        exploded = c.post("/v1/annotate", content=bomb)
        assert exploded.status_code == 413 and "after gunzip" in exploded.json()["detail"]


def test_empty_and_malformed_uploads(client):
    assert client.post("/v1/annotate", content=b"").json()["error"] == "no_lines"
    form = b'--XX\r\nContent-Disposition: form-data; name="just"\r\n\r\na field\r\n--XX--\r\n'
    no_file = client.post("/v1/annotate", content=form, headers={"content-type": "multipart/form-data; boundary=XX"})
    assert no_file.status_code == 422 and "form field 'file'" in no_file.json()["detail"]
    missing = client.post("/v1/annotate", content=b"--b\r\n", headers={"content-type": "multipart/form-data"})
    assert missing.status_code == 400 and "boundary" in missing.json()["detail"]


def test_line_splitter_holds_at_most_one_capped_line():
    splitter = LineSplitter(max_line_bytes=8)
    out = list(splitter.feed(b"abc\nlonger than eight\npar")) + list(splitter.feed(b"tial\n")) + list(splitter.finish())
    assert [(l.number, l.text, l.truncated) for l in out] == [(1, "abc", False), (2, "longer t", True), (3, "partial", False)]
    assert len(splitter._buffer) == 0


def test_inflater_bounds_each_step_and_flags_truncation():
    inflater = Inflater()
    pieces = list(inflater.feed(gzip.compress(b"a" * (5 << 20))))
    assert sum(map(len, pieces)) == 5 << 20 and max(map(len, pieces)) <= 1 << 20
    assert inflater.finish() == (b"", None)
    cut = Inflater()
    list(cut.feed(zlib.compress(b"plain zlib is not gzip")))
    assert cut.finish()[1] is None  # not gzip magic: passed through as text
    truncated = Inflater()
    list(truncated.feed(gzip.compress(b"line\n" * 1000)[:-10]))
    tail, error = truncated.finish()
    assert isinstance(error, UploadError) and error.code == "truncated_gzip"
