"""Run the real service under uvicorn on a free 127.0.0.1 port, in a thread of the test process.

Tests talk HTTP to it like any client. The app can wrap the session's explainer, so each
server starts in well under a second instead of loading a model again.
"""

from __future__ import annotations

import socket
import threading
import time
from contextlib import contextmanager
from typing import Iterator

import uvicorn

from service.explainer import Explainer
from service.http.app import create_app
from service.http.settings import Settings

UNRELATED_LINE = '10.0.0.7 - - [10/Sep/2024:14:27:19 +0000] "GET /favicon.ico HTTP/1.1" 404 153 "-" "Mozilla/5.0"'


class RunningServer:
    def __init__(self, server: uvicorn.Server, thread: threading.Thread, port: int) -> None:
        self.server = server
        self.thread = thread
        self.port = port
        self.url = f"http://127.0.0.1:{port}"


@contextmanager
def serve(explainer: Explainer, settings: Settings | None = None, wait_ready: bool = True) -> Iterator[RunningServer]:
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    app = create_app(explainer, settings)
    config = uvicorn.Config(app, log_level="warning", access_log=False, lifespan="on")
    server = uvicorn.Server(config)
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    deadline = time.monotonic() + 60
    while not server.started:
        if not thread.is_alive() or time.monotonic() > deadline:
            raise RuntimeError("uvicorn did not start")
        time.sleep(0.01)
    running = RunningServer(server, thread, port)
    if wait_ready:
        while not app.state.service.readiness.loaded and time.monotonic() < deadline:
            time.sleep(0.02)
    try:
        yield running
    finally:
        server.should_exit = True
        thread.join(timeout=10)
        sock.close()
