"""``explainlog serve``: settings from flags and environment, and the real command started as a
process (one worker, and two workers whose metrics are aggregated)."""

from __future__ import annotations

import os
import re
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest

from http_testing import UNRELATED_LINE
from seed_lines import CDB_LINE
from service.cli import build_parser
from service.http.cli import settings_from_args
from service.http.settings import Settings, SettingsError

REPO = Path(__file__).resolve().parent.parent


def test_flags_win_over_environment_which_wins_over_defaults(tmp_path):
    token = tmp_path / "token"
    token.write_text("from-file\n")
    args = build_parser().parse_args(["--index-policy", "refuse", "serve", "--port", "9001", "--api-token-file", str(token)])
    env = {"EXPLAINLOG_PORT": "9000", "EXPLAINLOG_MAX_LINES": "77", "EXPLAINLOG_CORS_ORIGINS": "https://a.example, https://b.example",
           "EXPLAINLOG_API_TOKEN": "from-env"}
    settings = settings_from_args(args, env)
    assert settings.port == 9001 and settings.max_lines == 77 and settings.max_line_chars == Settings().max_line_chars
    assert settings.cors_origins == ("https://a.example", "https://b.example")
    assert settings.api_token == "from-file" and settings.index_policy == "refuse"
    assert "from-file" not in repr(settings)


def test_environment_round_trip_for_worker_processes():
    settings = Settings(port=8123, workers=3, max_upload_bytes=1000, cors_origins=("https://x.example",), api_token="t")
    assert Settings.from_environ(settings.to_environ()) == settings


@pytest.mark.parametrize("env, message", [
    ({"EXPLAINLOG_PORT": "eighty"}, "--port/EXPLAINLOG_PORT='eighty' is not an integer"),
    ({"EXPLAINLOG_MAX_LINES": "0"}, "--max-lines/EXPLAINLOG_MAX_LINES=0 must be at least 1"),
    ({"EXPLAINLOG_INDEX_POLICY": "sometimes"}, "index policy must be 'rebuild' or 'refuse'"),
])
def test_bad_settings_name_the_variable(env, message):
    with pytest.raises(SettingsError, match=re.escape(message)):
        Settings.from_environ(env)


def test_serve_refuses_bad_settings_with_a_clear_message():
    result = subprocess.run([sys.executable, "-m", "service.cli", "serve", "--port", "-5"],
                            cwd=REPO, capture_output=True, text=True, timeout=60)
    assert result.returncode == 2 and "--port/EXPLAINLOG_PORT=-5 must be at least 1" in result.stderr


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _start(kb_dir: Path, index_dir: Path, *extra: str) -> tuple[subprocess.Popen, str]:
    port = _free_port()
    env = {k: v for k, v in os.environ.items() if not k.startswith(("EXPLAINLOG_", "PROMETHEUS_"))}
    process = subprocess.Popen(
        [sys.executable, "-m", "service.cli", "--kb", str(kb_dir), "--index", str(index_dir), "--index-policy", "refuse",
         "serve", "--port", str(port), "--no-access-log", *extra],
        cwd=REPO, env=env, start_new_session=True, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
    )
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 300
    while time.monotonic() < deadline:
        assert process.poll() is None, process.stdout.read()
        try:
            if httpx.get(f"{url}/readyz", timeout=60).status_code == 200:
                return process, url
        except httpx.TransportError:
            pass
        time.sleep(0.25)
    os.killpg(process.pid, signal.SIGTERM)
    raise AssertionError("explainlog serve did not become ready")


def _stop(process: subprocess.Popen) -> None:
    os.killpg(process.pid, signal.SIGTERM)
    # uvicorn shuts down gracefully, then re-raises the signal it caught.
    assert process.wait(timeout=60) in (0, -signal.SIGTERM)


def test_serve_command_answers_over_http(kb_dir, index_dir):
    process, url = _start(kb_dir, index_dir)
    try:
        answer = httpx.get(f"{url}/v1/explain", timeout=60, params={"line": CDB_LINE}).json()
        assert answer["pattern_id"] == "deepspeed.comm.cdb_none"
        unknown = httpx.post(f"{url}/v1/explain", json={"lines": [UNRELATED_LINE]}, timeout=60).json()["answers"][0]
        assert unknown["known"] is False and unknown["candidates"]
        assert httpx.get(f"{url}/", timeout=60).status_code == 200
    finally:
        _stop(process)


def test_two_workers_share_one_metrics_view(kb_dir, index_dir):
    process, url = _start(kb_dir, index_dir, "--workers", "2")
    try:
        for _ in range(20):  # a new connection each time, spread over both workers
            httpx.get(f"{url}/v1/explain", timeout=60, params={"line": CDB_LINE})
        metrics = httpx.get(f"{url}/metrics", timeout=60).text
        regex = [line for line in metrics.splitlines() if line.startswith('explainlog_answers_total{tier="regex"}')]
        assert regex and float(regex[0].rsplit(" ", 1)[1]) == 20.0
    finally:
        _stop(process)
