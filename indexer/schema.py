"""The knowledge-base entry schema: the one place that says what a KB entry is.

Curators read ``docs/kb-format.md``; ``explainlog kb check`` enforces this model. Keeping the
schema a pydantic model (rather than ad-hoc dict checks) gives every validation error a path
that the checker can turn back into a file and line.
"""

from __future__ import annotations

import re
from enum import Enum
from typing import Annotated, Optional

from pydantic import BaseModel, ConfigDict, Field, StringConstraints, field_validator

ID_RE = r"^[a-z0-9]+(?:[._][a-z0-9]+)*$"
ID_PATTERN = re.compile(ID_RE)
SOURCE_PATTERN = re.compile(r"^[A-Za-z0-9][\w.-]*/[\w.-]+ \S.*$|^(?:docs|man|kernel|vendor): \S.*$")
CJK = re.compile(r"[\u4e00-\u9fff]")
# YAML folded scalars (>-) join lines with a space; between two Chinese characters or
# full-width punctuation that space is an artefact, not text.
_CJK_CLASS = r"[\u3000-\u303f\u4e00-\u9fff\uff00-\uffef]"
FOLDED_CJK_SPACE = re.compile(rf"(?<={_CJK_CLASS})[ \t\n]+(?={_CJK_CLASS})")
# ... and next to full-width punctuation no space belongs either ("， watchdog", "完成 。"), nor
# before a full-width bracket ("DSElasticAgent （它的子类）") or a quote after Chinese ("打印 “taking").
SPACE_BY_FULLWIDTH = re.compile(
    r"(?<=[，。；：、（“！？])[ \t\n]+|[ \t\n]+(?=[，。；：、（）”！？])|(?<=[\u4e00-\u9fff])[ \t\n]+(?=“)"
)


class Component(str, Enum):
    """The software that *emits* a line (not the one that caused it)."""

    nccl = "nccl"
    rccl = "rccl"
    torch_distributed = "torch_distributed"
    torch_elastic = "torch_elastic"
    deepspeed = "deepspeed"
    megatron = "megatron"
    transformers = "transformers"
    accelerate = "accelerate"
    mmengine = "mmengine"
    xtuner = "xtuner"
    cuda = "cuda"
    rocm = "rocm"
    infiniband = "infiniband"
    slurm = "slurm"
    python = "python"
    other = "other"


class Severity(str, Enum):
    info = "info"
    warning = "warning"
    error = "error"
    fatal = "fatal"


SEVERITY_RANK = {Severity.info: 0, Severity.warning: 1, Severity.error: 2, Severity.fatal: 3}


class Role(str, Enum):
    """How a line relates to a failure; lets a reader skip wrappers and find the root cause."""

    context = "context"
    progress = "progress"
    advice = "advice"
    root_cause = "root_cause"
    cascade = "cascade"
    wrapper = "wrapper"


NonEmpty = Annotated[str, StringConstraints(strip_whitespace=True, min_length=1)]


class Bilingual(BaseModel):
    """A text written twice by a curator, once for each audience; never machine-translated."""

    model_config = ConfigDict(extra="forbid")
    en: NonEmpty
    zh: NonEmpty

    @field_validator("zh")
    @classmethod
    def zh_is_chinese(cls, value: str) -> str:
        if not CJK.search(value):
            raise ValueError("zh text contains no Chinese characters")
        return SPACE_BY_FULLWIDTH.sub("", FOLDED_CJK_SPACE.sub("", value))


class FieldSpec(Bilingual):
    """Meaning of one named regex group, plus optional decoding of its value.

    ``decode`` names a built-in decoder (see ``indexer.decoders``); ``values`` maps raw values
    to curated text (error codes, signal numbers, variable names); ``default`` is used for a
    value missing from ``values``. Either makes ``{name_decoded}`` available to the texts.
    """

    decode: Optional[str] = None
    values: Optional[dict[str, Bilingual]] = None
    default: Optional[Bilingual] = None


class Verdict(Bilingual):
    """What the line means in this run when ``when`` holds over its fields (a condition in
    ``indexer.verdicts``' safe syntax). The texts may use the entry's placeholders and its
    ``compute`` names; ``tests`` are extra lines (matching the entry) on which it must fire,
    for a case no example shows."""

    when: NonEmpty
    tests: list[NonEmpty] = Field(default_factory=list)

    @field_validator("when")
    @classmethod
    def when_parses(cls, value: str) -> str:
        from indexer.verdicts import parse

        parse(value)  # ValueError -> a finding at this key
        return value


class Example(BaseModel):
    """A real line with its prefix, optionally with the field values it must yield."""

    model_config = ConfigDict(extra="forbid")
    line: NonEmpty
    fields: dict[str, str] = Field(default_factory=dict)
    note: Optional[str] = None


class Evidence(BaseModel):
    """One place in the source that backs a fact of an entry: where the message is printed, or
    where a decoded field, flag or value is set. ``repo: docs`` (with ``ref: docs``) names a
    document instead, for messages outside readable source (a closed driver's Xid table)."""

    model_config = ConfigDict(extra="forbid")
    repo: Annotated[str, StringConstraints(pattern=r"^(?:[A-Za-z0-9][\w.-]*/[\w.-]+|docs|kernel)$")]
    ref: NonEmpty  # a release tag or a commit, 'docs' for a document
    file: NonEmpty  # a path in the repo; for docs the document (URL or title)
    line: Optional[int] = None
    what: NonEmpty  # the fact this place establishes


class PatternEntry(BaseModel):
    """One log message format and its curated, bilingual explanation."""

    model_config = ConfigDict(extra="forbid")

    id: Annotated[str, StringConstraints(pattern=ID_RE, max_length=120)]
    title: Bilingual
    component: Component
    severity: Severity
    role: Role
    pattern: NonEmpty
    priority: int = 0
    # Optional constraints on the parsed prefix (key -> RE2 regex searched in that value), for
    # messages whose text is shared by several emitters (torchrun's and mmengine's
    # OMP_NUM_THREADS warnings) or that mean different things at INFO and WARN level.
    context: dict[str, NonEmpty] = Field(default_factory=dict)
    fields: dict[str, FieldSpec] = Field(default_factory=dict)
    # One sentence (<= 140 characters once filled) saying what the line means in this run;
    # the first verdict that fires replaces it; absent, the title stands in.
    summary: Optional[Bilingual] = None
    verdicts: list[Verdict] = Field(default_factory=list)
    # Named values derived from the fields for texts and verdicts (name -> expression).
    compute: dict[str, NonEmpty] = Field(default_factory=dict)
    explanation: Bilingual
    action: Optional[Bilingual] = None
    examples: list[Example] = Field(min_length=1)
    negatives: list[NonEmpty] = Field(default_factory=list)
    source: NonEmpty
    references: list[NonEmpty] = Field(default_factory=list)
    versions: Optional[str] = None
    # Ids of the catalogue records (kb/catalog/) whose message this entry explains: every
    # format of the message, old and new wordings; the entry's pattern must match their examples.
    formats: list[str] = Field(default_factory=list)
    # How engineers name this problem when they ask about it in words rather than paste the
    # line ("NCCL 超时", "爆显存", "Address already in use"): `explainlog ask` takes a phrase
    # found in a question as naming this entry. Names only, no facts.
    asked: list[Annotated[str, StringConstraints(strip_whitespace=True, min_length=2, max_length=60)]] = Field(default_factory=list)
    # The evidence for what the entry states, read at the tags claimed (issue 15): where the
    # message is printed and where each decoded field or flag is set.
    verified: list[Evidence] = Field(default_factory=list)

    @field_validator("examples", mode="before")
    @classmethod
    def examples_may_be_plain_strings(cls, value: object) -> object:
        if isinstance(value, list):
            return [{"line": item} if isinstance(item, str) else item for item in value]
        return value

    @field_validator("compute")
    @classmethod
    def compute_parses(cls, value: dict[str, str]) -> dict[str, str]:
        from indexer.verdicts import parse

        for name, source in value.items():
            if not re.fullmatch(r"[A-Za-z_]\w*", name):
                raise ValueError(f"compute name {name!r} is not an identifier")
            parse(source)
        return value

    @field_validator("source")
    @classmethod
    def source_names_repo_and_file(cls, value: str) -> str:
        if not SOURCE_PATTERN.match(value):
            raise ValueError(
                "source must be 'owner/repo path/to/file' (e.g. 'NVIDIA/nccl src/init.cc') "
                "or 'docs: <document>' / 'kernel: <driver>' / 'vendor: <tool>'"
            )
        return value

    @field_validator("references")
    @classmethod
    def references_are_urls(cls, value: list[str]) -> list[str]:
        for url in value:
            if not url.startswith(("https://", "http://")):
                raise ValueError(f"reference is not a URL: {url!r}")
        return value


class Concept(BaseModel):
    """A concept the KB's texts rely on (LL128, PXN, ZeRO-3, rendezvous ...), for ``ask``:
    ``kb/concepts/*.yaml``, a YAML list of these."""

    model_config = ConfigDict(extra="forbid")
    id: Annotated[str, StringConstraints(pattern=ID_RE, max_length=120)]
    names: list[NonEmpty] = Field(min_length=1)  # what users call it; an exact mention wins
    component: Component
    title: Bilingual
    text: Bilingual
    see: list[str] = Field(default_factory=list)  # ids of entries, variables or concepts
    verified: list[Evidence] = Field(min_length=1)


def json_schema() -> dict:
    """JSON Schema of one entry, for editors and for docs/kb-format.md."""
    return PatternEntry.model_json_schema()
