"""The container recipe, checked without a container engine: hadolint passes, every COPY
source exists and survives .dockerignore, and the CMD and HEALTHCHECK name things that exist."""

from __future__ import annotations

import json
import re
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

from service.cli import build_parser
from service.http.app import create_app

REPO = Path(__file__).resolve().parent.parent
DOCKERFILE = REPO / "Dockerfile"


def _instructions() -> list[tuple[str, str]]:
    """(INSTRUCTION, arguments) with line continuations joined and comments dropped."""
    text = re.sub(r"\\\n", " ", DOCKERFILE.read_text())
    out = []
    for line in text.splitlines():
        line = line.strip()
        if line and not line.startswith("#"):
            keyword, _, rest = line.partition(" ")
            out.append((keyword.upper(), rest.strip()))
    return out


def _ignore_rules() -> list[tuple[bool, re.Pattern[str]]]:
    """.dockerignore as (negated, regex); Go filepath.Match semantics: '*' stays within a
    path segment, '**' crosses them."""
    rules = []
    for raw in (REPO / ".dockerignore").read_text().splitlines():
        raw = raw.strip()
        if not raw or raw.startswith("#"):
            continue
        negated = raw.startswith("!")
        pattern = raw.lstrip("!").strip("/")
        regex = re.escape(pattern).replace(r"\*\*/", "(?:.*/)?").replace(r"\*\*", ".*").replace(r"\*", "[^/]*").replace(r"\?", "[^/]")
        rules.append((negated, re.compile(regex + r"\Z")))
    return rules


def _sent_to_builder(path: str, rules) -> bool:
    """Docker's rule: the last pattern matching the path or one of its parents decides."""
    parts = path.split("/")
    prefixes = ["/".join(parts[: i + 1]) for i in range(len(parts))]
    included = True
    for negated, regex in rules:
        if any(regex.match(prefix) for prefix in prefixes):
            included = negated
    return included


def _tracked(path: str) -> list[str]:
    result = subprocess.run(["git", "ls-files", "--", path], cwd=REPO, capture_output=True, text=True, check=True)
    return result.stdout.split()


def test_hadolint_passes():
    hadolint = shutil.which("hadolint") or str(Path(sys.executable).parent / "hadolint")
    result = subprocess.run([hadolint, "--no-color", str(DOCKERFILE)], capture_output=True, text=True)
    assert result.returncode == 0, result.stdout + result.stderr


def test_every_copy_source_exists_and_reaches_the_builder():
    rules = _ignore_rules()
    sources = []
    for keyword, args in _instructions():
        if keyword in ("COPY", "ADD") and "--from=" not in args:
            words = [w for w in shlex.split(args) if not w.startswith("--")]
            sources += words[:-1]
    assert sources, "the Dockerfile copies nothing from the context"
    for source in sources:
        path = REPO / source
        assert path.exists(), f"COPY source {source} does not exist"
        files = _tracked(source)
        assert files, f"COPY source {source} has no tracked files"
        excluded = [f for f in files if not _sent_to_builder(f, rules) and "__pycache__" not in f]
        assert excluded == [], f".dockerignore drops files that COPY {source} needs: {excluded[:5]}"
    assert not _sent_to_builder(".venv/bin/python", rules) and not _sent_to_builder(".git/HEAD", rules)
    assert not _sent_to_builder("test-artifacts/http-page.png", rules)


def test_image_runs_as_numeric_non_root_with_port_and_healthcheck():
    instructions = _instructions()
    user = [args for keyword, args in instructions if keyword == "USER"][-1]
    assert re.fullmatch(r"[1-9]\d*(:\d+)?", user), user
    exposed = [args for keyword, args in instructions if keyword == "EXPOSE"]
    env = " ".join(args for keyword, args in instructions if keyword == "ENV")
    assert exposed == ["8000"] and "EXPLAINLOG_PORT=8000" in env and "EXPLAINLOG_HOST=0.0.0.0" in env
    healthcheck = [args for keyword, args in instructions if keyword == "HEALTHCHECK"]
    assert len(healthcheck) == 1 and "/readyz" in healthcheck[0]
    run = " ".join(args for keyword, args in instructions if keyword == "RUN")
    # The core install and the serve extra: no torch, the index built into the image.
    assert "torch" not in run and "/src[serve]" in run and "index build" in run and "kb check" in run


def test_cmd_is_a_valid_explainlog_command(explainer):
    cmd = [args for keyword, args in _instructions() if keyword == "CMD"][-1]
    argv = json.loads(cmd)  # exec form
    assert argv[0] == "explainlog"
    args = build_parser().parse_args(argv[1:])
    assert args.command == "serve" and args.index_policy == "refuse"
    paths = create_app(explainer).openapi()["paths"]
    assert "/readyz" in paths and "/healthz" in paths
