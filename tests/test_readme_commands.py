"""Every command in README's ```bash blocks runs as written, or is listed here with the reason
it cannot run in a test (it installs, needs a container engine, a chat workspace or a Dask
cluster). A command added to README is run by this test until someone lists it."""

from __future__ import annotations

import gzip
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from seed_lines import AFFINITY_LINE

REPO = Path(__file__).resolve().parent.parent
SEED = REPO / "samples" / "seed_training.log"

NOT_RUN = {
    "make run": "installs (CI runs `make test`, which installs the same way)",
    "make test": "is the test suite itself",
    "pip install .": "installs (tests/test_wheel.py installs the built wheel into a fresh venv)",
    "pip install '.[serve]'": "installs",
    "docker build": "needs a container engine (none runs here, see README 'Container')",
    "export ": "sets chat credentials for the next command",
    "explainlog chat ": "needs a Slack or Feishu workspace (tests/test_chat_*.py drive the bots)",
    "--dask tcp://": "needs a Dask scheduler (tests/test_batch_dask.py runs a local cluster)",
    "# ": "a comment",
    "explainlog mcp": "serves MCP over stdio until its client leaves (tests/test_ask.py drives it with the SDK's client)",
}


def readme_commands() -> list[str]:
    text = (REPO / "README.md").read_text(encoding="utf-8")
    commands = []
    for block in re.findall(r"```bash\n(.*?)```", text, flags=re.S):
        commands += [line.strip() for line in block.splitlines() if line.strip()]
    return commands


def _skipped(command: str) -> bool:
    return any(command.startswith(key) or (key.startswith(("explainlog", "--")) and key in command) for key in NOT_RUN)


def _listening(port: int, tries: int = 300) -> bool:
    for _ in range(tries):
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.5).close()
            return True
        except OSError:
            time.sleep(0.2)
    return False


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def workdir(tmp_path_factory, index_dir, kb_dir):
    """A directory with the files README's commands name, and .venv/tests pointing at ours."""
    work = tmp_path_factory.mktemp("readme")
    bin_dir = work / ".venv" / "bin"
    bin_dir.mkdir(parents=True)
    (bin_dir / "explainlog").symlink_to(Path(sys.executable).parent / "explainlog")
    (work / "tests").symlink_to(REPO / "tests")
    shutil.copy(SEED, work / "train.log")
    (work / "rank1.log.gz").write_bytes(gzip.compress(SEED.read_bytes()))
    (work / "rank0.log.gz").write_bytes(gzip.compress(SEED.read_bytes()))
    (work / "logs").mkdir()
    shutil.copy(SEED, work / "logs" / "a.log")
    (work / "logs" / "b.gz").write_bytes(gzip.compress(SEED.read_bytes()))
    (work / "screen.txt").write_text(AFFINITY_LINE + "\n", encoding="utf-8")
    (work / "train.log.gz").write_bytes(gzip.compress(SEED.read_bytes()))
    try:
        import zstandard
    except ImportError:  # the core job does not run this file; the full install has zstandard
        zstandard = None
    if zstandard is not None:
        (work / "big.log.zst").write_bytes(zstandard.ZstdCompressor().compress(SEED.read_bytes()))
    shutil.copytree(index_dir, work / "index")  # `index build` rebuilds this copy, not the session's
    env = dict(os.environ, EXPLAINLOG_INDEX=str(work / "index"), EXPLAINLOG_KB=str(kb_dir),
               EXPLAINLOG_HOME=str(work / "home"), NO_COLOR="1")
    yield work, env
    shutil.rmtree(work, ignore_errors=True)  # a copy of the index, rebuilt: ~0.3 GB


def test_the_readme_has_the_commands_this_test_knows(workdir):
    commands = readme_commands()
    assert len(commands) > 20
    runnable = [c for c in commands if not _skipped(c)]
    assert any("explainlog triage" in c for c in runnable) and any("curl" in c for c in runnable)


def test_every_readme_command_runs_as_written(workdir):
    work, env = workdir
    commands = [c for c in readme_commands() if not _skipped(c)]
    port = 8000
    server = None
    failures = []
    try:
        for command in commands:
            if "explainlog serve" in command:
                if server is None and "--host 0.0.0.0" not in command:
                    server = subprocess.Popen(command, shell=True, cwd=work, env=env, start_new_session=True,
                                              stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
                    if not _listening(port):
                        failures.append((command, "the server never listened on 8000"))
                elif "--host 0.0.0.0" in command:
                    # Binds every interface: run it on a free port and stop it once it serves.
                    other = _free_port()
                    proc = subprocess.Popen(command.replace("--port 8080", f"--port {other}"), shell=True, cwd=work,
                                            env=env, start_new_session=True, stdout=subprocess.DEVNULL,
                                            stderr=subprocess.PIPE)
                    try:
                        if not _listening(other):
                            failures.append((command, "never listened"))
                    finally:
                        os.killpg(proc.pid, signal.SIGTERM)
                        proc.wait(timeout=60)
                continue
            # building the semantic index embeds every text of the KB (75,000 and growing): ~5 min
            # on an idle 2-core machine, over 10 under load; this test checks that it runs, not its speed
            limit = 1800 if "index build" in command else 600
            done = subprocess.run(command, shell=True, cwd=work, env=env, capture_output=True, timeout=limit,
                                  executable="/bin/bash")
            ok = done.returncode == 0 or ("--fail-on error ||" in command and b"the log has errors" in done.stdout)
            if not ok:
                failures.append((command, done.returncode, done.stderr.decode(errors="replace")[-500:]))
            elif command.startswith("curl"):
                target = command.split(">", 1)[1].strip() if ">" in command else None
                answer = (work / target).read_bytes() if target else done.stdout
                if not answer.strip() or b'"error"' in answer[:200]:
                    failures.append((command, "no answer", answer[:200]))
    finally:
        if server is not None:
            os.killpg(server.pid, signal.SIGTERM)
            server.wait(timeout=60)
    assert failures == []
