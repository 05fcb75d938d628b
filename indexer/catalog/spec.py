"""What the catalogue reads: which projects, which tags, which paths, which extractor.

``explainlog catalog build --source NAME=PATH ...`` points each name at a local copy (a git
directory for NCCL and RCCL; for PyTorch, directories of unpacked release wheels for the
Python side, unpacked source archives for the C++ side, and the wheels' library strings for
the versions of C++ messages — see docs/catalog.md). Nothing read is committed; the manifest
records what was read.
"""

from __future__ import annotations

import re

from indexer.catalog.build import version_key

NCCL_SUFFIXES = (".cc", ".cu", ".h", ".cpp", ".hpp", ".c")


def nccl_tags(tags: list[str]) -> list[str]:
    """Every NCCL 2 release tag from v2.4 on."""
    return [t for t in tags if re.fullmatch(r"v2\.\d+\.\d+-\d+", t) and version_key(t) >= (2, 4)]


def rccl_tags(tags: list[str]) -> list[str]:
    """Every full ROCm release tag from rocm-5.0.0 on."""
    return [t for t in tags if re.fullmatch(r"rocm-\d+\.\d+\.\d+", t) and version_key(t) >= (5, 0)]


# PyTorch: the distributed packages users meet in training logs (issue scope), not the
# experimental sharding / RPC / SPMD packages.
TORCH_PY_KEEP = re.compile(
    r"^torch/distributed/(?:elastic/|run\.py|launch\.py|launcher/|distributed_c10d\.py|rendezvous\.py"
    r"|c10d_logger\.py|constants\.py|utils\.py|__init__\.py|device_mesh\.py|_functional_collectives\.py"
    r"|fsdp/|_composable/fsdp/|_composable/replicate\.py|pipelining/|elastic_launch)"
)
TORCH_CPP_SKIP = re.compile(r"UCC|ProcessGroupMPI|/quantization/|/rpc/|/autograd/|Fake|Dummy|Test")


def torch_component(path: str) -> str:
    if path.startswith(("torch/distributed/elastic/", "torch/distributed/run.py",
                        "torch/distributed/launch.py", "torch/distributed/launcher/")):
        return "torch_elastic"
    if path.startswith("c10/cuda/") or "CudaIPCTypes" in path or "CUDACachingAllocator" in path:
        return "cuda"
    return "torch_distributed"
