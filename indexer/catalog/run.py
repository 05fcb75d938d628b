"""``explainlog catalog build``: regenerate ``kb/catalog/`` from local source copies.

Sources (``--source NAME=PATH``):
  nccl          a git directory of NVIDIA/nccl with its tags
  rccl          a git directory of ROCm/rccl with its tags
  torch-wheels  a directory with one sub-directory per PyTorch release (``2.6.0/``), each holding
                the unpacked ``torch/distributed/`` and ``torch/utils/`` of that release's wheel
                and ``strings.txt``, the printable strings of its native libraries
                (``strings -n 4 lib*.so``); given without torch-src, the Python files alone
                add the formats not yet listed and extend the span of the records they share
                (how releases older than those read before, 1.9.0 ... 1.12.1, are added)
  torch-src     a directory with one sub-directory per release (``2.6.0/``) holding an unpacked
                PyTorch source archive (``torch/csrc/distributed/c10d``, ``c10/cuda`` ...)
  torch-strings a directory with one sub-directory per release (``1.12.1/strings.txt``), the
                printable strings of its native libraries alone: every PyTorch C++ record
                gains the releases that hold its longest literal (how 1.9.0 ... 1.12.1, older
                than the oldest source archive, are added)
  slurm         a git directory of SchedMD/slurm with its tags
  clr           a git directory of ROCm/clr (the HIP runtime) with its tags
  rdma-core     a git directory of linux-rdma/rdma-core with its tags
  ucx           a git directory of openucx/ucx with its tags (filed under infiniband)
  libfabric     a git directory of ofiwg/libfabric with its tags: FI_WARN/FI_INFO and the providers'
                wrappers in the core, EFA, verbs, rxm/rxd, TCP, shm and CXI (filed under infiniband)
  ompi          a git directory of open-mpi/ompi with its tags: the help texts Open MPI
                prints (btl/openib, pml/ucx, mpirun ...), filed under infiniband
  nccl-tests    a git directory of NVIDIA/nccl-tests with its tags (filed under other)
  aws-ofi-nccl  a git directory of aws/aws-ofi-nccl with its tags (NCCL's libfabric/EFA net
                plugin; its lines print through NCCL's logger, filed under nccl)
  nccl-rdma-sharp-plugins
                a git directory of Mellanox/nccl-rdma-sharp-plugins (NCCL's UCX, UCX-RMA,
                IB and SHARP plugins, HPC-X's libnccl-net.so; filed under nccl): its tags and
                its default branch, read as a dated version (the tags stop in 2020)
  gloo          a git directory of facebookincubator/gloo (torch.distributed's CPU backend, filed
                under torch_distributed): no tags, read at the last commit of each year from
                2018 and at its newest commit, as dated versions
  torchelastic  a git directory of pytorch/elastic (torchelastic 0.2, the launcher and agent
                before they moved into PyTorch 1.9; filed under torch_elastic)
  rocr, rocminfo
                git directories of ROCm/ROCR-Runtime (the HSA runtime) and ROCm/rocminfo
  rocm-smi      git directory of ROCm/rocm_smi_lib (rocm-smi's python_smi_tools/rocm_smi.py)
  deepspeed, megatron, accelerate, mmengine, xtuner
                git directories of those projects with their tags (``indexer.catalog.spec``
                says which tags and paths are read, and which helper functions log)
A source left out keeps the records of its components as they are.
"""

from __future__ import annotations

import json
from pathlib import Path

from indexer.catalog.build import collect, load_texts, to_record, version_key, write_records
from indexer.catalog.extract import (
    clr_file, gloo_file, linux_file, nccl_file, nccl_tests_file, rccl_file, nvidia_file, ofi_nccl_file, ompi_file, rdma_file, rocr_file,
    slurm_file, torch_cpp_file, ucx_release_file, libfabric_file,
)
from indexer.catalog.python_src import python_extractor, python_file, rocm_smi_file
from indexer.catalog.sources import GitRepo, Tree, directory_tree
from indexer.catalog.spec import (
    CLR_SKIP, CLR_UNDER, ROCR_SKIP, ROCR_UNDER, NCCL_SUFFIXES, RDMA_SKIP, RDMA_UNDER, rdma_tags, PY_PROJECTS, SLURM_SKIP, SLURM_UNDER, clr_tags, TORCH_CPP_SKIP, TORCH_PY_KEEP, TORCH_PY_UNDER, PyProject,
    nccl_tags, rccl_label, rccl_tags, slurm_tags, torch_component, WHEEL_PROJECTS, NVIDIA_SKIP, NVIDIA_UNDER, nvidia_tags, LINUX_PARTS, LINUX_SKIP,
    UCX_SKIP, UCX_UNDER, ucx_tags, NCCL_TESTS_SKIP, NCCL_TESTS_UNDER, nccl_tests_tags, OFI_NCCL_SKIP, OFI_NCCL_UNDER,
    ofi_nccl_tags, GLOO_FIRST_YEAR, GLOO_SKIP, GLOO_UNDER, SHARP_PLUGIN_SKIP, SHARP_PLUGIN_UNDER, sharp_plugin_tags,
    OMPI_SKIP, OMPI_SUFFIXES, OMPI_UNDER, ompi_tags, LIBFABRIC_SKIP, LIBFABRIC_UNDER, libfabric_tags,
)

MANIFEST = "manifest.json"


def _texts(out_dir: Path) -> dict[str, dict]:
    texts: dict[str, dict] = {}
    for path in sorted(out_dir.glob("*.jsonl")):
        texts.update(load_texts(path))
    return texts


def _git_trees(git_dir: str, select) -> list[Tree]:
    repo = GitRepo(git_dir)
    return [repo.tree(tag, ("src",), NCCL_SUFFIXES) for tag in select(repo.tags())]


def _dated_head(repo: GitRepo, name: str, under, suffixes) -> Tree | None:
    """The default branch read as the dated version ``<name>-YYYY-MM-DD`` (its last commit's
    date), for code newer than a project's last tag."""
    date = repo._git("log", "-1", "--format=%cs", "HEAD").strip()
    if not date:
        return None
    tree = repo.tree("HEAD", under, suffixes)
    return Tree(f"{name}-{date}", tree.origin, tree.files)


def _yearly_trees(repo: GitRepo, name: str, under, suffixes, first_year: int) -> list[Tree]:
    """A project without release tags, read at the last commit of each year on its default
    branch from ``first_year`` on and at its newest commit, each as ``<name>-YYYY-MM-DD``."""
    rows = [r.split() for r in repo._git("log", "--first-parent", "--format=%H %cs", "HEAD").splitlines() if r]
    picks: dict[str, str] = {}
    for commit, date in reversed(rows):  # oldest first: the last one of a year wins
        if int(date[:4]) >= first_year:
            picks[date[:4]] = commit
    if rows:
        picks["head"] = rows[0][0]
    dates = {c: d for c, d in rows}
    trees = []
    for commit in dict.fromkeys(picks.values()):
        tree = repo.tree(commit, under, suffixes)
        trees.append(Tree(f"{name}-{dates[commit]}", tree.origin, tree.files))
    return trees


def build_nccl_rccl(sources: dict[str, str], texts: dict) -> tuple[dict[str, list[dict]], list[dict]]:
    nccl_trees = _git_trees(sources["nccl"], nccl_tags)
    rccl_trees = [Tree(rccl_label(t.version), t.origin, t.files) for t in _git_trees(sources["rccl"], rccl_tags)]
    # The newest RCCL code is on its default branch, ahead of the last rocm-X.Y.Z tag: read it as
    # a dated version ("develop-2024-10-24") so messages added since the last tag are known too.
    head = _dated_head(GitRepo(sources["rccl"]), "develop", ("src",), NCCL_SUFFIXES)
    if head is not None:
        rccl_trees.append(head)
    nccl = collect("nccl", "NVIDIA/nccl", nccl_trees, nccl_file)
    rccl = collect("rccl", "ROCm/rccl", rccl_trees, rccl_file)
    nccl_records = []
    for key, m in nccl.items():
        rec = to_record(m, texts)
        if key in rccl:  # the same message in RCCL: one record, both projects' versions
            rec["other_versions"] = {"ROCm/rccl": rccl[key].versions}
        nccl_records.append(rec)
    rccl_records = [to_record(m, texts) for key, m in rccl.items() if key not in nccl]
    trees = [("NVIDIA/nccl", nccl_trees), ("ROCm/rccl", rccl_trees)]
    manifest = [
        {"repo": repo, "version": t.version, "origin": t.origin, "files": len(t.files)}
        for repo, ts in trees for t in sorted(ts, key=lambda t: version_key(t.version))
    ]
    return {"nccl": nccl_records, "rccl": rccl_records}, manifest


def _probe_hits(records: list[dict], merged_pieces: dict[str, tuple], strings: dict[str, str]) -> dict[str, set[str]]:
    """For each record with a probe (its longest literal, at least 12 characters), the releases
    whose native libraries' strings hold it.

    One RE2 set of all probes scans each release's strings once (a substring test per record
    and release would read the 200 MB of strings a thousand times)."""
    import re2

    from indexer.catalog.formats import re2_escape

    probes: dict[str, list[dict]] = {}
    for rec in records:
        pieces = merged_pieces[rec["id"]]
        literals = sorted((p.strip() for p in pieces if isinstance(p, str)), key=len, reverse=True)
        probe = literals[0] if literals else ""
        if len(probe) >= 12:
            probes.setdefault(probe, []).append(rec)
    if not probes:
        return {}
    order = list(probes)
    options = re2.Options()
    options.max_mem = 1 << 30
    options.log_errors = False
    scan = re2.Set.SearchSet(options)
    for probe in order:
        scan.Add(re2_escape(probe))
    scan.Compile()
    found: dict[str, set[str]] = {probe: set() for probe in order}
    for version, blob in strings.items():
        for hit in scan.Match(blob) or ():
            found[order[hit]].add(version)
    return {rec["id"]: found[probe] for probe, recs in probes.items() for rec in recs}


def _probe_versions(records: list[dict], merged_pieces: dict[str, tuple], strings: dict[str, str]) -> None:
    """Add the releases whose native libraries hold a C++ message's longest literal."""
    hits = _probe_hits(records, merged_pieces, strings)
    for rec in records:
        if rec["id"] in hits:
            rec["versions"] = sorted(set(rec["versions"]) | hits[rec["id"]], key=version_key)
            rec["versions_from"] = "source and library strings"


def _torch_cpp_trees(src: Path) -> list[Tree]:
    trees = []
    for d in sorted((p for p in src.iterdir() if p.is_dir()), key=lambda p: version_key(p.name)):
        tree = directory_tree(
            "v" + d.name, d,
            ("torch/csrc/distributed/c10d", "c10/cuda", "torch/csrc/CudaIPCTypes.cpp",
             # the cuBLAS/cuDNN checks and cuDNN's convolution algorithm search
             "aten/src/ATen/cuda/Exceptions.h", "aten/src/ATen/native/cudnn/Conv_v7.cpp",
             "aten/src/ATen/native/cudnn/Conv_v8.cpp"),
            (".cpp", ".hpp", ".h", ".cu", ".cuh"), f"pytorch {d.name} source archive",
        )
        files = tuple(f for f in tree.files if not TORCH_CPP_SKIP.search(f.path))
        trees.append(Tree(tree.version, tree.origin, files))
    return trees


def add_torch_cpp(out_dir: Path, src: Path, texts: dict) -> tuple[dict[str, list[dict]], list[dict]]:
    """Source archives alone (no wheels): formats not yet in the catalogue are added, versioned
    by the archives that have them (``versions_from: "source archives"``); records already
    there keep the versions a full build gave them."""
    trees = _torch_cpp_trees(src)
    cpp = collect(torch_component, "pytorch/pytorch", trees, torch_cpp_file)
    out: dict[str, list[dict]] = {}
    have: dict[str, dict] = {}
    for m in cpp.values():
        if m.level == "text" and not m.kind.endswith(".append") \
                and not any(len(p.strip()) >= 12 for p in m.pieces if isinstance(p, str)):
            continue
        rec = to_record(m, texts)
        comp = rec["component"]
        if comp not in out:
            path = out_dir / f"{comp}.jsonl"
            rows = [json.loads(l) for l in path.read_text(encoding="utf-8").splitlines() if l.strip()] \
                if path.exists() else []
            out[comp] = rows
            have[comp] = {r["id"]: r for r in rows}
        row = have[comp].get(rec["id"])
        if row is None:
            rec["versions_from"] = "source archives"
            out[comp].append(rec)
            have[comp][rec["id"]] = rec
        elif row.get("versions_from") == "source archives":
            row["versions"] = rec["versions"]  # added by earlier archives: versioned by those read now
    manifest = [{"repo": "pytorch/pytorch", "version": t.version, "origin": t.origin, "files": len(t.files)}
                for t in trees]
    return out, manifest


def _torch_py_trees(wheels: Path) -> tuple[list[Tree], dict[str, str]]:
    py_trees = []
    strings: dict[str, str] = {}
    for d in sorted((p for p in wheels.iterdir() if p.is_dir()), key=lambda p: version_key(p.name)):
        tree = directory_tree("v" + d.name, d, TORCH_PY_UNDER, (".py",), f"torch {d.name} wheel")
        # "torch" (for the package's own modules) lists again what the narrower folders listed
        seen: set[str] = set()
        files = tuple(f for f in tree.files if TORCH_PY_KEEP.match(f.path) and "/test" not in f.path
                      and not (f.path in seen or seen.add(f.path)))
        py_trees.append(Tree(tree.version, tree.origin, files))
        if (d / "strings.txt").exists():
            strings["v" + d.name] = (d / "strings.txt").read_text(encoding="utf-8", errors="replace")
    return py_trees, strings


def add_torch_py(out_dir: Path, wheels: Path, texts: dict) -> tuple[dict[str, list[dict]], list[dict]]:
    """The wheels' Python files alone (no source archives): formats not yet in the catalogue are
    added, versioned by the wheels that have them; a record already there gains the releases of
    the wheels given that print it too (wheels older than those read before, 1.9.0 ... 1.12.1,
    extend a Python record's span back), and keeps the releases it had."""
    py_trees, _ = _torch_py_trees(wheels)
    py = collect(torch_component, "pytorch/pytorch", py_trees, python_file)
    out: dict[str, list[dict]] = {}
    have: dict[str, dict] = {}
    for m in py.values():
        rec = to_record(m, texts)
        comp = rec["component"]
        if comp not in out:
            path = out_dir / f"{comp}.jsonl"
            rows = [json.loads(l) for l in path.read_text(encoding="utf-8").splitlines() if l.strip()] \
                if path.exists() else []
            out[comp] = [r for r in rows if r["repo"] == "pytorch/pytorch"]
            have[comp] = {r["id"]: r for r in out[comp]}
        row = have[comp].get(rec["id"])
        if row is None:
            out[comp].append(rec)
            have[comp][rec["id"]] = rec
        elif not set(rec["versions"]) <= set(row["versions"]):
            row["versions"] = sorted(set(row["versions"]) | set(rec["versions"]), key=version_key)
    manifest = [{"repo": "pytorch/pytorch", "version": t.version, "origin": t.origin, "files": len(t.files)}
                for t in py_trees]
    return out, manifest


TORCH_CPP_SUFFIXES = (".cpp", ".hpp", ".h", ".cu", ".cuh")
TORCH_OLDEST_ARCHIVE = "v1.13.1"  # the oldest source archive read (Debian's pool)


def add_torch_strings(out_dir: Path, strings_dir: Path) -> tuple[dict[str, list[dict]], list[dict]]:
    """Library strings alone (``DIR/<version>/strings.txt``, no source) of releases older than
    the oldest source archive (1.13.1): how 1.9.0 ... 1.12.1, whose Python was already read
    from their wheels, are added to the C++ records. A record whose span starts at the oldest
    archive is extended back release by release, newest first, while that release's libraries
    hold its longest literal (at least 12 characters, the full build's probe); the first release
    without it ends the extension. A record that starts later was not in the 1.13.1 source, so
    an older library holding its literal holds some other message: it is left alone."""
    import re

    strings = {"v" + d.name: (d / "strings.txt").read_text(encoding="utf-8", errors="replace")
               for d in sorted((p for p in strings_dir.iterdir() if (p / "strings.txt").exists()),
                               key=lambda p: version_key(p.name))}
    out: dict[str, list[dict]] = {}
    cpp: list[dict] = []
    pieces: dict[str, tuple] = {}
    for path in sorted(out_dir.glob("*.jsonl")):
        rows = [json.loads(l) for l in path.read_text(encoding="utf-8").splitlines() if l.strip()]
        mine = [r for r in rows if r["repo"] == "pytorch/pytorch"]
        if not mine:
            continue
        out[path.stem] = mine
        for r in mine:
            if r["file"].endswith(TORCH_CPP_SUFFIXES) and r["versions"] and r["versions"][0] == TORCH_OLDEST_ARCHIVE:
                cpp.append(r)
                pieces[r["id"]] = tuple(re.split(r"\{[^{}]*\}", r["format"]))
    hits = _probe_hits(cpp, pieces, strings)
    older = sorted((v for v in strings if version_key(v) < version_key(TORCH_OLDEST_ARCHIVE)), key=version_key,
                   reverse=True)
    for r in cpp:
        found = hits.get(r["id"], set())
        added = []
        for v in older:
            if v not in found:
                break
            added.append(v)
        if added:
            r["versions"] = sorted(set(r["versions"]) | set(added), key=version_key)
            r["versions_from"] = "source and library strings"
    manifest = [{"repo": "pytorch/pytorch", "version": v, "origin": "torch wheel library strings (versions probe)"}
                for v in strings]
    return out, manifest


def build_torch(sources: dict[str, str], texts: dict) -> tuple[dict[str, list[dict]], list[dict]]:
    wheels = Path(sources["torch-wheels"])
    src = Path(sources["torch-src"])
    py_trees, strings = _torch_py_trees(wheels)
    cpp_trees = _torch_cpp_trees(src)
    py = collect(torch_component, "pytorch/pytorch", py_trees, python_file)
    cpp = collect(torch_component, "pytorch/pytorch", cpp_trees, torch_cpp_file)
    out: dict[str, list[dict]] = {}
    for m in py.values():
        out.setdefault(m.component, []).append(to_record(m, texts))
    cpp_records, pieces = [], {}
    for m in cpp.values():
        if m.level == "text" and not m.kind.endswith(".append") \
                and not any(len(p.strip()) >= 12 for p in m.pieces if isinstance(p, str)):
            continue  # a string built for some other purpose, not a message
        rec = to_record(m, texts)
        pieces[rec["id"]] = m.pieces
        cpp_records.append(rec)
    _probe_versions(cpp_records, pieces, strings)
    for rec in cpp_records:
        out.setdefault(rec["component"], []).append(rec)
    manifest = [
        {"repo": "pytorch/pytorch", "version": t.version, "origin": t.origin, "files": len(t.files)}
        for t in py_trees + cpp_trees
    ] + [{"repo": "pytorch/pytorch", "version": v, "origin": "torch wheel library strings (versions probe)"}
         for v in strings]
    return out, manifest


def build_python_project(project: PyProject, git_dir: str, texts: dict) -> tuple[list[dict], list[dict]]:
    repo = GitRepo(git_dir)
    trees = []
    for tag in sorted(project.tags(repo.tags()), key=version_key):
        tree = repo.tree(tag, project.under, (".py",))
        trees.append(Tree(tree.version, tree.origin,
                          tuple(f for f in tree.files if not project.skip.search(f.path))))
    merged = collect(project.component, project.repo, trees, python_extractor(project.dialect))
    records = [to_record(m, texts) for m in merged.values()]
    manifest = [{"repo": project.repo, "version": t.version, "origin": t.origin, "files": len(t.files)}
                for t in trees]
    return records, manifest


def build_wheel_project(project: PyProject, root: str, texts: dict) -> tuple[list[dict], list[dict]]:
    """A Python project read from unpacked release wheels: ``root/<version>/<package>/...``."""
    trees = []
    dirs = sorted((p for p in Path(root).iterdir() if p.is_dir()), key=lambda p: version_key(p.name))
    for d in dirs:
        tree = directory_tree("v" + d.name, d, project.under, (".py",), f"{project.repo} {d.name} wheel")
        # a message printed by several modules is placed at the shallowest: the package's own
        # module (transformers/trainer.py), not a subpackage's copy (integrations/tpu.py)
        kept = sorted((f for f in tree.files if not project.skip.search(f.path)), key=lambda f: (f.path.count("/"), f.path))
        trees.append(Tree(tree.version, tree.origin, tuple(kept)))
    merged = collect(project.component, project.repo, trees, python_extractor(project.dialect))
    records = [to_record(m, texts) for m in merged.values()]
    manifest = [{"repo": project.repo, "version": t.version, "origin": t.origin, "files": len(t.files)}
                for t in trees]
    return records, manifest


def build_c_project(git_dir: str, texts: dict, component: str, repo_name: str, select, under, suffixes,
                    skip, extractor, head: str | None = None,
                    yearly: tuple[str, int] | None = None) -> tuple[list[dict], list[dict]]:
    """``head``: also read the default branch, as the dated version ``<head>-YYYY-MM-DD``;
    ``yearly`` (name, first year): a project without tags, read at the last commit of each year."""
    repo = GitRepo(git_dir)
    read = [repo.tree(tag, under, suffixes) for tag in sorted(select(repo.tags()), key=version_key)]
    if head and (dated := _dated_head(repo, head, under, suffixes)) is not None:
        read.append(dated)
    if yearly:
        read += _yearly_trees(repo, yearly[0], under, suffixes, yearly[1])
    trees = [Tree(t.version, t.origin, tuple(f for f in t.files if not skip.search(f.path))) for t in read]
    merged = collect(component, repo_name, trees, extractor)
    records = [to_record(m, texts) for m in merged.values()]
    manifest = [{"repo": repo_name, "version": t.version, "origin": t.origin, "files": len(t.files)}
                for t in trees]
    return records, manifest


def build_linux(root: Path, texts: dict, manifest: dict) -> dict[str, list[dict]]:
    """Kernel drivers from unpacked Debian linux-source trees, one directory per version."""
    versions = sorted((p for p in root.iterdir() if p.is_dir()), key=lambda p: version_key(p.name))
    out: dict[str, list[dict]] = {}
    read = []
    for component, under in LINUX_PARTS.items():
        trees = []
        for d in versions:
            tree = directory_tree("v" + d.name, d, under, (".c", ".h"), f"Debian linux-source {d.name}")
            trees.append(Tree(tree.version, tree.origin, tuple(f for f in tree.files if not LINUX_SKIP.search(f.path))))
            read.append({"repo": "torvalds/linux", "component": component, "version": tree.version,
                         "origin": tree.origin, "files": len(trees[-1].files)})
        merged = collect(component, "torvalds/linux", trees, linux_file)
        for rec in (to_record(m, texts) for m in merged.values()):
            rec["versions_from"] = "Debian linux-source packages"
            out.setdefault(component, []).append(rec)
    manifest["read"]["linux"] = read
    return out


def build_slurm(git_dir: str, texts: dict) -> tuple[list[dict], list[dict]]:
    return build_c_project(git_dir, texts, "slurm", "SchedMD/slurm", slurm_tags, SLURM_UNDER, (".c", ".h"),
                           SLURM_SKIP, slurm_file)


def _fold_torchelastic(out_dir: Path, produced: dict) -> None:
    """torchelastic's records, less the messages PyTorch prints word for word: those stay
    PyTorch's record, which gains the torchelastic releases as ``other_versions`` (one answer per
    message, both projects' versions). Run on every build that touches ``torch_elastic``, in
    whichever order PyTorch and torchelastic were read."""
    rows = _with_other_projects(out_dir / "torch_elastic.jsonl", produced["torch_elastic"])
    by_pattern: dict[str, dict] = {}
    for r in rows:  # where PyTorch has the pattern twice (a print that became a warning), the newer
        if r["repo"] == "pytorch/pytorch":
            old = by_pattern.get(r["pattern"])
            if old is None or (version_key(r["versions"][-1]), r["id"]) > (version_key(old["versions"][-1]), old["id"]):
                by_pattern[r["pattern"]] = r
    kept = []
    for rec in rows:
        twin = by_pattern.get(rec["pattern"]) if rec["repo"] == "pytorch/elastic" else None
        if twin is None:
            kept.append(rec)
            continue
        known = set(twin.get("other_versions", {}).get(rec["repo"], []))
        twin.setdefault("other_versions", {})[rec["repo"]] = sorted(known | set(rec["versions"]), key=version_key)
    produced["torch_elastic"] = kept


def _with_other_projects(path: Path, records: list[dict]) -> list[dict]:
    """The component's new records plus the ones other projects put in its file before.

    A component's file can hold the messages of several projects (``cuda``: PyTorch's CUDA
    texts and the NVIDIA kernel driver's; ``other``: Lightning, nccl-tests), each read from
    its own source; a build given one of them replaces that project's records only."""
    if not path.exists():
        return records
    rebuilt = {r["repo"] for r in records}
    kept = [json.loads(l) for l in path.read_text(encoding="utf-8").splitlines() if l.strip()]
    return records + [r for r in kept if r["repo"] not in rebuilt]


def build(out_dir: Path, sources: dict[str, str]) -> dict:
    out_dir.mkdir(parents=True, exist_ok=True)
    texts = _texts(out_dir)
    manifest_path = out_dir / MANIFEST
    manifest = json.loads(manifest_path.read_text()) if manifest_path.exists() else {"read": {}}
    produced: dict[str, list[dict]] = {}
    if "nccl" in sources and "rccl" in sources:
        recs, read = build_nccl_rccl(sources, texts)
        produced.update(recs)
        manifest["read"]["nccl+rccl"] = read
    if "torch-wheels" in sources and "torch-src" in sources:
        recs, read = build_torch(sources, texts)
        produced.update(recs)
        manifest["read"]["pytorch"] = read
    elif "torch-src" in sources:
        recs, read = add_torch_cpp(out_dir, Path(sources["torch-src"]), texts)
        produced.update(recs)
        manifest["read"]["pytorch-source-additions"] = read
    elif "torch-strings" in sources:
        recs, read = add_torch_strings(out_dir, Path(sources["torch-strings"]))
        produced.update(recs)
        earlier = manifest["read"].get("pytorch-strings-additions", [])
        manifest["read"]["pytorch-strings-additions"] = sorted(
            {(r["version"], r["origin"]): r for r in earlier + read}.values(), key=lambda r: version_key(r["version"]))
    elif "torch-wheels" in sources:
        recs, read = add_torch_py(out_dir, Path(sources["torch-wheels"]), texts)
        produced.update(recs)
        # each run of additions adds the wheels it read to those read by earlier runs
        earlier = manifest["read"].get("pytorch-python-additions", [])
        manifest["read"]["pytorch-python-additions"] = sorted(
            {(r["version"], r["origin"]): r for r in earlier + read}.values(), key=lambda r: version_key(r["version"]))
    if "slurm" in sources:
        recs, read = build_slurm(sources["slurm"], texts)
        produced.setdefault("slurm", []).extend(recs)
        manifest["read"]["slurm"] = read
    rocm_parts = []
    if "clr" in sources:
        rocm_parts.append(("clr", build_c_project(sources["clr"], texts, "rocm", "ROCm/clr", clr_tags, CLR_UNDER,
                                                   (".cpp", ".hpp", ".h", ".c"), CLR_SKIP, clr_file)))
    if "rocr" in sources:
        rocm_parts.append(("rocr", build_c_project(sources["rocr"], texts, "rocm", "ROCm/ROCR-Runtime", clr_tags,
                                                    ROCR_UNDER, (".cpp", ".h"), ROCR_SKIP, rocr_file)))
    if "rocminfo" in sources:
        rocm_parts.append(("rocminfo", build_c_project(sources["rocminfo"], texts, "rocm", "ROCm/rocminfo", clr_tags,
                                                        ("rocminfo.cc",), (".cc",), ROCR_SKIP, rocr_file)))
    if "rocm-smi" in sources:
        rocm_parts.append(("rocm-smi", build_c_project(sources["rocm-smi"], texts, "rocm", "ROCm/rocm_smi_lib", clr_tags,
                                                        ("python_smi_tools/rocm_smi.py",), (".py",), ROCR_SKIP,
                                                        rocm_smi_file)))
    if rocm_parts:
        merged_rocm: dict[str, dict] = {}
        for name, (recs, read) in rocm_parts:
            for rec in recs:
                merged_rocm.setdefault(rec["id"], rec)
            manifest["read"][name] = read
        produced.setdefault("rocm", []).extend(list(merged_rocm.values()))
    if "rdma-core" in sources:
        recs, read = build_c_project(sources["rdma-core"], texts, "infiniband", "linux-rdma/rdma-core", rdma_tags,
                                     RDMA_UNDER, (".c", ".h"), RDMA_SKIP, rdma_file)
        produced.setdefault("infiniband", []).extend(recs)
        manifest["read"]["rdma-core"] = read
    if "ucx" in sources:
        recs, read = build_c_project(sources["ucx"], texts, "infiniband", "openucx/ucx", ucx_tags, UCX_UNDER,
                                     (".c", ".h", ".inl"), UCX_SKIP, ucx_release_file)
        produced.setdefault("infiniband", []).extend(recs)
        manifest["read"]["ucx"] = read
    if "libfabric" in sources:
        recs, read = build_c_project(sources["libfabric"], texts, "infiniband", "ofiwg/libfabric", libfabric_tags,
                                     LIBFABRIC_UNDER, (".c", ".h"), LIBFABRIC_SKIP, libfabric_file)
        produced.setdefault("infiniband", []).extend(recs)
        manifest["read"]["libfabric"] = read
    if "ompi" in sources:
        recs, read = build_c_project(sources["ompi"], texts, "infiniband", "open-mpi/ompi", ompi_tags, OMPI_UNDER,
                                     OMPI_SUFFIXES, OMPI_SKIP, ompi_file)
        produced.setdefault("infiniband", []).extend(recs)
        manifest["read"]["ompi"] = read
    if "nccl-tests" in sources:
        recs, read = build_c_project(sources["nccl-tests"], texts, "other", "NVIDIA/nccl-tests", nccl_tests_tags,
                                     NCCL_TESTS_UNDER, (".cu", ".h", ".cc"), NCCL_TESTS_SKIP, nccl_tests_file)
        produced.setdefault("other", []).extend(recs)
        manifest["read"]["nccl-tests"] = read
    if "aws-ofi-nccl" in sources:
        recs, read = build_c_project(sources["aws-ofi-nccl"], texts, "nccl", "aws/aws-ofi-nccl", ofi_nccl_tags,
                                     OFI_NCCL_UNDER, (".c", ".cpp", ".h"), OFI_NCCL_SKIP, ofi_nccl_file)
        produced.setdefault("nccl", []).extend(recs)
        manifest["read"]["aws-ofi-nccl"] = read
    if "nccl-rdma-sharp-plugins" in sources:
        recs, read = build_c_project(sources["nccl-rdma-sharp-plugins"], texts, "nccl",
                                     "Mellanox/nccl-rdma-sharp-plugins", sharp_plugin_tags, SHARP_PLUGIN_UNDER,
                                     (".c", ".h", ".cc"), SHARP_PLUGIN_SKIP, nccl_file, head="master")
        # the plugin carries copies of NCCL's socket, ibverbs and parameter code: a format NCCL
        # prints too is left to NCCL's record (the same id), only the plugin's own are added
        path = out_dir / "nccl.jsonl"
        rows = produced.get("nccl", []) + ([json.loads(l) for l in path.read_text(encoding="utf-8").splitlines()
                                            if l.strip()] if path.exists() else [])
        nccl_ids = {r["id"] for r in rows if r["repo"] == "NVIDIA/nccl"}
        recs = [r for r in recs if r["id"] not in nccl_ids]
        produced.setdefault("nccl", []).extend(recs)
        manifest["read"]["nccl-rdma-sharp-plugins"] = read
    if "gloo" in sources:
        recs, read = build_c_project(sources["gloo"], texts, "torch_distributed", "facebookincubator/gloo",
                                     lambda tags: [], GLOO_UNDER, (".cc", ".h", ".cu"), GLOO_SKIP, gloo_file,
                                     yearly=("gloo", GLOO_FIRST_YEAR))
        produced.setdefault("torch_distributed", []).extend(recs)
        manifest["read"]["gloo"] = read
    if "linux-src" in sources:
        for component, recs in build_linux(Path(sources["linux-src"]), texts, manifest).items():
            produced.setdefault(component, []).extend(recs)
    if "nvidia-open" in sources:
        recs, read = build_c_project(sources["nvidia-open"], texts, "cuda", "NVIDIA/open-gpu-kernel-modules",
                                     nvidia_tags, NVIDIA_UNDER, (".c", ".h"), NVIDIA_SKIP, nvidia_file)
        produced.setdefault("cuda", []).extend(recs)
        manifest["read"]["nvidia-open"] = read
    for name, project in PY_PROJECTS.items():
        if name in sources:
            recs, read = build_python_project(project, sources[name], texts)
            produced.setdefault(project.component, []).extend(recs)
            manifest["read"][name] = read
    for name, project in WHEEL_PROJECTS.items():
        if name in sources:
            recs, read = build_wheel_project(project, sources[name], texts)
            produced.setdefault(project.component, []).extend(recs)
            manifest["read"][name.removesuffix("-wheels")] = read
    if "torch_elastic" in produced:
        _fold_torchelastic(out_dir, produced)
    for component, records in produced.items():
        write_records(out_dir / f"{component}.jsonl", _with_other_projects(out_dir / f"{component}.jsonl", records))
    counts = {}
    for path in sorted(out_dir.glob("*.jsonl")):
        rows = [json.loads(l) for l in path.read_text(encoding="utf-8").splitlines() if l.strip()]
        by_level: dict[str, int] = {}
        for r in rows:
            by_level[r["level"]] = by_level.get(r["level"], 0) + 1
        counts[path.stem] = {"records": len(rows), "by_level": dict(sorted(by_level.items()))}
    manifest["counts"] = counts
    manifest_path.write_text(json.dumps(manifest, indent=1, sort_keys=True, ensure_ascii=False) + "\n")
    return counts
