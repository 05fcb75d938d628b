"""``explainlog chat ...`` as users run it: a real process, credentials from the environment,
talking to the local fake Slack/Feishu APIs, with DEBUG logging that must not leak a secret."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
from pathlib import Path
from urllib.parse import urlencode

from chat_fakes import SEED_AFFINITY, SEED_CDB, FakeChatApis, ServerThread, post, slack_headers
from service.chat.store import ChatStore, StoredAnswer

REPO = Path(__file__).resolve().parent.parent
SECRET = "cli-signing-secret-4e1f"
BOT_TOKEN = "xoxb-cli-bot-token-93ab"
APP_SECRET = "cli-feishu-app-secret-5c"


def _env(kb_dir: Path, index_dir: Path, tmp_path: Path, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.lower().endswith("_proxy")
           and not k.startswith(("SLACK_", "FEISHU_"))}
    env.update(EXPLAINLOG_KB=str(kb_dir), EXPLAINLOG_INDEX=str(index_dir), EXPLAINLOG_CHAT_DB=str(tmp_path / "chat.sqlite3"),
               PYTHONUNBUFFERED="1", **extra)
    return env


def _start(args: list[str], env: dict[str, str], log: Path) -> subprocess.Popen:
    handle = open(log, "wb")
    return subprocess.Popen([sys.executable, "-m", "service.cli", "--index-policy", "refuse", *args],
                            cwd=REPO, env=env, stdout=handle, stderr=subprocess.STDOUT)


def _stop(process: subprocess.Popen) -> None:
    process.terminate()
    try:
        process.wait(20)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait(10)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_slack_http_mode_answers_signed_requests_and_logs_no_secret(kb_dir, index_dir, tmp_path):
    fake = FakeChatApis()
    with ServerThread(fake.app()) as api:
        fake.base_url = api.url
        port = _free_port()
        env = _env(kb_dir, index_dir, tmp_path, SLACK_BOT_TOKEN=BOT_TOKEN, SLACK_SIGNING_SECRET=SECRET,
                   SLACK_API_URL=api.url + "/api/")
        log = tmp_path / "bot.log"
        process = _start(["chat", "slack", "--mode", "http", "--port", str(port), "--log-level", "DEBUG"], env, log)
        try:
            url = f"http://127.0.0.1:{port}"
            deadline = time.monotonic() + 180
            while True:
                assert process.poll() is None, log.read_text(errors="replace")
                try:
                    import urllib.request

                    if urllib.request.urlopen(url + "/healthz", timeout=2).status == 200:
                        break
                except OSError:
                    pass
                assert time.monotonic() < deadline, "bot did not start"
                time.sleep(0.2)
            body = urlencode({"command": "/explain", "text": SEED_AFFINITY, "user_id": "U1", "channel_id": "C1",
                              "response_url": api.url + "/response/cli", "trigger_id": "t"}).encode()
            assert post(url + "/slack/events", body, slack_headers("forged-secret", body))[0] == 401
            status, ack, _ = post(url + "/slack/events", body, slack_headers(SECRET, body))
            assert status == 200 and ack.decode() == "Explaining 1 line(s)…"
            blocks = fake.recorder.wait_for(lambda c: c.path == "/response/cli").json["blocks"]
            assert "16-23" in blocks[2]["text"]["text"]
        finally:
            _stop(process)
    output = log.read_text(errors="replace")
    assert "DEBUG" in output  # the check below is not vacuous
    assert BOT_TOKEN not in output and SECRET not in output


def test_feishu_long_connection_mode_answers_and_logs_no_secret(kb_dir, index_dir, tmp_path):
    from test_chat_feishu import _frame, message_event

    fake = FakeChatApis()
    with ServerThread(fake.app()) as api:
        fake.base_url = api.url
        fake.feishu_ws_frames.append(_frame(message_event(SEED_CDB, chat_type="p2p", mentioned=False, message_id="om_cli"), "m1"))
        env = _env(kb_dir, index_dir, tmp_path, FEISHU_APP_ID="cli_test", FEISHU_APP_SECRET=APP_SECRET, FEISHU_DOMAIN=api.url)
        log = tmp_path / "bot.log"
        process = _start(["chat", "feishu", "--mode", "ws", "--log-level", "DEBUG"], env, log)
        try:
            reply = fake.recorder.wait_for(lambda c: c.path == "/open-apis/im/v1/messages/om_cli/reply", timeout=180)
            card = json.loads(reply.json["content"])
            assert card["header"]["title"]["content"].startswith("ℹ️ [信息] ")
        finally:
            _stop(process)
    output = log.read_text(errors="replace")
    assert "DEBUG" in output and "tenant_access_token" in output  # the token exchange was logged ...
    assert APP_SECRET not in output  # ... without the secret it carried


def test_feedback_export_and_missing_credentials(tmp_path, kb_dir, index_dir):
    store = ChatStore(tmp_path / "chat.sqlite3")
    store.save_reply("r", "slack", 1, 0, [StoredAnswer("a", 1, {"line": SEED_CDB, "pattern_id": "deepspeed.comm.cdb_none"})])
    store.record_feedback("a", "wrong", "U1", "slack")
    env = _env(kb_dir, index_dir, tmp_path)
    out = subprocess.run([sys.executable, "-m", "service.cli", "chat", "feedback"], cwd=REPO, env=env,
                         capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    record = json.loads(out.stdout)
    assert (record["line"], record["verdict"], record["pattern_id"]) == (SEED_CDB, "wrong", "deepspeed.comm.cdb_none")
    out = subprocess.run([sys.executable, "-m", "service.cli", "chat", "slack", "--mode", "socket"], cwd=REPO, env=env,
                         capture_output=True, text=True, timeout=120)
    assert out.returncode == 2 and "SLACK_BOT_TOKEN" in out.stderr and "Traceback" not in out.stderr
