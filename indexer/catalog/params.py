"""The environment variables the supported software reads, extracted from its code at each tag.

``explainlog catalog params --source nccl=DIR ...`` writes ``kb/params/<component>.jsonl``: one
record per variable, with where it is read (file, line, function at the newest tag that reads
it), how (``NCCL_PARAM`` int64 with its default, a ``getenv`` string, ``os.environ``), the
tags that read it, and, once written, a short bilingual text of what it changes. ``explainlog
ask`` answers "what does NCCL_IB_GID_INDEX do" from these records; ``kb check`` validates them.

What is read:
- NCCL (every release tag from v2.4) and RCCL (rocm-5.0.0 on): ``NCCL_PARAM(Name, "ENV",
  default)`` (the variable is ``NCCL_ENV``), ``RCCL_PARAM`` (``RCCL_ENV``), and direct reads
  ``ncclGetEnv("NCCL_X")`` / ``getenv("NCCL_X")``.
- PyTorch (the source archives of the catalogue build): the ``TORCH_NCCL_*`` style lists of
  ProcessGroupNCCL (``{"TORCH_NCCL_BLOCKING_WAIT", "NCCL_BLOCKING_WAIT"}``: the first name is the
  variable, the others its deprecated aliases), ``getenv``/``getCvar*`` reads in c10d, and
  ``os.environ``/``os.getenv`` reads in ``torch/distributed``.
- Python projects read from git at their tags (DeepSpeed, accelerate, Megatron-LM, mmengine,
  xtuner): ``os.environ.get("X")``, ``os.environ["X"]``, ``os.getenv("X")``.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Iterable

from indexer.catalog.build import version_key
from indexer.catalog.sources import GitRepo, Tree, directory_tree

NCCL_PARAM = re.compile(r'\b(NCCL|RCCL)_PARAM\(\s*(\w+)\s*,\s*"(\w+)"\s*,\s*([^;]+?)\)\s*;')
# a string literal that is exactly a variable's name: what getenv, ncclGetEnv, ncclGetLevel
# ("NCCL_P2P_DISABLE", "NCCL_P2P_LEVEL") and the torch cvar lists are given
C_NAME = re.compile(r'(\b(?:ncclGetEnv|getenv|std::getenv|c10::utils::get_env)\(\s*)?"([A-Z][A-Z0-9]*_[A-Z0-9_]*[A-Z0-9])"')
C_PREFIXES = {"nccl": ("NCCL_", "RCCL_"), "rccl": ("NCCL_", "RCCL_"),
              "torch": ("TORCH_", "TORCHELASTIC_", "NCCL_", "GLOO_", "MASTER_", "WORLD_SIZE", "RANK", "LOCAL_")}
TORCH_CVAR_LIST = re.compile(r'static\s+std::vector<std::string>\s+(\w+)\s*=\s*\{([^}]*)\}', re.S)
PY_ENV = re.compile(r'\bos\.(?:environ\.get|getenv|environ\.setdefault)\(\s*[rf]?["\']([A-Z][A-Z0-9_]{2,})["\']'
                    r'|\bos\.environ\[\s*["\']([A-Z][A-Z0-9_]{2,})["\']\s*\]'
                    r'|\b(?:parse_flag_from_env|str_to_bool|get_int_from_env|parse_choice_from_env)\(\s*["\']([A-Z][A-Z0-9_]{2,})["\']')
# variables of the platform, not of the project: answered by concepts if at all
NOT_OURS = re.compile(r"^(?:PATH|HOME|USER|PWD|SHELL|TERM|LANG|HOSTNAME|TMPDIR|LD_LIBRARY_PATH|PYTHONPATH|"
                      r"CUDA_HOME|CUDA_PATH|ROCM_PATH|HIP_PATH|CONDA_PREFIX|VIRTUAL_ENV|HF_HOME|TRANSFORMERS_CACHE)$")


@dataclass
class Read:
    name: str
    file: str
    line: int
    function: str
    kind: str            # "NCCL_PARAM int64", "getenv string", "os.environ"
    default: str | None
    aliases: tuple[str, ...] = ()


@dataclass
class Merged:
    first: Read
    versions: list[str] = field(default_factory=list)
    files: set = field(default_factory=set)
    default: str | None = None  # from the newest NCCL_PARAM declaration seen


def c_reads(path: str, text: str, project: str) -> list[Read]:
    out: list[Read] = []
    for m in NCCL_PARAM.finditer(text):
        prefix, _name, env, default = m.groups()
        line = text.count("\n", 0, m.start()) + 1
        out.append(Read(f"{prefix}_{env}", path, line, "", f"{prefix}_PARAM int64", default.strip()))
    for m in C_NAME.finditer(text):
        name = m.group(2)
        if not name.startswith(C_PREFIXES.get(project, ("",))):
            continue
        line = text.count("\n", 0, m.start()) + 1
        out.append(Read(name, path, line, "", "getenv string" if m.group(1) else "read by name", None))
    if project == "torch":
        for m in TORCH_CVAR_LIST.finditer(text):
            names = re.findall(r'"([A-Z][A-Z0-9_]+)"', m.group(2))
            if names:
                line = text.count("\n", 0, m.start()) + 1
                out.append(Read(names[0], path, line, "", "getCvar (first of the names)", None, tuple(names[1:])))
    return out


def py_reads(path: str, text: str) -> list[Read]:
    out = []
    for m in PY_ENV.finditer(text):
        name = next(g for g in m.groups() if g)
        line = text.count("\n", 0, m.start()) + 1
        out.append(Read(name, path, line, "", "os.environ", None))
    return out


def _function_names(text: str, is_python: bool) -> Callable[[int], str]:
    """Line -> enclosing function name, by indentation (Python) or brace depth (C)."""
    lines = text.split("\n")
    owner = [""] * (len(lines) + 2)
    if is_python:
        stack: list[tuple[int, str]] = []
        for n, raw in enumerate(lines, 1):
            stripped = raw.lstrip()
            if stripped:
                indent = len(raw) - len(stripped)
                while stack and indent <= stack[-1][0]:
                    stack.pop()
                m = re.match(r"(?:async\s+)?def\s+(\w+)", stripped)
                if m:
                    stack.append((indent, m.group(1)))
            owner[n] = stack[-1][1] if stack else ""
    else:
        depth, current = 0, ""
        sig = re.compile(r"^[\w:<>,*&\s~]*?\b([A-Za-z_][\w:~]*)\s*\([^;]*\)\s*(?:const\s*)?(?:noexcept\s*)?\{?\s*$")
        for n, raw in enumerate(lines, 1):
            if depth == 0:
                m = sig.match(raw)
                if m and m.group(1) not in ("if", "for", "while", "switch", "return"):
                    current = m.group(1)
            depth += raw.count("{") - raw.count("}")
            depth = max(depth, 0)
            owner[n] = current if depth > 0 else ""
    return lambda line: owner[line] if 0 < line < len(owner) else ""


def _rank(r: Read) -> int:
    return 2 if "PARAM" in r.kind or "getCvar" in r.kind else 1 if r.kind in ("getenv string", "os.environ") else 0


def collect_reads(trees: Iterable[Tree], project: str) -> dict[str, Merged]:
    merged: dict[str, Merged] = {}
    parsed: dict[str, list[Read]] = {}
    for tree in trees:
        seen: set[str] = set()
        for f in tree.files:
            if f.blob not in parsed:
                text = f.read()
                is_py = f.path.endswith(".py")
                reads = py_reads(f.path, text) if is_py else c_reads(f.path, text, project)
                names = _function_names(text, is_py)
                for r in reads:
                    r.function = names(r.line)
                parsed[f.blob] = reads
            for r in parsed[f.blob]:
                if NOT_OURS.match(r.name) or r.name.endswith("_"):
                    continue
                m = merged.get(r.name)
                if m is None:
                    m = merged[r.name] = Merged(r)
                # the newest tag's place wins; within a tag a typed declaration (NCCL_PARAM)
                # beats a getenv, which beats a bare name
                if tree.version not in m.versions:
                    m.versions.append(tree.version)
                    m.first = r
                elif _rank(r) > _rank(m.first):
                    m.first = r
                m.files.add(r.file)
                if r.default is not None:
                    m.default = r.default
                seen.add(r.name)
    return merged


def to_records(merged: dict[str, Merged], component: str | Callable[[str], str], repo: str,
               texts: dict[str, dict]) -> list[dict]:
    rows = []
    for name, m in sorted(merged.items()):
        comp = component(name) if callable(component) else component
        row = {
            "name": name,
            "component": comp,
            "repo": repo,
            "file": m.first.file,
            "line": m.first.line,
            "function": m.first.function,
            "kind": m.first.kind,
            "default": m.first.default if m.first.default is not None else m.default,
            "versions": sorted(m.versions, key=version_key),
        }
        if m.first.aliases:
            row["aliases"] = list(m.first.aliases)
        others = sorted(m.files - {m.first.file})
        if others:
            row["also_in"] = others[:8]
        text = texts.get(name)
        if text:
            row.update({k: text[k] for k in ("title", "text", "asked") if k in text})
        rows.append(row)
    return rows


def write_params(path: Path, rows: list[dict]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(r, ensure_ascii=False, sort_keys=True) + "\n" for r in rows), encoding="utf-8")


def read_params(folder: Path) -> list[dict]:
    rows = []
    for path in sorted(folder.glob("*.jsonl")):
        for line in path.read_text(encoding="utf-8").splitlines():
            if line.strip():
                rows.append(json.loads(line))
    return rows


def _existing_texts(folder: Path) -> dict[str, dict]:
    out = {}
    for row in read_params(folder) if folder.exists() else []:
        if row.get("title"):
            out[row["name"]] = {k: row[k] for k in ("title", "text", "asked") if k in row}
    return out


def git_trees(git_dir: str, select: Callable[[list[str]], list[str]], under: tuple[str, ...],
              suffixes: tuple[str, ...], skip: re.Pattern | None = None) -> list[Tree]:
    repo = GitRepo(git_dir)
    trees = []
    for tag in sorted(select(repo.tags()), key=version_key):
        tree = repo.tree(tag, under, suffixes)
        files = tuple(f for f in tree.files if not (skip and skip.search(f.path)))
        trees.append(Tree(tree.version, tree.origin, files))
    return trees


def build_params(out_dir: Path, sources: dict[str, str]) -> dict[str, int]:
    """Regenerate ``kb/params/*.jsonl`` from the sources given; texts already written stay."""
    from indexer.catalog.spec import PY_PROJECTS, nccl_tags, rccl_label, rccl_tags

    texts = _existing_texts(out_dir)
    counts: dict[str, int] = {}
    tests = re.compile(r"(?:^|/)tests?/|/test_[^/]*\.py$|(?:^|/)examples?/|/benchmarks?/|/docs?/")
    if "nccl" in sources:
        merged = collect_reads(git_trees(sources["nccl"], nccl_tags, ("src",), (".cc", ".cu", ".h", ".c")), "nccl")
        rows = to_records(merged, "nccl", "NVIDIA/nccl", texts)
        write_params(out_dir / "nccl.jsonl", rows)
        counts["nccl"] = len(rows)
    if "rccl" in sources:
        nccl_names = {r["name"] for r in read_params(out_dir) if r["component"] == "nccl"}
        trees = [Tree(rccl_label(t.version), t.origin, t.files)
                 for t in git_trees(sources["rccl"], rccl_tags, ("src",), (".cc", ".cu", ".h", ".c", ".cpp"))]
        merged = collect_reads(trees, "rccl")
        # a variable NCCL also reads is answered by the NCCL record; RCCL keeps its own
        merged = {k: v for k, v in merged.items() if k not in nccl_names}
        rows = to_records(merged, "rccl", "ROCm/rccl", texts)
        write_params(out_dir / "rccl.jsonl", rows)
        counts["rccl"] = len(rows)
    if "torch-src" in sources:
        trees = []
        for d in sorted((p for p in Path(sources["torch-src"]).iterdir() if p.is_dir()), key=lambda p: version_key(p.name)):
            trees.append(directory_tree("v" + d.name, d, ("torch/csrc/distributed/c10d", "torch/distributed"),
                                        (".cpp", ".hpp", ".h", ".py"), f"pytorch {d.name} source archive"))
        trees = [Tree(t.version, t.origin, tuple(f for f in t.files if not tests.search(f.path))) for t in trees]
        merged = collect_reads(trees, "torch")
        keep = re.compile(r"^(?:TORCH|TORCHELASTIC|NCCL|MASTER|WORLD|RANK|LOCAL|GROUP|ROLE|GLOO|USE_LIBUV|OMP_NUM_THREADS"
                          r"|NVSHMEM|CUDA_DEVICE_MAX)")
        nccl_reads = {r["name"] for r in read_params(out_dir) if r["component"] in ("nccl", "rccl")}
        # NCCL's own variables are answered by NCCL's records; torch keeps the ones only it
        # reads (NCCL_BLOCKING_WAIT, NCCL_ASYNC_ERROR_HANDLING: its older names)
        merged = {k: v for k, v in merged.items() if keep.match(k) and k not in nccl_reads}
        comp = lambda name: "torch_elastic" if name.startswith("TORCHELASTIC") or "elastic/" in merged[name].first.file \
            else "torch_distributed"
        rows = to_records(merged, comp, "pytorch/pytorch", texts)
        write_params(out_dir / "torch.jsonl", rows)
        counts["torch"] = len(rows)
    for name in ("deepspeed", "accelerate", "megatron", "mmengine", "xtuner"):
        if name in sources:
            project = PY_PROJECTS[name]
            trees = git_trees(sources[name], project.tags, project.under, (".py",), project.skip)
            merged = collect_reads(trees, name)
            rows = to_records(merged, project.component, project.repo, texts)
            write_params(out_dir / f"{name}.jsonl", rows)
            counts[name] = len(rows)
    return counts


def merge_texts(folder: Path, files: list[Path]) -> tuple[int, list[str]]:
    """Written texts (JSONL: name, title {en, zh}, text {en, zh}) into the records, by name."""
    from indexer.schema import Bilingual

    written: dict[str, dict] = {}
    problems: list[str] = []
    for path in files:
        for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            if not line.strip():
                continue
            try:
                row = json.loads(line)
                Bilingual.model_validate(row["title"])
                Bilingual.model_validate(row["text"])
            except Exception as exc:  # a bad line is reported, never half-merged
                problems.append(f"{path}:{n}: {exc}")
                continue
            written[row["name"]] = row
    merged = 0
    for path in sorted(folder.glob("*.jsonl")):
        rows = [json.loads(l) for l in path.read_text(encoding="utf-8").splitlines() if l.strip()]
        for row in rows:
            text = written.get(row["name"])
            if text:
                row["title"], row["text"] = text["title"], text["text"]
                if text.get("asked"):
                    row["asked"] = text["asked"]
                merged += 1
        write_params(path, rows)
    return merged, problems
