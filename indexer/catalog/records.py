"""Catalogue records (``kb/catalog/*.jsonl``) as the explainer and ``kb check`` see them.

A record is one message format extracted from source, with its place and versions, and a
short text written from reading the code. For matching it becomes a ``PatternEntry`` whose
priority sits below every curated entry (curated text is richer and wins) and grows with the
format's fixed text, so that of two formats matching a line the more specific one answers.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Optional

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from indexer.catalog.versions import version_key
from indexer.schema import Bilingual, Component, FieldSpec, PatternEntry, Role, Severity, Example

CATALOG_DIR = "catalog"
# Curated entries use priorities around 0 (a few go to -10); catalogue records stay below.
CATALOG_PRIORITY = -10_000
CATALOG_CEILING = CATALOG_PRIORITY + 2_001  # every record's priority is below; curated ones above


def pattern_tier(entry: PatternEntry) -> str:
    """'catalog' for a catalogue record, 'regex' for a curated entry: the answer's tier."""
    return "catalog" if entry.priority < CATALOG_CEILING else "regex"


class CatalogExample(BaseModel):
    model_config = ConfigDict(extra="forbid")
    line: str
    constructed: bool


class CatalogRecord(BaseModel):
    model_config = ConfigDict(extra="forbid")

    id: str
    component: Component
    repo: str
    file: str
    line: int
    function: str
    level: str
    call: str
    format: str
    pattern: str
    groups: dict[str, str] = Field(default_factory=dict)
    versions: list[str] = Field(min_length=1)
    versions_from: Optional[str] = None
    other_versions: dict[str, list[str]] = Field(default_factory=dict)
    also_in: list[str] = Field(default_factory=list)
    matchable: bool
    severity: Severity
    role: Role
    title: Optional[Bilingual] = None
    explanation: Optional[Bilingual] = None
    action: Optional[Bilingual] = None
    example: CatalogExample
    # a message of unrelated software this record's pattern also matches ("<package>: <line>",
    # from kb/unrelated/; written by ``explainlog catalog unrelated``): the line does not say
    # which program printed it, so the record is listed but answers nothing
    unrelated: Optional[str] = None
    # the same for single printed lines of a multi-line message (``lines.line_parts``), by the
    # part's number: "line3" -> evidence; the other lines still answer
    unrelated_lines: dict[str, str] = Field(default_factory=dict)

    @property
    def own_head(self) -> Optional[str]:
        """For a record marked ``unrelated``: the context rule under which it still answers, when
        its program prints a head no other program does (``own_head``; NCCL's ``host:pid:tid
        [dev] NCCL WARN``, UCX's, libfabric's ..., read into the ``format`` context by the
        normalizer): "Call to bind failed: Address already in use" is anyone's, behind NCCL's
        head it is NCCL's."""
        head = own_head(self.component.value, self.repo, self.file) if self.unrelated else None
        return head[1] if head else None

    @property
    def has_text(self) -> bool:
        return self.title is not None and self.explanation is not None

    @property
    def answers(self) -> bool:
        """Whether the record answers lines: it has text and enough fixed text to recognise a
        line by. A format whose only fixed text is one ordinary word ("{peer} disconnected",
        "Resumed {step}", "console") is listed but answers nothing: Kafka's "... broker
        localhost:9092 (id: -1 rack: null) disconnected" is not rdma-core's ucmatose."""
        if not (self.matchable and self.has_text) or (self.unrelated and self.own_head is None):
            return False
        fixed = _CONVERSION.sub(" ", self.format).strip().rstrip(".")
        if _ONE_PLAIN_WORD.fullmatch(fixed) is not None:
            return False
        # a format that opens with free text and whose fixed text, punctuation and small words
        # aside, is one word any program says of anything: "{message} failed: {error}" (UCX's
        # ib_log) would answer every "X failed: Y", "{comp} is finished." every "... is finished."
        # ("{func}: Returned {status} : ..." of HIP and "{net}/Plugin: ..." of NCCL keep answering)
        if self.format.startswith("{"):
            words = [w.lower() for w in _WORD.findall(fixed) if len(w) > 1 and w.lower() not in _SMALL_WORDS]
            if len(words) <= 1 and all(w in _OUTCOME_WORDS for w in words):
                return False
        return True


# Heads only one program prints, as the normalizer's prefix rules name them in the ``format``
# context (it joins the rules a line matched with "+"), and a head of each for the records' own
# examples: NCCL's and RCCL's "host:pid:tid [dev] NCCL WARN" (also what NCCL's net plugins print
# through), UCX's "[time] [host:pid:tid] file:line UCX ERROR", libfabric's
# "libfabric:pid:time:prov:subsys:func():line<level>", HIP's AMD_LOG_LEVEL head, DeepSpeed's and
# mmengine's loggers, and c10's "[W file.cpp:line]" (PyTorch's C++ only)
_NCCL_HEAD = (r"(?:^|\+)nccl", "node-1:1234:1234 [0] NCCL WARN ")
OWN_HEAD_BY_COMPONENT = {"nccl": _NCCL_HEAD, "rccl": _NCCL_HEAD}
OWN_HEAD_BY_REPO = {
    "openucx/ucx": (r"(?:^|\+)ucx", "[1612345678.123456] [node-1:1234:0]     ib_iface.c:123  UCX  ERROR "),
    "ofiwg/libfabric": (r"(?:^|\+)libfabric(?:$|\+)", "libfabric:1234:1612345678::efa:core:efa_foo():123<warn> "),
    "ROCm/clr": (r"(?:^|\+)amd_log(?:$|\+)", ":1:hip_code_object.cpp:123 : 123456789 us: [pid:1234 tid:0x7f1234567890] "),
    "deepspeedai/DeepSpeed": (r"(?:^|\+)deepspeed(?:$|\+)", "[2024-01-01 00:00:00,000] [INFO] [engine.py:100:__init__] "),
    "open-mmlab/mmengine": (r"(?:^|\+)mmengine(?:$|\+)", "12/01 10:00:00 - mmengine - INFO - "),
    "pytorch/pytorch": (r"(?:^|\+)c10(?:$|\+)", "[W socket.cpp:123] "),
}


# Python's logging names the module that logs (``logging.getLogger(__name__)``): behind a head
# that shows the logger's name, "INFO:megatron.core.datasets.indexed_dataset:Load the ...", read
# into the ``logger`` context by the normalizer, the message is that package's ("Load the {x}
# from {y}" alone is gdb's too). For the projects whose records have no logging head of their own
OWN_LOGGER_BY_REPO = {
    "NVIDIA/Megatron-LM": ("megatron", "megatron.core.module"),
    "pytorch/pytorch": ("torch", "torch.distributed.module"),
    "huggingface/transformers": ("transformers", "transformers.module"),
    "huggingface/accelerate": ("accelerate", "accelerate.module"),
    "InternLM/xtuner": ("xtuner", "xtuner.module"),
    "Lightning-AI/pytorch-lightning": ("(?:lightning|pytorch_lightning|lightning_fabric)", "lightning.pytorch.module"),
}
_PY_SUFFIXES = (".py",)
_CPP_SUFFIXES = (".cpp", ".cc", ".h", ".hpp", ".cu")


def own_head(component: str, repo: str, file: str) -> tuple[str, str, str] | None:
    """(context key, rule on it, a sample head) of the head only this record's program prints,
    if it has one: the ``format`` of a head like NCCL's, or for a Python record the ``logger``
    its package logs under (PyTorch's c10 head only for its C++ messages)."""
    if component in OWN_HEAD_BY_COMPONENT:
        return ("format",) + OWN_HEAD_BY_COMPONENT[component]
    python = file.endswith(_PY_SUFFIXES)
    if repo == "pytorch/pytorch" and not python and not file.endswith(_CPP_SUFFIXES):
        return None
    if repo in OWN_HEAD_BY_REPO and not (repo == "pytorch/pytorch" and python):
        return ("format",) + OWN_HEAD_BY_REPO[repo]
    if python and repo in OWN_LOGGER_BY_REPO:
        package, sample = OWN_LOGGER_BY_REPO[repo]
        return ("logger", rf"^{package}(?:\.|$)", f"INFO:{sample}:")
    return None


_CONVERSION = re.compile(r"\{[^{}]*\}")
_ONE_PLAIN_WORD = re.compile(r"[A-Z]?[a-z]+|[A-Z]+")  # an identifier such as cudaDriverVersion is not one
_WORD = re.compile(r"[A-Za-z0-9_]+")
# (since 2026-12-06 also what any program says of a name it was given: "{x}.{y} does not
# exist" of torch._dynamo's config answered kube-controller-manager's "... nodeName=... does
# not exist"; "{path} not found", "{x} is not supported!!!", "{func}: invalid {id}")
_OUTCOME_WORDS = frozenset("failed fails fail failure error errors finished done success "
                           "succeeded ok fallback warning timeout started starting stopped "
                           "exist exists found missing invalid unknown unsupported supported allowed empty "
                           "deprecated".split())
_SMALL_WORDS = frozenset("is are was were be been the a an of to for in on at by with and or not no it this that "
                         "does do did has have had can cannot could should must".split())


# Projects not read from their first release (or first published source), with the oldest
# release that is read: a message found there may be older, so a span starting there shows as
# "≤v1.9.0–v2.14.1". `kb check` holds each value to the oldest version among the project's
# records. Read from the start, unmarked: NCCL's RCCL port (ROCm 2.5), DeepSpeed, Megatron-LM,
# accelerate, mmengine, xtuner, Slurm, rdma-core, the SHARP plugins.
OLDEST_READ = {
    "NVIDIA/nccl": "v2.3.5-5",                    # NCCL 2.0-2.2 were closed source
    "pytorch/pytorch": "v1.9.0",
    "huggingface/transformers": "v4.0.1",
    "torvalds/linux": "v6.1.192",                 # Debian's two kernel source packages
    "NVIDIA/open-gpu-kernel-modules": "515.43.04",  # the first open release; older drivers are closed
    "ROCm/clr": "rocm-5.6.0",                     # the HIP runtime lived in ROCm/hipamd and ROCclr before
    "ROCm/ROCR-Runtime": "rocm-3.3.0", "ROCm/rocminfo": "rocm-3.3.0",
    "pytorch/elastic": "v0.2.0", "facebookincubator/gloo": "gloo-2018-12-12",
    "Lightning-AI/pytorch-lightning": "1.0.8", "NVIDIA/nccl-tests": "v2.10.0", "aws/aws-ofi-nccl": "v1.4.0",
    "openucx/ucx": "v1.2.2", "ofiwg/libfabric": "v1.6.2", "open-mpi/ompi": "v3.0.6",
}


def version_span(versions: list[str], repo: str | None = None) -> str:
    """'v2.19.3-1–v2.27.7-1' style: first and last tag read that print the message; the first
    as '≤v1.9.0' when it is the oldest release read of a project read from later than its start
    (``OLDEST_READ``)."""
    if not versions:
        return ""
    first = ("≤" if repo is not None and OLDEST_READ.get(repo) == versions[0] else "") + versions[0]
    if len(versions) == 1:
        return first
    return f"{first}–{versions[-1]}"


REPO_NAMES = {
    "NVIDIA/nccl": "NCCL", "ROCm/rccl": "RCCL", "pytorch/pytorch": "PyTorch",
    "deepspeedai/DeepSpeed": "DeepSpeed", "NVIDIA/Megatron-LM": "Megatron-LM",
    "huggingface/accelerate": "accelerate", "huggingface/transformers": "transformers",
    "open-mmlab/mmengine": "mmengine", "InternLM/xtuner": "xtuner", "SchedMD/slurm": "Slurm",
    "Lightning-AI/pytorch-lightning": "Lightning", "ROCm/clr": "HIP (clr)",
    "ROCm/ROCR-Runtime": "ROCr", "NVIDIA/open-gpu-kernel-modules": "NVIDIA open-gpu-kernel-modules", "torvalds/linux": "Linux", "ROCm/rocminfo": "rocminfo", "linux-rdma/rdma-core": "rdma-core", "pytorch/elastic": "torchelastic", "facebookincubator/gloo": "Gloo",
    "ofiwg/libfabric": "libfabric",
}


def entry_versions(records: list[CatalogRecord]) -> str:
    """An entry's ``versions:`` from the records it links: per project, the first and the last
    tag read that print any of its formats ('NCCL v2.19.3-1–v2.27.7-1; RCCL rocm-6.0.0–…')."""
    tags: dict[str, set[str]] = {}
    for rec in records:
        tags.setdefault(rec.repo, set()).update(rec.versions)
        for repo, versions in rec.other_versions.items():
            tags.setdefault(repo, set()).update(versions)
    parts = []
    for repo, found in tags.items():
        if found:
            ordered = sorted(found, key=version_key)
            parts.append(f"{REPO_NAMES.get(repo, repo)} {version_span(ordered, repo)}")
    return "; ".join(parts)


def source_of(rec: CatalogRecord) -> dict:
    """The ``source`` object of an answer: where the line is printed, and in which releases."""
    out = {
        "repo": rec.repo,
        "file": rec.file,
        "line": rec.line,
        "function": rec.function,
        "versions": version_span(rec.versions, rec.repo),
        "record": rec.id,
    }
    for repo, versions in rec.other_versions.items():
        out.setdefault("also", []).append({"repo": repo, "versions": version_span(versions, repo)})
    return out


def as_entry(rec: CatalogRecord) -> PatternEntry:
    """The record as a matchable entry (only called for records with text)."""
    literal = len(re.sub(r"\(\?P<\w+>[^)]*\)|\\[sd]|[\\^$*+?()|\[\]]", "", rec.pattern))
    fields = {
        name: FieldSpec(en=f"printed from `{arg or name}`", zh=f"代码中 `{arg or name}` 的值")
        for name, arg in rec.groups.items()
    }
    return PatternEntry(
        id=rec.id,
        title=rec.title,
        component=rec.component,
        severity=rec.severity,
        role=rec.role,
        pattern=rec.pattern,
        priority=CATALOG_PRIORITY + min(literal, 2000),
        fields=fields,
        explanation=rec.explanation,
        action=rec.action,
        # behind its own head, where a marked record still answers (own_head)
        examples=[Example(line=(own_head(rec.component.value, rec.repo, rec.file)[2] if rec.own_head else "")
                          + rec.example.line)],
        source=f"{rec.repo} {rec.file}",
        versions=version_span(rec.versions, rec.repo),
        context={own_head(rec.component.value, rec.repo, rec.file)[0]: rec.own_head} if rec.own_head else {},
    )


class CatalogProblem(ValueError):
    def __init__(self, file: str, line: int, record_id: str | None, message: str) -> None:
        super().__init__(message)
        self.file, self.line, self.record_id = file, line, record_id


def catalog_files(kb_dir: Path) -> list[Path]:
    """The catalogue's files: ``<component>.jsonl`` in a checkout, xz-compressed in a wheel
    (``.gz`` is read too)."""
    folder = Path(kb_dir) / CATALOG_DIR
    return sorted([*folder.glob("*.jsonl"), *folder.glob("*.jsonl.gz"), *folder.glob("*.jsonl.xz")])


def read_catalog_file(path: Path) -> str:
    if path.name.endswith(".gz"):
        import gzip

        return gzip.decompress(path.read_bytes()).decode("utf-8")
    if path.name.endswith(".xz"):
        import lzma

        return lzma.decompress(path.read_bytes()).decode("utf-8")
    return path.read_text(encoding="utf-8")


def load_catalog(kb_dir: Path) -> tuple[list[tuple[CatalogRecord, str, int]], list[CatalogProblem]]:
    """Every record with its file and line, and the derived record of each printed line of a
    multi-line message; a malformed line is a problem, never a crash."""
    from indexer.catalog.lines import line_parts

    records: list[tuple[CatalogRecord, str, int]] = []
    problems: list[CatalogProblem] = []
    for path in catalog_files(kb_dir):
        shown = str(path)
        try:
            text = read_catalog_file(path)
        except (UnicodeDecodeError, OSError, EOFError) as exc:
            problems.append(CatalogProblem(shown, 1, None, f"unreadable: {exc}"))
            continue
        for number, row in enumerate(text.splitlines(), 1):
            if not row.strip():
                continue
            try:
                raw = json.loads(row)
            except json.JSONDecodeError as exc:
                problems.append(CatalogProblem(shown, number, None, f"not JSON: {exc.msg}"))
                continue
            rid = raw.get("id") if isinstance(raw, dict) else None
            try:
                rec = CatalogRecord.model_validate(raw)
            except ValidationError as exc:
                first = exc.errors()[0]
                where = ".".join(str(p) for p in first["loc"]) or "record"
                problems.append(CatalogProblem(shown, number, rid, f"{where}: {first['msg']}"))
                continue
            records.append((rec, shown, number))
            # each printed line of a multi-line message answers on its own (catalog/lines.py)
            for part in line_parts(raw):
                try:
                    records.append((CatalogRecord.model_validate(part), shown, number))
                except ValidationError as exc:
                    problems.append(CatalogProblem(shown, number, part["id"], f"line part: {exc.errors()[0]['msg']}"))
    return records, problems
