"""Write a realistic, reproducible training log of N lines for the batch benchmark.

Modelled on what a failed multi-node DeepSpeed/Megatron job with ``NCCL_DEBUG=INFO`` leaves
behind under ``srun -l``: launcher and DeepSpeed start-up lines from every rank, NCCL
communicator set-up from every rank interleaved (bootstrap, IB devices, affinity, channels,
trees, ``Init COMPLETE``) for several communicators, DeepSpeed / Megatron / mmengine progress
lines with changing numbers, ZeRO-3 allocator warnings from every rank, and at the end an NCCL
watchdog timeout with a Python traceback and torchrun's failure summary. Written as a stream,
so any size can be generated in constant memory.

    python bench/generate_log.py -n 1000000 -o /tmp/train_1m.log [--seed 1]
"""

from __future__ import annotations

import argparse
import random
import sys
from typing import Iterator, TextIO

NODES = 64
GPUS = 8


def _host(node: int) -> str:
    return f"cc0af148112143078d5c88b5e68679fd-task0-{node}"


def _ts(seconds: float) -> str:
    day = 10 + int(seconds // 86400)
    rest = seconds % 86400
    h, m, s = int(rest // 3600), int(rest % 3600 // 60), rest % 60
    return f"2024-09-{day:02d} {h:02d}:{m:02d}:{int(s):02d},{int((s % 1) * 1000):03d}"


class Job:
    def __init__(self, rng: random.Random) -> None:
        self.rng = rng
        self.ranks = NODES * GPUS
        self.clock = 14 * 3600 + 26 * 60.0
        self.pids = {r: 100 + r % GPUS + rng.randrange(30) for r in range(self.ranks)}

    def tick(self, seconds: float) -> None:
        self.clock += seconds

    def ts(self) -> str:
        return _ts(self.clock)

    def nccl(self, rank: int, tid: int, message: str, level: str = "INFO") -> str:
        node, gpu = divmod(rank, GPUS)
        return f"{rank}: {_host(node)}:{self.pids[rank]}:{tid} [{gpu}] NCCL {level} {message}"

    # ---- phases -------------------------------------------------------------------------
    def launch(self) -> Iterator[str]:
        for rank in range(self.ranks):
            yield f"{rank}: [{self.ts()}] [INFO] [real_accelerator.py:158:get_accelerator] Setting ds_accelerator to cuda (auto detect)"
        for node in range(NODES):
            yield (f"{node * GPUS}: [{self.ts()}] torch.distributed.run: [WARNING] Setting OMP_NUM_THREADS environment "
                   "variable for each process to be 1 in default, to avoid your system being overloaded, please further "
                   "tune the variable for optimal performance in your application as needed. ")
        self.tick(30)
        for rank in range(self.ranks):
            yield f"{rank}: [{self.ts()}] [INFO] [comm.py:637:init_distributed] cdb=None"
            yield f"{rank}: [{self.ts()}] [INFO] [comm.py:668:init_distributed] Initializing TorchBackend in DeepSpeed with backend nccl"
        for rank in range(self.ranks):
            yield (f"{rank}: I0910 14:27:22.{self.rng.randrange(10**6):06d}   {self.pids[rank]} ProcessGroupNCCL.cpp:686] "
                   f"[Rank {rank}] ProcessGroupNCCL initialization options:NCCL_ASYNC_ERROR_HANDLING: 1, NCCL_DESYNC_DEBUG: 0, "
                   "NCCL_ENABLE_TIMING: 0, NCCL_BLOCKING_WAIT: 0, TIMEOUT(ms): 1800000, USE_HIGH_PRIORITY_STREAM: 0, "
                   f"TORCH_DISTRIBUTED_DEBUG: OFF, NCCL_DEBUG: INFO, ID={self.rng.randrange(10**9)}")

    def comm_init(self, nranks: int) -> Iterator[str]:
        """One communicator's set-up from every rank, interleaved as srun merges them."""
        per_rank: list[list[str]] = []
        for rank in range(self.ranks):
            node, gpu = divmod(rank, GPUS)
            tid = self.pids[rank] + 60 + self.rng.randrange(20)
            comm = f"0x{self.rng.randrange(0x7f0000000000, 0x7fffffffffff):x}"
            ip = f"10.244.{174 + node // 200}.{node % 200 + 20}"
            mask = format(0xFF << (8 * (gpu % 4)), "x")
            lines = [
                self.nccl(rank, self.pids[rank], f"Bootstrap : Using eth0:{ip}<0>"),
                self.nccl(rank, self.pids[rank], "NET/Plugin : No plugin found (libnccl-net.so), using internal implementation"),
                self.nccl(rank, tid, "NCCL_IB_DISABLE set by environment to 0."),
                self.nccl(rank, tid, "NET/IB : Using [0]mlx5_0:1/IB [1]mlx5_1:1/IB [2]mlx5_2:1/IB [3]mlx5_3:1/IB [RO]; "
                                     f"OOB eth0:{ip}<0>"),
                self.nccl(rank, tid, "Using network IB"),
                self.nccl(rank, tid, f"Setting affinity for GPU {gpu} to {mask}"),
                self.nccl(rank, tid, f"Trees [0] {rank + 1}/-1/-1->{rank}->{max(rank - 1, -1)} [1] {rank + 1}/-1/-1->{rank}->"
                                     f"{max(rank - 1, -1)} comm {comm} nRanks {nranks} busId {gpu + 1}000"),
            ]
            for channel in range(8):
                peer = (rank + GPUS) % self.ranks
                lines.append(self.nccl(rank, tid, f"Channel {channel:02d}/0 : {rank}[{gpu + 1}000] -> {peer}[{gpu + 1}000] "
                                                  f"[send] via NET/IB/{channel % 4} comm {comm} nRanks {nranks}"))
                lines.append(self.nccl(rank, tid, f"Channel {channel:02d}/0 : {peer}[{gpu + 1}000] -> {rank}[{gpu + 1}000] "
                                                  f"[receive] via NET/IB/{channel % 4} comm {comm} nRanks {nranks}"))
            lines += [
                self.nccl(rank, tid, f"Connected all rings comm {comm} nRanks {nranks} busId {gpu + 1}000"),
                self.nccl(rank, tid, f"Connected all trees comm {comm} nRanks {nranks} busId {gpu + 1}000"),
                self.nccl(rank, tid, "threadThresholds 8/8/64 | 4096/8/64 | 512 | 512"),
                self.nccl(rank, tid, "8 coll channels, 8 nvls channels, 8 p2p channels, 2 p2p channels per peer"),
                self.nccl(rank, tid, f"comm {comm} rank {rank} nranks {nranks} cudaDev {gpu} busId {gpu + 1}000 "
                                     f"commId 0x{self.rng.randrange(16**16):016x} - Init COMPLETE"),
            ]
            per_rank.append(lines)
        yield f"0: {_host(0)}:{self.pids[0]}:{self.pids[0]} [0] NCCL INFO NCCL version 2.18.5+cuda12.2"
        # srun interleaves ranks line by line, roughly in order
        cursors = [0] * self.ranks
        live = list(range(self.ranks))
        while live:
            rank = live[self.rng.randrange(len(live))]
            yield per_rank[rank][cursors[rank]]
            cursors[rank] += 1
            if cursors[rank] == len(per_rank[rank]):
                live.remove(rank)
        self.tick(20)

    def config_dump(self) -> Iterator[str]:
        keys = ["activation_checkpointing_config", "amp_enabled", "bfloat16_enabled", "checkpoint_tag_validation_enabled",
                "communication_data_type", "dataloader_drop_last", "dump_state", "fp16_enabled", "global_rank",
                "gradient_accumulation_steps", "gradient_clipping", "steps_per_print", "train_batch_size",
                "train_micro_batch_size_per_gpu", "wall_clock_breakdown", "zero_enabled", "zero_optimization_stage"]
        yield f"0: [{self.ts()}] [INFO] [config.py:984:print] DeepSpeedEngine configuration:"
        for key in keys:
            yield f"0: [{self.ts()}] [INFO] [config.py:988:print]   {key} {'.' * (40 - len(key))} {self.rng.choice(['True', 'False', '1', '8', 'None'])}"

    def train(self, step: int, loss: float) -> Iterator[str]:
        self.tick(1.7)
        lr = 2e-5 * min(1.0, step / 2000)
        if step % 10 == 0:
            yield (f"0: [{self.ts()}] [INFO] [logging.py:96:log_dist] [Rank 0] step={step}, skipped=0, "
                   f"lr=[{lr:.6e}, {lr:.6e}], mom=[(0.9, 0.95), (0.9, 0.95)]")
            yield (f"0: [{self.ts()}] [INFO] [timer.py:260:stop] epoch=0/micro_step={step * 4}/global_step={step}, "
                   f"RunningAvgSamplesPerSec={self.rng.uniform(180, 200):.6f}, CurrSamplesPerSec={self.rng.uniform(170, 210):.6f}, "
                   f"MemAllocated=16.2GB, MaxMemAllocated={self.rng.uniform(60, 70):.2f}GB")
            last = self.ranks - 1
            yield (f"{last}:  iteration     {step:>6}/  100000 | consumed samples: {step * 2048:>12} | elapsed time per "
                   f"iteration (ms): {self.rng.uniform(1500, 1900):.1f} | learning rate: {lr:.6E} | global batch size:  2048 | "
                   f"lm loss: {loss:.6E} | loss scale: 1.0 | grad norm: {self.rng.uniform(0.5, 2):.3f} | "
                   f"number of skipped iterations:   0 | number of nan iterations:   0 |")
            yield (f"0: 09/10 {self.ts()[11:19]} - mmengine - INFO - Iter(train) [ {step:>5}/100000]  lr: {lr:.4e}  "
                   f"eta: 2 days, 3:{step % 60:02d}:{step % 59:02d}  time: {self.rng.uniform(1.5, 1.9):.4f}  "
                   f"data_time: {self.rng.uniform(0.01, 0.03):.4f}  memory: 61234  loss: {loss:.4f}")
        if step % 50 == 0:
            for rank in range(0, self.ranks, 4):
                yield (f"{rank}: [{self.ts()}] [WARNING] [stage3.py:1998:step] {self.rng.randrange(1, 9)} pytorch allocator "
                       "cache flushes since last step. this happens when there is high memory pressure and is detrimental "
                       "to performance. if this is happening frequently consider adjusting settings to reduce memory "
                       "consumption. If you are unable to make the cache flushes go away consider adding "
                       "get_accelerator().empty_cache() calls in your training loop to ensure that all ranks flush their "
                       "caches at the same time")
        if step % 500 == 0:
            for rank in range(self.ranks):
                yield (f"{rank}: /opt/conda/lib/python3.10/site-packages/torch/utils/checkpoint.py:429: UserWarning: "
                       "torch.utils.checkpoint: please pass in use_reentrant=True or use_reentrant=False explicitly.")

    def failure(self) -> Iterator[str]:
        self.tick(1800)
        bad = self.rng.randrange(self.ranks)
        for rank in range(0, self.ranks, 3):
            yield (f"{rank}: [E ProcessGroupNCCL.cpp:475] [Rank {rank}] Watchdog caught collective operation timeout: "
                   f"WorkNCCL(SeqNum=183211, OpType=ALLREDUCE, NumelIn=1, NumelOut=1, Timeout(ms)=1800000) ran for "
                   f"1800{self.rng.randrange(100, 999)} milliseconds before timing out.")
        yield self.nccl(bad, self.pids[bad] + 70, "NET/IB : Got completion from peer 10.244.174.31<45123> with error 12, "
                                                  "opcode 0, len 0, vendor err 129 (Recv)", level="WARN")
        frames = [
            ('/workspace/train.py', 412, 'main', 'trainer.train()'),
            ('/opt/conda/lib/python3.10/site-packages/deepspeed/runtime/engine.py', 2135, 'step', 'self._take_model_step(lr_kwargs)'),
            ('/opt/conda/lib/python3.10/site-packages/deepspeed/runtime/zero/stage3.py', 2047, 'step', 'self._overflow_check_and_loss_scale_update()'),
            ('/opt/conda/lib/python3.10/site-packages/torch/distributed/distributed_c10d.py', 2050, 'all_reduce', 'work.wait()'),
        ]
        yield f"{bad}: Traceback (most recent call last):"
        for path, line, func, code in frames:
            yield f'{bad}:   File "{path}", line {line}, in {func}'
            yield f"{bad}:     {code}"
        yield (f"{bad}: torch.distributed.DistBackendError: NCCL communicator was aborted on rank {bad}. Original reason "
               "for failure was: [Rank 3] Watchdog caught collective operation timeout")
        yield (f"0: [{self.ts()}] torch.distributed.elastic.multiprocessing.api: [ERROR] failed (exitcode: -6) local_rank: 3 "
               f"(pid: {self.pids[3]}) of binary: /opt/conda/bin/python")
        yield "0: torch.distributed.elastic.multiprocessing.errors.ChildFailedError: "
        yield "0: ============================================================"
        yield "0: train.py FAILED"


def generate(n_lines: int, out: TextIO, seed: int = 1) -> int:
    """Write exactly ``n_lines`` lines (the failure tail included) and return that number."""
    rng = random.Random(seed)
    job = Job(rng)
    tail = list(Job(random.Random(seed)).failure())
    budget = n_lines - len(tail)
    written = 0

    def body() -> Iterator[str]:
        yield from job.launch()
        for nranks in (job.ranks, job.ranks):
            yield from job.comm_init(nranks)
        yield from job.config_dump()
        step, loss = 1, 11.0
        while True:
            yield from job.train(step, loss)
            if step % 2000 == 0:
                yield from job.comm_init(job.ranks)  # a new sub-communicator (e.g. eval or checkpoint group)
            step += 1
            loss = max(1.2, loss * 0.9995 + rng.uniform(-0.01, 0.01))

    for line in body():
        if written >= budget:
            break
        out.write(line + "\n")
        written += 1
    for line in tail[: max(0, n_lines - written)]:
        out.write(line + "\n")
        written += 1
    return written


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("-n", "--lines", type=int, default=1_000_000)
    parser.add_argument("-o", "--output", default="-")
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args(argv)
    if args.output == "-":
        generate(args.lines, sys.stdout, args.seed)
    else:
        with open(args.output, "w", encoding="utf-8", buffering=1 << 20) as out:
            generate(args.lines, out, args.seed)
    return 0


if __name__ == "__main__":
    sys.exit(main())
