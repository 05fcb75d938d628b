"""What the catalogue reads: which projects, which tags, which paths, which extractor.

``explainlog catalog build --source NAME=PATH ...`` points each name at a local copy (a git
directory for NCCL and RCCL; for PyTorch, directories of unpacked release wheels for the
Python side, unpacked source archives for the C++ side, and the wheels' library strings for
the versions of C++ messages — see docs/catalog.md). Nothing read is committed; the manifest
records what was read.
"""

from __future__ import annotations

import re
from typing import Callable

from indexer.catalog.build import version_key
from indexer.catalog.extract import OMPI_UCX_FILES

NCCL_SUFFIXES = (".cc", ".cu", ".h", ".cpp", ".hpp", ".c")


def nccl_tags(tags: list[str]) -> list[str]:
    """Every NCCL 2 release tag from v2.3 on: v2.3.5-5 is the first NCCL 2 whose source was
    published, and its lines ("Using internal Network IB", "NET/Socket : N interfaces found")
    are still pasted from older clusters."""
    return [t for t in tags if re.fullmatch(r"v2\.\d+\.\d+-\d+", t) and version_key(t) >= (2, 3)]


def rccl_tags(tags: list[str]) -> list[str]:
    """Every ROCm release tag of RCCL from ROCm 2.5 on, when RCCL became a port of NCCL 2
    (2.3.7): ``2.5.0`` ... ``3.1.0`` name the ROCm release without a prefix, ``rocm-3.3.0`` on
    with one (``3.3.0`` is the same commit as ``rocm-3.3.0``; ``0.x`` is the RCCL 1 library
    before the port; ``2.7`` and ``3.6beta`` are not releases). Up to 2026-12-07 only
    rocm-5.0.0 on was read, so a message RCCL printed since ROCm 2.5 showed as rocm-5.0.0."""
    rocm = {t for t in tags if re.fullmatch(r"rocm-\d+\.\d+\.\d+", t)}
    bare = [t for t in tags if re.fullmatch(r"\d+\.\d+\.\d+", t) and version_key(t) >= (2, 5)
            and f"rocm-{t}" not in rocm]
    return sorted(bare, key=version_key) + sorted(rocm, key=version_key)


def rccl_label(tag: str) -> str:
    """The version an RCCL tag is shown as: the ROCm release it names, ``2.5.0`` as
    ``rocm-2.5.0`` (read bare, it looks like an RCCL library version, which at ROCm 2.5 was
    NCCL 2.3.7's); the manifest keeps the commit, so the label stays checkable."""
    return tag if tag.startswith("rocm-") or not re.fullmatch(r"\d+\.\d+\.\d+", tag) else f"rocm-{tag}"


# PyTorch: the distributed packages users meet in training logs (issue scope), not the
# experimental sharding / RPC / SPMD packages.
TORCH_PY_KEEP = re.compile(
    r"^torch/distributed/(?:elastic/|run\.py|launch\.py|launcher/|distributed_c10d\.py|rendezvous\.py"
    r"|c10d_logger\.py|constants\.py|utils\.py|__init__\.py|device_mesh\.py|_functional_collectives\.py"
    r"|fsdp/|_composable/fsdp/|_composable/replicate\.py|pipelining/|elastic_launch)"
    # and the utilities every training log meets: the C++/CUDA extension builder (DeepSpeed's
    # ops are built with it), the DataLoader and its workers, activation checkpointing
    r"|^torch/utils/(?:cpp_extension\.py|checkpoint\.py|data/dataloader\.py|data/_utils/)"
    # and CUDA's lazy initialisation (not compiled with CUDA, forked subprocess, capability checks)
    r"|^torch/cuda/__init__\.py"
    # and the rest of what a training script runs through and hears from: DDP and DataParallel,
    # mixed precision (autocast, GradScaler), optimizers and LR schedulers, torch.load/save, the
    # whole data package, nn modules and functional, autograd, backends, the package's own
    # modules (TypedStorage, deterministic algorithms, hub), torch.compile's front end (dynamo)
    r"|^torch/nn/parallel/|^torch/amp/|^torch/cuda/amp/|^torch/optim/|^torch/utils/data/"
    r"|^torch/nn/(?:modules/|functional\.py|init\.py|utils/clip_grad\.py)|^torch/autograd/|^torch/backends/"
    r"|^torch/[^/]+\.py$|^torch/_dynamo/[^/]+\.py$"
    # and the rest of torch.distributed a training job runs through (2026-12-06): distributed
    # checkpointing (DCP), DTensor, the DDP comm hooks and ZeroRedundancyOptimizer, symmetric
    # memory, the flight recorder and debug helpers; and torch.cuda's Python (memory, streams,
    # graphs, random). Not the RPC framework and not the sharded-tensor prototypes (_shard)
    r"|^torch/distributed/(?:checkpoint/|tensor/|_tensor/|algorithms/|optim/|_symmetric_memory/"
    r"|flight_recorder/|debug/|_state_dict_utils\.py|collective_utils\.py|_composable/)"
    r"|^torch/cuda/[^/]+\.py$"
    # and torch.compile's back end as a training log meets it: Inductor's own modules (compile_fx,
    # codecache, cudagraph trees, autotuning, the scheduler's warnings), its runtime (Triton
    # launch and autotune heuristics) and compile workers; not its code generators, kernel
    # templates and FX passes, whose messages are internal asserts
    r"|^torch/_inductor/(?:[^/]+\.py$|runtime/|compile_worker/)"
)
# the first three as before, so a message printed by an older-read module keeps its place
TORCH_PY_UNDER = ("torch/distributed", "torch/utils", "torch/cuda/__init__.py", "torch/cuda/amp", "torch/cuda", "torch/nn",
                  "torch/amp", "torch/optim", "torch/autograd", "torch/backends", "torch/_dynamo", "torch/_inductor",
                  "torch")
TORCH_CPP_SKIP = re.compile(r"UCC|ProcessGroupMPI|/quantization/|/rpc/|/autograd/|Fake|Dummy|Test")


def torch_component(path: str) -> str:
    if path.startswith(("torch/distributed/elastic/", "torch/distributed/run.py",
                        "torch/distributed/launch.py", "torch/distributed/launcher/")):
        return "torch_elastic"
    if path.startswith("torch/nn/parallel/"):
        return "torch_distributed"
    if path.startswith(("torch/utils/", "torch/nn/", "torch/amp/", "torch/cuda/amp/", "torch/optim/", "torch/autograd/",
                        "torch/backends/", "torch/_dynamo/", "torch/_inductor/")) or path.count("/") == 1:
        return "other"
    if path.startswith(("c10/cuda/", "torch/cuda/", "aten/src/ATen/")) or "CudaIPCTypes" in path or "CUDACachingAllocator" in path:
        return "cuda"
    return "torch_distributed"


# ---- Python projects read from git at their release tags (issue 14) ----------------------
from dataclasses import dataclass  # noqa: E402

from indexer.catalog.python_src import Dialect, Helper  # noqa: E402


def _final_tags(pattern: str, since: tuple) -> Callable[[list[str]], list[str]]:
    def select(tags: list[str]) -> list[str]:
        return [t for t in tags if re.fullmatch(pattern, t) and version_key(t) >= since]
    return select


def _lightning_tags(tags: list[str]) -> list[str]:
    """Every final 2.x release, and the last patch release of 1.0 ... 1.9 (1.0-1.4 printed their
    DDP start-up from accelerators/ and plugins/training_type/, "All DDP processes registered")."""
    finals = [t for t in tags if re.fullmatch(r"\d+\.\d+\.\d+", t)]
    last: dict[tuple, str] = {}
    for t in finals:
        key = version_key(t)
        if (1, 0) <= key < (2, 0) and (key[:2] not in last or key > version_key(last[key[:2]])):
            last[key[:2]] = t
    return sorted([t for t in finals if version_key(t) >= (2, 0)] + list(last.values()), key=version_key)


@dataclass(frozen=True)
class PyProject:
    """One Python project: where it lives, which tags and paths are read, how it logs."""

    component: str
    repo: str
    tags: Callable[[list[str]], list[str]]
    under: tuple[str, ...]
    skip: re.Pattern
    dialect: Dialect


_SKIP_TESTS = r"(?:^|/)tests?/|/test_[^/]*\.py$|(?:^|/)examples?/|/benchmarks?/|/docs?/"

PY_PROJECTS: dict[str, PyProject] = {
    "deepspeed": PyProject(
        # every release from the first, v0.1.0 (2020): logs of 0.5-0.8 runs are still pasted
        # every day (up to 2026-12-07 from v0.3.0, so the engine's start-up lines of 0.1 and
        # 0.2 showed as new in 0.3)
        "deepspeed", "deepspeedai/DeepSpeed", _final_tags(r"v\d+\.\d+\.\d+", (0, 1)),
        ("deepspeed", "op_builder", "accelerator"),
        # inference kernels, model injection policies and compression are not what training
        # logs print; the runtime, ZeRO, launcher, comm, checkpoints, accelerator and op builds are;
        # so is the Triton matmul's cache-directory check, which runs on ``import deepspeed``
        # wherever Triton is installed ("... DeepSpeed Triton autotune, ..., appears to be on an
        # NFS system ...", from v0.15.0)
        re.compile(_SKIP_TESTS + r"|^deepspeed/(?:inference|model_implementations|module_inject|compression"
                   r"|autotuning|linear|inference_v2|nebula|ops/transformer/inference(?!/triton/matmul_ext\.py$)"
                   r"|compile|ops/sparse_attention)/"),
        Dialect(
            helpers={"log_dist": Helper(level=None, anchored=False), "print_rank_0": Helper(),
                     "print_json_dist": Helper(), "warning_once": Helper(level="warning"),
                     # op_builder's OpBuilder.warning prints "\033[93m [WARNING] \033[0m <msg>"
                     "self.warning": Helper(level="warning", anchored=False),
                     # utils/timer.py's ThroughputTimer logs through self.logging, logger.info
                     # unless the caller passes another function
                     "self.logging": Helper(level="info")},
            # deepspeed/pt/ is v0.1-v0.2's package (deepspeed_launch.py, deepspeed_run.py, the
            # engine in deepspeed_light.py): its launcher printed "WORLD INFO DICT" and
            # "Setting CUDA_VISIBLE_DEVICES" with print() as deepspeed/launcher/ does later
            print_paths=("deepspeed/launcher/", "deepspeed/pt/", "op_builder/", "deepspeed/env_report.py", "accelerator/",
                         "deepspeed/ops/transformer/inference/triton/matmul_ext.py",
                         "deepspeed/ops/op_builder/", "deepspeed/utils/", "deepspeed/runtime/"),
            # ``assert cond, "message"`` where DeepSpeed checks its config and the engine's use
            # ("Check batch related parameters. train_batch_size is not equal to ...")
            assert_paths=(r"^deepspeed/runtime/config\.py$", r"^deepspeed/runtime/engine\.py$", r"^deepspeed/launcher/",
                          r"^deepspeed/pt/deepspeed_(?:config|light|launch|run)\.py$",
                          r"^deepspeed/runtime/zero/config\.py$", r"^deepspeed/comm/comm\.py$", r"^deepspeed/elasticity/"),
        ),
    ),
    "megatron": PyProject(
        "megatron", "NVIDIA/Megatron-LM",
        # the core_v releases, and before them v1.0-v2.6 and the 23.04/23.06 container tags:
        # the code Megatron-DeepSpeed and most forks still run ("> initializing model parallel
        # cuda seeds ..." is only there)
        lambda tags: [t for t in tags if re.fullmatch(r"core_v\d+\.\d+\.\d+|v[12]\.\d+|23\.0[46]", t)],
        # the package, and the training scripts and model builders at the top of the tree, which
        # print the start-up lines ("building GPT model ...", "> finished creating GPT datasets ...")
        ("megatron", "pretrain_gpt.py", "pretrain_gpt2.py", "pretrain_bert.py", "pretrain_t5.py", "pretrain_mamba.py",
         "pretrain_hybrid.py", "gpt_builders.py", "mamba_builders.py", "hybrid_builders.py", "model_provider.py"),
        re.compile(_SKIP_TESTS + r"|^megatron/(?:core/)?(?:inference|export|post_training|rl)/"
                   r"|^megatron/(?:core/)?models/(?:multimodal|vision|mamba|retro|T5|bert)"),
        Dialect(
            helpers={"print_rank_0": Helper(), "print_rank_last": Helper(), "warn_rank_0": Helper(level="warn UserWarning", anchored=False),
                     "log_single_rank": Helper(msg_arg=2, level=None, level_arg=1, printf=True, anchored=False),
                     "log_on_each_pipeline_stage": Helper(msg_arg=2, level=None, level_arg=1, printf=True,
                                                          anchored=False)},
            print_paths=("megatron/", "pretrain_", "gpt_builders.py", "mamba_builders.py", "hybrid_builders.py",
                         "model_provider.py"),
            assert_paths=(r"(?:^|/)arguments\.py$", r"^megatron/training/", r"transformer_config\.py$",
                          r"model_parallel_config\.py$", r"^megatron/core/parallel_state\.py$",
                          # the tensor-parallel layers check their inputs' shapes against the TP size
                          # ("First dimension of the tensor should be divisible by tensor parallel size")
                          r"^megatron/core/tensor_parallel/"),
        ),
    ),
    "accelerate": PyProject(
        # every release from the first, v0.1.0 (2021; up to 2026-12-07 from v0.20.0)
        "accelerate", "huggingface/accelerate", _final_tags(r"v\d+\.\d+\.\d+", (0, 1)),
        ("src/accelerate",),
        # `accelerate test` runs test_utils/scripts/test_script.py through testing.py's
        # execute_subprocess_async ("Running:  accelerate-launch ..."): user-facing, unlike the
        # rest of test_utils
        re.compile(r"^(?!src/accelerate/test_utils/scripts/test_script\.py$)(?:.*(?:" + _SKIP_TESTS
                   + r")|src/accelerate/test_utils/(?!testing\.py$|scripts/test_script\.py$))"),
        # prints: the commands, the Megatron-LM integration's start-up notes (utils/megatron_lm.py),
        # the launchers' notebook messages, and the sanity-check run of `accelerate test`
        Dialect(print_paths=("src/accelerate/commands/", "src/accelerate/utils/megatron_lm.py", "src/accelerate/launchers.py",
                             "src/accelerate/test_utils/testing.py", "src/accelerate/test_utils/scripts/test_script.py")),
    ),
    # PyTorch Lightning 2.x (src/lightning: pytorch and fabric) and 1.0-1.9 (the last patch of
    # each: pytorch_lightning/ at the top, then src/pytorch_lightning with lightning_lite (1.8) or
    # lightning_fabric (1.9)); the KB files it under "other"
    "lightning": PyProject(
        "other", "Lightning-AI/pytorch-lightning", lambda tags: _lightning_tags(tags),
        ("src/lightning/pytorch", "src/lightning/fabric", "pytorch_lightning", "src/pytorch_lightning",
         "src/lightning_lite", "src/lightning_fabric"),
        re.compile(_SKIP_TESTS + r"|/(?:loggers|cli)\.py$|/loggers/"),
        Dialect(helpers={"rank_zero_info": Helper(), "rank_zero_warn": Helper(level="warn UserWarning", anchored=False),
                         "rank_zero_deprecation": Helper(level="warn LightningDeprecationWarning", anchored=False),
                         "rank_zero_debug": Helper(level="debug")},
                print_paths=()),
    ),
    "mmengine": PyProject(
        "mmengine", "open-mmlab/mmengine", _final_tags(r"v\d+\.\d+\.\d+", (0, 1)),
        ("mmengine",),
        re.compile(_SKIP_TESTS + r"|^mmengine/(?:visualization|analysis)/"),
        # print_log(msg, logger=None, level=logging.INFO): the level is also passed by position
        Dialect(helpers={"print_log": Helper(level=None, level_arg=2)}, print_paths=()),
    ),
    # torchelastic 0.2 (pytorch/elastic), the elastic agent and launcher before PyTorch 1.9 took
    # them in as torch.distributed.elastic and torch.distributed.run (its logger is
    # torchelastic.utils.logging.get_logger; launch.py and the agent's reports print)
    "torchelastic": PyProject(
        "torch_elastic", "pytorch/elastic", _final_tags(r"v\d+\.\d+\.\d+", (0, 2)),
        ("torchelastic",),
        re.compile(_SKIP_TESTS + r"|^torchelastic/(?:tsm|app)/"),
        Dialect(print_paths=("torchelastic/distributed/launch.py", "torchelastic/agent/"),
                message_attrs=("message",), attr_paths=("torchelastic/multiprocessing/errors/",)),
    ),
    "xtuner": PyProject(
        "xtuner", "InternLM/xtuner", _final_tags(r"v\d+\.\d+\.\d+", (0, 1)),
        ("xtuner",),
        re.compile(_SKIP_TESTS + r"|^xtuner/(?:configs|chat|v1/ray|v1/rl|v1/data_proto)/"),
        Dialect(helpers={"print_log": Helper(level=None, level_arg=2)}, print_paths=("xtuner/tools/train.py",)),
    ),
}


# Projects read from their release wheels (one unpacked wheel per version directory, e.g.
# ``tf/4.46.3/transformers/...``): too large to mirror with history, and what users run.
WHEEL_PROJECTS: dict[str, PyProject] = {
    # transformers: the whole package as users run it (trainer, arguments, integrations,
    # loading and saving, generation, tokenizers, data, pipelines, quantizers, utils), the auto
    # classes and the model families training jobs use most (their copies of the same warning
    # merge into one record); not the TensorFlow/Flax halves, the test helpers, the kernels,
    # the agents and tools, or the chat/serve command line
    "transformers-wheels": PyProject(
        "transformers", "huggingface/transformers", lambda versions: versions,
        ("transformers",),
        re.compile(r"_(?:tf|flax)\.py$|/(?:modeling_)?(?:tf|flax)_(?!pytorch_)[^/]*\.py$|/keras_callbacks\.py$|^transformers/(?:testing_utils|kernels/|agents/|tools/|commands/|cli/|models/"
                   r"(?!(?:auto|llama|mistral|qwen2|gpt2|bert|t5)/))"),
        Dialect(helpers={"warning_advice": Helper(level="warning")}, print_paths=()),
    ),
}


# ---- C projects read from git at release tags ---------------------------------------------
def slurm_tags(tags: list[str]) -> list[str]:
    """The last release of each Slurm major version (``slurm-24-05-8-1``), from the first
    release on (``slurm-1-0-*``, 2006): lines of 15.08 … 19.05 still fill the threads users
    search (task/cgroup's ``Exceeded step memory limit at some point.`` was dropped after
    17.02). Up to 2026-12-07 only 15.08 on was read, so srun's and slurmstepd's messages of the
    2.x and 14.x releases showed as new in 15.08."""
    last: dict[tuple, tuple] = {}
    for t in tags:
        m = re.fullmatch(r"slurm-(\d+)-(\d+)-(\d+)-(\d+)", t)
        if m:
            key = version_key(t)
            major = key[:2]
            if major not in last or key > last[major][0]:
                last[major] = (key, t)
    return [t for _, t in sorted(last.values())]


# what a training job's log shows: the commands that launch it, the step daemon that runs it,
# the library calls they make and the plugins that kill or confine it (cgroups, OOM, MPI)
# src/interfaces holds what src/common held for the plugin interfaces before 23.02 (e.g. the
# jobacct_gather memory-limit kill, src/common/slurm_jobacct_gather.c -> src/interfaces/jobacct_gather.c)
SLURM_UNDER = ("src/srun", "src/salloc", "src/sbatch", "src/scancel", "src/slurmd/slurmstepd",
               "src/slurmctld", "src/slurmd/slurmd",  # the controller's and node daemon's logs: node and job failures
               "src/common", "src/interfaces", "src/api", "src/plugins/task", "src/plugins/cgroup",
               "src/plugins/jobacct_gather", "src/plugins/mpi", "src/plugins/proctrack",
               "src/plugins/switch", "src/plugins/job_container", "src/plugins/prep",
               "src/plugins/launch", "src/bcast")
SLURM_SKIP = re.compile(r"/(?:testsuite|tests?)/|_test\.c$")


def clr_tags(tags: list[str]) -> list[str]:
    """Every full ROCm release tag of ROCm/clr (the runtime moved there at rocm-5.6.0)."""
    return [t for t in tags if re.fullmatch(r"rocm-\d+\.\d+\.\d+", t)]


CLR_UNDER = ("hipamd/src", "rocclr/device", "rocclr/platform", "rocclr/os", "rocclr/utils", "rocclr/thread")
CLR_SKIP = re.compile(r"/(?:tests?|samples?)/|/pal/|/gpu/")  # PAL and legacy-GPU backends are Windows/OpenCL


def rdma_tags(tags: list[str]) -> list[str]:
    """rdma-core's major releases, from its first (``rdma-core-12``, 2017) on: ``v13`` ...
    ``v23`` then ``v24.0`` ... ``v55.0``; point releases and release candidates are fixes. (Up
    to 2026-12-07 only ``vN.0`` was read, so v12-v23 were missed although ibv_devinfo and the
    verbs library printed most of their lines already.)"""
    return [t for t in tags if t == "rdma-core-12" or (re.fullmatch(r"v\d+(?:\.0)?", t) and version_key(t) >= (13,))]


RDMA_UNDER = ("libibverbs", "librdmacm", "providers/mlx5", "providers/mlx4", "infiniband-diags", "libibmad/fields.c",
              "libibmad/mad.h", "libibmad/rpc.c", "libibmad/resolve.c", "libibmad/sa.c")
RDMA_SKIP = re.compile(r"/(?:tests?)/|/man/")


# ROCm's HSA runtime (ROCR-Runtime) and the rocminfo tool that queries it
ROCR_UNDER = ("src/core", "src/inc/hsa.h", "src/hsa.h")
ROCR_SKIP = re.compile(r"/(?:tests?|samples?)/")


def nvidia_tags(tags: list[str]) -> list[str]:
    """The first and the last release of each driver branch of open-gpu-kernel-modules
    (515.43.04 … 595.45.04): a message's span starts and ends at a release that prints it."""
    ends: dict[int, list] = {}
    for t in tags:
        if re.fullmatch(r"\d+\.\d+(?:\.\d+)?", t):
            key = version_key(t)
            lo_hi = ends.setdefault(key[0], [(key, t), (key, t)])
            lo_hi[0] = min(lo_hi[0], (key, t))
            lo_hi[1] = max(lo_hi[1], (key, t))
    return [t for branch in sorted(ends) for t in sorted({ends[branch][0][1], ends[branch][1][1]}, key=version_key)]


# the kernel interface layer (kernel-open/nvidia), the RM's Unix glue (init, API mismatch,
# fallen off the bus) and its robust-channel code, which prints the Xid reports
# kernel-open: the kernel interface layer; src/nvidia: the RM itself (its CPU-side part: what
# GSP firmware runs is not in the repository)
# kernel-open/nvidia-peermem: the GPUDirect RDMA bridge NCCL's IB transport uses (its peer_err lines)
NVIDIA_UNDER = ("kernel-open/nvidia", "kernel-open/nvidia-peermem", "src/nvidia/arch/nvalloc", "src/nvidia/src/kernel")
NVIDIA_SKIP = re.compile(r"/(?:tests?)/|nv-dsi-parse-panel-props\.c$|nv-(?:gpio|i2c|imp|clk|backlight|dsi|hdmi)")


# Linux kernel drivers, read from Debian's linux-source packages (one directory per kernel
# version, e.g. linux/6.12.118/{mm,drivers/...}): the OOM killer, PCI link reports, Mellanox
# mlx5 (InfiniBand/RoCE NICs) and amdgpu, each filed under the component whose lines it explains
LINUX_PARTS = {
    # the kernel lines that end or stall a training node: the OOM killer and the memory
    # cgroup's report, page allocation failures, soft/hard lockups, hung tasks, RCU stalls,
    # panics, machine checks and memory failures, PCIe AER/DPC, IOMMU faults, EDAC, x86 traps
    "other": ("mm/oom_kill.c", "mm/memcontrol.c", "mm/page_alloc.c", "mm/memory-failure.c", "drivers/pci/pci.c",
              "drivers/pci/pcie/aer.c", "drivers/pci/pcie/dpc.c", "drivers/pci/pcie/err.c", "kernel/watchdog.c",
              "kernel/watchdog_hld.c", "kernel/watchdog_perf.c", "kernel/hung_task.c", "kernel/rcu/tree_stall.h",
              "kernel/panic.c", "arch/x86/kernel/cpu/mce/core.c", "arch/x86/kernel/traps.c", "arch/x86/mm/fault.c",
              "drivers/iommu/intel/dmar.c", "drivers/iommu/amd/iommu.c", "drivers/edac/edac_mc.c",
              "drivers/edac/ghes_edac.c"),
    "infiniband": ("drivers/net/ethernet/mellanox/mlx5/core", "drivers/infiniband/hw/mlx5"),
    "rocm": ("drivers/gpu/drm/amd/amdgpu", "drivers/gpu/drm/amd/amdkfd", "drivers/gpu/drm/scheduler"),
}
LINUX_SKIP = re.compile(r"/(?:tests?|selftests)/|_test\.c$")


def ucx_tags(tags: list[str], first: tuple[int, int] = (1, 2)) -> list[str]:
    """UCX releases from v1.2.0 (2017; HPC-X and older clusters still ship them) on: the last
    patch release of each minor version (``first``: the oldest minor version read)."""
    last: dict[tuple, tuple] = {}
    for t in tags:
        if re.fullmatch(r"v\d+\.\d+\.\d+", t) and version_key(t) >= first:
            key = version_key(t)
            if key[:2] not in last or key > last[key[:2]][0]:
                last[key[:2]] = (key, t)
    return [t for _, t in sorted(last.values())]


# UCX's utility layer (logging, signals, memory hooks, config), the InfiniBand/RoCE, TCP, CUDA
# and ROCm transports and the protocol layer Open MPI's pml/ucx drives; not its tools or tests
UCX_UNDER = ("src/ucs", "src/uct/base", "src/uct/ib", "src/uct/tcp", "src/uct/cuda", "src/uct/rocm", "src/ucp")
UCX_SKIP = re.compile(r"/(?:tests?|gtest|examples?|tools)/|/ucs/(?:stats|profile|vfs)/")


def libfabric_tags(tags: list[str]) -> list[str]:
    """libfabric from v1.6 (2018; the verbs provider's fi_ibv_* era) on: the last patch release
    of each minor version."""
    return ucx_tags(tags, first=(1, 6))  # the same vX.Y.Z tag scheme as UCX


# the core and the providers NCCL's aws-ofi-nccl plugin and MPI runs use for training: EFA,
# verbs (InfiniBand/RoCE) with its rxm/rxd utility layers, TCP, shm, and CXI (Slingshot)
LIBFABRIC_UNDER = ("src", "include", "prov/util", "prov/efa", "prov/verbs", "prov/rxm", "prov/rxd",
                   "prov/tcp", "prov/shm", "prov/cxi", "prov/hook")
LIBFABRIC_SKIP = re.compile(r"/(?:tests?|fabtests|unit)/|_test\.c$")


def nccl_tests_tags(tags: list[str]) -> list[str]:
    """nccl-tests releases from v2.10.0 on (v2.0.0/v2.9.0 predate its current output format)."""
    return [t for t in tags if re.fullmatch(r"v\d+\.\d+\.\d+", t) and version_key(t) >= (2, 10)]


NCCL_TESTS_UNDER = ("src/common.cu", "src/common.h", "src/timer.cc", "verifiable/verifiable.cu")
NCCL_TESTS_SKIP = re.compile(r"$^")


def ofi_nccl_tags(tags: list[str]) -> list[str]:
    """aws-ofi-nccl from v1.4 (2022) on: the last patch release of each minor version. Releases
    carry a plain tag, an "-aws" tag or both (v1.7.0-aws ... v1.13.2-aws have only the latter):
    one tag per version, the plain one where both exist."""
    by_version: dict[tuple, str] = {}
    for t in tags:
        m = re.fullmatch(r"v(\d+)\.(\d+)\.(\d+)(-aws)?", t)
        if not m:
            continue
        key = tuple(int(x) for x in m.groups()[:3])
        if key >= (1, 4) and (key not in by_version or not m.group(4)):
            by_version[key] = t
    last: dict[tuple, tuple] = {}
    for key, t in by_version.items():
        if key[:2] not in last or key > last[key[:2]][0]:
            last[key[:2]] = (key, t)
    return [t for _, t in sorted(last.values())]


def sharp_plugin_tags(tags: list[str]) -> list[str]:
    """Mellanox/nccl-rdma-sharp-plugins: its releases v1.0 … v2.1.0 (the hpcx-* tags mark the same
    code as shipped in HPC-X); newer code is read from the default branch."""
    return [t for t in tags if re.fullmatch(r"v\d+\.\d+(?:\.\d+)?", t)]


# WARN(...) and INFO(FLAGS, ...) are NCCL's own macros over the logger NCCL hands the plugin
SHARP_PLUGIN_UNDER = ("src", "include")
SHARP_PLUGIN_SKIP = re.compile(r"/tests?/|^tests?/")

OFI_NCCL_UNDER = ("src", "include")
OFI_NCCL_SKIP = re.compile(r"/(?:tests?|3rd-party)/|^3rd-party/|^tests?/")


# Gloo has no release tags: it is read at the last commit of each year from 2018 on and at
# its newest commit (``gloo-2019-12-18`` ...), the code PyTorch vendored in third_party/gloo
GLOO_UNDER = ("gloo",)
GLOO_SKIP = re.compile(r"^gloo/(?:test|benchmark|examples)/|^gloo/common/(?:error|logging)\.h$")
GLOO_FIRST_YEAR = 2018


def ompi_tags(tags: list[str]) -> list[str]:
    """Open MPI releases from v3.0 (2017) on: the last patch release of each minor version."""
    last: dict[tuple, tuple] = {}
    for t in tags:
        if re.fullmatch(r"v\d+\.\d+\.\d+", t) and version_key(t) >= (3, 0):
            key = version_key(t)
            if key[:2] not in last or key > last[key[:2]][0]:
                last[key[:2]] = (key, t)
    return [t for _, t in sorted(last.values())]


# Open MPI's help files (the texts opal_show_help prints), the two show_help.c that print
# the aggregated "N more processes have sent help message" lines, and the UCX components' error
# and warning calls (pml/ucx, osc/ucx, common/ucx: what mpirun-launched jobs on IB print); OSHMEM and the contrib/test
# trees are not what a training job runs
OMPI_UNDER = ("ompi", "opal", "orte")
OMPI_SUFFIXES = (".txt", "/show_help.c") + OMPI_UCX_FILES
OMPI_SKIP = re.compile(r"/(?:tests?|contrib)/|/pmix/pmix\d+x/pmix/")
