"""Extractors: from one source file to the log calls it makes, as format pieces.

Each extractor yields ``Occurrence``s: where a message is printed (file, line, function),
at which level, and its format as pieces. ``indexer.catalog.build`` merges occurrences of
the same format across tags into one record.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from indexer.catalog.clike import Source, blank, brace_from_args, dead_blanked, literal_concat, printf_from_args, shift_chain, stream_pieces
from indexer.catalog.formats import Piece, Slot, literal_weight, merge_pieces, printf_pieces


@dataclass(frozen=True)
class Occurrence:
    file: str
    line: int
    function: str
    level: str            # INFO, WARN, WARNING, ERROR, FATAL, raise, warn, print, ...
    pieces: tuple
    anchored: bool        # the message starts the line once the prefix is stripped
    kind: str             # the call form, e.g. "INFO", "TORCH_CHECK", "logger.warning"


# ---- NCCL and RCCL ----------------------------------------------------------------------
NCCL_CALLS = r"INFO|WARN"


def nccl_file(path: str, text: str) -> list[Occurrence]:
    """``INFO(NCCL_X, fmt, ...)`` and ``WARN(fmt, ...)``; TRACE is compiled out of releases."""
    if path.endswith(("/debug.cc", "/debug.h")) or "/tests/" in path:
        return []
    src = Source(text)
    out = []
    for call in src.calls(NCCL_CALLS):
        if call.name == "INFO":
            if len(call.args) < 2:
                continue
            fmt_arg, rest = call.args[1], call.args[2:]
        else:
            if not call.args:
                continue
            fmt_arg, rest = call.args[0], call.args[1:]
        pieces = printf_from_args(fmt_arg, rest)
        if not pieces:
            continue
        level = "INFO" if call.name == "INFO" else "WARN"
        out.append(Occurrence(path, call.line, call.function, level, tuple(pieces), True, call.name))
    return out


# ---- PyTorch C++ ------------------------------------------------------------------------
TORCH_CALLS = (
    r"TORCH_CHECK(?:_WITH)?|TORCH_CHECK_[A-Z_]+|TORCH_INTERNAL_ASSERT(?:_DEBUG_ONLY)?|TORCH_WARN(?:_ONCE)?"
    r"|C10_THROW_ERROR|C10D_THROW_ERROR|C10_CUDA_CHECK_WARN|C10D_(?:INFO|WARNING|ERROR|DEBUG|TRACE)|LOG|LOG_IF|VLOG"
    r"|fmt::format|c10::str"
    # socket.cpp's SocketListenOp/SocketConnectOp::recordError: fmt::format, then C10D_WARNING
    r"|recordError"
)
# a message built into a variable before it is thrown or returned: ``std::string err = "NCCL
# error in: " + std::string(__FILE__) + ...`` (C10D_NCCL_CHECK) or ``interpret = "ncclSystemError:
# ..."`` (getNcclErrorDetailStr); only variables whose name says they hold a message
_MESSAGE_VAR = re.compile(
    r"(?:\bstd::string\s+)?\b(?P<name>[A-Za-z_]*(?:err|Err|msg|Msg|interpret|message|Message|reason|Reason)[A-Za-z_]*)"
    r"\s*(?P<op>\+?=)\s*(?=\")"
)



# RCCL is built only with hipcc for AMD GPUs (rocm-6.2.2 CMakeLists.txt:125 "RCCL requires
# clang-based compiler (hipcc)"): the HIP platform macros are defined and NVIDIA's are not, so
# the CUDA code RCCL keeps from NCCL in the #else of "#if defined(__HIP_PLATFORM_AMD__) ||
# defined(__HIPCC__)" never prints in an RCCL build.
RCCL_DEFINES = {
    "__HIP_PLATFORM_AMD__": True, "__HIP_PLATFORM_HCC__": True, "__HIPCC__": True, "__HCC__": True,
    "__HIP_PLATFORM_NVIDIA__": False, "__HIP_PLATFORM_NVCC__": False,
    # Not CUDART_VERSION: nothing in RCCL or ROCm/clr defines it, yet RCCL rocm-5.2.0 writes
    # HIP-only code (hipGraphId) under "#if CUDART_VERSION >= 11030", so its builds must get
    # it from somewhere not read here (the HIP headers); it stays unknown.
}


def rccl_file(path: str, text: str) -> list[Occurrence]:
    """``nccl_file`` on what an RCCL build compiles (``RCCL_DEFINES``)."""
    return nccl_file(path, dead_blanked(text, RCCL_DEFINES))

def _concat_pieces(expr: str) -> list[Piece]:
    """``"a" + x + "b"`` at the top level: literals as text, the rest as slots."""
    expr = re.sub(r"\\\n", " ", expr)
    _, code = blank(expr)
    parts, depth, last = [], 0, 0
    for i, c in enumerate(code):
        if c in "([{":
            depth += 1
        elif c in ")]}":
            depth -= 1
        elif c == "+" and depth == 0 and code[i - 1:i] != "+" and code[i + 1:i + 2] != "+":
            parts.append(expr[last:i])
            last = i + 1
    parts.append(expr[last:])
    pieces: list[Piece] = []
    for part in parts:
        part = part.strip()
        lit = literal_concat(part)
        if lit is not None and "\x00" not in lit:
            pieces.append(lit)
        elif part:
            pieces.append(Slot("any", part))
    return merge_pieces(pieces)


_NAME_PART = r"[A-Za-z_]*(?:err|Err|msg|Msg|interpret|message|Message|reason|Reason)[A-Za-z_]*"
_APPEND = re.compile(rf"\b(?P<name>{_NAME_PART})\.append\s*\(")
_RETURN_LITERAL = re.compile(r"\breturn\s+(?=\")")


def _message_appends(src: Source, path: str) -> list[Occurrence]:
    """``msg.append("CUDA error: "); msg.append(cudaGetErrorString(e)); ...``: one run of
    consecutive appends to a message variable is one message (c10_cuda_check_implementation)."""
    runs: list[list] = []
    last_end, last_name = -1, None
    for m in _APPEND.finditer(src.code):
        open_at = m.end() - 1
        close = _close_paren(src.code, open_at)
        if close < 0:
            continue
        arg = src.text[open_at + 1:close]
        stmt_end = src.code.find(";", close)
        between = src.code[last_end:m.start()] if last_end >= 0 else ""
        gap = "\n".join(l for l in between.split("\n") if not l.strip().startswith("#")).strip()
        if runs and m.group("name") == last_name and gap == "":
            runs[-1].append(arg)
        else:
            runs.append([m, arg])
        last_end, last_name = stmt_end + 1, m.group("name")
    out = []
    for run in runs:
        m, args = run[0], run[1:]
        pieces = merge_pieces([_concat_pieces(a) for a in args])
        if not meaningful(tuple(pieces)):
            continue
        out.append(Occurrence(path, src.line_of(m.start()), src.function_at(m.start()), "text", tuple(pieces),
                              False, f"{m.group('name')}.append"))
    return out


def _returned_texts(src: Source, path: str) -> list[Occurrence]:
    """A function that returns a fixed text to be appended to messages (``get_cuda_check_suffix``
    returns the "CUDA kernel errors might be asynchronously reported" hint): long literals only."""
    out = []
    for m in _RETURN_LITERAL.finditer(src.code):
        end = src.code.find(";", m.end())
        lit = literal_concat(src.text[m.end():end])
        if lit is None or "\x00" in lit or len(lit.strip()) < 40:
            continue
        out.append(Occurrence(path, src.line_of(m.start()), src.function_at(m.start()), "text", (lit,), False, "return"))
    return out


def _message_assignments(src: Source, path: str) -> list[Occurrence]:
    out = _message_appends(src, path) + _returned_texts(src, path)
    for m in _MESSAGE_VAR.finditer(src.code):
        end = m.end()
        depth = 0
        while end < len(src.code):
            c = src.code[end]
            if c in "([{":
                depth += 1
            elif c in ")]}":
                if depth == 0:
                    break
                depth -= 1
            elif c == ";" and depth == 0:
                break
            end += 1
        pieces = _concat_pieces(src.text[m.end():end])
        if not any(isinstance(p, str) and len(p.strip()) >= 12 for p in pieces):
            continue
        line = src.line_of(m.start())
        out.append(Occurrence(path, line, src.function_at(m.start()), "text", tuple(pieces), False,
                              f"{m.group('name')} {m.group('op')}"))
    return out


def torch_cpp_file(path: str, text: str) -> list[Occurrence]:
    src = Source(text)
    out = []
    seen_offsets = set()
    for call in src.calls(TORCH_CALLS):
        name = call.name
        pieces: list[Piece] | None = None
        level = "error"
        anchored = False
        if name in ("LOG", "LOG_IF", "VLOG"):
            if name == "VLOG":
                continue
            level = (call.args[0].strip() if call.args else "INFO").upper()
            if level not in ("INFO", "WARNING", "ERROR", "FATAL"):
                continue
            # the chain is what follows the closing paren up to the statement's end
            end = src.code.find(")", call.offset)
            close = _close_paren(src.code, src.code.find("(", call.offset))
            stmt_end = src.code.find(";", close)
            chain = src.text[close + 1:stmt_end]
            if "<<" not in chain:
                continue
            pieces = shift_chain(chain.split("<<", 1)[1])
            anchored = True
        elif name.startswith("C10D_") or name == "recordError":
            level = name[5:] if name.startswith("C10D_") else "WARNING"
            if not call.args:
                continue
            rest = call.args[1:]
            if name == "recordError":  # (new here: a multi-line argument is named on one line)
                rest = [" ".join(a.split()) for a in rest]
            pieces = brace_from_args(call.args[0], rest)
            anchored = True
        elif name.startswith("TORCH_WARN"):
            level = "WARNING"
            pieces = stream_pieces(call.args)
            anchored = True
        elif name.startswith("TORCH_CHECK") or name.startswith("TORCH_INTERNAL_ASSERT"):
            args = call.args[1:]
            if name == "TORCH_CHECK_WITH":
                args = call.args[2:]
            if not args:
                continue
            pieces = stream_pieces(args)
            if name.startswith("TORCH_INTERNAL_ASSERT"):
                pieces = [Slot("any", "assert_prefix")] + list(pieces)
        elif name in ("C10_THROW_ERROR", "C10D_THROW_ERROR"):
            if len(call.args) < 2:
                continue
            pieces = stream_pieces(call.args[1:])
            level = "raise " + call.args[0].strip()
        elif name == "fmt::format":
            if not call.args:
                continue
            pieces = brace_from_args(call.args[0], call.args[1:])
            level = "text"
        elif name == "c10::str":
            pieces = stream_pieces(call.args)
            level = "text"
        elif name == "C10_CUDA_CHECK_WARN":
            continue
        if not pieces:
            continue
        if call.offset in seen_offsets:
            continue
        seen_offsets.add(call.offset)
        out.append(Occurrence(path, call.line, call.function, level, tuple(pieces), anchored, name))
    return out + _message_assignments(src, path)


# ---- Slurm ---------------------------------------------------------------------------------
# log.h: every daemon and command logs through these; the line reads "<program>: <level>: msg"
# ("srun: error: ...", "slurmstepd: error: ..."; info and verbose print no level word).
SLURM_CALLS = r"fatal|fatal_abort|error|info|verbose|sched_error|sched_info|sched_verbose|warning"
SLURM_LEVEL = {"fatal": "fatal", "fatal_abort": "fatal", "error": "error", "sched_error": "error",
               "info": "info", "sched_info": "info", "verbose": "verbose", "sched_verbose": "verbose",
               "warning": "warning"}
_ERRTAB = re.compile(r"\{\s*(?:ERRTAB_ENTRY\((?P<code>\w+)\)|(?P<old>[A-Z][A-Z0-9_]+))\s*,\s*(?P<text>(?:\"(?:\\.|[^\"\\])*\"\s*)+),?\s*\}")


# The job state reasons (job_state_reason.c's jsra[] since 23.11, before that the switch of
# job_reason_string in slurm_protocol_defs.c): squeue and scontrol show them for a pending job,
# and a submission refused by an association or QOS limit gets one back as its error message
# (job_mgr.c sets err_msg = job_state_reason_string(acct_reason); the client's unpack of
# RESPONSE_SLURM_RC_MSG prints it at error level): "sbatch: error: AssocMaxSubmitJobLimit".
# Only the long CamelCase names are kept: "None", "Priority" or "Resources" alone say nothing.
_JSR_TABLE = re.compile(r'\[(?P<code>(?:WAIT|FAIL)_\w+)\]\s*=\s*\{[^{}]*?\.str\s*=\s*"(?P<text>[^"]+)"')
_JSR_CASE = re.compile(r'case\s+(?P<code>(?:WAIT|FAIL)_\w+)\s*:\s*return\s+"(?P<text>[^"]+)"\s*;')
_JSR_NAME = re.compile(r"[A-Z][A-Za-z0-9]*(?:[A-Z][A-Za-z0-9]*){2,}")


def _job_state_reasons(path: str, text: str) -> list[Occurrence]:
    table = _JSR_TABLE if path.endswith("job_state_reason.c") else _JSR_CASE
    out = []
    for m in table.finditer(text):
        name = m.group("text")
        if len(name) < 14 or not _JSR_NAME.fullmatch(name):
            continue
        line = text.count("\n", 0, m.start()) + 1
        out.append(Occurrence(path, line, m.group("code"), "reason", (name,), True, "job_state_reason_string"))
    return out


# A memory-limit kill notifies the job instead of logging to it: jobacct_gather (and slurmd's
# req.c) send REQUEST_JOB_NOTIFY with a fixed text, slurmctld forwards it to the job's srun or
# salloc as SRUN_USER_MSG, and they print it with info("%s", msg) (step_launch.c, salloc.c,
# srun's allocate.c): "srun: Exceeded job memory limit".
_NOTIFY = re.compile(r'\bnotify_req\.message\s*=\s*"((?:\\.|[^"\\])*)"\s*;')


def slurm_file(path: str, text: str) -> list[Occurrence]:
    """Slurm's log calls (``error("...%m", ...)``; ``%m`` is ``slurm_strerror(errno)``), and
    the error table of ``slurm_strerror`` (``slurm_errno.c``), whose texts end the lines of
    failed calls ("srun: error: Unable to allocate resources: <text>"), and the job state
    reasons."""
    out = []
    if path.endswith(("job_state_reason.c", "slurm_protocol_defs.c")):
        out.extend(_job_state_reasons(path, text))
    src = Source(text)
    for m in _NOTIFY.finditer(text):
        line = text.count("\n", 0, m.start()) + 1
        out.append(Occurrence(path, line, src.function_at(m.start()), "info", (m.group(1),), True, "job_notify"))
    if path.endswith("slurm_errno.c"):
        for m in _ERRTAB.finditer(text):
            literal = "".join(re.findall(r'"((?:\\.|[^"\\])*)"', m.group("text")))
            if literal_weight([literal]) < 18 or len(literal.split()) < 3:
                continue  # "No error", "Unspecified error": too common to recognise a line by
            line = text.count("\n", 0, m.start()) + 1
            out.append(Occurrence(path, line, m.group("code") or m.group("old"), "errno", (literal,), False, "slurm_errtab"))
        return out
    for call in src.calls(SLURM_CALLS):
        if not call.args:
            continue
        pieces = printf_from_args(call.args[0], call.args[1:], strerror_m=True)
        # "%s: ..." with __func__ prints a C function name of Slurm's, never "D3D11" or a phrase;
        # srun_job.c's "Access denied for %s: %m" names a script path (no blanks), not MySQL's
        # "Access denied for user 'root'@'localhost' (using password: YES)"
        pieces = [Slot("cfunc", p.arg) if isinstance(p, Slot) and p.arg == "__func__" and p.kind in ("str", "any")
                  else Slot("path", p.arg) if isinstance(p, Slot) and p.arg == "script" and path.endswith("srun_job.c")
                  else p for p in pieces] if pieces else pieces
        if not pieces:
            continue
        out.append(Occurrence(path, call.line, call.function, SLURM_LEVEL[call.name], tuple(pieces), False, call.name))
    return out


# ---- ROCm clr (HIP runtime and ROCclr) ----------------------------------------------------
# rocclr/utils/debug.hpp: printed with AMD_LOG_LEVEL >= the level (1 error .. 4 debug), each
# line behind the ":<level>:<file>:<line>: <time> us: [pid tid]" prefix the normalizer strips
CLR_CALLS = (r"ClPrint|HIPPrintDuration|LogPrintfError|LogPrintfWarning|LogPrintfInfo|DevLogPrintfError"
             r"|LogError|LogWarning|LogInfo|DevLogError")
CLR_LEVEL = {"LOG_ERROR": "error", "LOG_WARNING": "warning", "LOG_INFO": "info", "LOG_DEBUG": "debug",
             "LOG_NONE": "info", "LOG_EXTRA_DEBUG": "debug"}
_HIP_ERROR_TEXT = re.compile(r"case\s+(?P<code>hipError\w+)\s*:\s*return\s+\"(?P<text>(?:\\.|[^\"\\])*)\"\s*;")


def clr_file(path: str, text: str) -> list[Occurrence]:
    """The runtime's log macros, and the texts ``hipGetErrorString`` returns (``hip_error.cpp``)."""
    out = []
    if path.endswith("hip_error.cpp"):
        for m in _HIP_ERROR_TEXT.finditer(text):
            if m.group("text") == m.group("code") or literal_weight([m.group("text")]) < 12:
                continue  # hipGetErrorName's table, or too short to recognise a line by
            line = text.count("\n", 0, m.start()) + 1
            out.append(Occurrence(path, line, m.group("code"), "errno", (m.group("text"),), False, "hipGetErrorString"))
        return out
    for call in Source(text).calls(CLR_CALLS):
        name = call.name
        if name in ("ClPrint", "HIPPrintDuration"):
            at = 2 if name == "ClPrint" else 3  # HIPPrintDuration(level, mask, &start, fmt, ...)
            if len(call.args) <= at:
                continue
            level = CLR_LEVEL.get(call.args[0].strip().split("::")[-1], "info")
            fmt_arg, rest = call.args[at], call.args[at + 1:]
        else:
            if not call.args:
                continue
            level = "error" if "Error" in name else "warning" if "Warning" in name else "info"
            fmt_arg, rest = call.args[0], call.args[1:]
        if level == "debug":
            continue
        # arguments inside a multi-line #define carry its line continuations
        rest = [re.sub(r"\\\n\s*", "", a) for a in rest]
        printf = "Printf" in name or name in ("ClPrint", "HIPPrintDuration")
        pieces = printf_from_args(fmt_arg, rest) if printf else stream_pieces([fmt_arg])
        if not pieces:
            continue
        out.append(Occurrence(path, call.line, call.function, level, tuple(pieces), True, name))
    return out


# ---- rdma-core (libibverbs, librdmacm, the mlx5 provider, infiniband-diags, libibmad) ------
RDMA_CALLS = r"fprintf|printf|verbs_err|verbs_warn|verbs_info|mlx5_err|IBEXIT|IBWARN|IBPANIC"
# infiniband-diags (ibstat, ibportstate, perfquery ...): ibdiag_common.c's ibexit() prints
# "<tool>: iberror: failed: <message>" (with "[pid N] <function>: " after "iberror: " under -d);
# libibmad/mad.h's IBWARN prints "ibwarn: [pid] <function>: <message>" and IBPANIC
# "ibpanic: [pid] <function>: <message>: <strerror(errno)>", all on stderr.
_IBMAD_HEADS = {
    "IBEXIT": ([Slot("str", "tool"), ": iberror: failed: "], "error"),
    "IBWARN": (["ibwarn: [", Slot("int", "pid"), "] ", Slot("str", "function"), ": "], "warning"),
    "IBPANIC": (["ibpanic: [", Slot("int", "pid"), "] ", Slot("str", "function"), ": "], "fatal"),
}
# libibmad/fields.c's table of MAD fields: { offset, width, "Name", mad_dump_<kind> }. Its dumper
# (_mad_dump_field) prints "Name:" padded with dots to 32 characters, then the value; the
# infiniband-diags tools (perfquery, smpquery, ibportstate, saquery) print their results this way.
_IBMAD_FIELD = re.compile(r'\{[^{}"\n]*"(?P<name>[A-Za-z][A-Za-z0-9_]*)"\s*,\s*(?P<dump>mad_dump_[a-z0-9_]+)\s*\}')


def _ibmad_fields(path: str, text: str) -> list[Occurrence]:
    out = []
    for m in _IBMAD_FIELD.finditer(text):
        name = m.group("name")
        dots = "." * (32 - len(name)) if len(name) < 32 else ""
        line = text.count("\n", 0, m.start()) + 1
        out.append(Occurrence(path, line, m.group("dump"), "print", (f"{name}:{dots}", Slot("str", "value")),
                              True, "mad_dump_field"))
    return out


# The PFX each library's and provider's messages start with (libibverbs/ibverbs.h, cma.h,
# providers/mlx5/mlx5.h, mlx4.h; the same from v24.0 to v64.0); left as a wildcard it could not
# be told from a host prefix. The mlx5 provider's error-CQE report prints PFX "%s: " with the
# host name first: "mlx5: <host>: got completion with error:".
_RDMA_PFX = {"libibverbs/": "libibverbs: ", "librdmacm/": "librdmacm: ", "providers/mlx5/": "mlx5: ",
             "providers/mlx4/": "mlx4: "}
HOST_HEAD = ":host-head"  # kind suffix: the pieces start with PFX, a host name and ": "


def _rdma_pfx(path: str, fmt_arg: str) -> str:
    pfx = next((v for k, v in _RDMA_PFX.items() if path.startswith(k)), None)
    if pfx is None or "PFX" not in fmt_arg:
        return fmt_arg
    return re.sub(r'(?<!["\w])PFX(?!\w)', '"' + pfx + '"', fmt_arg)


def rdma_file(path: str, text: str) -> list[Occurrence]:
    """What the verbs libraries write to stderr (``PFX "Warning: couldn't load driver"``), the
    provider's error calls, the fields the ``ibv_devinfo`` tool prints, and infiniband-diags'
    error reports, printed lines and MAD field dumps."""
    if path == "libibmad/fields.c":
        return _ibmad_fields(path, text)
    tool = "/examples/" in path or path.startswith("infiniband-diags/")
    out = []
    for call in Source(text).calls(RDMA_CALLS):
        name, args = call.name, call.args
        if name in _IBMAD_HEADS:
            if not args or "define" in args[0]:
                continue
            head, level = _IBMAD_HEADS[name]
            pieces = printf_from_args(args[0], args[1:])
            if not pieces:
                continue
            tail = [": ", Slot("str", "strerror(errno)")] if name == "IBPANIC" else []
            out.append(Occurrence(path, call.line, call.function, level,
                                  tuple(merge_pieces([list(head), pieces, tail])), True, name))
            continue
        if name == "fprintf":
            if len(args) < 2 or args[0].strip() != "stderr":
                continue
            fmt_arg, rest = args[1], args[2:]
        elif name == "printf":
            if not tool or not args:
                continue  # printf outside the command-line tools is debug output
            fmt_arg, rest = args[0], args[1:]
        else:
            if len(args) < 2:
                continue
            fmt_arg, rest = args[1], args[2:]
        pieces = printf_from_args(_rdma_pfx(path, fmt_arg), rest)
        if not pieces:
            continue
        kind = name
        if (len(pieces) >= 3 and pieces[0] in _RDMA_PFX.values() and isinstance(pieces[1], Slot)
                and isinstance(pieces[2], str) and pieces[2].startswith(": ")):
            kind = name + HOST_HEAD
        head = "".join(p for p in pieces[:2] if isinstance(p, str)).lstrip().lower()
        head = next((head[len(v):] for v in _RDMA_PFX.values() if head.startswith(v)), head)  # "Warning: ..." after PFX
        level = ("print" if name == "printf" else "warning" if "warn" in name or head.startswith("warning")
                 else "info" if name == "verbs_info" else "error")
        # a tool's printed line starts the line ("client: 10.0.0.1" of rcopy is not nginx's
        # "..., client: 172.21.0.1, server: ..."); library messages may be continued pieces
        anchored = level == "print"
        out.append(Occurrence(path, call.line, call.function, level, tuple(pieces), anchored, kind))
    return out


# ---- ROCm's HSA runtime and rocminfo ----------------------------------------------------------
_HSA_STATUS_TEXT = re.compile(r'=\s*((?:"(?:\\.|[^"\\])*"\s*)+);')


def rocr_file(path: str, text: str) -> list[Occurrence]:
    """What ROCR writes to stderr ("Memory access fault by GPU node-N ... Reason: ..."), the
    texts ``hsa_status_string`` returns ("HSA_STATUS_ERROR_OUT_OF_RESOURCES: The runtime
    failed ..."), and rocminfo's printed failures."""
    out = []
    if path.endswith("runtime/hsa.cpp"):
        for m in _HSA_STATUS_TEXT.finditer(text):
            literal = "".join(re.findall(r'"((?:\\.|[^"\\])*)"', m.group(1)))
            code, sep, _ = literal.partition(":")
            if not sep or not re.fullmatch(r"HSA_(?:EXT_)?STATUS_\w+", code):
                continue
            line = text.count("\n", 0, m.start()) + 1
            out.append(Occurrence(path, line, code, "errno", (literal.replace("\\n", ""),), False, "hsa_status_string"))
        return out
    for call in Source(text).calls(r"fprintf|printf"):
        args = call.args
        if call.name == "fprintf":
            if len(args) < 2 or args[0].strip() != "stderr":
                continue
            fmt_arg, rest = args[1], args[2:]
        else:
            if not path.endswith("rocminfo.cc") or not args:
                continue
            fmt_arg, rest = args[0], args[1:]
        rest = [re.sub(r"\\\n\s*", "", a) for a in rest]
        pieces = printf_from_args(fmt_arg, rest)
        if pieces:
            out.append(Occurrence(path, call.line, call.function, "error" if call.name == "fprintf" else "print",
                                  tuple(pieces), False, call.name))
    return out


def _close_paren(code: str, open_at: int) -> int:
    depth = 0
    for i in range(open_at, len(code)):
        if code[i] == "(":
            depth += 1
        elif code[i] == ")":
            depth -= 1
            if depth == 0:
                return i
    return len(code) - 1


def meaningful(pieces: tuple, minimum: int = 10) -> bool:
    """Enough fixed text to recognise a line by: formats like '%s' or '%s: %d' are not."""
    if literal_weight(list(pieces)) >= minimum:
        return True
    text = "".join(p for p in pieces if isinstance(p, str))
    return bool(re.search(r"[A-Za-z]{4,}", text)) and literal_weight(list(pieces)) >= 6


# ---- libfabric ----------------------------------------------------------------------------
# include/rdma/providers/fi_log.h: FI_WARN/FI_INFO(prov, subsys, fmt, ...) and each provider's
# own wrappers (VERBS_WARN(subsys, fmt, ...), EFA_WARN, CXIP_WARN(fmt, ...), TXC_WARN(txc, fmt,
# ...)) print through fi_log behind "libfabric:...:<func>():<line><level> " (the normalizer
# strips it); the format is the first argument that is a string literal. Printed when
# FI_LOG_LEVEL is at least the call's level (warn, then trace, info, debug).
LIBFABRIC_CALLS = r"(?:FI|[A-Z][A-Z0-9]*)_(?:WARN|INFO)(?:_ONCE|_SPARSE)?"
_STRING_START = re.compile(r'\s*"')


def libfabric_file(path: str, text: str) -> list[Occurrence]:
    src = Source(text)
    out = []
    for call in src.calls(LIBFABRIC_CALLS):
        args = [re.sub(r"\\\n\s*", " ", a).strip() for a in call.args]
        at = next((i for i, a in enumerate(args) if _STRING_START.match(a)), None)
        if at is None or at > 2:
            continue  # a wrapper passing its own format through, or not a log call
        if args[at + 1:] and args[at + 1].strip() == "__VA_ARGS__":
            continue  # the definition of another wrapper
        pieces = printf_from_args(args[at], args[at + 1:])
        if not pieces:
            continue
        level = "WARN" if "_WARN" in call.name else "INFO"
        out.append(Occurrence(path, call.line, call.function, level, tuple(merge_pieces([pieces])), True, call.name))
    return out


# ---- NVIDIA's Linux kernel driver (open-gpu-kernel-modules) ------------------------------
# kernel-open/common/inc/os-interface.h: nv_printf(level, fmt, ...) prints when the level is at
# least the driver's debug level (NVreg_ResmanDebugLevel; errors and warnings by default);
# NV_DEV_PRINTF prefixes "NVRM: GPU <domain:bus:device.function>: " and NV_DEV_PRINTF_STATUS
# appends " (0x<status>)". The RM's Xid report (src/nvidia/src/kernel/gpu/rc/kernel_rc.c) is a
# portDbgPrintf, since 575 inside a macro whose PCI/GPU-instance part is a macro argument.
# The RM's NV_PRINTF (src/nvidia/inc/libraries/utils/nvprintf.h) keeps its strings in the
# driver (src/nvidia/Makefile defines NV_PRINTF_STRINGS_ALLOWED=1) and, in a release build,
# prints LEVEL_ERROR and above (nvlog_printf.c: debuglevel_min) as "NVRM: <function>: <message>"
# (RmMsgPrefix; later releases put "GPU<n> " before the function when one is current).
# nvidia-peermem (kernel-open/nvidia-peermem, the GPUDirect RDMA bridge to the InfiniBand stack)
# prints its errors with peer_err: printk(KERN_ERR "nvidia-peermem %s:%d ERROR " fmt,
# __FUNCTION__, __LINE__, ...); its peer_trace is compiled out unless NV_MEM_DEBUG is defined.
NVIDIA_CALLS = r"nv_printf|NV_DEV_PRINTF|NV_DEV_PRINTF_STATUS|portDbgPrintf|NV_PRINTF|peer_err"
NV_PRINTF_LEVEL = {"LEVEL_ERROR": "ERROR", "LEVEL_HW_ERROR": "ERROR", "LEVEL_FATAL": "FATAL"}
NVIDIA_LEVEL = {"NV_DBG_ERRORS": "ERROR", "NV_DBG_WARNINGS": "WARN", "NV_DBG_USERERRORS": "WARN",
                "NV_DBG_SETUP": "INFO", "NV_DBG_INFO": "INFO"}


_NV_FMT_MACROS = {"NvU64_fmtx": "llx", "NvU64_fmtX": "llX", "NvU64_fmtu": "llu", "NvU64_fmto": "llo",
                  "NvS64_fmtd": "lld", "NvS64_fmti": "lli", "NV_PCI_DEV_FMT": "%04x:%02x:%02x.%x"}  # "%" NvU64_fmtx
_NV_FMT = re.compile(r"\b(?:" + "|".join(_NV_FMT_MACROS) + r")\b")


def nvidia_file(path: str, text: str) -> list[Occurrence]:
    src = Source(text)
    out = []
    for call in src.calls(NVIDIA_CALLS):
        # inside a #define, a call's arguments carry the backslash line continuations
        name, args = call.name, [re.sub(r"\\\n\s*", " ", a).strip() for a in call.args]
        if name in ("portDbgPrintf", "peer_err"):
            if not args:
                continue
            level, fmt_arg, rest = "ERROR", args[0], args[1:]
        elif name == "NV_PRINTF":
            # warnings, notices and info are below a release build's threshold: not printed
            level = NV_PRINTF_LEVEL.get(args[0].strip()) if len(args) > 1 else None
            if level is None:
                continue
            fmt_arg, rest = args[1], args[2:]
        else:
            skip = {"nv_printf": 1, "NV_DEV_PRINTF": 2, "NV_DEV_PRINTF_STATUS": 3}[name]
            if len(args) <= skip:
                continue
            level = NVIDIA_LEVEL.get(args[0].strip())
            if level is None:
                continue  # a level passed through a variable: not one message's level
            fmt_arg, rest = args[skip], args[skip + 1:]
        if rest and rest[0].strip() == "__VA_ARGS__":
            rest = rest[1:]  # the macro argument's own values: the wildcard for it covers them
        # nvtypes.h's 64-bit conversions and the PCI address macro pair (one format, four values)
        fmt_arg = _NV_FMT.sub(lambda m: '"' + _NV_FMT_MACROS[m.group(0)] + '"', fmt_arg)
        expanded = []
        for a in rest:
            m = re.fullmatch(r"NV_PCI_DEV_FMT_ARGS\((.*)\)", a.strip(), re.S)
            expanded += [f"{m.group(1)}->pci_info.{f}" for f in ("domain", "bus", "slot", "function")] if m else [a]
        pieces = printf_from_args(fmt_arg, expanded)
        if not pieces:
            continue
        if name == "peer_err":
            if not call.function or call.function in src.define_names():
                continue  # the macro's own definition
            pieces = ["nvidia-peermem ", call.function, ":", Slot("uint", "__LINE__"), " ERROR ", *pieces]
        elif name == "NV_PRINTF":
            # __FUNCTION__ of the function it is in; inside a macro, of the function using it
            func = Slot("cident", "function") if call.function in src.define_names() or not call.function \
                else call.function
            pieces = ["NVRM: ", func, ": ", *pieces]
        elif name not in ("nv_printf", "portDbgPrintf", "peer_err"):
            pieces = ["NVRM: GPU ", Slot("str", "pci_dev"), ": ", *pieces]
        if name == "NV_DEV_PRINTF_STATUS":
            last = pieces[-1]
            if isinstance(last, str):
                pieces[-1] = last.rstrip("\n")
            pieces += [" (0x", Slot("hex", "status"), ")"]
        out.append(Occurrence(path, call.line, call.function, level, tuple(merge_pieces([pieces])), True, name))
    return out


# ---- Linux kernel drivers users meet in training jobs --------------------------------------
# pr_*() prints its format (after the file's pr_fmt); dev_*() / pci_*() put "<driver> <device>: "
# in front (and the file's dev_fmt: amdgpu's is "amdgpu: "); mlx5_core_err/warn (and _rl) add
# "<function>:<line>:(pid <pid>): ", and so do mlx5_ib_err/warn/dbg (mlx5_ib.h; dbg prints under
# dynamic debug, e.g. the error-CQE dumps of cq.c); netdev_*() put "<driver> <device> <ifname>: "
# and ibdev_*() "<driver> <ibdev>: " in front; DRM_ERROR prints "[drm:<function> [<module>]] *ERROR* ",
# DRM_INFO / DRM_WARN "[drm] ". The kernel's %p extensions (%pGg, %pe, %*pbl ...) print text.
LINUX_CALLS = (r"pr_(?:emerg|alert|crit|err|warn|warning|notice|info)|dev_(?:emerg|alert|crit|err|warn|notice|info)"
               r"(?:_ratelimited|_once)?|pci_(?:err|warn|notice|info)|mlx5_core_(?:err|warn|info)(?:_rl)?"
               r"|DRM_(?:ERROR|WARN|INFO)(?:_ONCE|_RATELIMITED)?|netdev_(?:err|warn|notice|info)"
               r"|ibdev_(?:err|warn|notice|info)(?:_ratelimited)?|mlx5_ib_(?:err|warn|dbg)|printk")
# printk(KERN_CRIT "fmt", ...): the level is the macro glued to the format (kern_levels.h);
# a printk without one (a continuation, or a level held in a variable) is not a message's start
_KERN_LEVEL = re.compile(r"^KERN_(EMERG|ALERT|CRIT|ERR|WARNING|NOTICE|INFO)\s+(?=\S)")
LINUX_LEVEL = {"emerg": "fatal", "alert": "fatal", "crit": "fatal", "err": "error", "ERROR": "error",
               "warn": "warning", "warning": "warning", "WARN": "warning", "notice": "info", "info": "info",
               "INFO": "info", "dbg": "debug"}
_KERNEL_P = re.compile(r"%\*p[a-zA-Z]+|%p[A-Za-z][A-Za-z0-9]*")


# string macros glued to kernel formats: arch/x86/include/asm/mce.h's HW_ERR (every machine
# check line), include/linux/printk.h's KERN_CONT (a continuation: nothing printed)
_KERNEL_STR_MACROS = {"HW_ERR": '"[Hardware Error]: "', "KERN_CONT": '""'}
_KERNEL_STR_MACRO = re.compile(r"(?<![\w\"])(" + "|".join(_KERNEL_STR_MACROS) + r")(?=\s*\")")


def _kernel_printf(fmt_arg: str, rest: list[str]) -> list[Piece] | None:
    # %*pbl takes the width and the pointer: two arguments for one printed text
    def sub(m: re.Match) -> str:
        return "%*s" if m.group(0).startswith("%*") else "%s"
    fmt_arg = _KERNEL_STR_MACRO.sub(lambda m: _KERNEL_STR_MACROS[m.group(1)], fmt_arg)
    return printf_from_args(_KERNEL_P.sub(sub, fmt_arg), rest)


# files whose pr_fmt comes from a header they include (arch/x86/kernel/cpu/mce/internal.h)
_HEADER_PR_FMT = {"arch/x86/kernel/cpu/mce/": "mce: "}
# built-in objects and single-file modules, whose KBUILD_MODNAME is the file's own name
# (traps.c prints "traps: "); a multi-file module's name (mlx5_core) is not its file's
_MODNAME_IS_STEM = ("arch/", "kernel/", "mm/", "drivers/pci/", "drivers/edac/", "drivers/iommu/")


def _file_fmt(text: str, name: str, path: str = "") -> str:
    m = re.search(rf"#define\s+{name}\(fmt\)\s+((?:\"(?:\\.|[^\"\\])*\"\s*|KBUILD_MODNAME\s*)+)fmt", text)
    if not m:
        if name == "pr_fmt":
            return next((v for k, v in _HEADER_PR_FMT.items() if path.startswith(k)), "")
        return ""
    body = m.group(1)
    if path.startswith(_MODNAME_IS_STEM):
        body = body.replace("KBUILD_MODNAME", '"%s"' % path.rsplit("/", 1)[-1].rsplit(".", 1)[0])
    return "".join(re.findall(r'"((?:\\.|[^"\\])*)"', body))


def linux_file(path: str, text: str) -> list[Occurrence]:
    src = Source(text)
    pr_fmt, dev_fmt = _file_fmt(text, "pr_fmt", path), _file_fmt(text, "dev_fmt", path)
    # a file may #undef and redefine pr_fmt for its later part (mm/memory-failure.c:
    # "Memory failure: ", then "Unpoison: " and "Soft offline: "): a call takes the last
    # definition above it
    redefined = [(text.count("\n", 0, m.start()) + 1, _file_fmt(m.group(0), "pr_fmt", path))
                 for m in re.finditer(r"#define\s+pr_fmt\(fmt\)[^\n]*", text)]
    if path.startswith(("drivers/gpu/drm/amd/amdgpu/", "drivers/gpu/drm/amd/amdkfd/")) and "amdgpu.h" not in path:
        # amdgpu.h sets both for every file that includes it; amdkfd's files reach it through
        # kfd_priv.h (kfd_device.c: "kfd kfd: amdgpu: added device 1002:740f")
        pr_fmt = pr_fmt or "amdgpu: "
        dev_fmt = dev_fmt or "amdgpu: "
    out = []
    for call in src.calls(LINUX_CALLS):
        name = call.name
        args = [re.sub(r"\\\n\s*", " ", a).strip() for a in call.args]
        if name == "printk":
            m = _KERN_LEVEL.match(args[0]) if args else None
            if not m:
                continue
            kind = m.group(1).lower()
            args = [args[0][m.end():]] + args[1:]
        else:
            kind = name.split("_")[1] if name.startswith(("pr_", "dev_", "pci_", "DRM_", "netdev_", "ibdev_")) else name.split("_")[2]
        level = LINUX_LEVEL.get(kind)
        if level is None:
            continue
        if name.startswith("pr_") or name.startswith("DRM_") or name == "printk":
            if not args:
                continue
            fmt_arg, rest = args[0], args[1:]
        else:
            if len(args) < 2:
                continue
            fmt_arg, rest = args[1], args[2:]
        pieces = _kernel_printf(fmt_arg, rest)
        if not pieces:
            continue
        if name.startswith("pr_"):
            here = next((f for line, f in reversed(redefined) if line < call.line), pr_fmt) if len(redefined) > 1 else pr_fmt
            head: list[Piece] = [here] if here else []
        elif name == "printk":
            head = []  # printk does not apply pr_fmt
        elif name.startswith("DRM_ERROR"):
            head = ["[drm:", Slot("str", "function"), "] *ERROR* "]
        elif name.startswith("DRM_"):
            head = ["[drm] "]
        elif name.startswith("netdev_"):
            head = [Slot("str", "device"), " ", Slot("word", "netdev"), ": "]
        else:
            head = [Slot("str", "device"), ": "] + ([dev_fmt] if dev_fmt else [])
            if (name.startswith("mlx5_core_") and not name.startswith("mlx5_core_info")) or name.startswith("mlx5_ib_"):
                head += [Slot("str", "function"), ":", Slot("int", "line"), ":(pid ", Slot("int", "pid"), "): "]
        if pieces and isinstance(pieces[0], str) and pieces[0].startswith("\x01"):
            pieces[0] = pieces[0][2:]  # KERN_CONT and level markers
        out.append(Occurrence(path, call.line, call.function, level, tuple(merge_pieces([head, pieces])), True, name))
    return out


# ---- UCX (the transport layer Open MPI, NCCL's UCX plugin and others run on) ----------------
# src/ucs/debug/log_def.h: ucs_error/ucs_warn/ucs_diag/ucs_info are ucs_log(UCS_LOG_LEVEL_X, ...),
# printed as "[sec.usec] [host:pid:thread]  file.c:line UCX  LEVEL message" (log.c's UCS_LOG_FMT);
# ucs_fatal (assert.h) prepends "Fatal: " and, like ucs_log_fatal_error (the signal handler's
# "Caught signal ..."), prints "[host:pid:thread:tid] file.c:line message" on stderr. Debug and
# trace levels are off in release builds and not read.
UCX_CALLS = r"ucs_error|ucs_warn|ucs_diag|ucs_info|ucs_fatal|ucs_log_fatal_error|ucs_log"
UCX_LEVEL = {"ucs_error": "error", "ucs_warn": "warning", "ucs_diag": "diag", "ucs_info": "info",
             "ucs_fatal": "fatal", "ucs_log_fatal_error": "fatal"}
UCX_LOG_LEVEL = {"UCS_LOG_LEVEL_FATAL": "fatal", "UCS_LOG_LEVEL_ERROR": "error", "UCS_LOG_LEVEL_WARN": "warning",
                 "UCS_LOG_LEVEL_DIAG": "diag", "UCS_LOG_LEVEL_INFO": "info", "UCS_LOG_LEVEL_PRINT": "print"}
# format macros of the headers (ib_iface.h, uct.h, pgtable.h, ucp_types.h) and the values their
# _ARG companions pass (ib_iface.h: the device name, the port number and "IB" or "RoCE"); a
# macro not listed stays a wildcard
_UCX_FMT_MACROS = {"UCT_IB_IFACE_FMT": "%s:%d/%s", "UCT_TL_RESOURCE_DESC_FMT": "%s/%s",
                   "UCS_PGT_REGION_FMT": "%p [0x%lx..0x%lx]", "UCT_TL_BITMAP_FMT": "0x%lx 0x%lx",
                   "UCT_IB_MLX5_UMR_MKEY_FMT": "UMR mkey %p index 0x%x"}
_UCX_ARG_MACROS = {"UCT_IB_IFACE_ARG": ("device", "port", "link_layer"), "UCT_TL_RESOURCE_DESC_ARG": ("transport", "device"),
                   "UCS_PGT_REGION_ARG": ("region", "start", "end"), "UCT_TL_BITMAP_ARG": ("bitmap0", "bitmap1")}
_UCX_FMT = re.compile(r"\b(?:" + "|".join(_UCX_FMT_MACROS) + r")\b")
_PRI = re.compile(r'"\s*PRI([diouxX])(?:8|16|32|64|PTR|MAX)\s*(")?')


# before v1.12.0 ib_iface.h's UCT_IB_IFACE_FMT was "%s:%d" (device and port): "mlx5_0:1"
_UCX_BEFORE_1_12 = {"UCT_IB_IFACE_FMT": "%s:%d"}
_UCX_ARG_BEFORE_1_12 = {"UCT_IB_IFACE_ARG": ("device", "port")}


class _UcxExtractor:
    """``ucx_file`` with the format macros of the release being read (see ``collect``)."""

    @staticmethod
    def flavor(version: str) -> str:
        m = re.match(r"v(\d+)\.(\d+)", version)
        return "before-1.12" if m and (int(m.group(1)), int(m.group(2))) < (1, 12) else ""

    def __call__(self, path: str, text: str, flavor: str | None = None) -> list[Occurrence]:
        if flavor == "before-1.12":
            return ucx_file(path, text, {**_UCX_FMT_MACROS, **_UCX_BEFORE_1_12}, {**_UCX_ARG_MACROS, **_UCX_ARG_BEFORE_1_12})
        return ucx_file(path, text)


ucx_release_file = _UcxExtractor()


def ucx_file(path: str, text: str, fmt_macros: dict | None = None, arg_macros: dict | None = None) -> list[Occurrence]:
    fmt_macros = fmt_macros or _UCX_FMT_MACROS
    arg_macros = arg_macros or _UCX_ARG_MACROS
    out = []
    for call in Source(text).calls(UCX_CALLS):
        name, args = call.name, [re.sub(r"\\\n\s*", " ", a).strip() for a in call.args]
        if name == "ucs_log":
            if len(args) < 2:
                continue
            # a level held in a variable (the mlx5 completion-error dump) is an error by default
            level = UCX_LOG_LEVEL.get(args[0], "error" if not args[0].startswith("UCS_LOG_LEVEL_") else None)
            fmt_arg, rest = args[1], args[2:]
        else:
            level = UCX_LEVEL[name]
            if not args:
                continue
            fmt_arg, rest = args[0], args[1:]
        if level is None:
            continue
        fmt_arg = _PRI.sub(lambda m: "l" + m.group(1) + ("" if m.group(2) else '"'), fmt_arg)
        fmt_arg = _UCX_FMT.sub(lambda m: '"' + fmt_macros[m.group(0)] + '"', fmt_arg)
        expanded = []
        for a in rest:
            m = re.fullmatch(r"(\w+_ARG)\((.*)\)", a, re.S)
            expanded += list(arg_macros[m.group(1)]) if m and m.group(1) in arg_macros else [a]
        pieces = printf_from_args(fmt_arg, expanded)
        if not pieces:
            continue
        if name == "ucs_fatal":
            pieces = merge_pieces([["Fatal: "], pieces])
        out.append(Occurrence(path, call.line, call.function, level, tuple(pieces), True, name))
    return out


# ---- aws-ofi-nccl (NCCL's net plugin over libfabric, EFA on AWS) -----------------------------
# NCCL_OFI_WARN(fmt, ...) and NCCL_OFI_INFO(flags, fmt, ...) hand "NET/OFI " fmt to NCCL's own
# logger (include/nccl_ofi_log.h, the same from v1.0 on), so they print as NCCL WARN/INFO lines:
# "host:pid:tid [dev] NCCL INFO NET/OFI Selected provider is efa ..."; TRACE is compiled out.
OFI_CALLS = r"NCCL_OFI_WARN|NCCL_OFI_INFO"


def ofi_nccl_file(path: str, text: str) -> list[Occurrence]:
    out = []
    for call in Source(text).calls(OFI_CALLS):
        args = [re.sub(r"\\\n\s*", " ", a).strip() for a in call.args]
        if call.name == "NCCL_OFI_INFO":
            if len(args) < 2:
                continue
            level, fmt_arg, rest = "INFO", args[1], args[2:]
        else:
            if not args:
                continue
            level, fmt_arg, rest = "WARN", args[0], args[1:]
        fmt_arg = _PRI.sub(lambda m: "l" + m.group(1) + ("" if m.group(2) else '"'), fmt_arg)
        pieces = printf_from_args(fmt_arg, rest)
        if not pieces:
            continue
        pieces = merge_pieces([["NET/OFI "], pieces])
        out.append(Occurrence(path, call.line, call.function, level, tuple(pieces), True, call.name))
    return out


# ---- nccl-tests / rccl-tests (the all_reduce_perf family) ------------------------------------
# src/common.cu (and common.h): PRINT(...) is printf on rank 0 of the MPI job, the header and
# result lines start with "#"; the failure macros (NCCLCHECK, CUDACHECK, TESTCHECK) printf
# "Test NCCL failure %s:%d '%s'" etc. Every printf of a format literal is read.
NCCLTESTS_CALLS = r"PRINT|printf|fprintf|sprintf|snprintf"


def nccl_tests_file(path: str, text: str) -> list[Occurrence]:
    out = []
    for call in Source(text).calls(NCCLTESTS_CALLS):
        args = [re.sub(r"\\\n\s*", " ", a).strip() for a in call.args]
        at = {"fprintf": 1, "sprintf": 1, "snprintf": 2}.get(call.name, 0)
        if len(args) <= at:
            continue
        if call.name in ("sprintf", "snprintf") and not args[at].lstrip().startswith('"#'):
            continue  # only the header lines built in a buffer (the per-rank device list) are printed
        pieces = printf_from_args(args[at], args[at + 1:])
        if not pieces or not meaningful(tuple(pieces), 8):
            continue
        fixed = " ".join(p for p in pieces if isinstance(p, str)).lower()
        level = "error" if (re.search(r"failure|error|invalid", fixed) or call.name == "fprintf") else "print"
        out.append(Occurrence(path, call.line, call.function, level, tuple(pieces), True, call.name))
    return out


# ---- Gloo (torch.distributed's CPU backend, vendored as third_party/gloo) --------------------
# gloo/common/error.h: GLOO_ERROR_MSG(...) is MakeString("[", __FILE__, ":", __LINE__, "] ", ...)
# and the GLOO_THROW* macros throw it; gloo/common/logging.h: GLOO_INFO/WARN/ERROR write
# "[file:line] LEVEL msg" to stderr (GLOO_DEBUG is compiled out), and GLOO_ENFORCE* throw
# EnforceNotMet, whose text (logging.cc) is "[enforce fail at file:line] <condition>. <msg>";
# the _EQ/_NE/... forms put "<x> vs <y>" before the message, joined by ". " when there is one.
GLOO_CALLS = (r"GLOO_ERROR_MSG|GLOO_THROW(?:_IO_EXCEPTION|_INVALID_OPERATION_EXCEPTION)?|GLOO_INFO|GLOO_WARN|GLOO_ERROR"
              r"|GLOO_ENFORCE(?:_EQ|_NE|_LE|_LT|_GE|_GT)?")
_GLOO_COMPARE = {"EQ": "==", "NE": "!=", "LE": "<=", "LT": "<", "GE": ">=", "GT": ">"}


def _gloo_where(head: str) -> list[Piece]:
    return [head, Slot("str", "__FILE__"), ":", Slot("uint", "__LINE__"), "] "]


def gloo_file(path: str, text: str) -> list[Occurrence]:
    out = []
    for call in Source(text).calls(GLOO_CALLS):
        name = call.name
        args = [re.sub(r"\\\n\s*", " ", a).strip() for a in call.args]
        if name.startswith("GLOO_ENFORCE"):
            op = _GLOO_COMPARE.get(name.rsplit("_", 1)[-1]) if name != "GLOO_ENFORCE" else None
            if op:
                if len(args) < 2:
                    continue
                x, y = (" ".join(a.split()) for a in args[:2])
                extra = stream_pieces(args[2:]) if args[2:] else []
                body = [f"{x} {op} {y}. ", Slot("any", x), " vs ", Slot("any", y)] + ([". "] + extra if extra else [])
            else:
                if not args:
                    continue
                body = [" ".join(args[0].split()) + ". "] + stream_pieces(args[1:])
            pieces = merge_pieces([_gloo_where("[enforce fail at "), body])
            level = "raise gloo::EnforceNotMet"
        else:
            if not args or (len(args) == 1 and re.match(r"GLOO_ERROR_MSG\s*\(", args[0])):
                continue  # GLOO_THROW(GLOO_ERROR_MSG(...)) is read at the inner call
            body = stream_pieces(args)
            if name in ("GLOO_INFO", "GLOO_WARN", "GLOO_ERROR"):
                level = name[5:]
                body = [level + " "] + body
            else:
                level = {"GLOO_THROW_IO_EXCEPTION": "raise gloo::IoException",
                         "GLOO_THROW_INVALID_OPERATION_EXCEPTION": "raise gloo::InvalidOperationException",
                         "GLOO_THROW": "raise gloo::Exception"}.get(name, "text")
            pieces = merge_pieces([_gloo_where("["), body])
        if not meaningful(tuple(merge_pieces([body])), 8):
            continue
        out.append(Occurrence(path, call.line, call.function, level, tuple(pieces), True, name))
    return out


# ---- Open MPI: show_help topics and the aggregated-help lines --------------------------------
# opal_show_help(file, topic, want_error_header, ...) prints the topic's text from the help file
# (opal/util/show_help.c: the lines under "[topic]" up to the next topic, with printf
# conversions filled), between lines of dashes. A log shows the text line by line, so a record
# is the topic's first line, the headline ("WARNING: There was an error initializing an
# OpenFabrics device."); the later lines ("  Local host: %s") say nothing on their own. Topics
# whose headline is too generic to recognise (a bare "%s", a short phrase) are left out.
# orte/util/show_help.c (v3-v4) then counts the repeats from other processes and prints
# "N more processes have sent help message FILE / TOPIC" once aggregation is on.
_HELP_TOPIC = re.compile(r"^\[(?P<topic>[^\]]+)\]\s*$")
_C_DEFINITION = re.compile(r"^(?:static\s+)?(?:void|int|bool|char\s*\*|\w+_t)\s+\*?(\w+)\s*\(", re.MULTILINE)


_TERNARY = re.compile(r'^\(?[^?]*\)?\s*\?\s*"((?:\\.|[^"\\])*)"\s*:\s*"((?:\\.|[^"\\])*)"$')


def _ternary_variants(pieces: list[Piece]) -> list[list[Piece]]:
    """A ``%s`` filled by ``cond ? "es have" : " has"`` prints one of two texts: one
    variant of the pieces per branch, each with the text in place of the slot."""
    for i, piece in enumerate(pieces):
        if isinstance(piece, Slot) and (m := _TERNARY.match(piece.arg.strip())):
            return [v for branch in m.groups() for v in _ternary_variants(pieces[:i] + [branch] + pieces[i + 1:])]
    return [pieces]


# Open MPI's UCX components log through opal_output_verbose with the source place and a level
# word in front (pml_ucx.h in 3.x; opal/mca/common/ucx/common_ucx.h from 4.0):
# "[host:pid] pml_ucx.c:309  Error: Failed to create UCP worker" (one space before "Error:" in 3.x)
OMPI_UCX_CALLS = r"PML_UCX_ERROR|PML_UCX_WARN|OSC_UCX_ERROR|OSC_UCX_WARN|MCA_COMMON_UCX_ERROR|MCA_COMMON_UCX_WARN"
OMPI_UCX_FILES = ("/pml_ucx.c", "/pml_ucx_datatype.c", "/pml_ucx_request.c", "/common_ucx.c", "/common_ucx_wpool.c",
                  "/osc_ucx_comm.c", "/osc_ucx_component.c", "/osc_ucx_active_target.c", "/osc_ucx_passive_target.c")


def _ompi_ucx_calls(path: str, text: str) -> list[Occurrence]:
    out = []
    for call in Source(text).calls(OMPI_UCX_CALLS):
        if not call.args:
            continue
        pieces = printf_from_args(call.args[0], call.args[1:])
        pieces = [Slot("cfunc", p.arg) if isinstance(p, Slot) and p.arg == "__func__" else p
                  for p in pieces] if pieces else pieces
        if not pieces or not meaningful(tuple(pieces), 12):
            continue
        warn = call.name.endswith("WARN")
        head = "Warning: " if warn else "Error: "
        out.append(Occurrence(path, call.line, call.function, "warning" if warn else "error",
                              tuple(merge_pieces([head] + list(pieces))), False, call.name))
    return out


def ompi_file(path: str, text: str) -> list[Occurrence]:
    if path.endswith(OMPI_UCX_FILES):
        return _ompi_ucx_calls(path, text)
    if path.endswith("show_help.c"):
        out = []
        for call in Source(text).calls(r"opal_output|asprintf"):
            args = call.args
            at = 1  # opal_output(0, fmt, ...) and asprintf(&buf, fmt, ...)
            if len(args) <= at or (call.name == "opal_output" and args[0].strip() != "0"):
                continue
            pieces = printf_from_args(args[at], args[at + 1:])
            if pieces and meaningful(tuple(pieces), 16):
                # the loop header "item = opal_list_get_next(item)) {" reads as a definition to
                # the generic scan: take the last C definition that starts a line instead
                heads = _C_DEFINITION.findall(text[:call.offset])
                for variant in _ternary_variants(pieces):
                    # not anchored: mpirun prints these after a "[host:pid] " of its own
                    out.append(Occurrence(path, call.line, heads[-1] if heads else call.function, "warning",
                                          tuple(merge_pieces(variant)), False, call.name))
        return out
    if not path.rsplit("/", 1)[-1].startswith("help-"):
        return []
    out = []
    topic, headline_seen = None, False
    for number, line in enumerate(text.splitlines(), 1):
        m = _HELP_TOPIC.match(line)
        if m:
            topic, headline_seen = m.group("topic"), False
            continue
        if topic is None or headline_seen or line.startswith("#") or not line.strip():
            continue
        headline_seen = True
        pieces = tuple(printf_pieces(line.rstrip(), []))
        if not meaningful(pieces, 24):
            continue
        fixed = " ".join(p for p in pieces if isinstance(p, str)).lower()
        level = "warning" if fixed.lstrip().startswith("warning") else "error"
        out.append(Occurrence(path, number, topic, level, pieces, True, "opal_show_help"))
    return out
