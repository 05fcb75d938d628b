"""``explainlog ask``: answer a question in words from the knowledge base (issue 19).

No language model and no generated text: the answer is one or more texts the KB already holds,
ranked. The documents are the environment variables (``kb/params``), the concepts
(``kb/concepts``), the curated entries and the catalogue records that have text.

Ranking, in order of authority:
0. **Quoted messages**: a curated entry whose message the question quotes, found by the
   explainer in the question or in a piece of it (``quoted_pieces``); catalogue records found
   so rank after the names.
1. **Exact names**: a variable's name (``NCCL_IB_GID_INDEX``, any case), a concept's name or
   alias (``LL128``, ``ZeRO-3``), an entry id or an entry's ``asked:`` phrase ("NCCL 超时")
   in the question puts that document first, in the order the question names them; a
   "how do I set/choose ..." question that names only concepts gets their variable first.
2. **Lexical**: BM25 (Okapi, k1 1.5, b 0.75; ``BM25`` below, numpy only) over both languages, Chinese segmented with ``rjieba``; names
   and titles count three and two times.
3. **Embedding**: the cosine of the question and the document under the KB's sentence model,
   for variables, concepts and entries; fused with BM25 by reciprocal rank.

A question the KB does not know gets ``known: false`` and no answers rather than the nearest
text: without an exact name, the top document must share most of the question's content
words (``COVERAGE``) with a BM25 score of at least ``MIN_BM25``, or be very close under the
model (``MIN_COSINE``). The thresholds were set on the labelled questions of
``tests/data/questions.jsonl`` after that set was frozen (README, "Questions").
"""

from __future__ import annotations

import bisect
import functools
import hashlib
import pickle
import re
import threading
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from indexer import paths
from indexer.catalog.records import REPO_NAMES, source_of, version_span
from indexer.glossary import load_concepts, load_variables
from indexer.kb_loader import KnowledgeBase
from indexer.texts import OPTIONAL, PLACEHOLDER

ASK_KEEP = 4  # cached ask indexes (one per KB version in use), each with its vectors
CJK = re.compile(r"[\u3400-\u9fff]")
LATIN_WORD = re.compile(r"[a-z0-9][a-z0-9_.+-]*[a-z0-9]|[a-z0-9]")
ENV_NAME = re.compile(r"(?<![A-Za-z0-9_])[A-Z][A-Z0-9]*(?:_[A-Z0-9]+){2,}(?![A-Za-z0-9_])")  # NCCL_IB_HCA
NAME_TOKEN = re.compile(r"[A-Za-z][A-Za-z0-9]*(?:_[A-Za-z0-9]+)+")
ID_TOKEN = re.compile(r"[a-z0-9_]+(?:\.[a-z0-9_]+){2,}")
EN_STOP = frozenset(
    "a an and are as at be by can do does did for from how i if in is it its me my of on or so that the "
    "this to was what when where which who why will with you your should we there any set get use using used "
    "mean means meaning happen happens about after before not no yes vs versus than then".split()
)
ZH_STOP = frozenset(
    "的 了 是 吗 呢 啊 吧 么 什么 怎么 怎样 如何 为什么 为何 哪些 哪个 有 没有 在 和 与 及 或 就 都 也 还 要 会 能 可以 "
    "一个 这个 那个 这 那 我 你 他 我们 请问 一下 时候 时 中 上 下 里 对 把 被 给 让 用 使用 设置 问题 意思 含义 作用 "
    "是否 怎么办 应该 多少 报错 出现 ？ ? ， , 。 . ： : ！ ! 、 （ ） ( ) “ ” \" '".split()
)
KIND_ORDER = {"variable": 0, "concept": 1, "entry": 2, "record": 3}
# Words that place a question in this KB's domain (the software it covers and the things of a
# distributed training job). A question without one, and without a name the KB knows, must be
# very close to a document under both searches to be answered: "gradle build 编译很慢" shares
# "build" and "编译" with DeepSpeed's op-build entries and is still not a question for this KB.
DOMAIN = frozenset("""
nccl rccl torch pytorch torchrun elastic c10d gloo deepspeed megatron accelerate transformers
mmengine xtuner lightning cuda cudnn cublas rocm hip hsa amdgpu nvidia gpu gpus nvlink nvswitch
infiniband ib roce rdma mlx5 hca gid ibverbs slurm srun sbatch sharp nvls collnet pxn gdr p2p shm
allreduce all-reduce allgather reducescatter alltoall broadcast collective collectives rank ranks
world_size local_rank zero offload fsdp ddp tp pp dp checkpoint watchdog rendezvous tcpstore
nproc_per_node multinode multi-node distributed xid ecc oom nic nics a100 h100 h800 h20 a800
a40 3090 4090 v100 mi250 mi300 fp16 bf16 amp megatron-lm epoch find_unused_parameters
train training finetune fine-tune finetuning pretrain pretraining pcie pxb pix phb
init_process_group expandable_segments max_split_size_mb pytorch_cuda_alloc_conf
显存 显卡 多卡 多机 单卡 单机 分布式 训练 微调 推理 梯度 并行 通信 超时 卡死 节点 集合通信 网卡 算子 算力
""".split())
# Words of this domain that other software says as often: GPU load of a desktop app, a Redis
# or JDBC timeout. Alone they do not place a question here; two of them, or one with a word
# above, do ("训练超时", "GPU OOM").
WEAK_DOMAIN = frozenset("gpu gpus 超时 显卡 节点 卡死 oom 推理 算力 epoch checkpoint".split())


# How Chinese engineers count and number GPUs: "8张卡", "四张显卡", "4,5,6,7号卡", "两块卡"
# (the segmenter splits them into a number, a measure word and 卡, so they are found in the
# joined words; "张卡片" is a card of another kind)
GPU_COUNT_ZH = re.compile(r"[0-9零一二两三四五六七八九十几多每单双]+[张号块](?:显)?卡(?!片)")


def in_domain(words: list[str]) -> bool:
    """Whether a question's words place it in this KB's domain (``DOMAIN``, ``WEAK_DOMAIN``,
    ``GPU_COUNT_ZH``)."""
    found = {w for w in words if w in DOMAIN}
    # "GPU memory of all GPUs" says one weak word twice
    if bool(found - WEAK_DOMAIN) or len({w.removesuffix("s") for w in found}) >= 2:
        return True
    return bool(GPU_COUNT_ZH.search("".join(words)))


# Other deep-learning frameworks and cluster software this KB does not cover: a question that
# names one and none of the software the KB covers is not this KB's ("PaddlePaddle 训练时单卡比8卡
# 快", "nvidia.com/gpu 超过 1 时 pod 一直 Pending") however many GPU words it has.
FOREIGN = frozenset("""
tensorflow tf keras paddle paddlepaddle mxnet jax flax mindspore caffe theano onnxruntime tensorrt
kubernetes k8s kubectl pod pods helm yarn
""".split())
OWN = frozenset("""
nccl rccl torch pytorch torchrun c10d gloo deepspeed megatron megatron-lm accelerate transformers
mmengine xtuner lightning slurm srun sbatch infiniband roce rdma mlx5 ibverbs
""".split())
TIME_OUT = re.compile(r"(?i)\btime[ \t-]out\b")  # "nccl time out"


def foreign(words: list[str]) -> bool:
    """Whether a question is about other software (``FOREIGN``) and names none the KB covers."""
    found = set(words)
    return bool(found & FOREIGN) and not found & OWN


MIN_BM25 = 4.0
COVERAGE = 0.5
MIN_COSINE = 0.62
TOP = 5


def tokens(text: str) -> list[str]:
    """Lower-case Latin words (a name like NCCL_IB_HCA or torch.distributed.init_process_group
    also as its parts) and Chinese words."""
    import rjieba

    out: list[str] = []
    for piece in re.split(r"([\u3400-\u9fff]+)", text):
        if not piece:
            continue
        if CJK.match(piece):
            out += [w for w in rjieba.cut(piece) if w.strip()]
            continue
        for word in LATIN_WORD.findall(piece.lower()):
            out.append(word)
            # a name's parts count as words: NCCL_IB_HCA, torch.distributed.init_process_group
            # (not a version or a number: 2.18.1, 1e-5)
            if "_" in word or ("." in word and re.search(r"[a-z]{2}", word)):
                out += [p for p in re.split(r"[_.]", word) if p]
    return out


_NAME_RX: dict[str, re.Pattern] = {}


def _name_regex(name: str) -> re.Pattern:
    """A Latin concept name as whole words, separators optional: 'ZeRO stage 3' finds
    'zero stage3', 'zero_stage_3' and 'ZeRO-stage-3'."""
    rx = _NAME_RX.get(name)
    if rx is None:
        parts = [re.escape(p) for p in re.split(r"[\s_-]+", name.lower()) if p]
        # not inside a word, nor after a word and a hyphen ("non-zero"); after a digit and a
        # hyphen it is the next part of a compound ("zero-3-offload")
        rx = _NAME_RX[name] = re.compile(r"(?<![a-z0-9_])(?<![a-z]-)" + r"[\s_-]*".join(parts) + r"(?![a-z0-9])")
    return rx


QUOTES = re.compile(r"(?:[\"`‘“「『]|(?<![A-Za-z])')([^\"`’”」』\n]{12,400}?)(?:[\"`’”」』]|'(?![A-Za-z]))")
LOG_ANCHOR = re.compile(
    r"\b(?:NCCL|RCCL) (?:INFO|WARN|ERROR)\b|\b[A-Z][A-Za-z]*(?:Error|Exception|Warning)\b:|"
    r"\[(?:E|W|I)\d{3,4} |\b(?:ERROR|WARNING|CRITICAL)\b|\bslurmstepd\b|\bsrun: |"
    # a C function's name before its message, as NCCL and the verbs tools print them
    # ("socketStartConnect: exceeded timeouts (3)", "ncclCommInitRank: ...")
    r"^[a-z]+[A-Z][A-Za-z0-9]*(?:\(\))?: (?=\S)")
# the asker's own sentences ("I don't know which port it's on"), not a message they quote
PROSE_START = re.compile(r"(?:i|i'm|i've|we|my|our|you|it's|this|that|there|but|and|so|however|also|"
                         r"when|if|after|before|then|thanks|please)\b", re.I)
SENTENCE_END = re.compile(r"(?<=[.?!])\s+(?=[A-Z])|[。？！]|\s*(?:\.\.\.|…)\s*")


def _message_like(piece: str) -> bool:
    """A piece that reads like a quoted message rather than words around one: a log anchor
    (``NCCL WARN``, ``RuntimeError:``, a glog prefix), or Latin text of at least four words
    that is not itself a question ("how to ...", "why ...")."""
    if len(piece) < 12 or CJK.search(piece):
        return False
    if LOG_ANCHOR.search(piece):
        return True
    words = re.findall(r"[A-Za-z][A-Za-z0-9_'/.-]*", piece)
    if len(words) < 4 or QUESTION_START.match(piece.strip()) or piece.rstrip().endswith("?"):
        return False
    if PROSE_START.match(piece.strip()):
        return False
    return True


def quoted_pieces(question: str, limit: int = 8) -> list[str]:
    """The pieces of a question that may quote a log message, in the order they appear: quoted
    strings, then lines, Latin runs between Chinese text and sentences that read like a
    message (``_message_like``); from a log anchor inside a piece, the rest of it too
    ("... I observed the following message: NCCL INFO GPU Direct RDMA Disabled ...")."""
    found: list[tuple[int, str]] = [(m.start(1), m.group(1)) for m in QUOTES.finditer(question)]
    for line_m in re.finditer(r"[^\n]+", question):
        line = line_m.group(0)
        for run in re.finditer(r"[^\u3400-\u9fff，。？！：；（）]+", line):
            for part in SENTENCE_END.split(run.group(0)):
                part = part.strip(" \t:;,")
                if not part:
                    continue
                at = line_m.start() + run.start() + max(run.group(0).find(part), 0)
                starts = [m.start() for m in LOG_ANCHOR.finditer(part)]
                if len(starts) < 2:
                    found.append((at, part))
                    # "... the log shows: INFO NET/IB : GPU Direct RDMA Disabled ...": what
                    # follows the first colon the asker wrote
                    intro = re.match(r"[^:]{3,80}?:\s+(?=\S)", part)
                    if intro and not LOG_ANCHOR.match(part):
                        found.append((at + intro.end(), part[intro.end():]))
                elif starts[0] > 0:
                    found.append((at, part[:starts[0]]))
                # from each log anchor to the next: one line each when several were pasted
                # into one ("... [0] NCCL INFO NET/IB : No device found. [0] NCCL INFO ...")
                for k, start in enumerate(starts):
                    end = starts[k + 1] if k + 1 < len(starts) else len(part)
                    if (start, end) != (0, len(part)):
                        found.append((at + start, re.sub(r"\s*\[\d*\]?\s*$", "", part[start:end])))
    # what a C++ exception says ("what():  NCCL Error 1: unhandled cuda error") is the message;
    # the "terminate called after throwing an instance of ..." line around it only wraps it
    whats = [m.end() for m in re.finditer(r"what\(\):", question)]
    out: list[str] = []
    for _, piece in sorted(found, key=lambda f: (not any(0 <= f[0] - w <= 4 for w in whats), f[0])):
        piece = piece.strip()
        if piece != question.strip() and _message_like(piece) and piece not in out:
            out.append(piece)
    return out[:limit]


SETTING_INTENT = re.compile(
    r"\b(?:how (?:do i |do you |can i |to |should i )?(?:use |set|specify|choose|select|force|enable|disable|"
    r"turn (?:on|off)|configure|switch|change|pick|limit)|which (?:variable|env|environment variable|setting|option|flag))|"
    r"(?:怎么|怎样|如何|怎么样|能否|可以|能不能)(?:手动)?(?:指定|设置|设定|选择|强制|开启|关闭|禁用|启用|配置|切换|修改|使用)|用哪个(?:环境)?变量", re.I)


@functools.lru_cache(maxsize=4096)
def _phrase_in_domain(phrase: str) -> bool:
    """Whether an ``asked:`` phrase has a word of this domain (segmented once per phrase)."""
    return in_domain(tokens(phrase))


def _asked_regex(phrase: str) -> re.Pattern:
    """An entry's ``asked:`` phrase as it is written in a question: Latin words whole, with
    separators optional; Chinese as written; between a Latin word and Chinese (or where the
    phrase has a space) up to three other characters of the same clause, so "NCCL 超时" finds
    "NCCL超时" and "NCCL会报超时" but not across a comma."""
    key = "asked\0" + phrase
    rx = _NAME_RX.get(key)
    if rx is None:
        parts = re.findall(r"[a-z0-9][a-z0-9_./+-]*|[\u3400-\u9fff]+|\S", phrase.lower())
        out = ""
        for k, part in enumerate(parts):
            if k:
                prev = parts[k - 1]
                latin_pair = not CJK.match(prev) and not CJK.match(part)
                out += r"[\s_-]*" if latin_pair else r"[^\s，。,.;；:：？?！!]{0,3}?\s*"
            out += re.escape(part)
        # word boundaries only where the phrase starts or ends with a Latin word: "号卡" is
        # said right after a digit ("4,5,6,7号卡")
        before = "" if CJK.match(parts[0]) else r"(?<![a-z0-9_])"
        after = "" if CJK.match(parts[-1]) else r"(?![a-z0-9_])"
        rx = _NAME_RX[key] = re.compile(before + out + after)
    return rx


def content(words: list[str]) -> list[str]:
    return [w for w in words if w not in EN_STOP and w not in ZH_STOP and not w.isdigit()]


@dataclass
class Doc:
    kind: str
    id: str
    names: tuple[str, ...]
    title: dict[str, str]
    text: dict[str, str]
    source: dict | None
    see: tuple[str, ...] = ()
    component: str = ""
    asked: tuple[str, ...] = ()  # `asked:` phrases of an entry or variable (how engineers name it)

    def answer(self, lang: str, score: float) -> dict:
        other = "en" if lang == "zh" else "zh"
        return {
            "kind": self.kind,
            "id": self.id,
            "component": self.component,
            "title": self.title.get(lang) or self.title.get(other, ""),
            "text": self.text.get(lang) or self.text.get(other, ""),
            "score": round(float(score), 3),
            "source": self.source,
        }


def _plain(text: str) -> str:
    """An entry's text read without a line: optional segments dropped, ``{rank}`` as ``rank``."""
    return PLACEHOLDER.sub(lambda m: m.group(1).replace("_", " "), OPTIONAL.sub("", text))


def build_docs(kb_dir: Path, kb: KnowledgeBase) -> list[Doc]:
    docs: list[Doc] = []
    variables, _ = load_variables(kb_dir)
    for v in variables:
        if v.text is None:
            continue
        source = {"repo": v.repo, "file": v.file, "line": v.line, "function": v.function,
                  "versions": f"{REPO_NAMES.get(v.repo, v.repo)} {version_span(list(v.versions), v.repo)}",
                  "read_as": v.kind}
        if v.default is not None:
            source["default"] = v.default
        docs.append(Doc("variable", v.name, (v.name, *v.aliases), v.title.model_dump(), v.text.model_dump(),
                        source, component=v.component, asked=v.asked))
    concepts, _ = load_concepts(kb_dir)
    for c in concepts:
        ev = c.verified[0]
        source = {"repo": ev.repo, "ref": ev.ref, "file": ev.file, "line": ev.line}
        docs.append(Doc("concept", c.id, tuple(c.names), c.title.model_dump(), c.text.model_dump(), source,
                        tuple(c.see), c.component.value))
    for loaded in kb.entries:
        e = loaded.entry
        text = {lang: _plain(getattr(e.explanation, lang)) for lang in ("en", "zh")}
        docs.append(Doc("entry", e.id, (e.id,), e.title.model_dump(), text,
                        {"file": e.source, "versions": e.versions}, component=e.component.value,
                        asked=tuple(e.asked)))
    for rec in kb.records.values():
        if not rec.has_text:
            continue
        text = {lang: _plain(getattr(rec.explanation, lang)) for lang in ("en", "zh")}
        docs.append(Doc("record", rec.id, (rec.id,), rec.title.model_dump(), text, source_of(rec),
                        component=rec.component.value))
    return docs


class BM25:
    """Okapi BM25 over token lists: an inverted index of term -> (doc ids, term counts)."""

    def __init__(self, corpus: list[list[str]], k1: float = 1.5, b: float = 0.75) -> None:
        n = len(corpus)
        lengths = np.array([len(doc) for doc in corpus], dtype=np.float32)
        avg = float(lengths.mean()) if n else 1.0
        postings: dict[str, dict[int, int]] = {}
        for i, doc in enumerate(corpus):
            for term in doc:
                row = postings.setdefault(term, {})
                row[i] = row.get(i, 0) + 1
        self.n = n
        self.norm = k1 * (1 - b + b * lengths / max(avg, 1e-6))
        self.k1 = k1
        self.index: dict[str, tuple[np.ndarray, np.ndarray, float]] = {}
        for term, row in postings.items():
            ids = np.fromiter(row.keys(), dtype=np.int32, count=len(row))
            tf = np.fromiter(row.values(), dtype=np.float32, count=len(row))
            idf = float(np.log(1 + (n - len(row) + 0.5) / (len(row) + 0.5)))
            self.index[term] = (ids, tf, idf)

    def scores(self, query: list[str]) -> np.ndarray:
        out = np.zeros(self.n, dtype=np.float32)
        for term in set(query):
            hit = self.index.get(term)
            if hit is None:
                continue
            ids, tf, idf = hit
            out[ids] += idf * tf * (self.k1 + 1) / (tf + self.norm[ids])
        return out


@dataclass
class _Index:
    docs: list[Doc]
    retriever: BM25
    doc_tokens: list[frozenset]
    exact: dict[str, list[int]]
    concept_names: list[tuple[str, list[int]]] = field(default_factory=list)
    asked: list[tuple[str, list[int]]] = field(default_factory=list)  # phrase -> entries
    examples: str = ""  # the example lines of entries and records, lower-case, one per line
    example_starts: list[int] = field(default_factory=list)  # where each example starts in it
    example_docs: list[int] = field(default_factory=list)  # and the document it is of
    embedded: list[int] = field(default_factory=list)  # docs that have vectors, in order
    vectors: np.ndarray | None = None


def _doc_tokens(doc: Doc) -> list[str]:
    names = " ".join(doc.names)
    words = tokens(names) * 3 + tokens(" ".join((doc.title.get('en', ''), doc.title.get('zh', ''), *doc.asked))) * 2
    return words + tokens(f"{doc.text.get('en', '')} {doc.text.get('zh', '')}")


class Asker:
    """Answers questions from one KB; build once per process (CLI, server, MCP)."""

    def __init__(self, kb_dir: Path, kb: KnowledgeBase, encoder=None, cache_dir: Path | None = None,
                 explainer=None) -> None:
        self.kb_dir = Path(kb_dir)
        self.kb = kb
        self._encoder = encoder
        # the explainer's regex tier finds a log message quoted in the question ("what does
        # 'NCCL WARN NET/IB : Got completion ... error 12' mean"): its entry answers first
        self._explainer = explainer
        self._cache_dir = cache_dir
        self._index: _Index | None = None
        self._links: dict[str, str] | None = None
        self._entries: set[str] | None = None
        self._lock = threading.Lock()

    # ---- the index: BM25 over every document, vectors for the small kinds ------------------
    def _key(self) -> str:  # v5: example lines, for messages quoted in part
        return hashlib.sha256(("ask-v5\0" + self.kb.digest).encode()).hexdigest()[:20]

    def index(self) -> _Index:
        with self._lock:
            if self._index is None:
                self._index = self._load_or_build()
            return self._index

    def _load_or_build(self) -> _Index:
        cache = (self._cache_dir or paths.cache_dir()) / f"ask-{self._key()}.pickle"
        if cache.exists():
            try:
                with cache.open("rb") as fh:
                    return pickle.load(fh)
            except Exception:
                pass
        docs = build_docs(self.kb_dir, self.kb)
        corpus = [_doc_tokens(d) for d in docs]
        retriever = BM25(corpus)
        exact: dict[str, list[int]] = {}
        for i, d in enumerate(docs):
            for name in {d.id, *d.names}:
                exact.setdefault(name.lower(), []).append(i)
        concept_names = sorted({(n.lower(), i) for i, d in enumerate(docs) if d.kind == "concept" for n in d.names})
        grouped: dict[str, list[int]] = {}
        for name, i in concept_names:
            grouped.setdefault(name, []).append(i)
        asked: dict[str, list[int]] = {}
        for i, d in enumerate(docs):
            for phrase in d.asked:
                asked.setdefault(phrase.lower(), []).append(i)
        index = _Index(docs, retriever, [frozenset(c) for c in corpus], exact, sorted(grouped.items()),
                       asked=sorted(asked.items()))
        entries = self.kb.by_id()
        lines: list[str] = []
        at = 0
        for i, d in enumerate(docs):
            if d.kind == "entry" and d.id in entries:
                examples = [x.line for x in entries[d.id].entry.examples]
            elif d.kind == "record" and d.id in self.kb.records:
                examples = [self.kb.records[d.id].example.line]
            else:
                continue
            for line in examples:
                line = " ".join(line.lower().split())
                index.example_starts.append(at)
                index.example_docs.append(i)
                lines.append(line)
                at += len(line) + 1
        index.examples = "\n".join(lines)
        try:
            cache.parent.mkdir(parents=True, exist_ok=True)
            tmp = cache.with_suffix(".tmp")
            with tmp.open("wb") as fh:
                pickle.dump(index, fh, protocol=pickle.HIGHEST_PROTOCOL)
            tmp.replace(cache)
            paths.prune(cache.parent, "ask-*.pickle", ASK_KEEP)
        except OSError:
            pass
        return index

    def _vectors(self, index: _Index) -> np.ndarray | None:
        """Vectors of variables, concepts and entries (records are many and BM25 finds them)."""
        if self._encoder is None:
            return None
        if index.vectors is None:
            chosen = [i for i, d in enumerate(index.docs) if d.kind != "record"]
            name = re.sub(r"[^\w.-]+", "_", getattr(self._encoder, "name", "model"))
            cache = (self._cache_dir or paths.cache_dir()) / f"ask-{self._key()}-{name}.npy"
            vectors = None
            if cache.exists():
                try:
                    vectors = np.load(cache)
                    if vectors.shape[0] != len(chosen):
                        vectors = None
                except (OSError, ValueError):
                    vectors = None
            if vectors is None:
                texts = [f"{index.docs[i].title.get('en', '')}. {index.docs[i].text.get('en', '')}"[:600]
                         for i in chosen]
                vectors = self._encoder.encode(texts) if texts else np.zeros((0, 384), dtype=np.float32)
                try:
                    cache.parent.mkdir(parents=True, exist_ok=True)
                    tmp = cache.with_name(cache.name + ".tmp.npy")
                    np.save(tmp, vectors)
                    tmp.replace(cache)
                    paths.prune(cache.parent, "ask-*.npy", ASK_KEEP)
                except OSError:
                    pass
            index.vectors = vectors
            index.embedded = chosen
        return index.vectors

    # ---- answering -------------------------------------------------------------------------
    def _exact(self, index: _Index, question: str, in_domain: bool = True,
               skip: list[tuple[int, int]] = ()) -> list[int]:
        """Documents named in the question, in the order the question names them (a longer
        name before a shorter one inside it): variables and ids by their exact name (any
        case), concepts by a name or alias as whole words, spaces, '_' and '-' between its
        words optional ("zero stage3", "gradient_accumulation"); a Chinese name as whole words
        of the segmented question ("环", ring, is not in "环境变量"). A document named more
        often comes before one named less."""
        low = question.lower()
        spans: list[tuple[int, int, int]] = []  # (start, end, doc)
        for m in list(NAME_TOKEN.finditer(question)) + list(ID_TOKEN.finditer(low)):
            for i in index.exact.get(m.group(0).lower(), []):
                spans.append((m.start(), m.end(), i))
        words = tokens(question)
        segmented = "\0" + "\0".join(words) + "\0"
        # a snake_case name the KB does not know is a list of words ("deepspeed_zero3_offload",
        # "adam_offload"): concept names are found in its parts (the same length, so spans hold)
        snake = low
        for m in NAME_TOKEN.finditer(question):
            if m.group(0).lower() not in index.exact and not ENV_NAME.fullmatch(m.group(0)):
                snake = snake[:m.start()] + m.group(0).lower().replace("_", " ") + snake[m.end():]
        for name, concept_ids in index.concept_names:
            if CJK.search(name):
                # a name of three or more Chinese characters is specific enough to be found
                # inside a longer word ("流水线并行" in "流水线并行度"); a shorter one only as
                # whole words of the segmented question ("环" is not in "环境变量")
                needle = "\0" + "\0".join(tokens(name)) + "\0"
                at = segmented.find(needle)
                if at < 0 and len(CJK.findall(name)) >= 3 and name in low:
                    at = low.find(name)
                if at >= 0:
                    pos = low.find(name)
                    start = pos if pos >= 0 else len(low)
                    spans += [(start, start + len(name), i) for i in concept_ids]
                continue
            for m in _name_regex(name).finditer(snake):
                spans += [(m.start(), m.end(), i) for i in concept_ids]
        by_phrase: set[tuple[int, int, int]] = set()
        for phrase, entry_ids in index.asked:
            # "端口被占用" (port in use) is said of any server: a phrase without a word of this
            # domain names an entry only in a question that has one ("torchrun 报端口被占用")
            if not in_domain and not _phrase_in_domain(phrase):
                continue
            for m in _asked_regex(phrase).finditer(low):
                spans += [(m.start(), m.end(), i) for i in entry_ids]
                by_phrase.update((m.start(), m.end(), i) for i in entry_ids)
        # a match inside a longer one is the longer one's word ("ZeRO" in "ZeRO-3 offload"); a
        # name inside a message the question quotes is the message's ("world_size" in
        # "train_batch_size is not equal to ... * world_size")
        kept = [sp for sp in spans
                if not any(o[0] <= sp[0] and sp[1] <= o[1] and (o[1] - o[0]) > (sp[1] - sp[0]) for o in spans)
                and not any(a <= sp[0] and sp[1] <= b for a, b in skip)]
        # the document the question names most often is its subject ("zero stage 3 cpu offload
        # ... zero stage 2 cpu offload": offload); a name joined to the next one by a hyphen
        # or underscore modifies it ("ZeRO-3-offload": offload is the subject; "A+B", "A B"
        # are lists as often: "张量并行+数据并行", "FSDP zero3"); between equals, the one
        # named first
        first: dict[int, tuple[int, int, int]] = {}
        mentions: dict[int, set[int]] = {}
        heads: dict[int, set[int]] = {}
        for start, end, i in kept:
            key = (start, -(end - start), KIND_ORDER[index.docs[i].kind])
            first[i] = min(first.get(i, key), key)
            mentions.setdefault(i, set()).add(start)
            modifier = any(j != i and 0 <= s2 - end <= 1 and all(c in "-_" for c in low[end:s2])
                           and (s2 > end or low[end - 1:end] == "-")
                           for s2, _, j in kept)
            if not modifier:
                heads.setdefault(i, set()).add(start)
        # a variable the question names comes before one it only describes by an asked
        # phrase: "dump the topology file with NCCL_TOPO_DUMP_FILE" is about
        # NCCL_TOPO_DUMP_FILE, not NCCL_TOPO_FILE ("topology file")
        named = {sp[2] for sp in kept if sp not in by_phrase}
        described = {i for i in first if i not in named and index.docs[i].kind == "variable"}
        if not any(index.docs[i].kind == "variable" for i in named):
            described = set()
        return sorted(first, key=lambda i: (i in described, -len(heads.get(i, ())), -len(mentions[i]), first[i]))

    def _setting_for(self, index: _Index, question: str, named: list[int]) -> list[int]:
        """"How do I choose ring or tree?" asks for the knob, not the concept: when the question
        asks how to set, choose or turn something on or off (``SETTING_INTENT``), names
        concepts and no variable, the variable those concepts list first among their
        ``see:`` (the one most of them share: NCCL_ALGO for ring and tree) answers first; when
        it names only a message, the concept whose ``see:`` lists that message answers first."""
        if not named or not SETTING_INTENT.search(question):
            return []
        docs = [index.docs[i] for i in named]
        if any(d.kind == "variable" for d in docs):
            return []
        concepts = [d for d in docs if d.kind == "concept"]
        if not concepts:
            # "can I set the NCCL timeout?" names a message (the watchdog's timeout entry), which
            # is not set; the concept that explains its mechanism, and lists it, says how
            # (ZeRO-3 lists it too, as a symptom): the concept of the message's own component
            # first, then the one that lists it earliest
            entries = {d.id: d.component for d in docs if d.kind == "entry"}
            concept_ids = {i for _, ids in index.concept_names for i in ids}
            listing = [(min((0 if entries[e] == index.docs[i].component else 1, index.docs[i].see.index(e))
                            for e in entries if e in index.docs[i].see), i)
                       for i in sorted(concept_ids) if set(entries) & set(index.docs[i].see)]
            return [min(listing)[1]] if listing else []
        votes: dict[int, tuple[int, int]] = {}
        for c_rank, doc in enumerate(concepts):
            for s_rank, ref in enumerate(doc.see):
                for i in index.exact.get(ref.lower(), []):
                    if index.docs[i].kind == "variable":
                        n, first = votes.get(i, (0, 10**6))
                        votes[i] = (n + 1, min(first, c_rank * 100 + s_rank))
        if not votes:
            return []
        return [min(votes, key=lambda i: (-votes[i][0], votes[i][1]))]

    def _quoted(self, index: _Index, question: str,
                domain: bool = True) -> tuple[list[int], list[int], list[tuple[int, int]]]:
        """The entries or records whose messages the question quotes, in the order quoted.

        Each piece of the question that reads like a log message (``quoted_pieces``: a
        quoted string, a line, a Latin run between Chinese text, a sentence) goes to both
        tiers, so a message quoted without its prefix or cut short ("Some NCCL operations
        have failed or timed out", "NCCL INFO NET/IB : No device fo") still finds its entry;
        then the whole question goes to the regex tier (a pasted line with words around it),
        where only a curated entry counts: a record's few fixed words ("could not find ...")
        are found in any sentence. The semantic tier's answer counts only when it is known at
        its calibrated confidence, and only in a question of this domain: a JDBC
        "Communications link failure" is near a Slurm errno text and is not one. A record a
        curated entry links stands for that entry. Returns the curated entries found (they
        answer before any name the question uses), the catalogue records found (after them)
        and where in the question the pieces that found them are (names inside a quoted
        message are the message's words, not the asker's)."""
        if self._explainer is None:
            return [], [], []
        pieces = quoted_pieces(question)
        try:
            # the pieces first: a pasted run of lines matched as one finds its last line's
            # entry, the pieces find each line's, in order
            answers = self._explainer.explain_many(pieces, semantic=True) if pieces else []
            answers += self._explainer.explain_many([question], semantic=False)
        except Exception:  # a question is no log line; never let the explainer fail it
            return [], [], []
        sure: list[int] = []
        likely: list[int] = []
        inside: list[tuple[int, int]] = []
        for k, answer in enumerate(answers):
            if not answer.get("known") or not answer.get("pattern_id"):
                if k < len(pieces):
                    self._cut_short(index, question, pieces[k], sure, likely, inside)
                continue
            whole = k == len(pieces)
            if answer.get("tier") == "semantic" and not domain:
                continue
            ident = answer["pattern_id"]
            ident = self._linked().get(ident, ident)  # a record a curated entry explains: the entry
            # a curated entry (by its pattern, its model neighbourhood or a record it links)
            # is the message the question quotes; a catalogue record alone may be a phrase
            # that happens to read like one of its formats ("Enable LL128 by default ...")
            is_entry = ident in self._entry_ids()
            if whole and not is_entry:
                continue
            to = sure if is_entry else likely
            found = False
            for i in index.exact.get(ident.lower(), []):
                if index.docs[i].kind in ("entry", "record"):
                    found = True
                    if i not in sure and i not in likely:
                        to.append(i)
            # the names inside a piece are the message's when a pattern took the piece; the
            # model's nearest record says too little ("--master_addr=xxx --master_port=yyy")
            if found and not whole and answer.get("tier") != "semantic":
                at = question.find(pieces[k])
                if at >= 0:
                    inside.append((at, at + len(pieces[k])))
        return sure, likely, inside

    @staticmethod
    def _cut_short(index: _Index, question: str, piece: str, sure: list[int], likely: list[int],
                   inside: list[tuple[int, int]]) -> None:
        """A message the question quotes only in part ("Warning: find_unused_parameters=True
        was specified in DDP constructor..."), which no pattern takes: the entries and records
        one of whose example lines holds the piece word for word, when it is long enough to say
        which (five words or more); an entry's before a record's."""
        text = " ".join(re.sub(r"(?:\.\.\.|…)+\s*$", "", piece).lower().split()).strip(" \"'`")
        if len(re.findall(r"[a-z][a-z0-9_'-]*", text)) < 5 or not index.examples:
            return
        hits: list[int] = []
        at = index.examples.find(text)
        while at >= 0 and len(hits) < 8:
            if at == 0 or not index.examples[at - 1].isalnum():
                j = bisect.bisect_right(index.example_starts, at) - 1
                hits.append(index.example_docs[j])
            at = index.examples.find(text, at + 1)
        if not hits:
            return
        for i in dict.fromkeys(hits):
            to = sure if index.docs[i].kind == "entry" else likely
            if i not in sure and i not in likely:
                to.append(i)
        start = question.find(piece)
        if start >= 0:
            inside.append((start, start + len(piece)))

    @staticmethod
    def _known_name(index: _Index, name: str) -> bool:
        """A variable-like name the KB knows, also without its project's prefix
        ("IB_GID_INDEX" for NCCL_IB_GID_INDEX)."""
        low = name.lower()
        return low in index.exact or any(
            k.endswith("_" + low) and index.docs[ids[0]].kind == "variable" for k, ids in index.exact.items())

    def _entry_ids(self) -> set[str]:
        if self._entries is None:
            self._entries = {loaded.entry.id for loaded in self.kb.entries}
        return self._entries

    def _linked(self) -> dict[str, str]:
        """Catalogue record id -> the curated entry that links it (``formats:``)."""
        if self._links is None:
            links: dict[str, str] = {}
            for loaded in self.kb.entries:
                for rec in loaded.entry.formats:
                    links.setdefault(rec, loaded.entry.id)
            self._links = links
        return self._links

    def ask(self, question: str, lang: str | None = None, top: int = TOP) -> dict:
        question = (question or "").strip()
        lang = lang or ("zh" if CJK.search(question) else "en")
        result = {"question": question, "lang": lang, "known": False, "answers": []}
        if not question:
            return result
        index = self.index()
        # "nccl time out" is "nccl timeout"; the same length, so spans found in one are the other's
        question = TIME_OUT.sub(lambda m: "timeout" + " " * (len(m.group(0)) - 7), question)
        words = tokens(question)
        # a question that names a variable the KB knows (master_port) is of this domain
        names_variable = any(index.docs[i].kind == "variable"
                             for m in NAME_TOKEN.finditer(question) for i in index.exact.get(m.group(0).lower(), []))
        domain = (in_domain(words) or names_variable) and not foreign(words)
        sure, likely, inside = self._quoted(index, question, domain)
        named = self._exact(index, question, in_domain=domain, skip=inside)
        exact = sure + self._setting_for(index, question, named) + named + likely
        exact = list(dict.fromkeys(exact))
        wanted = content(words)
        scores = index.retriever.scores(words)
        order = np.argsort(-scores)[:50]
        lexical = [int(i) for i in order if scores[i] > 0]
        cosine: dict[int, float] = {}
        vectors = self._vectors(index)
        semantic: list[int] = []
        if vectors is not None and len(index.embedded):
            qv = self._encoder.encode([question])[0]
            sims = vectors @ qv
            best = np.argsort(-sims)[:50]
            semantic = [index.embedded[int(j)] for j in best]
            cosine = {index.embedded[int(j)]: float(sims[j]) for j in best}
        fused: dict[int, float] = {}
        for rank, i in enumerate(lexical):
            fused[i] = fused.get(i, 0.0) + 1.0 / (60 + rank)
        for rank, i in enumerate(semantic):
            fused[i] = fused.get(i, 0.0) + 1.0 / (60 + rank)
        ranked = sorted(fused, key=lambda i: (-fused[i], KIND_ORDER[index.docs[i].kind]))

        def covered(i: int) -> float:
            if not wanted:
                return 0.0
            return sum(1 for w in set(wanted) if w in index.doc_tokens[i]) / len(set(wanted))

        known = bool(exact)
        if not known and foreign(words):
            return result
        if not known and any(not self._known_name(index, m.group(0)) for m in ENV_NAME.finditer(question)):
            # the question is about a variable the KB does not know (CUDA_DEVICE_MAX_COUNT):
            # the nearest other variable is no answer
            return result
        if not known and ranked:
            top_lex = lexical[0] if lexical else None
            close = bool(semantic) and cosine.get(semantic[0], 0.0) >= MIN_COSINE
            if domain:
                known = (top_lex is not None and scores[top_lex] >= MIN_BM25) or close
            else:
                known = top_lex is not None and covered(top_lex) >= COVERAGE and close
        if not known:
            return result
        chosen = exact + [i for i in ranked if i not in exact]
        # one answer per name: a variable several projects read (MASTER_ADDR: PyTorch,
        # accelerate, DeepSpeed) is one variable to the asker; its first-ranked text answers
        seen: set[tuple[str, str]] = set()
        unique = []
        for i in chosen:
            key = (index.docs[i].kind, index.docs[i].id.upper())
            if key not in seen:
                seen.add(key)
                unique.append(i)
        answers = []
        for i in unique[:top]:
            score = 1.0 if i in exact else min(0.99, 0.5 * covered(i) + 0.5 * max(cosine.get(i, 0.0), 0.0))
            answers.append(index.docs[i].answer(lang, score))
        result["known"] = True
        result["answers"] = answers
        return result

    def get(self, ident: str, lang: str = "en") -> dict | None:
        """One document by id or exact name (an entry id, a record id, a variable, a concept)."""
        index = self.index()
        ids = index.exact.get(ident.lower(), [])
        if not ids:
            return None
        ids.sort(key=lambda i: KIND_ORDER[index.docs[i].kind])
        return index.docs[ids[0]].answer(lang, 1.0)


_ASKERS: dict[str, Asker] = {}


def asker_for(explainer) -> Asker:
    """The process's Asker for an Explainer's KB (shares its encoder when it has one loaded)."""
    key = str(explainer.kb_dir)
    if key not in _ASKERS:
        encoder = None
        try:
            encoder = explainer.encoder
        except Exception:
            encoder = None
        _ASKERS[key] = Asker(explainer.kb_dir, explainer.kb, encoder, explainer=explainer)
    return _ASKERS[key]


KIND_LABEL = {"en": {"variable": "variable", "concept": "concept", "entry": "message", "record": "message (source)"},
              "zh": {"variable": "环境变量", "concept": "概念", "entry": "日志消息", "record": "日志消息（源码）"}}
NOT_KNOWN = {"en": "Not in the knowledge base: no variable, concept or message of the KB answers this question.",
             "zh": "知识库中没有相关内容：没有哪个环境变量、概念或日志消息能回答这个问题。"}


def source_line(source: dict | None) -> str:
    if not source:
        return ""
    where = " ".join(str(source[k]) for k in ("repo", "file") if source.get(k))
    if source.get("line"):
        where += f":{source['line']}"
    if source.get("function"):
        where += f" ({source['function']})"
    if source.get("versions"):
        where += f", {source['versions']}"
    return where


def render_text(result: dict, width: int = 100) -> str:
    from service.render import wrap_display

    lang = result.get("lang", "en")
    if not result.get("known"):
        return NOT_KNOWN[lang]
    lines = []
    for n, ans in enumerate(result["answers"], 1):
        label = KIND_LABEL[lang][ans["kind"]]
        lines.append(f"{n}. [{label}] {ans['id']}: {ans['title']}")
        lines += ["   " + l for l in wrap_display(ans["text"], width - 3)]
        where = source_line(ans.get("source"))
        if where:
            lines.append(("   来源：" if lang == "zh" else "   source: ") + where)
    return "\n".join(lines)


QUESTION_START = re.compile(
    r"^(?:what|what's|whats|how|why|when|where|which|who|is|are|does|do|did|can|could|should|would|"
    r"explain|tell me|define|meaning of)\b", re.I)
ZH_QUESTION = re.compile(r"什么|怎么|为什么|为何|如何|是否|吗[？?]?$|哪个|哪些|多少|区别|作用|含义|意思|有啥|咋|是啥")


def looks_like_question(text: str) -> bool:
    """A message in words rather than a pasted log line: one short line without a log prefix
    that asks (a question mark, a question word, a Chinese question word). Front-ends ask the
    regex tier first: a line the KB knows is a log line, however it is worded."""
    from indexer.normalize import normalize_line

    t = (text or "").strip()
    if not t or len(t) > 300 or "\n" in t:
        return False
    if normalize_line(t).context:
        return False  # a timestamp, host, rank or level prefix: a log line
    return t.endswith(("?", "？")) or QUESTION_START.match(t) is not None or ZH_QUESTION.search(t) is not None
