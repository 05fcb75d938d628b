"""Turn a raw log line into (context, message, template).

Lines from a training job arrive wrapped in launcher and logger prefixes, often several deep
(``0: [rank3]: [2024-..] [INFO] [comm.py:637:init_distributed] msg``). KB patterns are written
against the bare message, so prefixes are peeled off repeatedly into a structured ``context``.
The message is then masked (numbers, addresses, paths ...) into a template: the cache key for
batch work and the text the semantic tier embeds.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

ANSI = re.compile(r"\x1b\[[0-9;?]*[ -/]*[@-~]|\x1b[@-_]")
CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f]")

_LEVELS = "DEBUG|INFO|WARNING|WARN|ERROR|CRITICAL|FATAL|TRACE"

# The NCCL prefix's source location is __FILE__ for NCCL itself but __PRETTY_FUNCTION__ for net
# plugins that log through NCCL's logger (aws-ofi-nccl's NCCL_OFI_WARN: "int nccl_net_ofi_create_plugin(
# nccl_net_ofi_plugin_t**):208 NCCL WARN ..."), so a C++ signature is taken as location too.
_NCCL_LOCATION = (r"(?:(?P<source_location>(?:[\w./\-]+|"
                  r"(?:[\w:<>*&,]+ ){0,4}[\w:~<>]+\([\w:<>*&, ]*\)(?: const)?):\d+) )?")

# Each rule: (name, regex). Named groups become context keys; the rest of the line is kept.
# Order matters only among rules that could match the same start; outer wrappers come first.
PREFIX_RULES: list[tuple[str, re.Pattern[str]]] = [
    ("srun", re.compile(r"(?P<rank>\d{1,5}): (?=\S)")),
    # pdsh/DeepSpeed multi-node launcher: "worker-0: ", "node12: " (lowercase, has a digit, no
    # dots, so "RuntimeError: " and "torch.distributed...Error: " are never taken for a host;
    # nor rdma-core's mlx4/mlx5 provider tag, "mlx5: <host>: got completion with error:").
    ("pdsh", re.compile(r"(?!mlx\d: )(?P<host>[a-z][a-z0-9_-]*\d[a-z0-9_-]*|(?:\d{1,3}\.){3}\d{1,3}): (?=\S)")),
    ("mpirun", re.compile(r"\[(?P<job>\d+),(?P<rank>\d+)\]<(?:stdout|stderr)>:\s?")),
    ("torchrun", re.compile(r"\[(?:rank(?P<rank>\d+)|default(?P<local_rank>\d+))\]:\s?")),
    ("ray", re.compile(r"\((?:(?P<logger>[\w.]+) )?pid=(?P<pid>\d+)(?:, ip=(?P<host>[\w.:-]+))?\)\s+")),
    (
        "nccl",
        re.compile(
            r"(?P<host>[\w.\-]+):(?P<pid>\d+):(?P<tid>\d+) \[(?P<device>\d+)\] "
            r"(?:(?P<elapsed>\d+\.\d+) )?" + _NCCL_LOCATION +
            r"NCCL (?P<level>INFO|WARN|TRACE|ERROR|ABORT)\s?"
        ),
    ),
    # The same prefix with the host blanked or shortened by the paste (":5202:5682 [0]",
    # "node [1]"), a source location that is a path ("/app/rccl/.../p2p.cc:256"), or none of it
    # but the location ("include/shm.h:28 NCCL WARN").
    (
        "nccl_loose",
        re.compile(
            r"(?:(?P<host>[\w.\-]+)?(?::(?P<pid>\d+))?(?::(?P<tid>\d+))? )?\[(?P<device>\d+)\] "
            r"(?:(?P<elapsed>\d+\.\d+) )?" + _NCCL_LOCATION +
            r"NCCL (?P<level>INFO|WARN|TRACE|ERROR|ABORT)\s?(?=\S)"
        ),
    ),
    ("nccl_located", re.compile(r"(?P<source_location>[\w./\-]+\.(?:cc|h|cu|cpp|c):\d+) NCCL (?P<level>INFO|WARN|TRACE) (?=\S)")),
    ("nccl_bare", re.compile(r"(?:\[(?P<device>\d+)\] )?NCCL (?P<level>INFO|WARN|TRACE) (?=\S)")),
    # glog, and abseil's log (absl/log/internal/log_format.cc: "%c%02d%02d %02d:%02d:%02d.%06d %7d
    # file:line] "); before the log library is initialised abseil cannot read the time zone and
    # writes "%c0000 00:00:%02d.%06d" with the Unix seconds (TensorFlow 2.16+, XLA, JAX:
    # "E0000 00:00:1712345678.123456   12345 cuda_dnn.cc:8310] ")
    (
        "glog",
        re.compile(
            r"(?P<level>[IWEF])(?P<date>\d{4}) (?P<time>\d{2}:\d{2}:\d{2,}\.\d+)\s+(?P<tid>-?\d+) "
            r"(?P<source_location>[\w./\\\-]+:\d+)\] "
        ),
    ),
    # TensorFlow's own logger before abseil (tsl/platform/default/logging.cc, "%s.%06d: %c%s %s:%d] ":
    # local time, the level letter, " %7u" thread id only when TF_CPP_LOG_THREAD_ID is set)
    (
        "tensorflow",
        re.compile(
            r"(?P<timestamp>\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2}\.\d{6}): (?P<level>[IWEF])(?: +(?P<tid>\d+))? "
            r"(?P<source_location>[\w./\\\-]+:\d+)\] "
        ),
    ),
    (
        # c10 logging in PyTorch >= 2.0: "[E1206 18:44:12.715298746 ProcessGroupNCCL.cpp:607] ",
        # and the older "[W socket.cpp:558] " / "[E ProcessGroupNCCL.cpp:475] ". The date is
        # (month + 1) * 100 + day, not padded (c10/util/Logging.cpp): "[E304 ..." is March 4. The
        # letter is CAFFE2_SEVERITY_PREFIX "FEWIV" (c10/util/logging_is_not_google_glog.h): "V" for
        # VLOG lines (severity below INFO).
        "c10",
        re.compile(
            r"\[(?P<level>[IWEFV])(?:(?P<date>\d{3,4}) (?P<time>\d{2}:\d{2}:\d{2}\.\d+)(?: (?P<tid>\d+))?)? ?"
            r"(?P<source_location>[\w./\-]+:\d+)\] "
        ),
    ),
    (
        "deepspeed",
        re.compile(
            r"\[(?P<timestamp>\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2}[,.]\d+)\] "
            r"(?:\[(?P<level>" + _LEVELS + r")\] \[(?P<source_location>[\w.\-]+:\d+):(?P<function>[\w<>.]+)\] "
            r"|(?P<logger>[\w.]+): \[(?P<level2>" + _LEVELS + r")\] )"
        ),
    ),
    # Hydra's job logging ("[%(asctime)s][%(name)s][%(levelname)s] - %(message)s", the default
    # of every Hydra app: NeMo, many training scripts) and its "[time][LEVEL][file.py:N] - " kin
    (
        "hydra",
        re.compile(
            r"\[(?P<timestamp>\d{4}-\d{2}-\d{2}[ T,]\d{2}:\d{2}:\d{2}(?:[,.]\d+)?)\]"
            r"\[(?:(?P<level>" + _LEVELS + r")\]\[(?P<source_location>[\w./\-]+:\d+)"
            r"|(?P<logger>[\w.\-]+)\]\[(?P<level2>" + _LEVELS + r"))\](?: -)?\s+(?=\S)"
        ),
    ),
    # NeMo's logging (nemo/utils/formatters/base.py): "[NeMo I 2024-05-01 10:00:00 exp_manager:374] ",
    # with " rank:N" in its debug form or "[func()]" after a relative path
    (
        "nemo",
        re.compile(
            r"\[NeMo (?P<level>[DIWEC]) (?P<timestamp>\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2}) "
            r"(?P<source_location>[\w./\-]+:\d+)(?: rank:(?P<rank>\d+))?\](?:\[(?P<function>[\w<>.]+)\(\)\])?\s*(?=\S)"
        ),
    ),
    # rich's RichHandler: an optional "[02/13/24 17:03:44]" column, the level padded to eight,
    # the message, and the caller's "file.py:N" at the right edge (peeled in normalize_line)
    (
        "rich",
        re.compile(
            r"(?:\[(?P<timestamp>\d{2}/\d{2}/\d{2,4} \d{2}:\d{2}:\d{2})\]\s+)?"
            r"(?P<level>DEBUG {4}|INFO {5}|WARNING {2}|ERROR {4}|CRITICAL )(?=\S)"
        ),
    ),
    # std::terminate's report of an uncaught C++ exception: "  what():  <the exception's message>"
    ("cpp_what", re.compile(r"what\(\):\s+(?=\S)")),
    # a bare bracketed timestamp some launchers and log shippers put in front ("[2026-08-23 09:56:59] ")
    ("bracket_time", re.compile(r"\[(?P<timestamp>\d{4}-\d{2}-\d{2}[ T]\d{2}:\d{2}:\d{2}(?:[.,]\d+)?)\]\s+(?=\S)")),
    (
        "mmengine",
        re.compile(
            r"(?P<timestamp>(?:\d{4}/)?\d{2}/\d{2} \d{2}:\d{2}:\d{2}) - (?P<logger>[\w.]+) - "
            r"(?P<level>" + _LEVELS + r") - "
        ),
    ),
    (
        "hf_logging",
        re.compile(
            r"(?P<timestamp>\d{2}/\d{2}/\d{4} \d{2}:\d{2}:\d{2}) - (?P<level>" + _LEVELS + r") - "
            r"(?P<logger>[\w.]+) - "
        ),
    ),
    (
        "py_logging",
        re.compile(
            r"(?P<timestamp>\d{4}-\d{2}-\d{2}[ T]\d{2}:\d{2}:\d{2}(?:[,.]\d+)?)\s+[-|]?\s*"
            r"(?P<level>" + _LEVELS + r")\s+[-|:]?\s*(?:(?P<logger>[\w.]+)\s*[-:|]\s+)?"
        ),
    ),
    # torchelastic's own logging format of PyTorch 1.9-1.10: "[INFO] 2021-09-13 22:17:26,651 run: "
    (
        "elastic_legacy",
        re.compile(
            r"\[(?P<level>" + _LEVELS + r")\] (?P<timestamp>\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2},\d+) "
            r"(?P<logger>\w+): "
        ),
    ),
    # "INFO 2025-05-15 23:40:46,207 " (logging's "%(levelname)s %(asctime)s %(message)s")
    ("level_time", re.compile(r"(?P<level>" + _LEVELS + r") (?P<timestamp>\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2},\d+) (?=\S)")),
    # c10d's logging macros (torch/csrc/distributed/c10d/logging.h) put "[c10d] " or
    # "[c10d - debug] " / "[c10d - trace] " in front of every message
    ("c10d_tag", re.compile(r"\[c\d\dd(?: - (?P<c10d_level>debug|trace))?\] (?=\S)")),
    ("py_basic", re.compile(r"(?P<level>" + _LEVELS + r"):(?P<logger>[\w.]+):(?=\S)")),
    (
        "hf_level_file",
        re.compile(r"\[(?P<level>" + _LEVELS + r")\|(?P<source_location>[\w.]+:\d+)\] (?:\S+ \S+ >> )?"),
    ),
    (
        "py_warning",
        re.compile(r"(?P<source_location>(?:[A-Za-z]:)?[\w./\\\-]+\.py:\d+): (?P<category>\w*Warning): "),
    ),
    (
        "syslog",
        re.compile(
            r"(?P<timestamp>[A-Z][a-z]{2} [ \d]\d \d{2}:\d{2}:\d{2}) (?P<host>[\w.\-]+) "
            r"(?P<logger>[\w.\-/]+?)(?:\[(?P<pid>\d+)\])?: "
        ),
    ),
    ("dmesg", re.compile(r"\[\s*(?P<uptime>\d+\.\d+)\] ")),
    # UCX (src/ucs/debug/log.c): "[host:pid:thread]  file.c:line UCX  ERROR message" after the
    # "[sec.usec]" above (UCS_LOG_FMT), or "file.c:line UCX ERROR" alone when pasted short; a fatal
    # error or the signal handler prints "[host:pid:thread:tid] file.c:line message" (ucs_log_fatal_error)
    (
        "ucx",
        re.compile(
            r"(?:\[(?P<host>[\w.\-]+):\s*(?P<pid>\d+)\s*:(?P<tid>[\w.]+)\]\s+)?"
            r"(?P<source_location>[\w.\-]+\.(?:c|cc|h|inl):\d+)\s+UC[XSTPM]\w*\s+"
            r"(?P<level>ERROR|WARN|DIAG|INFO|PRINT|FATAL|DEBUG|TRACE)\s+(?=\S)"
        ),
    ),
    (
        "ucx_fatal",
        re.compile(
            r"\[(?P<host>[\w.\-]+):\s*(?P<pid>\d+)\s*:(?P<tid>[\w.]+):\d+\]\s+"
            r"(?:(?P<source_location>[\w.\-]+\.(?:c|cc|h|inl):\d+)\s+)?(?=\S)"
        ),
    ),
    # libfabric's log (src/log.c, FI_LOG_LEVEL=warn|info|...): "libfabric:<prov>:<subsys>:<func>():
    # <line><level> " before 1.13; from it "libfabric:<pid>:<time>:<log prefix>:<prov>:..." (the
    # log prefix is FI_LOG_PREFIX, empty by default); a layered provider prints "<prov>;<core>"
    (
        "libfabric",
        re.compile(
            r"libfabric:(?:(?P<pid>\d+):\d+:[^:\s]*:)?(?P<logger>[\w;\-]+):(?P<subsystem>\w+):"
            r"(?P<source_location>\w+\(\):\d+)<(?P<level>warn|trace|info|debug)>\s*(?=\S)"
        ),
    ),
    # ROCm's runtime log (AMD_LOG_LEVEL>0, rocclr/utils/debug.cpp): ":3:hip_module.cpp  :662 :
    # 2786461895 us: [pid:77 tid:0x7f] msg"; rocm-5.6.x prints "... us: 77   : [tid:0x7f] msg"
    # (rocm-5.6.0 debug.cpp:97, "%-5d: [tid:0x%s]"); older releases "(%010lld) us" or no time
    (
        "amd_log",
        re.compile(
            r":\s?(?P<amd_log_level>\d):\s*(?P<source_location>[\w.\-]+\s*:\s*\d+)\s*:\s*"
            r"(?:\(\d+\)\s*(?:us\s+)?|\d+\s+us:\s*)?"
            r"(?:\[pid:\s*(?P<pid>\d+)\s+tid:\s*(?P<tid>\dx[0-9a-fA-F]+)\]\s*"
            r"|(?P<pid56>\d+)\s*:\s*\[tid:\s*(?P<tid56>\dx[0-9a-fA-F]+)\]\s*)?(?=\S)"
        ),
    ),
]

_LEVEL_NAMES = {"I": "info", "W": "warning", "E": "error", "F": "fatal", "V": "debug", "D": "debug", "C": "critical", "WARN": "warning",
                "warn": "warning"}
# where rich puts the caller: two or more spaces, then "file.py:N" at the end of the line
_RICH_LOCATION = re.compile(r"\s{2,}(?P<source_location>[\w.\-]+\.py:\d+)\s*$")


@dataclass
class NormalizedLine:
    raw: str
    message: str
    context: dict[str, str] = field(default_factory=dict)


def clean_text(raw: str) -> str:
    """Drop ANSI colour codes, CR and other control bytes; tabs become spaces."""
    text = ANSI.sub("", raw)
    text = text.replace("\t", " ").rstrip("\r\n")
    return CONTROL.sub("", text).strip()


def _merge(context: dict[str, str], rule: str, groups: dict[str, str | None]) -> None:
    for key, value in groups.items():
        if value is None:
            continue
        if key == "level2":
            key = "level"
        if key in ("pid56", "tid56"):
            key = key[:3]
        if key == "date" and "time" in groups:
            continue
        if key == "time" and groups.get("date"):
            key, value = "timestamp", f"{groups['date']} {value}"
        if key == "level":
            value = value.strip()
            value = _LEVEL_NAMES.get(value, value.lower())
        context.setdefault(key, value)
    context.setdefault("format", rule)


# NCCL's "host:pid:tid [dev] NCCL INFO " is distinctive enough to find behind launcher
# prefixes we do not know (pdsh hosts without digits, "[155] " tags, cluster names). Searched
# only in a line's head, so a 1 MB line costs nothing.
NCCL_ANYWHERE = re.compile(
    r"(?:^|\s)(?=[\w.\-]+:\d+:\d+ \[\d+\] (?:\S+ )?(?:[\w./\-]+:\d+ )?NCCL (?:INFO|WARN|TRACE|ERROR|ABORT)\b)"
)
NCCL_HEAD = 400


# Other prefixes distinctive enough to be found behind a short head no rule knows (a job or
# container name a log collector put first: "pytorch [I socket.cpp:440] ...", torchx's
# "trainer/0 (CommandActor pid=494406) INFO:torch.distributed...:"): c10's bracketed location,
# a Ray actor's "(Name pid=N)", Python's basicConfig "LEVEL:dotted.logger:".
KNOWN_AFTER_HEAD = re.compile(
    r"\s(?=\[[IWEFV](?:\d{3,4} \d{2}:\d{2}:\d{2}\.\d+(?: \d+)?)? ?[\w./\-]+\.(?:cpp|cc|cu|hpp|h|c):\d+\] \S"
    r"|\((?:[\w.]+ )?pid=\d+(?:, ip=[\w.:-]+)?\) \S"
    r"|(?:DEBUG|INFO|WARNING|ERROR|CRITICAL):[A-Za-z_]\w*(?:\.\w+)+:\S)"
)
HEAD_LIMIT = 48  # a head longer than this, or of more than two words, is left alone
_HEAD = re.compile(r"[\w./@-]+(?: [\w./@-]+)?")  # words without colons or brackets: not a message


def _skip_unknown_launcher(text: str, context: dict[str, str]) -> str:
    if " NCCL " in text[:NCCL_HEAD]:
        match = NCCL_ANYWHERE.search(text, 0, NCCL_HEAD)
        if match and match.end() > 0:
            context["launcher_prefix"] = text[: match.end()].strip()
            return text[match.end():]
    match = KNOWN_AFTER_HEAD.search(text, 0, HEAD_LIMIT + 1)
    if match and _HEAD.fullmatch(text, 0, match.start()):
        context["launcher_prefix"] = text[: match.end()].strip()
        return text[match.end():]
    return text


def normalize_line(raw: str) -> NormalizedLine:
    """Peel every recognised prefix off ``raw``; the context keeps what each prefix said."""
    text = clean_text(raw)
    context: dict[str, str] = {}
    formats: list[str] = []
    text = _peel(text, context, formats)
    if text and len(text) < 300 and _PREFIX_END.search(text):
        # Only a prefix ("[rank0]: ", a glog or logging header on its own)? The rules want a
        # message after the prefix, so peel once more with a stand-in word after it.
        probe_context: dict[str, str] = dict(context)
        probe_formats: list[str] = []
        if _peel(f"{text} {_STAND_IN}", probe_context, probe_formats) == _STAND_IN and probe_formats:
            context, text = probe_context, ""
            formats += probe_formats
            context["prefix_only"] = "1"
    if "rich" in formats:
        located = _RICH_LOCATION.search(text)
        if located and located.start() > 0:
            context.setdefault("source_location", located.group("source_location"))
            text = text[: located.start()]
    if formats:
        context["format"] = "+".join(formats)
    return NormalizedLine(raw=raw, message=text, context=context)


def _peel(text: str, context: dict[str, str], formats: list[str]) -> str:
    progress = True
    while progress and text:
        progress = False
        for name, rule in PREFIX_RULES:
            match = rule.match(text)
            if match and match.end() > 0 and match.end() < len(text):
                _merge(context, name, match.groupdict())
                formats.append(name)
                text = text[match.end():].lstrip()
                progress = True
                break
        if not progress and text and "launcher_prefix" not in context:
            skipped = _skip_unknown_launcher(text, context)
            progress = skipped is not text
            text = skipped
    return text


_STAND_IN = "explainlogstandin"
# How a line that is only a prefix ends: a bracket, a colon, a dash, a level word.
_PREFIX_END = re.compile(r"(?:[\]:>|-]|\b(?:INFO|WARN|WARNING|ERROR|DEBUG|TRACE|CRITICAL|FATAL))$")


# Masking: most specific first, so an IP is not eaten as numbers, a path not as words.
MASKS: list[tuple[re.Pattern[str], str]] = [
    (re.compile(r"\b\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}:\d{2}(?:[.,]\d+)?(?:Z|[+-]\d{2}:?\d{2})?"), "<TIME>"),
    (re.compile(r"\b\d{1,2}:\d{2}:\d{2}(?:[.,]\d+)?\b"), "<TIME>"),
    (re.compile(r"\b(?:\d{1,3}\.){3}\d{1,3}(?::\d+)?(?:<\d+>)?"), "<IP>"),
    (re.compile(r"\[?\b(?:[0-9a-fA-F]{1,4}:){1,7}:[0-9a-fA-F:]*\]?|\b(?:[0-9a-fA-F]{1,4}:){5,7}[0-9a-fA-F]{1,4}\b"), "<IP6>"),
    (re.compile(r"(?:(?<=\s)|^|(?<=[=:('\"]))(?:/[\w.\-+@]+){2,}/?"), "<PATH>"),
    (re.compile(r"\b0x[0-9a-fA-F]+\b"), "<HEX>"),
    (re.compile(r"\b\d+(?:\.\d+)?(?:[eE][-+]?\d+)?(?:[KMGTP]i?B?|B|ms|us|s|%)?(?![\w.])"), "<NUM>"),
    (re.compile(r"\b(?=[0-9a-fA-F]*\d)(?=[0-9a-fA-F]*[a-fA-F])[0-9a-fA-F]{4,}\b"), "<HEX>"),
    (re.compile(r"(?<![\w.])\d+(?![\w])"), "<NUM>"),
]


def mask_message(message: str) -> str:
    """Replace variable parts with typed placeholders; the result keys caches and embeddings."""
    for pattern, token in MASKS:
        message = pattern.sub(token, message)
    return re.sub(r"\s+", " ", message).strip()


# The last line of a Python traceback, "XError: message" (also "torch.distributed.DistError: ...",
# "RuntimeError(...): ..."): the explainer and the catalogue link read the message after it
# when nothing knows the whole line.
EXCEPTION_PREFIX = re.compile(
    r"^(?:[A-Za-z_][\w]*\.)*[A-Z]\w*(?:Error|Exception|Warning|Exit|Interrupt|Failure|Timeout)(?:\([^)]*\))?:\s+(?P<rest>\S.*)$"
)
