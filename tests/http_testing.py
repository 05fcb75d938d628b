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

# The seed lines that every KB revision explains (see the project brief).
IB_LINE = (
    "cc0af148112143078d5c88b5e68679fd-task0-0:133:202 [0] NCCL INFO NET/IB : Using [0]mlx5_0:1/IB "
    "[1]mlx5_1:1/IB [2]mlx5_2:1/IB [3]mlx5_3:1/IB [RO]; OOB eth0:10.244.174.137<0>"
)
AFFINITY_LINE = "cc0af148112143078d5c88b5e68679fd-task0-0:135:208 [2] NCCL INFO Setting affinity for GPU 2 to ff0000"
CDB_LINE = "[2024-09-10 14:27:19,059] [INFO] [comm.py:637:init_distributed] cdb=None"
FLUSH_LINE = (
    "[2024-09-10 19:43:48,249] [WARNING] [stage3.py:1998:step] 7 pytorch allocator cache flushes since "
    "last step. this happens when there is high memory pressure and is detrimental to performance. if "
    "this is happening frequently consider adjusting settings to reduce memory consumption. If you are "
    "unable to make the cache flushes go away consider adding get_accelerator().empty_cache() calls in "
    "your training loop to ensure that all ranks flush their caches at the same time"
)
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
