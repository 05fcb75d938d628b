"""Test doubles for the chat bots: real servers on 127.0.0.1, fake only in who answers.

``FakeChatApis`` stands in for slack.com/api, Slack's response_url endpoint and open.feishu.cn,
including the two WebSocket endpoints (Slack Socket Mode, Feishu long connection); it records
every request so tests can assert exactly what the bots sent. ``ServerThread`` runs any ASGI
app under uvicorn on a socket bound before start, so there is no port race.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import os
import socket
import threading
import time
from dataclasses import dataclass, field
from typing import Any, Callable
from urllib.parse import parse_qs

import uvicorn
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, PlainTextResponse
from starlette.routing import Route, WebSocketRoute
from starlette.websockets import WebSocket, WebSocketDisconnect

SEED_IB = ("cc0af148112143078d5c88b5e68679fd-task0-0:133:202 [0] NCCL INFO NET/IB : Using [0]mlx5_0:1/IB "
           "[1]mlx5_1:1/IB [2]mlx5_2:1/IB [3]mlx5_3:1/IB [RO]; OOB eth0:10.244.174.137<0>")
SEED_AFFINITY = "cc0af148112143078d5c88b5e68679fd-task0-0:135:208 [2] NCCL INFO Setting affinity for GPU 2 to ff0000"
SEED_CDB = "[2024-09-10 14:27:19,059] [INFO] [comm.py:637:init_distributed] cdb=None"
SEED_FLUSHES = (
    "[2024-09-10 19:43:48,249] [WARNING] [stage3.py:1998:step] 7 pytorch allocator cache flushes since last "
    "step. this happens when there is high memory pressure and is detrimental to performance. if this is "
    "happening frequently consider adjusting settings to reduce memory consumption. If you are unable to make "
    "the cache flushes go away consider adding get_accelerator().empty_cache() calls in your training loop to "
    "ensure that all ranks flush their caches at the same time"
)
UNRELATED = '10.0.0.7 - - [10/Sep/2024:14:27:19 +0000] "GET /favicon.ico HTTP/1.1" 404 153 "-" "Mozilla/5.0"'


@dataclass
class Call:
    method: str
    path: str
    headers: dict[str, str]
    body: bytes
    json: Any = None
    form: dict[str, str] | None = None


class Recorder:
    def __init__(self) -> None:
        self.calls: list[Call] = []
        self._cond = threading.Condition()

    def add(self, call: Call) -> None:
        with self._cond:
            self.calls.append(call)
            self._cond.notify_all()

    def wait_for(self, predicate: Callable[[Call], bool], timeout: float = 60.0) -> Call:
        deadline = time.monotonic() + timeout
        with self._cond:
            while True:
                for call in self.calls:
                    if predicate(call):
                        return call
                left = deadline - time.monotonic()
                if left <= 0:
                    raise AssertionError(f"no matching call within {timeout} s; saw {[c.path for c in self.calls]}")
                self._cond.wait(left)

    def paths(self) -> list[str]:
        with self._cond:
            return [c.path for c in self.calls]


def _parse(call: Call) -> Call:
    ctype = call.headers.get("content-type", "")
    if "json" in ctype and call.body:
        call.json = json.loads(call.body)
    elif "x-www-form-urlencoded" in ctype:
        call.form = {k: v[0] for k, v in parse_qs(call.body.decode()).items()}
    return call


@dataclass
class FakeChatApis:
    """Answers like Slack and Feishu do, records everything, and scripts the WebSockets."""

    recorder: Recorder = field(default_factory=Recorder)
    base_url: str = ""
    slack_channel_errors: dict[str, str] = field(default_factory=dict)
    slack_socket_envelopes: list[dict] = field(default_factory=list)
    feishu_ws_frames: list[bytes] = field(default_factory=list)

    async def _record(self, request: Request) -> Call:
        call = _parse(Call(request.method, request.url.path, dict(request.headers), await request.body()))
        self.recorder.add(call)
        return call

    async def slack_api(self, request: Request) -> JSONResponse:
        call = await self._record(request)
        method = request.path_params["method"]
        args = call.json or call.form or {}
        if method == "auth.test":
            return JSONResponse({"ok": True, "user_id": "UBOT", "bot_id": "BBOT", "team_id": "T1", "user": "explainlog"})
        if method == "apps.connections.open":
            return JSONResponse({"ok": True, "url": self.base_url.replace("http://", "ws://") + "/slack-socket"})
        if method in ("chat.postMessage", "chat.postEphemeral"):
            error = self.slack_channel_errors.get(args.get("channel", ""))
            if error:
                return JSONResponse({"ok": False, "error": error})
            return JSONResponse({"ok": True, "channel": args.get("channel"), "ts": "1726000000.000200"})
        return JSONResponse({"ok": False, "error": "unknown_method"})

    async def response_url(self, request: Request) -> PlainTextResponse:
        await self._record(request)
        return PlainTextResponse("ok")

    async def feishu_token(self, request: Request) -> JSONResponse:
        await self._record(request)
        return JSONResponse({"code": 0, "msg": "ok", "tenant_access_token": "t-fake-tenant", "expire": 7200})

    async def feishu_reply(self, request: Request) -> JSONResponse:
        await self._record(request)
        return JSONResponse({"code": 0, "msg": "success", "data": {"message_id": "om_reply"}})

    async def feishu_ws_endpoint(self, request: Request) -> JSONResponse:
        await self._record(request)
        url = self.base_url.replace("http://", "ws://") + "/feishu-ws?device_id=dev1&service_id=7"
        config = {"ReconnectCount": 0, "ReconnectInterval": 1, "ReconnectNonce": 0, "PingInterval": 120}
        return JSONResponse({"code": 0, "msg": "ok", "data": {"URL": url, "ClientConfig": config}})

    async def slack_socket(self, ws: WebSocket) -> None:
        await ws.accept()
        await ws.send_text(json.dumps({"type": "hello", "num_connections": 1, "debug_info": {"host": "fake"}}))
        for envelope in self.slack_socket_envelopes:
            await ws.send_text(json.dumps(envelope))
        try:
            while True:
                text = await ws.receive_text()
                self.recorder.add(Call("WS", "/slack-socket", {}, text.encode(), json=json.loads(text)))
        except WebSocketDisconnect:
            return

    async def feishu_ws(self, ws: WebSocket) -> None:
        await ws.accept()
        for frame in self.feishu_ws_frames:
            await ws.send_bytes(frame)
        try:
            while True:
                data = await ws.receive_bytes()
                self.recorder.add(Call("WS", "/feishu-ws", {}, data))
        except WebSocketDisconnect:
            return

    def app(self) -> Starlette:
        return Starlette(routes=[
            Route("/api/{method}", self.slack_api, methods=["POST", "GET"]),
            Route("/response/{rid}", self.response_url, methods=["POST"]),
            Route("/open-apis/auth/v3/tenant_access_token/internal", self.feishu_token, methods=["POST"]),
            Route("/open-apis/im/v1/messages/{mid}/reply", self.feishu_reply, methods=["POST"]),
            Route("/callback/ws/endpoint", self.feishu_ws_endpoint, methods=["POST"]),
            WebSocketRoute("/slack-socket", self.slack_socket),
            WebSocketRoute("/feishu-ws", self.feishu_ws),
        ])


class ServerThread:
    """uvicorn serving ``app`` on 127.0.0.1 in a daemon thread; ``url`` is ready on enter."""

    def __init__(self, app) -> None:
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.sock.bind(("127.0.0.1", 0))
        self.port = self.sock.getsockname()[1]
        self.url = f"http://127.0.0.1:{self.port}"
        config = uvicorn.Config(app, log_level="warning", lifespan="off")
        self.server = uvicorn.Server(config)
        self.thread = threading.Thread(target=self.server.run, kwargs={"sockets": [self.sock]}, daemon=True)

    def __enter__(self) -> "ServerThread":
        self.thread.start()
        deadline = time.monotonic() + 20
        while not self.server.started:
            if time.monotonic() > deadline or not self.thread.is_alive():
                raise RuntimeError("uvicorn did not start")
            time.sleep(0.02)
        return self

    def __exit__(self, *exc: object) -> None:
        self.server.should_exit = True
        self.thread.join(10)
        self.sock.close()


class CountingExplainer:
    """The real explainer, counting calls: "no work done" means this stays at zero."""

    def __init__(self, explainer) -> None:
        self._explainer = explainer
        self.calls = 0
        # Cleared by a test to hold every explanation until it is set again: "acknowledged
        # before the work is done" is then a fact, not a time limit.
        self.gate = threading.Event()
        self.gate.set()

    def explain_many(self, lines, semantic: bool = True):
        self.calls += 1
        if not self.gate.wait(120):
            raise AssertionError("the test never released the explainer")
        return self._explainer.explain_many(lines, semantic)

    def __getattr__(self, name: str):
        return getattr(self._explainer, name)


def slack_headers(secret: str, body: bytes, timestamp: int | None = None, content_type: str = "application/x-www-form-urlencoded") -> dict[str, str]:
    """What Slack sends: v0 HMAC-SHA256 over ``v0:{ts}:{body}``."""
    ts = str(int(time.time()) if timestamp is None else timestamp)
    digest = hmac.new(secret.encode(), b"v0:" + ts.encode() + b":" + body, hashlib.sha256).hexdigest()
    return {"X-Slack-Request-Timestamp": ts, "X-Slack-Signature": "v0=" + digest, "Content-Type": content_type}


def feishu_encrypt(encrypt_key: str, payload: dict) -> bytes:
    """Feishu's body encryption: AES-256-CBC, key sha256(encrypt_key), iv prepended, base64."""
    from Crypto.Cipher import AES

    plain = json.dumps(payload, ensure_ascii=False).encode()
    pad = 16 - len(plain) % 16
    iv = os.urandom(16)
    cipher = AES.new(hashlib.sha256(encrypt_key.encode()).digest(), AES.MODE_CBC, iv)
    encrypted = base64.b64encode(iv + cipher.encrypt(plain + bytes([pad]) * pad)).decode()
    return json.dumps({"encrypt": encrypted}).encode()


def feishu_headers(encrypt_key: str, body: bytes, timestamp: int | None = None, nonce: str = "n0nce") -> dict[str, str]:
    ts = str(int(time.time()) if timestamp is None else timestamp)
    signature = hashlib.sha256((ts + nonce + encrypt_key).encode() + body).hexdigest()
    return {"X-Lark-Request-Timestamp": ts, "X-Lark-Request-Nonce": nonce, "X-Lark-Signature": signature,
            "Content-Type": "application/json"}


def post(url: str, body: bytes, headers: dict[str, str] | None = None, timeout: float = 30) -> tuple[int, bytes, float]:
    """POST and return (status, body, seconds taken); HTTP errors are results, not exceptions."""
    import urllib.error
    import urllib.request

    request = urllib.request.Request(url, data=body, headers=headers or {}, method="POST")
    start = time.monotonic()
    try:
        with urllib.request.urlopen(request, timeout=timeout) as response:
            return response.status, response.read(), time.monotonic() - start
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read(), time.monotonic() - start


def slack_texts(blocks: list[dict]) -> list[str]:
    """Every text a Slack reply shows, block by block (section text, then context elements)."""
    out = []
    for block in blocks:
        if "text" in block:
            out.append(block["text"]["text"])
        out += [e["text"] for e in block.get("elements", []) if isinstance(e.get("text"), str)]
    return out
