"""Whole-log triage: the first real failure, the cascade folded, the job's facts.

One streaming pass. Every line is explained (curated, catalogue, and by default the
embedding tier for unknown templates); multi-line events (Python tracebacks with their final
exception line, chained exceptions, C++ ``Exception raised from`` / ``frame #`` blocks,
torchrun's failure block) are read as one event. Each failure line is given a class by rules
that are deterministic and tested one by one (see ``classify``); the root cause is the
earliest line of the best class, ordered by timestamp where lines carry one:

0  a line whose entry marks it ``root_cause`` (not a timeout)
1  the final exception line of a traceback no entry explains (or an ``XError: message`` line)
2  a worker killed by a signal with no traceback of its own (exit code < 0 or 128+N)
2.5 another error line no entry explains (at error level or with no level), or a root cause
   only the embedding tier recognised
2.7 a root cause printed at warning level after which training went on (a progress line
   followed it): a performance warning repeated for hours did not kill the job; its pattern
   keeps this class for the rest of the log
2.9 a failure line printed about ``ran for`` before the first watchdog line (when the collective
   that timed out started): preferred to the timeouts, cascade and wrappers
3  timeouts (watchdog, ``timed out``, heartbeat): they report a hang, not what caused it
3.5 a worker that failed with a plain exit code (its traceback, when logged, wins)
4  cascade lines (knock-on errors)            5  wrappers (ChildFailedError, summaries)
Warning-level knock-on lines (SIGTERM sent to the survivors) are folded into the cascade but
never named the cause.
Advice and hypothesis lines ("might be caused by", CUDA_LAUNCH_BLOCKING hints) never win.
Texts (``why``, ``summary``) are built from KB titles and the facts, never generated.
"""

from __future__ import annotations

import re
from collections import deque
from dataclasses import dataclass, field
from typing import Any, Iterable, Iterator

SIGNALS = {
    1: "SIGHUP", 2: "SIGINT", 3: "SIGQUIT", 4: "SIGILL", 6: "SIGABRT", 7: "SIGBUS", 8: "SIGFPE",
    9: "SIGKILL", 10: "SIGUSR1", 11: "SIGSEGV", 12: "SIGUSR2", 13: "SIGPIPE", 14: "SIGALRM", 15: "SIGTERM",
}
SIGNAL_MEANING = {
    "SIGKILL": ("killed outright by another process (the kernel OOM killer, the scheduler, or a user)",
                "被其他进程直接杀死（内核 OOM killer、调度系统或用户）"),
    "SIGTERM": ("asked to terminate (by the launcher, the scheduler or a user)", "被要求终止（来自启动器、调度系统或用户）"),
    "SIGSEGV": ("crashed on an invalid memory access (segmentation fault)", "因非法内存访问崩溃（segmentation fault）"),
    "SIGABRT": ("aborted itself (a failed check or std::terminate)", "自行 abort（检查失败或 std::terminate）"),
    "SIGBUS": ("crashed on a bus error (often /dev/shm full or a truncated mmap'd file)", "因 bus error 崩溃（常见于 /dev/shm 写满或 mmap 的文件被截断）"),
    "SIGHUP": ("got a hang-up (its terminal or session closed)", "收到 hang-up（所在终端或会话被关闭）"),
    "SIGINT": ("was interrupted (Ctrl-C)", "被中断（Ctrl-C）"),
}

CLASS_NAMES = {0: "root_cause", 1: "exception", 2: "signal", 2.5: "unexplained_error", 2.7: "root_cause",
               2.9: "before_timeout", 3: "timeout",
               3.5: "worker_failed", 4: "cascade", 5: "wrapper"}
GROUP_ONLY = 99  # folded into the cascade, never a root-cause candidate

TRACEBACK_START = re.compile(r"^Traceback \(most recent call last\):")
TRACEBACK_FRAME = re.compile(r"^\s+(?:File \"|\S)|^\s*\^+\s*$|^\s*~+")
CHAIN_HEADER = re.compile(r"^(?:The above exception was the direct cause of the following exception|"
                          r"During handling of the above exception, another exception occurred):")
EXCEPTION_LINE = re.compile(r"^(?P<type>[A-Za-z_][\w.]*(?:Error|Exception|Exit|Interrupt|Failure|Warning|Timeout)|"
                            r"[a-z_][\w]*(?:\.[\w]+)+\.[A-Z]\w*)(?::\s?(?P<message>.*))?$")
CPP_FRAMES = re.compile(r"^(?:Exception raised from \S+ at \S+|frame #\d+:|\(no backtrace available\))")
ADVICE = re.compile(r"\b(?:might|may) be (?:caused|due|asynchronously reported)|CUDA_LAUNCH_BLOCKING|For debugging consider|"
                    r"consider (?:passing|setting|using)|To enable traceback see|set TORCH_SHOW_CPP_STACKTRACES", re.I)
# Timeouts that report a hang somewhere else (a collective, a peer, the store), not a network
# call that itself failed ("connect ... Connection timed out" is a failure of its own).
TIMEOUT = re.compile(r"Watchdog caught|collective operation timeout|ran for \d+ milliseconds|Timeout\(ms\)|"
                     r"heartbeat|timed out waiting|wait(?:ing)? timeout|Socket Timeout|"
                     r"Timed out (?:waiting|initializing)", re.I)
SIGNAL_DEATH = re.compile(r"exited on signal (?P<num>\d+)|died with <Signals\.(?P<name>SIG\w+): (?P<num2>\d+)>|"
                          r"Received (?P<num3>\d+) death signal|(?:exitcode|exit code|exit status)[=: ]+(?P<code>-?\d+)", re.I)
ERRORISH = re.compile(r"\b(?:error|errors|failed|failure|fatal|exception|abort(?:ed)?|killed|segmentation fault|"
                      r"core dumped|out of memory|oom|refused|unreachable|denied|illegal|invalid|cannot|can't|"
                      r"could not|unable to)\b", re.I)
FAILED_WORKER = re.compile(r"failed \(exitcode: (?P<code>-?\d+)\) local_rank: (?P<local_rank>\d+) \(pid: (?P<pid>\d+)\)")
BLOCK_FIELD = re.compile(r"^\s*(?P<key>time|host|rank|exitcode|error_file|traceback)\s*:\s*(?P<value>.*)$")
ROOT_BLOCK = re.compile(r"Root Cause \(first observed failure\)")
SLURM_EXIT = re.compile(r"srun: error: (?P<host>\S+): tasks? (?P<tasks>[\d,\-]+): (?:Exited with exit code (?P<code>\d+)|Killed|Terminated)")
_NCCL_VERSION = re.compile(r"NCCL version (\d+\.\d+\.\d+)")
_RCCL_VERSION = re.compile(r"RCCL version (\d+\.\d+\.\d+)")
_DS_VERSION = re.compile(r"DeepSpeed info: version=(\S+)")
_DS_VERSION2 = re.compile(r"\bDeepSpeed version[: ]+(\d[\w.+]*)")
_TORCH_VERSION = re.compile(r"\btorch(?:\s+version|==|\s*:)\s*(\d+\.\d+\.\d+[\w.+]*)")
_WORLD = re.compile(r"\b(?:world[_ ]size|WORLD_SIZE|nranks|nRanks)\b\s*[:=]?\s*(\d+)")
# GPU model names as drivers, nvidia-smi, NCCL and PyTorch print them ("NVIDIA A100-SXM4-80GB",
# "NVIDIA H100 80GB HBM3", "AMD Instinct MI250X", "MI300X"); and the capacity a CUDA/HIP OOM
# line states ("GPU 0 has a total capacity of 79.15 GiB")
_GPU_MODEL = re.compile(r"\bNVIDIA (?:(?:GeForce|Tesla|Quadro|RTX) )*(?:[A-Z]{1,2}\d{2,4}[A-Za-z]?|\d{4})(?:-[\w]+)*"
                        r"(?: (?:\d+GB|HBM3e?|PCIe|NVL|Ti))*"
                        r"|\b(?:AMD )?(?:Instinct )?MI[23]\d\d[A-Z]?\b")
_GPU_CAPACITY = re.compile(r"GPU \d+ has a total capacity of ([\d.]+ [KMGT]iB)")
# ProcessGroupNCCL's timeout reports (torch/csrc/distributed/c10d/ProcessGroupNCCL.cpp): the
# watchdog line "... collective operation timeout: WorkNCCL(SeqNum=5, OpType=ALLREDUCE, ...,
# Timeout(ms)=600000) ran for 600061 milliseconds before timing out.", "Timeout at NCCL work: N,
# last enqueued NCCL work: N, last completed NCCL work: N.", "failure detected by watchdog at work
# sequence id: N PG status: last enqueued work: N, last completed work: N" and "Received a dump
# signal due to a collective timeout from this local rank | from  rank N ..."
_WD_TIMEOUT = re.compile(r"ollective operation timeout: (?P<work>.*?) ran for (?P<ran>\d+) milliseconds")
_WD_FIELDS = (("seq", re.compile(r"SeqNum=(\d+)")), ("op_type", re.compile(r"OpType=(\w+)")),
              ("timeout_ms", re.compile(r"Timeout\(ms\)=(\d+)")))
_WD_RANK = re.compile(r"\bRank (\d+)\]")
_WD_SEQS = re.compile(r"last enqueued (?:NCCL )?work: (-?\d+), last completed (?:NCCL )?work: (-?\d+)")
_WD_DUMP = re.compile(r"dump signal due to a collective timeout from\s+(this local rank|rank\s+(-?\d+))")
_WD_AT = re.compile(r"(?:Timeout at NCCL work|failure detected by watchdog at work sequence id): (\d+)")
_TIME_OF_DAY = re.compile(r"(?<!\d)(\d{1,2}):(\d{2}):(\d{2})(?:[.,](\d+))?")


def _seconds(timestamp: str) -> float | None:
    """Seconds since midnight of a log timestamp (ISO, logging, glog, mmengine all carry
    HH:MM:SS[.frac]); None without one."""
    if not timestamp:
        return None
    m = _TIME_OF_DAY.search(timestamp)
    if not m:
        return None
    frac = float("0." + m.group(4)) if m.group(4) else 0.0
    return int(m.group(1)) * 3600 + int(m.group(2)) * 60 + int(m.group(3)) + frac


_WORLD_WORDS = ("nRanks", "nranks", "world_size", "world size", "WORLD_SIZE")
_GDR = re.compile(r"GPU Direct RDMA Enabled|/GDRDMA")
PROGRESS = re.compile(r"\b(?:iteration|iter|step|epoch|global_step)\b\s*[:=]?\s*\[?\s*\d+", re.I)


@dataclass
class Line:
    number: int  # the line's number in its own file (what the answer shows)
    file: str
    text: str
    answer: dict
    seq: int = 0  # its position over all files of the job (what orders lines); number if 0

    def __post_init__(self) -> None:
        if not self.seq:
            self.seq = self.number

    @property
    def context(self) -> dict:
        return self.answer.get("context") or {}

    @property
    def message(self) -> str:
        return self.answer.get("message") or self.text


@dataclass
class Candidate:
    cls: int
    line: Line
    order: tuple
    kind: str
    in_traceback: bool = False


@dataclass
class Group:
    key: str
    pattern_id: str | None
    role: str
    title: dict | None
    count: int = 0
    first_line: int = 0
    last_line: int = 0
    first_seq: int = 0
    last_seq: int = 0
    file: str = ""
    ranks: set = field(default_factory=set)
    hosts: set = field(default_factory=set)
    samples: list = field(default_factory=list)
    kind: str = ""


def signal_of(code: int | None) -> str | None:
    if code is None:
        return None
    if code < 0:
        return SIGNALS.get(-code, f"signal {-code}")
    if code > 128 and code - 128 in SIGNALS:
        return SIGNALS[code - 128]
    return None


def _timestamp(context: dict) -> str:
    return context.get("timestamp") or ""


def classify(line: Line, message: str, in_traceback_final: bool) -> tuple[int, str] | None:
    """The failure class of one line (see the module doc), or None for a line that is no failure."""
    a = line.answer
    role = a.get("role")
    severity = a.get("severity")
    if ADVICE.search(message) or role == "advice":
        return None
    if CPP_FRAMES.match(message) or TRACEBACK_START.match(message) or CHAIN_HEADER.match(message) \
            or message.startswith('File "') or not message:
        return None
    m = FAILED_WORKER.search(message)
    if m:
        code = _log_int(m.group("code"))
        # a worker that failed with a plain exit code: its own traceback is the cause when the
        # log has it; without one, this line is the first failure the log shows
        return (2, "signal") if signal_of(code) else (3.5, "worker_failed")
    m = SIGNAL_DEATH.search(message)
    if m and (m.group("num") or m.group("num2") or m.group("num3")
              or (m.group("code") and signal_of(_log_int(m.group("code"))))):
        return (2, "signal")
    if a.get("known"):
        if role in ("context", "progress"):
            return None
        if severity not in ("error", "fatal") and role not in ("root_cause", "cascade", "wrapper"):
            return None
        if severity == "info":
            return None
        semantic = a.get("tier") == "semantic"
        if TIMEOUT.search(message):
            # the first report of a hang, even inside a wrapper, is the best evidence of it
            return (3, "timeout")
        if role in ("wrapper", "cascade"):
            # a knock-on line at warning level (SIGTERM sent to the survivors) belongs in the
            # cascade but is never named the cause
            if severity == "warning":
                return (GROUP_ONLY, role)
            return (5 if role == "wrapper" else 4, role)
        return (2.5, "root_cause") if semantic else (0, "root_cause")
    # unknown to the KB: only clear error shapes count
    if in_traceback_final:
        if TIMEOUT.search(message):
            return (3, "timeout")
        return (1, "exception")
    if re.search(r"\bSegmentation fault\b|\bcore dumped\b|^Killed$|\bBus error\b", message):
        return (2, "signal")
    m = EXCEPTION_LINE.match(message)
    if m and re.search(r"(?:Error|Exception|Failure)$", m.group("type")) and m.group("message") is not None:
        return (1, "exception")
    level = (line.context.get("level") or "").lower()
    if level[:1] in ("i", "d", "w", "n", "v", "t"):  # info, debug, warning, notice, verbose, trace
        return None
    if level[:1] in ("e", "f", "c"):  # printed at error, fatal or critical level by its logger
        return (3, "timeout") if TIMEOUT.search(message) else (2.5, "error")
    if re.search(r"\bnot an? (?:failure|error)\b|\bno errors?\b|\b0 errors\b", message, re.I):
        return None
    if re.search(r"\b(?:warn|warning|deprecat\w*)\b", message, re.I) and not re.search(r"\bWARN\b.*\b(?:fail|error)", message):
        return None
    if ERRORISH.search(message) and re.search(r"\b(?:error|errors|failed|failure|fatal|exception|abort(?:ed)?|"
                                               r"killed|segmentation fault|core dumped)\b", message, re.I):
        return (3, "timeout") if TIMEOUT.search(message) else (2.5, "error")
    return None


class Triage:
    """Feed (file, line) pairs in order with their answers; ``result()`` gives the verdict."""

    SAMPLES = 3

    def __init__(self) -> None:
        self.n = 0
        self.best: Candidate | None = None
        self.groups: dict[str, Group] = {}
        self.tb_state: dict[tuple, str] = {}   # per (file, rank/pid): "" | "frames"
        self.chained: dict[tuple, bool] = {}   # a chain header was seen: the next exception wraps
        self.facts: dict = {"hosts": set(), "ranks": set(), "versions": {}, "transport": set(), "devices": set(),
                            "gpu_models": set()}
        self.last_progress: Line | None = None
        self.progress_before_root: Line | None = None
        self.block: dict = {}
        self.in_block = False
        self.timeline: list[tuple[int, str, str]] = []
        self.failed_workers: list[dict] = []
        self.neighbours: list[Line] = []
        self._verdicts: dict = {}
        self.watchdog: dict = {}  # what the first watchdog/timeout lines say (see _watchdog_facts)
        self._timed: deque = deque(maxlen=5000)  # (seconds of day, line, kind) of failure lines
        self._hang_start: float | None = None
        self._facts_read: set[str] = set()
        self.survived: set = set()  # warning-level root-cause patterns training went on after
        self._recent: deque = deque(maxlen=4)  # the last lines (None for known ones skipped unread)

    # ---- one line ------------------------------------------------------------------------
    def feed(self, line: Line) -> None:
        self.n += 1
        ctx = line.context
        raw_message = line.answer.get("_message", line.text)
        message = raw_message.strip()
        key = (line.file, ctx.get("rank") or ctx.get("pid") or "")
        self._where(ctx)
        if message not in self._facts_read:  # facts are sets and maxima: one read per message
            if len(self._facts_read) > 20_000:
                self._facts_read.clear()
            self._facts_read.add(message)
            self._facts(message)
        # multi-line events: a traceback ends at its exception line
        final = False
        state = self.tb_state.get(key, "")
        if TRACEBACK_START.match(message):
            self.tb_state[key] = "frames"
            return
        if CHAIN_HEADER.match(message):
            self.chained[key] = True
            return
        if state == "frames":
            at = line.text.find(message) if message else -1
            before = line.text[:at] if at > 0 else ""
            # indented past its prefix: "  File ...", "[rank1]:     code", "0:   File ..."
            indented = bool(before) and (not before.strip() or before.endswith(("  ", "\t")))
            if indented or message.startswith('File "') or TRACEBACK_FRAME.match(raw_message) or not message \
                    or re.fullmatch(r"[\^~\s]+|\.\.\.|\[Previous line repeated .*\]", message):
                return
            final = True
            self.tb_state[key] = ""
            if self.chained.pop(key, False):
                # "raise ... from": the exception after the header wraps the one before it
                self._group(line, "wrapper")
                return
        if ROOT_BLOCK.search(message):
            self.in_block = True
        if self.in_block:
            m = BLOCK_FIELD.match(message)
            if m:
                self.block[m.group("key")] = m.group("value").strip()
                return
            if message.startswith("====") or not message.strip():
                if self.block:
                    self.in_block = False
                return
        a = line.answer
        if not final:
            # a line's class depends on its entry and its message alone (an unknown line's also
            # on the first letter of its level): remembered
            if a.get("known"):
                memo_key = (a.get("pattern_id"), a.get("tier"), message)
            else:
                memo_key = (None, (line.context.get("level") or "")[:1].lower(), message)
            verdict = self._verdicts.get(memo_key, False)
            if verdict is False:
                if len(self._verdicts) > 20_000:
                    self._verdicts.clear()
                verdict = self._verdicts[memo_key] = classify(line, message, final)
        else:
            verdict = classify(line, message, final)
        if line.answer.get("role") == "progress" or (not line.answer.get("known") and PROGRESS.search(message)
                                                     and not ERRORISH.search(message)):
            self._progressed(line)
        self._recent.append(line)
        if verdict is None:
            return
        cls, kind = verdict
        if cls == 0 and self.survived and a.get("pattern_id") in self.survived:
            cls = 2.7
        if cls != 3:  # what a watchdog that fires later may point back to (see _watchdog_fired)
            at = _seconds(_timestamp(line.context))
            if at is not None:
                self._timed.append((at, line, kind))
        elif self._hang_start is None and self.watchdog.get("ran_for_ms") is not None:
            self._watchdog_fired(line)
        if cls == GROUP_ONLY:
            self._group(line, kind)
            return
        order = (cls, line.seq)
        cand = Candidate(cls, line, order, kind, final)
        if self.best is None or order < self.best.order or self._earlier_in_time(cand, self.best):
            if self.best is not None:
                self._group(self.best.line, self.best.kind)
            self.best = cand
            self.progress_before_root = self.last_progress
            self.neighbours = [l for l in list(self._recent)[:-1] if l is not None and not l.answer.get("known")]
        else:
            self._group(line, kind)

    @property
    def busy(self) -> bool:
        """Inside a multi-line event (a traceback, torchrun's failure block): every line counts."""
        return self.in_block or "frames" in self.tb_state.values()

    def skip(self, line: Line | None, context: dict, progress: bool = False) -> None:
        """A line ``feed`` would neither classify nor read facts from (see ``TriageStream``):
        counted, its rank and host noted, kept as a neighbour when unknown (``line``, else
        None) and as the last progress when ``progress``."""
        self.n += 1
        self._where(context)
        self._recent.append(line)
        if progress:
            self._progressed(line)

    def _where(self, context: dict) -> None:
        """The host, rank and GPU (NCCL's ``[dev]`` prefix) a line was printed from."""
        host = context.get("host")
        if host:
            self.facts["hosts"].add(host)
        rank = context.get("rank")
        if rank not in (None, ""):
            self.facts["ranks"].add(str(rank))
        device = context.get("device")
        if device not in (None, "") and len(self.facts["devices"]) < 100_000:
            self.facts["devices"].add((host or "", device))

    def _progressed(self, line: Line) -> None:
        """Training went on: a warning-level root cause before it did not stop the job."""
        self.last_progress = line
        b = self.best
        if b is not None and b.cls == 0 and b.line.answer.get("severity") == "warning":
            self.survived.add(b.line.answer.get("pattern_id"))
            b.cls, b.order = 2.7, (2.7, b.line.seq)

    @staticmethod
    def _earlier_in_time(new: Candidate, best: Candidate) -> bool:
        """Interleaved ranks: of two lines of one class, the one stamped earlier came first,
        when both carry a timestamp of the same format (so the stamps compare)."""
        if new.cls != best.cls:
            return False
        a, b = new.line.context, best.line.context
        ta, tb = _timestamp(a), _timestamp(b)
        return bool(ta and tb and a.get("format") == b.get("format") and ta < tb)

    def _group(self, line: Line, kind: str) -> None:
        a = line.answer
        gkey = a.get("pattern_id") or ("template:" + (a.get("_template") or line.text[:80]))
        g = self.groups.get(gkey)
        if g is None:
            role = a.get("role") or ("wrapper" if kind in ("wrapper", "worker_failed") else "cascade")
            g = self.groups[gkey] = Group(gkey, a.get("pattern_id"), role, a.get("title"), first_line=line.number,
                                          first_seq=line.seq, file=line.file, kind=kind)
        g.count += 1
        if line.seq < g.first_seq:  # a candidate that lost its place joins its group late
            g.first_seq, g.first_line, g.file = line.seq, line.number, line.file
        if line.seq >= g.last_seq:
            g.last_seq, g.last_line = line.seq, line.number
        ctx = line.context
        if ctx.get("rank") not in (None, ""):
            g.ranks.add(str(ctx["rank"]))
        if ctx.get("host"):
            g.hosts.add(ctx["host"])
        if len(g.samples) < self.SAMPLES:
            g.samples.append(line.text)

    def _facts(self, message: str) -> None:
        self._transport(message)
        self._value_facts(message)

    def _transport(self, message: str) -> None:
        """Facts read from words alone (no digit), the same on every line of a shape."""
        f = self.facts
        if "NET/" in message:
            if "NET/IB" in message:
                f["transport"].add("IB" if "RoCE" not in message else "RoCE")
            elif "NET/Socket" in message:
                f["transport"].add("socket")
        if "GDR" in message or "GPU Direct RDMA Enabled" in message:
            if _GDR.search(message):
                f["transport"].add("GDR")

    def _value_facts(self, message: str) -> None:
        """Facts whose values are numbers: read from each line they occur in."""
        f = self.facts
        # cheap substring gates first: this runs on every line a fact's words occur in
        if "version" in message:
            m = _NCCL_VERSION.search(message)
            if m:
                f["versions"]["nccl"] = m.group(1)
            m = _RCCL_VERSION.search(message)
            if m:
                f["versions"]["rccl"] = m.group(1)
            m = _DS_VERSION.search(message) or _DS_VERSION2.search(message)
            if m:
                f["versions"]["deepspeed"] = m.group(1).rstrip(",")
        if "torch" in message:
            m = _TORCH_VERSION.search(message)
            if m:
                f["versions"]["torch"] = m.group(1)
        first = None  # the earliest match, as _WORLD.search finds it, without scanning every position
        for word in _WORLD_WORDS:  # NCCL prints nRanks on every rank's trees line
            at = message.find(word)
            while at >= 0 and (first is None or at < first.start()):
                m = _WORLD.match(message, at)  # its \b looks at the character before ``at``
                if m:
                    first = m
                    break
                at = message.find(word, at + 1)
        if first is not None:
            f["world_size"] = max(_log_int(first.group(1)) or 0, f.get("world_size", 0))
        if "NVIDIA " in message or "Instinct" in message or "MI3" in message or "MI2" in message:
            for m in _GPU_MODEL.finditer(message):
                if len(f["gpu_models"]) < 8:
                    f["gpu_models"].add(m.group(0).strip())
        if "ollective operation timeout" in message or "dump signal" in message or "NCCL work" in message \
                or "last enqueued" in message or "failure detected by watchdog" in message:
            self._watchdog_facts(message)
        if "total capacity" in message:
            m = _GPU_CAPACITY.search(message)
            if m:
                f["gpu_capacity"] = m.group(1)
        if "exitcode" in message:
            m = FAILED_WORKER.search(message)
            if m:
                self.failed_workers.append({k: m.group(k) for k in ("code", "local_rank", "pid")})
        if "srun" in message:
            m = SLURM_EXIT.search(message)
            if m:
                f.setdefault("slurm", []).append({k: v for k, v in m.groupdict().items() if v})

    # ---- the verdict -----------------------------------------------------------------------
    def result(self) -> dict:
        facts = self._facts_out()
        ordered = sorted(self.groups.values(), key=lambda g: g.first_seq)
        cascade = [self._group_out(g) for g in ordered]
        root = None
        if self.best is not None:
            b = self.best
            a = b.line.answer
            root = {
                "line_number": b.line.number,
                "file": b.line.file,
                "line": b.line.text,
                "pattern_id": a.get("pattern_id"),
                "tier": a.get("tier"),
                "kind": b.kind if b.kind in ("signal", "worker_failed") else CLASS_NAMES[b.cls],
                "title": self._title(b),
                "explanation": a.get("explanation"),
                "action": a.get("action"),
                "why": self._why(b, ordered),
                "nearby_unknown": [l.text for l in self.neighbours],
            }
        out = {
            "root_cause": root,
            "reason": None if root else "no failure found: no line is an error, a failed worker or a crash",
            "cascade": cascade,
            "facts": facts,
            "timeline": self._timeline(root, ordered),
        }
        out["summary"] = self._summary(out)
        return out

    def _title(self, b: Candidate) -> dict:
        a = b.line.answer
        if b.kind == "signal":
            m = FAILED_WORKER.search(b.line.text)
            code = _log_int(m.group("code")) if m else None
            sig = signal_of(code) if code is not None else None
            who = f" (local_rank {m.group('local_rank')})" if m else ""
            if sig:
                return {"en": f"worker{who} killed by {sig}", "zh": f"worker{who} 被 {sig} 终止"}
        if a.get("known") and a.get("title") and a["title"].get("en"):
            return a["title"]
        text = b.line.answer.get("_message") or b.line.text
        return {"en": text[:160], "zh": text[:160]}

    def _group_out(self, g: Group) -> dict:
        return {"pattern_id": g.pattern_id, "role": g.role, "title": g.title, "count": g.count,
                "file": g.file, "first_line": g.first_line, "last_line": g.last_line, "ranks": sorted(g.ranks, key=_num),
                "hosts": sorted(g.hosts), "sample_lines": g.samples}

    def _facts_out(self) -> dict:
        f = self.facts
        out = {
            "lines": self.n,
            "hosts": sorted(f["hosts"]),
            "nodes": len(f["hosts"]) or None,
            "ranks_seen": len(f["ranks"]) or None,
            "world_size": f.get("world_size"),
            "versions": f["versions"],
            "transport": sorted(f["transport"]),
            "gpus": self._gpus_out(),
            "watchdog": dict(self.watchdog) or None,
            "last_progress": None,
        }
        prog = self.progress_before_root if self.best else self.last_progress
        if prog is not None:
            out["last_progress"] = {"file": prog.file, "line_number": prog.number, "line": prog.text,
                                    "time": _timestamp(prog.context) or None}
        block = self.block
        failing = {}
        if block.get("rank"):
            m = re.match(r"(\d+)(?: \(local_rank: (\d+)\))?", block["rank"])
            if m:
                failing["rank"] = _log_int(m.group(1))
                if m.group(2):
                    failing["local_rank"] = _log_int(m.group(2))
        if block.get("host"):
            failing["host"] = block["host"]
        code = None
        if block.get("exitcode"):
            m = re.match(r"(-?\d+)", block["exitcode"])
            code = _log_int(m.group(1)) if m else None
        elif self.failed_workers:
            code = _log_int(self.failed_workers[0]["code"])
            failing.setdefault("local_rank", _log_int(self.failed_workers[0]["local_rank"]))
        elif f.get("slurm"):
            s = f["slurm"][0]
            code = _log_int(s["code"]) if s.get("code") else None
            failing.setdefault("host", s.get("host"))
        if code is not None:
            failing["exit_code"] = code
            failing["signal"] = signal_of(code)
        if block:
            ef = block.get("error_file", "")
            failing["error_file"] = None if (not ef or ef.startswith("<N/A>")) else ef
            failing["error_file_existed"] = bool(ef and not ef.startswith("<N/A>"))
        if self.best is not None and not failing.get("host"):
            ctx = self.best.line.context
            if ctx.get("host"):
                failing["host"] = ctx["host"]
            if ctx.get("rank") not in (None, "") and "rank" not in failing:
                failing["rank"] = _num(str(ctx["rank"]))
        out["failing"] = failing or None
        return out

    def _watchdog_facts(self, message: str) -> None:
        """The first collective timeout as ProcessGroupNCCL reports it: which collective
        (SeqNum, OpType), its Timeout(ms), how long it ran, the last enqueued and completed work,
        and the rank a dump signal came from (``this local rank`` or ``rank N``)."""
        w = self.watchdog
        m = _WD_TIMEOUT.search(message)
        if m and "ran_for_ms" not in w:
            body = m.group("work")
            for key, rx in _WD_FIELDS:
                f = rx.search(body)
                if f:
                    number = _log_int(f.group(1)) if f.group(1).lstrip("-").isdigit() else None
                    w[key] = f.group(1) if number is None else number
            ran = _log_int(m.group("ran"))
            if ran is not None:
                w["ran_for_ms"] = ran
            r = _WD_RANK.search(message)
            if r:
                w["rank"] = _log_int(r.group(1))
        m = _WD_SEQS.search(message)
        if m and "last_enqueued" not in w:
            w["last_enqueued"], w["last_completed"] = _log_int(m.group(1)), _log_int(m.group(2))
        m = _WD_DUMP.search(message)
        if m and "dump_from" not in w:
            w["dump_from"] = "this local rank" if m.group(1).startswith("this") else _log_int(m.group(2))
        m = _WD_AT.search(message)
        if m and "seq" not in w:
            w["seq"] = _log_int(m.group(1))

    def _watchdog_fired(self, line: Line) -> None:
        """The first watchdog line with a time: the collective it reports started ``ran for``
        before it. A failure line printed then (within a tenth of the wait, at least 30 s) is
        the first sign of what hung, and is preferred to the timeouts and their knock-ons."""
        at = _seconds(_timestamp(line.context))
        if at is None:
            return
        ran = self.watchdog["ran_for_ms"] / 1000.0
        self._hang_start = start = at - ran
        window = max(30.0, ran / 10)
        b = self.best
        if b is not None and b.cls < 2.9:
            return
        for secs, earlier, kind in self._timed:
            gap = abs((secs - start + 43200) % 86400 - 43200)  # time of day, across midnight
            if gap <= window and earlier.seq < line.seq:
                if b is not None:
                    self._group(b.line, b.kind)
                self.best = Candidate(2.9, earlier, (2.9, earlier.seq), "before_timeout")
                self.watchdog["started_near_line"] = {"file": earlier.file, "line_number": earlier.number}
                self._ungroup(earlier)
                return

    def _ungroup(self, line: Line) -> None:
        """Take a line that was folded into the cascade back out (it became the root cause)."""
        a = line.answer
        gkey = a.get("pattern_id") or ("template:" + (a.get("_template") or line.text[:80]))
        g = self.groups.get(gkey)
        if g is None:
            return
        g.count -= 1
        if g.count <= 0:
            del self.groups[gkey]
        elif line.text in g.samples:
            g.samples.remove(line.text)

    def _gpus_out(self) -> dict | None:
        """GPUs the log shows: devices seen in NCCL's per-line ``[dev]`` prefix (per host), the
        model names it prints, the capacity an OOM line states."""
        f = self.facts
        per_host: dict[str, int] = {}
        for host, _ in f["devices"]:
            per_host[host] = per_host.get(host, 0) + 1
        out = {
            "devices_seen": len(f["devices"]) or None,
            "per_node": max(per_host.values()) if per_host else None,
            "models": sorted(f["gpu_models"]),
            "capacity": f.get("gpu_capacity"),
        }
        return out if any(v for v in out.values()) else None

    def _why(self, b: Candidate, groups: list[Group]) -> dict:
        later = sum(g.count for g in groups if g.first_seq > b.line.seq)
        survived = sum(g.count for g in groups if g.pattern_id in self.survived)
        earlier = sum(g.count for g in groups if g.first_seq < b.line.seq and g.pattern_id not in self.survived)
        n_timeouts = sum(g.count for g in self.groups.values() if g.kind == "timeout")
        en, zh = [], []
        if b.cls == 0:
            en.append("Its entry marks it as a root cause: a line that usually is the problem itself.")
            zh.append("其条目将它标为根因：这类日志通常就是问题本身。")
        elif b.cls == 1:
            en.append("It is the error no entry explains as a consequence: the exception a traceback ended with,"
                      " or an error line, and nothing earlier is marked as a root cause.")
            zh.append("没有条目把它解释为后果：它是 traceback 最终抛出的异常或一条错误日志，且之前没有被标为根因的行。")
        elif b.cls == 2:
            sig = None
            m = FAILED_WORKER.search(b.line.text)
            if m:
                sig = signal_of(_log_int(m.group("code")))
            meaning = SIGNAL_MEANING.get(sig or "", ("stopped by a signal", "被信号终止"))
            en.append(f"A worker was {meaning[0]}" + (f" ({sig})" if sig else "") +
                      " and logged no traceback of its own, so the signal is the first failure the log shows.")
            zh.append(f"有 worker {meaning[1]}" + (f"（{sig}）" if sig else "") + "，且没有留下自己的 traceback，因此该信号就是日志中最早可见的故障。")
        elif b.cls == 2.5:
            en.append("No entry marks an earlier line as a root cause; this is the first error line (or a line"
                      " recognised only by similar wording), so read it and the lines around it.")
            zh.append("之前没有被条目标为根因的行；这是第一条错误日志（或仅凭相似措辞识别出的行），请结合它前后的日志判断。")
        elif b.cls == 2.9:
            w = self.watchdog
            secs = round(w["ran_for_ms"] / 1000)
            en.append(f"The watchdog reports a collective that ran for {secs} s before timing out; this line was"
                      " printed about that long before the watchdog fired, when the collective started, so it is"
                      " the first sign of what hung.")
            zh.append(f"watchdog 报告某个集合通信运行了 {secs} 秒后超时；这一行大约正是在 watchdog 触发前这么久打印的，"
                      "即该集合通信开始的时刻，所以它是卡住原因的最早迹象。")
        elif b.cls == 3.5:
            en.append("A worker exited with an error code and no traceback of its own is in this log: its own"
                      " output or error file holds the cause.")
            zh.append("有 worker 以错误码退出，而这份日志里没有它自己的 traceback：原因在它自己的输出或 error file 里。")
        elif b.cls == 3:
            en.append("Only timeouts are left: a timeout reports that a collective or a peer hung, so the cause is"
                      " on the rank that stopped making progress, which this log may not show.")
            zh.append("只剩下超时：超时只说明集合通信或对端卡住（hang），真正原因在停止推进的那个 rank 上，这份日志可能没有包含。")
        else:
            en.append("No line marked as a root cause was found; this is the earliest error, and the real cause may"
                      " be in another rank's or node's log.")
            zh.append("没有找到被标为根因的行；这是最早的一条错误，真正原因可能在其他 rank 或节点的日志里。")
        if later:
            en.append(f"The {later} error line(s) after it are consequences (cascade, wrappers, shutdown).")
            zh.append(f"其后的 {later} 条错误日志都是后果（级联错误、包装信息、退出流程）。")
        if earlier:
            en.append(f"The {earlier} louder line(s) printed before it are knock-on reports or wrappers, not causes.")
            zh.append(f"在它之前打印的 {earlier} 条错误是连带报错或包装信息，并非原因。")
        if survived and b.cls != 2.7:
            en.append(f"{survived} warning line(s) that can cause failures were followed by training progress,"
                      " so they did not stop the job.")
            zh.append(f"另有 {survived} 条可能导致故障的警告之后训练仍在推进，说明它们并未导致任务终止。")
        if n_timeouts and b.cls < 3:
            en.append("Timeouts in the log come from ranks left waiting on it.")
            zh.append("日志中的超时来自等待它的其他 rank。")
        return {"en": " ".join(en), "zh": "".join(zh)}

    def _timeline(self, root: dict | None, groups: list[Group]) -> list[dict]:
        items = []
        prog = self.progress_before_root if self.best else self.last_progress
        if prog is not None:
            items.append((prog.seq, {"file": prog.file, "line_number": prog.number, "role": "progress",
                                     "line": prog.text}))
        if root and self.best is not None:
            items.append((self.best.line.seq, {"file": root["file"], "line_number": root["line_number"],
                                               "role": "root_cause", "line": root["line"]}))
        for g in groups[:8]:
            items.append((g.first_seq, {"file": g.file, "line_number": g.first_line, "role": g.role,
                                        "line": g.samples[0]}))
        items.sort(key=lambda i: i[0])
        return [item for _, item in items[:12]]

    def _summary(self, out: dict) -> dict:
        root, facts = out["root_cause"], out["facts"]
        if root is None:
            return {"en": "No failure found in this log.", "zh": "日志中没有发现故障。"}
        where_en, where_zh = f"line {root['line_number']}", f"第 {root['line_number']} 行"
        failing = facts.get("failing") or {}
        if failing.get("rank") is not None:
            where_en += f", rank {failing['rank']}"
            where_zh += f"，rank {failing['rank']}"
        if failing.get("host"):
            where_en += f" on {failing['host']}"
            where_zh += f"，主机 {failing['host']}"
        title = root["title"] or {}
        en = [f"Root cause: {title.get('en', '')} ({where_en})."]
        zh = [f"根因：{title.get('zh', '')}（{where_zh}）。"]
        n = sum(g["count"] for g in out["cascade"])
        if n:
            en.append(f"Then {n} knock-on line(s) in {len(out['cascade'])} group(s).")
            zh.append(f"随后有 {n} 条连带日志，共 {len(out['cascade'])} 组。")
        tail_en, tail_zh = [], []
        if facts.get("last_progress"):
            tail_en.append(f"last progress at line {facts['last_progress']['line_number']}")
            tail_zh.append(f"最后一次进度在第 {facts['last_progress']['line_number']} 行")
        if failing.get("exit_code") is not None:
            sig = f" ({failing['signal']})" if failing.get("signal") else ""
            tail_en.append(f"exit code {failing['exit_code']}{sig}")
            tail_zh.append(f"退出码 {failing['exit_code']}{sig}")
        if tail_en:
            joined = "; ".join(tail_en)
            en.append(joined[:1].upper() + joined[1:] + ".")
            zh.append("，".join(tail_zh) + "。")
        return {"en": "\n".join(en), "zh": "\n".join(zh)}


def _num(value: str):
    number = _log_int(value) if str(value).isdigit() else None
    return value if number is None else number


def _log_int(text: str) -> int | None:
    """A number read from a log line, or None when it does not fit 64 bits: no rank, exit code
    or sequence number is that large (a damaged line is), and JSON encoders refuse it."""
    value = int(text)
    return value if -(1 << 63) <= value < (1 << 63) else None


def triage_lines(explainer, sources: Iterable[tuple[str, str]], semantic: bool = True, batch: int = 2048) -> dict:
    """Triage ``(file name, line)`` pairs in order with one explainer, line by line (what the
    HTTP route and the rule tests use; ``TriageStream`` reads files at the batch engine's speed
    and gives the same verdict). The embedding tier is asked only about unknown lines that
    could be failures (``suspicious``), as ``TriageStream`` does."""
    from indexer.normalize import mask_message, normalize_line

    t = Triage()
    seq = 0
    numbers: dict[str, int] = {}
    buf: list[tuple[str, str]] = []

    def flush() -> None:
        nonlocal seq
        texts = [text for _, text in buf]
        answers = explainer.explain_many(texts, semantic=False)
        if semantic:
            ask = [i for i, a in enumerate(answers) if suspicious(a, texts[i], a.get("context") or {})]
            if ask:
                for i, answer in zip(ask, explainer.explain_many([texts[i] for i in ask], semantic=True)):
                    answers[i] = answer
        for (name, text), answer in zip(buf, answers):
            seq += 1
            numbers[name] = number = numbers.get(name, 0) + 1
            message = normalize_line(text).message
            answer["_message"] = message
            answer["_template"] = mask_message(message)[:200]
            t.feed(Line(number, name, text, answer, seq))
        buf.clear()

    for pair in sources:
        buf.append(pair)
        if len(buf) >= batch:
            flush()
    if buf:
        flush()
    out = t.result()
    out["problems"] = []  # lines handed over in memory: nothing to lose on the way
    return out


# Where a line whose answer alone says "no failure" (a known INFO/context/progress line, or an
# unknown line not at error level) could still matter to ``Triage.feed``: every word or shape
# its rules look for (tracebacks, chained exceptions, torchrun's block, exit codes and signals,
# error words, exception lines, progress counters). A superset is safe: such lines are simply
# read in full. Facts (versions, world size, transport) are read from the raw line alone.
_ANY_HINT = (  # matters for any line: multi-line events, exit codes and signals
    r"Traceback \(most recent call last\)|The above exception was the direct cause|"
    r"During handling of the above exception|Root Cause \(first observed failure\)|"
    r"exited on signal|died with <Signals|death signal|exit ?code|exit status"
)
_UNKNOWN_HINT = (  # matters for lines no entry knows: error words, exception lines, progress counters
    r"(?:Error|Exception|Failure|Exit|Interrupt|Warning|Timeout):|"
    r"\b(?:errors?|failed|failure|fatal|exception|abort(?:ed)?|killed|segmentation fault|core dumped|bus error)\b|"
    r"\b(?:iteration|iter|step|epoch|global_step)\b"
)
_FACTS_HINT = (
    r"[NR]CCL version|DeepSpeed info|DeepSpeed version|\btorch(?:\s+version|==|\s*:)|world[_ ]size|WORLD_SIZE|"
    r"\bn[Rr]anks\b|exitcode|srun: error|NVIDIA |Instinct|\bMI[23]\d\d|total capacity|"
    r"ollective operation timeout|dump signal|NCCL work|last enqueued|failure detected by watchdog"
)
SKIP, PROGRESS_ONLY, UNKNOWN_ONLY, FEED = 0, 1, 2, 3
ANY_HIT, UNKNOWN_HIT, FACTS_HIT = 1, 2, 4
_HINTS = None


def hints() -> Any:
    """The three hints in one case-insensitive RE2: group 1 facts, group 2 any line, else
    unknown lines only."""
    global _HINTS
    if _HINTS is None:
        import re2

        opts = re2.Options()
        opts.case_sensitive = False
        _HINTS = re2.compile(f"({_FACTS_HINT})|({_ANY_HINT})|{_UNKNOWN_HINT}", opts)
    return _HINTS


def hint_bits(text: str | bytes) -> int:
    bits = 0
    for m in hints().finditer(text):
        bits |= FACTS_HIT if m.start(1) >= 0 else ANY_HIT if m.start(2) >= 0 else UNKNOWN_HIT
    return bits


def _error_level(context: dict) -> bool:
    return (context.get("level") or "")[:1].lower() in ("e", "f", "c")


def suspicious(answer: dict, text: str, context: dict) -> bool:
    """An unknown line the embedding tier is asked about: one whose words could make it a
    failure (an error word, an exception line, an exit code) or printed at error level. The
    rest (progress bars, chatter, junk) stays unknown without costing an embedding each."""
    return not answer.get("known") and bool(hint_bits(text) & (ANY_HIT | UNKNOWN_HIT) or _error_level(context))


class TriageStream:
    """Triage sources through the batch engine: each distinct line shape is answered once
    (regex and catalogue; the embedding tier only for ``suspicious`` unknown templates), and
    only the lines that can change the verdict are read in full by ``Triage.feed``; the rest are
    counted with their rank, host and GPU (and facts, where a fact's words occur). One pass,
    memory bounded by the engine's caches, not by the log.
    """

    def __init__(self, explainer, semantic: bool = True, engine=None) -> None:
        """``engine``: a batch ``Engine`` of the same explainer to reuse (its caches carry over)."""
        from service.batch.engine import Engine

        if engine is None:
            engine = Engine(explainer, semantic=False)
            # triage keeps no per-line output: smaller caches cost it little speed and hold
            # its memory near the explainer's own on logs of endless variety
            engine.shape_limit, engine.remembered_limit = 10_000, 20_000
        self.engine = engine
        self.explainer = explainer
        self.semantic = semantic
        self._semantic_cache: dict[str, dict] = {}  # template -> the embedding tier's answer
        self.triage = Triage()
        self.seq = 0
        self._key_hints: dict[bytes, int] = {}
        self._parsed: dict = {}
        self.problems: list = []

    @staticmethod
    def _flag(answer) -> int:
        if not answer.known:
            return UNKNOWN_ONLY
        role = answer.role
        severity = {0: "info", 1: "warning", 2: "error", 3: "fatal"}.get(answer.rank)
        if role == "progress":
            return PROGRESS_ONLY
        if role in ("context", "advice") or severity in ("info", "debug"):
            return SKIP
        if severity not in ("error", "fatal") and role not in ("root_cause", "cascade", "wrapper"):
            return SKIP
        return FEED

    def _hints(self, keys: list[bytes]) -> list[int]:
        """For each distinct shape key of a chunk: 0, or ANY_HIT / UNKNOWN_HIT / FACTS_HIT bits. A shape key
        is its lines with digits and pointer letters zeroed, so the words the hints look for
        (none holds a digit) are the same on every line of it."""
        cache = self._key_hints
        out = []
        for key in keys:
            bits = cache.get(key)
            if bits is None:
                bits = hint_bits(key)
                if b"NET/" in key or b"GDR" in key or b"GPU Direct" in key:
                    self.triage._transport(key.decode("utf-8", "replace"))
                if len(cache) > 50_000:
                    cache.clear()
                cache[key] = bits
            out.append(bits)
        return out

    def feed_chunk(self, chunk, name: str) -> None:
        from indexer.normalize import mask_message

        ann = self.engine.annotate(chunk, need_context=True, context_dicts=True, keep_messages=True)
        hints = self._hints(ann.shape_keys)
        ids = ann.key_ids
        t = self.triage
        texts, answers, contexts = ann.texts, ann.answers, ann.contexts
        semantic = self._semantic(texts, answers, contexts, hints, ids) if self.semantic else {}
        first = chunk.first_line
        for i in range(len(answers)):
            self.seq += 1
            a = answers[i]
            f = a.mark
            if f is None:
                f = a.mark = self._flag(a)
            ctx = contexts[i] or {}
            h = hints[ids[i]]
            if f == FEED or h & ANY_HIT or t.busy or (f == UNKNOWN_ONLY and (h & UNKNOWN_HIT or _error_level(ctx))):
                text = texts[i]
                sem = semantic.get(i)
                if sem is not None and sem["known"]:
                    answer = dict(sem, line=text, context=ctx)
                    message = ann.messages[i]
                    answer["_message"] = message
                    answer["_template"] = message[:200]
                    t.feed(Line(first + i, name, text, answer, self.seq))
                    continue
                answer = self._record(a, text, ann.fields[i], ctx)
                message = ann.messages[i]
                answer["_message"] = message
                answer["_template"] = (a.template or mask_message(message))[:200] if not a.known else message[:200]
                t.feed(Line(first + i, name, text, answer, self.seq))
                continue
            if h & FACTS_HIT:
                t._value_facts(texts[i])
            line = Line(first + i, name, texts[i], {"known": a.known, "context": ctx}, self.seq) if f else None
            t.skip(line, ctx, f == PROGRESS_ONLY)

    def _semantic(self, texts, answers, contexts, hints, ids) -> dict[int, dict]:
        """The embedding tier's answers for the chunk's ``suspicious`` unknown lines, asked once
        per template (a line longer than the embedded text is its own key)."""
        wanted: dict[int, str] = {}
        ask: dict[str, int] = {}
        cache = self._semantic_cache
        for i, a in enumerate(answers):
            if a.known or not (hints[ids[i]] & (ANY_HIT | UNKNOWN_HIT) or _error_level(contexts[i] or {})):
                continue
            key = a.template if a.template is not None and len(texts[i]) <= 2000 else texts[i]
            wanted[i] = key
            if key not in cache and key not in ask:
                ask[key] = i
        got = dict(zip(ask, self.explainer.explain_many([texts[i] for i in ask.values()], semantic=True))) if ask else {}
        for key in wanted.values():
            if key not in got:
                got[key] = cache[key]
        if len(cache) + len(ask) > 20_000:
            cache.clear()
        cache.update((k, got[k]) for k in ask)
        return {i: got[key] for i, key in wanted.items()}

    def _record(self, a, text: str, fields: dict | None, context: dict) -> dict:
        """The line's answer as ``explain`` gives it, without making the shared ``Answer``
        keep a parsed copy (the engine holds many of them)."""
        import orjson

        data = a._data
        if data is None:
            data = self._parsed.get(a)
            if data is None:
                if len(self._parsed) > 2_000:
                    self._parsed.clear()
                data = self._parsed[a] = orjson.loads(b"{%b,\"fields\":%b,%b}" % (a.head, a.fields_json, a.tail))
        record = dict(data, line=text, context=context)
        if fields is not None:
            record["fields"] = fields
        return record

    def feed_source(self, source, index: int = 0) -> None:
        from service.batch.reader import SourceReader

        reader = SourceReader(source, index, self.problems)
        for chunk in reader.chunks():
            self.feed_chunk(chunk, source.name)

    def result(self) -> dict:
        out = self.triage.result()
        out["problems"] = [p.to_json() for p in self.problems]  # file, line, kind, message, lost_input
        return out


def triage_paths(explainer, paths: list[str], semantic: bool = True) -> dict:
    """``explainlog triage PATH...``: files (plain, gzip, zstd, bzip2), directories, globs, '-'."""
    from service.batch.inputs import discover

    sources, problems = discover(paths)
    stream = TriageStream(explainer, semantic)
    stream.problems.extend(problems)
    for index, source in enumerate(sources):
        stream.feed_source(source, index)
    return stream.result()


def read_sources(paths: list[str]) -> Iterator[tuple[str, str]]:
    """Lines of plain, gzip or zstd files (by magic bytes) and stdin ('-'), in order."""
    import gzip
    import io
    import sys

    for path in paths:
        raw = sys.stdin.buffer if path == "-" else open(path, "rb")
        try:
            head = raw.peek(4)[:4] if hasattr(raw, "peek") else b""
            stream: io.BufferedIOBase = raw
            if head[:2] == b"\x1f\x8b":
                stream = gzip.GzipFile(fileobj=raw)
            elif head[:4] == b"\x28\xb5\x2f\xfd":
                import zstandard

                stream = zstandard.ZstdDecompressor().stream_reader(raw)
            name = "<stdin>" if path == "-" else path
            for chunk in io.TextIOWrapper(stream, encoding="utf-8", errors="replace", newline=None):
                yield name, chunk.rstrip("\n")
        finally:
            if raw is not sys.stdin.buffer:
                raw.close()
