"""``explainlog ask``, ``/v1/ask`` and the MCP server, on a small KB of their own (one entry,
two concepts, two variables) so each assertion knows exactly what the KB holds; the labelled
question set is measured on the real KB by ``explainlog eval --questions`` (README)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import httpx
import pytest
import yaml

REPO = Path(__file__).resolve().parent.parent

ENTRY = {
    "id": "demo.watchdog_timeout",
    "title": {"en": "The NCCL watchdog timed out a collective", "zh": "NCCL watchdog 判定集合通信超时"},
    "component": "torch_distributed", "severity": "error", "role": "root_cause",
    "pattern": r"Watchdog caught collective operation timeout: WorkNCCL\(SeqNum=(?P<seq>\d+)",
    "fields": {"seq": {"en": "sequence number", "zh": "序号"}},
    "explanation": {"en": "A collective ran longer than the process group timeout; the watchdog aborts the communicator.",
                    "zh": "某个集合通信的运行时间超过了进程组的超时时间，watchdog 随即中止通信器。"},
    "action": {"en": "Find the rank that did not enter the collective.", "zh": "找出没有进入该集合通信的 rank。"},
    "examples": ["[rank1]:[E ProcessGroupNCCL.cpp:563] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=7, OpType=ALLREDUCE)"],
    "asked": ["NCCL 超时", "collective timeout", "stuck forever"],
    "source": "pytorch/pytorch torch/csrc/distributed/c10d/ProcessGroupNCCL.cpp",
    "verified": [{"repo": "pytorch/pytorch", "ref": "v2.6.0", "file": "torch/csrc/distributed/c10d/ProcessGroupNCCL.cpp",
                  "line": 1, "what": "test entry"}],
}
CONCEPTS = [
    {"id": "concept.nccl_proto_ll128", "names": ["LL128"], "component": "nccl", "see": ["NCCL_PROTO"],
     "title": {"en": "LL128: NCCL's protocol with 128-byte lines", "zh": "LL128：以 128 字节为单位的协议"},
     "text": {"en": "Each 128-byte line carries 120 bytes of data and an 8-byte flag the receiver polls.",
              "zh": "每个 128 字节的行里有 120 字节数据和 8 字节标志，接收方轮询标志。"},
     "verified": [{"repo": "NVIDIA/nccl", "ref": "v2.21.5-1", "file": "src/include/device.h", "line": 60, "what": "line layout"}]},
    {"id": "concept.nccl_proto_ll", "names": ["LL", "低延迟协议"], "component": "nccl", "see": ["NCCL_PROTO"],
     "title": {"en": "LL: NCCL's low-latency protocol", "zh": "LL：NCCL 的低延迟协议"},
     "text": {"en": "Each 8-byte word carries 4 bytes of data and a 4-byte flag.",
              "zh": "每个 8 字节的字里有 4 字节数据和 4 字节标志。"},
     "verified": [{"repo": "NVIDIA/nccl", "ref": "v2.21.5-1", "file": "src/include/device.h", "line": 40, "what": "LL line"}]},
]
VARIABLES = [
    {"name": "NCCL_IB_GID_INDEX", "component": "nccl", "repo": "NVIDIA/nccl", "file": "src/transport/net_ib.cc",
     "line": 12, "function": "", "kind": "NCCL_PARAM int64", "default": "-1", "versions": ["v2.4.2-1", "v2.30.7-1"],
     "title": {"en": "GID index NCCL uses on RoCE ports", "zh": "NCCL 在 RoCE 端口上使用的 GID 索引"},
     "text": {"en": "Selects the entry of the port's GID table used to address RoCE peers; unset lets NCCL pick one.",
              "zh": "选择 RoCE 端口 GID 表中的哪一项用于寻址对端；不设置时由 NCCL 自己挑选。"}},
    {"name": "NCCL_P2P_DISABLE", "component": "nccl", "repo": "NVIDIA/nccl", "file": "src/graph/paths.cc",
     "line": 289, "function": "ncclGetUserP2pLevel", "kind": "read by name", "default": None,
     "versions": ["v2.4.2-1", "v2.30.7-1"],
     "title": {"en": "Turn off the P2P transport between GPUs", "zh": "关闭 GPU 之间的 P2P 传输"},
     "text": {"en": "When set to 1, GPUs in one node exchange data through host memory instead of P2P.",
              "zh": "设为 1 时，同一节点内的 GPU 不再走 P2P，而是经主机内存交换数据。"}},
    {"name": "NCCL_PROTO", "component": "nccl", "repo": "NVIDIA/nccl", "file": "src/graph/tuning.cc",
     "line": 200, "function": "ncclTopoTuneModel", "kind": "read by name", "default": None,
     "versions": ["v2.4.2-1", "v2.30.7-1"],
     "title": {"en": "Which protocols NCCL may use", "zh": "NCCL 可以使用哪些协议"},
     "text": {"en": "A comma-separated list of LL, LL128 and Simple, or with a ^ prefix the ones to exclude.",
              "zh": "以逗号分隔的 LL、LL128、Simple 列表；以 ^ 开头表示排除这些协议。"}},
]


@pytest.fixture(scope="module")
def small_kb(tmp_path_factory) -> Path:
    kb = tmp_path_factory.mktemp("askkb") / "kb"
    (kb / "concepts").mkdir(parents=True)
    import shutil

    shutil.copytree(REPO / "kb" / "calibration", kb / "calibration")  # the semantic tier's unrelated lines
    (kb / "params").mkdir()
    (kb / "demo.yaml").write_text(yaml.safe_dump([ENTRY], allow_unicode=True, sort_keys=False), encoding="utf-8")
    (kb / "concepts" / "concepts.yaml").write_text(yaml.safe_dump(CONCEPTS, allow_unicode=True, sort_keys=False),
                                                    encoding="utf-8")
    (kb / "params" / "nccl.jsonl").write_text("".join(json.dumps(v, ensure_ascii=False) + "\n" for v in VARIABLES),
                                              encoding="utf-8")
    return kb


@pytest.fixture(scope="module")
def asker(small_kb, tmp_path_factory):
    from indexer.encoders import default_encoder
    from indexer.kb_cache import load_kb_cached
    from service.ask import Asker

    return Asker(small_kb, load_kb_cached(small_kb), default_encoder(), tmp_path_factory.mktemp("askcache"))


def test_small_kb_passes_kb_check(small_kb):
    from indexer.kb_check import run_checks

    _, findings = run_checks(small_kb)
    assert [str(f) for f in findings] == []


def test_an_exact_variable_name_wins(asker):
    result = asker.ask("what does NCCL_IB_GID_INDEX do")
    assert result["known"] and result["lang"] == "en"
    top = result["answers"][0]
    assert (top["kind"], top["id"], top["score"]) == ("variable", "NCCL_IB_GID_INDEX", 1.0)
    assert top["source"]["file"] == "src/transport/net_ib.cc" and top["source"]["default"] == "-1"
    # written inside other text, in any case
    assert asker.ask("nccl_p2p_disable=1 有什么副作用")["answers"][0]["id"] == "NCCL_P2P_DISABLE"


def test_a_chinese_question_about_a_concept_is_answered_in_chinese(asker):
    result = asker.ask("什么是 LL128？")
    assert result["known"] and result["lang"] == "zh"
    assert result["answers"][0]["id"] == "concept.nccl_proto_ll128"
    assert "128 字节" in result["answers"][0]["text"]
    # the longer name is the more specific one; a Chinese alias counts as a name
    assert asker.ask("LL128 和 LL 有什么区别")["answers"][0]["id"] == "concept.nccl_proto_ll128"
    assert asker.ask("低延迟协议是什么")["answers"][0]["id"] == "concept.nccl_proto_ll"


def test_a_message_question_finds_its_entry(asker):
    result = asker.ask("why does the watchdog say collective operation timeout")
    assert result["known"]
    assert result["answers"][0]["id"] == "demo.watchdog_timeout"


@pytest.mark.parametrize("question", ["nginx 502 bad gateway 怎么解决", "how do I center a div in CSS",
                                      "What is the capital of France?", ""])
def test_unrelated_questions_are_declined(asker, question):
    result = asker.ask(question)
    assert result["known"] is False and result["answers"] == []


def test_get_finds_any_kind_by_id_or_name(asker):
    assert asker.get("NCCL_IB_GID_INDEX")["kind"] == "variable"
    assert asker.get("concept.nccl_proto_ll")["kind"] == "concept"
    assert asker.get("demo.watchdog_timeout", "zh")["title"] == ENTRY["title"]["zh"]
    assert asker.get("NO_SUCH_THING") is None


def _cli(*args: str, kb: Path) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "service.cli", "--kb", str(kb), *args], cwd=REPO,
                          capture_output=True, text=True, timeout=300)


def test_cli_json_and_text(small_kb):
    done = _cli("ask", "--json", "what does NCCL_IB_GID_INDEX do", kb=small_kb)
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout)
    assert set(result) == {"question", "lang", "known", "answers"}
    assert set(result["answers"][0]) == {"kind", "id", "component", "title", "text", "score", "source"}
    text = _cli("ask", "什么是", "LL128？", kb=small_kb)
    assert text.returncode == 0 and "[概念] concept.nccl_proto_ll128" in text.stdout and "来源：" in text.stdout
    declined = _cli("ask", "--no-model", "how do I center a div in CSS", kb=small_kb)
    assert declined.returncode == 0 and declined.stdout.startswith("Not in the knowledge base")
    assert _cli("ask", " ", kb=small_kb).returncode == 2


@pytest.fixture(scope="module")
def small_server(small_kb, tmp_path_factory):
    from http_testing import serve
    from service.explainer import Explainer

    explainer = Explainer(kb_dir=small_kb, index_dir=tmp_path_factory.mktemp("idx") / "index")
    with serve(explainer) as running:
        yield running


def test_http_get_and_post(small_server):
    with httpx.Client(base_url=small_server.url, timeout=120) as http:
        got = http.get("/v1/ask", params={"q": "什么是 LL128？"})
        assert got.status_code == 200 and got.json()["answers"][0]["id"] == "concept.nccl_proto_ll128"
        posted = http.post("/v1/ask", json={"q": "what does NCCL_IB_GID_INDEX do", "lang": "zh"})
        assert posted.status_code == 200
        assert posted.json()["answers"][0]["title"] == VARIABLES[0]["title"]["zh"]
        plain = http.post("/v1/ask", content="nginx 502 bad gateway", headers={"content-type": "text/plain"})
        assert plain.status_code == 200 and plain.json()["known"] is False
        assert http.get("/v1/ask").status_code == 422
        assert http.post("/v1/ask", json={"q": "x", "lang": "fr"}).status_code == 422
        assert http.post("/v1/ask", json=["not", "an", "object"]).status_code == 422


def test_mcp_server_over_stdio_with_the_sdk_client(small_kb, tmp_path):
    """The SDK's own client launches `explainlog mcp`, lists its tools and resources, calls them."""
    import anyio
    from mcp import ClientSession, StdioServerParameters, stdio_client

    env = dict(os.environ, EXPLAINLOG_INDEX=str(tmp_path / "index"))
    params = StdioServerParameters(command=sys.executable, args=["-m", "service.cli", "--kb", str(small_kb), "mcp"],
                                   cwd=str(REPO), env=env)

    async def session_run() -> dict:
        out: dict = {}
        async with stdio_client(params) as (read, write):
            async with ClientSession(read, write) as session:
                await session.initialize()
                tools = await session.list_tools()
                out["tools"] = {t.name: t.input_schema for t in tools.tools}
                line = ENTRY["examples"][0]
                res = await session.call_tool("explain_line", {"line": line})
                out["explain"] = (res.is_error, res.structured_content)
                res = await session.call_tool("explain_lines", {"lines": [line, "hello world"]})
                out["explain_lines"] = res.structured_content
                res = await session.call_tool("ask", {"question": "什么是 LL128？"})
                out["ask"] = res.structured_content
                res = await session.call_tool("get_entry", {"id": "NO_SUCH_THING"})
                out["missing"] = res.is_error
                res = await session.call_tool("triage_log", {"log": line + "\n"})
                out["triage"] = (res.is_error, res.structured_content)
                listed = await session.list_resources()
                out["resources"] = [str(r.uri) for r in listed.resources]
                read_back = await session.read_resource("explainlog://entry/demo.watchdog_timeout")
                out["entry"] = json.loads(read_back.contents[0].text)
        return out

    out = anyio.run(session_run)
    assert set(out["tools"]) == {"explain_line", "explain_lines", "triage_log", "ask", "get_entry"}
    assert out["tools"]["explain_line"]["properties"]["line"]["type"] == "string"
    assert out["explain"][0] is False and out["explain"][1]["pattern_id"] == "demo.watchdog_timeout"
    assert [a["known"] for a in out["explain_lines"]["answers"]] == [True, False]
    assert out["ask"]["answers"][0]["id"] == "concept.nccl_proto_ll128"
    assert out["missing"] is True
    assert out["triage"][0] is False and "root_cause" in out["triage"][1]
    assert "explainlog://entries" in out["resources"]
    assert out["entry"]["id"] == "demo.watchdog_timeout"


def test_eval_questions_scores_first_top3_and_declined(small_kb, asker, tmp_path):
    from service.ask_eval import evaluate_questions, load_questions

    rows = [
        {"question": "what does NCCL_IB_GID_INDEX do", "lang": "en", "expects": {"kind": "variable", "name": "NCCL_IB_GID_INDEX"}},
        {"question": "什么是 LL128", "lang": "zh", "expects": {"kind": "concept", "name": "LL128"}},
        {"question": "what is LL128", "lang": "en", "expects": {"kind": "concept", "name": "LL"}},  # wrong on purpose
        {"question": "collective operation timeout watchdog", "lang": "en",
         "expects": {"kind": "message", "name": "watchdog", "accept": ["demo.watchdog_timeout"]}},
        {"question": "how do I center a div in CSS", "lang": "en", "expects": None},
    ]
    path = tmp_path / "q.jsonl"
    path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), encoding="utf-8")
    report = evaluate_questions(asker, load_questions([path]))
    assert (report.asked, report.in_domain, report.unrelated) == (5, 4, 1)
    assert (report.first, report.declined) == (3, 1)
    assert [m["where"] for m in report.misses] == ["q.jsonl:3"]


def test_a_chinese_name_is_matched_as_whole_words_only(small_kb, tmp_path_factory):
    """"环" (ring) must not be found inside "环境变量" (environment variable)."""
    import shutil

    from indexer.encoders import default_encoder
    from indexer.kb_cache import load_kb_cached
    from service.ask import Asker

    kb = tmp_path_factory.mktemp("ringkb") / "kb"
    shutil.copytree(small_kb, kb)
    ring = {"id": "concept.nccl_algo_ring", "names": ["ring", "环"], "component": "nccl",
            "title": {"en": "Ring algorithm", "zh": "环算法"}, "text": {"en": "Ranks pass chunks around a ring.",
                                                                    "zh": "各 rank 沿着环依次传递数据块。"},
            "verified": [{"repo": "NVIDIA/nccl", "ref": "v2.21.5-1", "file": "src/graph/rings.cc", "line": 1, "what": "rings"}]}
    pipeline = {"id": "concept.pipeline_parallel", "names": ["pipeline parallel", "流水线并行"], "component": "megatron",
                "title": {"en": "Pipeline parallelism", "zh": "流水线并行"},
                "text": {"en": "Layers are split into stages on different GPUs.", "zh": "把模型的层切成若干段，放在不同 GPU 上。"},
                "verified": [{"repo": "NVIDIA/Megatron-LM", "ref": "core_r0.9.0", "file": "megatron/core/parallel_state.py",
                              "line": 1, "what": "pipeline groups"}]}
    (kb / "concepts" / "ring.yaml").write_text(yaml.safe_dump([ring, pipeline], allow_unicode=True), encoding="utf-8")
    asker = Asker(kb, load_kb_cached(kb), default_encoder(), tmp_path_factory.mktemp("ringcache"))
    assert asker.ask("NCCL 环境变量 NCCL_IB_GID_INDEX 怎么设置")["answers"][0]["id"] == "NCCL_IB_GID_INDEX"
    assert asker.ask("NCCL 的环算法是什么")["answers"][0]["id"] == "concept.nccl_algo_ring"
    # a name of three or more characters is found inside a longer word the segmenter made
    # ("流水线并行度" is cut 流水线 / 并行度, the name 流水线 / 并行)
    assert asker.ask("如何配置流水线并行度")["answers"][0]["id"] == "concept.pipeline_parallel"


def test_an_asked_phrase_names_its_entry(asker):
    """An entry's `asked:` phrases (how engineers name the problem in words) put it first; in
    Chinese a few characters may sit between the Latin word and the Chinese one, not a comma."""
    for question in ("训练时 NCCL会报超时错误，怎么解决", "遇到nccl超时的问题", "why do I get a collective timeout?"):
        result = asker.ask(question)
        assert result["known"] and result["answers"][0]["id"] == "demo.watchdog_timeout", question
    # a phrase with no word of this domain counts only in a question that has one
    assert asker.ask("why is my spring boot server stuck forever")["known"] is False
    assert asker.ask("why is my torchrun job stuck forever")["answers"][0]["id"] == "demo.watchdog_timeout"
    from service.ask import _asked_regex

    assert not _asked_regex("NCCL 超时").search("nccl 能用，超时时间怎么设")
    assert not _asked_regex("collective timeout").search("collective timeouts")
    # a phrase that starts with Chinese is found right after a digit ("4,5,6,7号卡"); one
    # that starts with a Latin word still needs a word boundary
    assert _asked_regex("号卡").search("设置了4,5,6,7号卡") and _asked_regex("号卡").search("几号卡")
    assert not _asked_regex("dump on timeout").search("xdump on timeout")


def test_how_to_set_a_concept_answers_with_its_variable_first(asker):
    """"How do I choose LL or LL128" asks for the knob the concepts list in `see:`; "what is
    LL128" still asks for the concept."""
    for question in ("how to specify LL or LL128 protocol?", "怎么指定 LL128 协议？"):
        ids = [a["id"] for a in asker.ask(question)["answers"]]
        assert ids[0] == "NCCL_PROTO" and "concept.nccl_proto_ll128" in ids[:3], question
    assert asker.ask("what is LL128")["answers"][0]["id"] == "concept.nccl_proto_ll128"
    # a question that names a variable already has its knob
    assert asker.ask("how to set NCCL_P2P_DISABLE with LL128")["answers"][0]["id"] == "NCCL_P2P_DISABLE"


def test_quoted_pieces_of_a_question():
    from service.ask import quoted_pieces

    pieces = quoted_pieces("还是失败 [0] NCCL INFO NET/IB : No device found. [0] NCCL INFO Using network Socket 怎么办")
    assert pieces == ["NCCL INFO NET/IB : No device found.", "NCCL INFO Using network Socket"]
    pieces = quoted_pieces("In the logs I see: NCCL INFO GPU Direct RDMA Disabled for GPU ca000 / HCA 0 (distance 7 > 4) ... why?")
    assert "NCCL INFO GPU Direct RDMA Disabled for GPU ca000 / HCA 0 (distance 7 > 4)" in pieces
    assert quoted_pieces('Why "Enable LL128 by default only on Volta"?') == ["Enable LL128 by default only on Volta"]
    # what follows the asker's own "...: " is the message, even after a sentence of prose
    assert quoted_pieces("However, the log shows: INFO NET/IB : GPU Direct RDMA Disabled for HCA 0 'mlx5_0'. Why?") \
        == ["INFO NET/IB : GPU Direct RDMA Disabled for HCA 0 'mlx5_0'."]
    # words around a message are no message: questions, short phrases, an apostrophe's "quote"
    assert quoted_pieces("how do I set NCCL_IB_HCA? I don't know which port it's on") == []
    assert quoted_pieces("什么是 LL128？") == []


def test_a_quoted_message_answers_before_the_names_around_it(small_server):
    """With an explainer (HTTP, CLI, chat, MCP), a message quoted inside the question is found
    by the regex tier and answers before a variable the question also names."""
    question = ("设置 NCCL_P2P_DISABLE=1 之后日志里出现 Watchdog caught collective operation timeout: "
                "WorkNCCL(SeqNum=7, OpType=ALLREDUCE) 这是什么意思")
    with httpx.Client(base_url=small_server.url, timeout=120) as http:
        got = http.get("/v1/ask", params={"q": question}).json()
    assert [a["id"] for a in got["answers"][:2]] == ["demo.watchdog_timeout", "NCCL_P2P_DISABLE"]


def test_a_variable_several_projects_read_answers_once(small_kb, tmp_path_factory):
    """MASTER_ADDR is read by PyTorch, accelerate and DeepSpeed: three texts, one variable; the
    answers name it once (the first-ranked text), not three times over the top 3."""
    import shutil

    from indexer.encoders import default_encoder
    from indexer.kb_cache import load_kb_cached
    from service.ask import Asker

    kb = tmp_path_factory.mktemp("dupkb") / "kb"
    shutil.copytree(small_kb, kb)
    again = dict(VARIABLES[1], component="rccl", repo="ROCm/rccl")
    (kb / "params" / "rccl.jsonl").write_text(json.dumps(again, ensure_ascii=False) + "\n", encoding="utf-8")
    asker = Asker(kb, load_kb_cached(kb), default_encoder(), tmp_path_factory.mktemp("dupcache"))
    ids = [(a["kind"], a["id"]) for a in asker.ask("what does NCCL_P2P_DISABLE do")["answers"]]
    assert ids[0] == ("variable", "NCCL_P2P_DISABLE") and len(ids) == len(set(ids))


def test_a_variable_asked_phrase_names_it_and_kb_check_guards_it(small_kb, tmp_path_factory):
    """A variable's `asked:` phrases ("PXB" for NCCL_P2P_LEVEL-style values, "IB port") name it
    in a question like an entry's; kb check reports a phrase that another document already
    uses, with the params file and line."""
    import shutil

    from indexer.encoders import default_encoder
    from indexer.kb_cache import load_kb_cached
    from indexer.kb_check import run_checks
    from service.ask import Asker

    kb = tmp_path_factory.mktemp("varaskkb") / "kb"
    shutil.copytree(small_kb, kb)
    rows = [dict(v) for v in VARIABLES]
    rows[0]["asked"] = ["RoCE address index"]
    (kb / "params" / "nccl.jsonl").write_text("".join(json.dumps(v, ensure_ascii=False) + "\n" for v in rows),
                                              encoding="utf-8")
    asker = Asker(kb, load_kb_cached(kb), default_encoder(), tmp_path_factory.mktemp("varaskcache"))
    got = asker.ask("which RoCE address index should a multi-node NCCL job use?")
    assert got["answers"][0]["id"] == "NCCL_IB_GID_INDEX"
    # a variable named by its name comes before one the question only describes
    got = asker.ask("I read about the RoCE address index; does NCCL_P2P_DISABLE=1 change it?")
    assert [a["id"] for a in got["answers"][:2]] == ["NCCL_P2P_DISABLE", "NCCL_IB_GID_INDEX"]
    _, findings = run_checks(kb)
    assert [str(f) for f in findings] == []
    rows[1]["asked"] = ["LL128"]  # a concept's name names the concept
    (kb / "params" / "nccl.jsonl").write_text("".join(json.dumps(v, ensure_ascii=False) + "\n" for v in rows),
                                              encoding="utf-8")
    _, findings = run_checks(kb)
    assert [(Path(f.file).name, f.line, f.entry_id, f.check) for f in findings] == \
        [("nccl.jsonl", 2, "NCCL_P2P_DISABLE", "asked")]
    assert "concept concept.nccl_proto_ll128" in findings[0].message


def test_the_document_named_most_often_comes_first(asker):
    """"LL ... LL128 ... LL128" asks about LL128: named twice, it answers before LL named once;
    between documents named as often, the question's order holds."""
    ids = [a["id"] for a in asker.ask("is LL faster than LL128, and when does NCCL pick LL128?")["answers"]]
    assert ids[:2] == ["concept.nccl_proto_ll128", "concept.nccl_proto_ll"]
    ids = [a["id"] for a in asker.ask("is LL faster than LL128?")["answers"]]
    assert ids[:2] == ["concept.nccl_proto_ll", "concept.nccl_proto_ll128"]


def test_how_to_set_a_message_answers_with_the_concept_that_lists_it(small_kb, tmp_path_factory):
    """"Can I set the NCCL timeout myself?" names the watchdog's timeout message; a message is
    not set, the concept that lists it in `see:` explains how, so it answers first."""
    import shutil

    from indexer.encoders import default_encoder
    from indexer.kb_cache import load_kb_cached
    from service.ask import Asker

    kb = tmp_path_factory.mktemp("seekb") / "kb"
    shutil.copytree(small_kb, kb)
    watchdog = {"id": "concept.pgnccl_watchdog", "names": ["watchdog"], "component": "torch_distributed",
                "see": ["demo.watchdog_timeout"],
                "title": {"en": "The NCCL watchdog", "zh": "NCCL watchdog 线程"},
                "text": {"en": "The timeout is the timeout= argument of init_process_group.",
                         "zh": "超时时间是 init_process_group 的 timeout= 参数。"},
                "verified": [{"repo": "pytorch/pytorch", "ref": "v2.6.0", "file": "torch/distributed/distributed_c10d.py",
                              "line": 1, "what": "timeout"}]}
    (kb / "concepts" / "watchdog.yaml").write_text(yaml.safe_dump([watchdog], allow_unicode=True), encoding="utf-8")
    asker = Asker(kb, load_kb_cached(kb), default_encoder(), tmp_path_factory.mktemp("seecache"))
    assert asker.ask("用户可以手动设置 NCCL 超时吗？")["answers"][0]["id"] == "concept.pgnccl_watchdog"
    # without the wish to set it, the message answers first
    assert asker.ask("训练时 NCCL 超时了怎么办")["answers"][0]["id"] == "demo.watchdog_timeout"


@pytest.mark.parametrize("question", [
    "更新最新版本后GPU占用率很高",  # a desktop app's GPU load: "GPU" alone is said by any software
    "设置redis连接超时时间20分钟后还是会出现超时",  # "超时" alone, of a Redis client
    "What does CUDA_DEVICE_MAX_COUNT mean?",  # a variable the KB does not know: no nearest other one
])
def test_weak_domain_words_and_unknown_variables_are_declined(asker, question):
    assert asker.ask(question)["known"] is False, question


def test_a_known_variable_without_its_prefix_is_not_unknown(asker):
    got = asker.ask("Can NCCL auto-detect the correct IB_GID_INDEX?")
    assert got["known"] and got["answers"][0]["id"] == "NCCL_IB_GID_INDEX"


def test_dotted_names_count_as_their_words():
    from service.ask import in_domain, tokens

    words = tokens("Setting timeout in torch.distributed.init_process_group has no effect")
    assert {"torch", "distributed", "init", "process", "group"} <= set(words) and in_domain(words)
    assert "2.18.1" in tokens("NCCL 2.18.1") and "18" not in tokens("NCCL 2.18.1")
    assert not in_domain(tokens("GPU 占用率很高")) and in_domain(tokens("GPU 训练时 OOM"))
    # one weak word said twice is still one
    assert not in_domain(tokens("But it still occupies all of the GPU memory of all GPUs"))


@pytest.mark.parametrize("question, expected", [
    ("设置了4,5,6,7号卡，还是在前四张卡上运行", True),
    ("每个节点有8张卡，能否只用其中的两块显卡", True),
    ("几号卡报错了", True),
    ("买了三张卡片，怎么打印", False),
    ("手机号卡怎么注销", False),
])
def test_numbered_and_counted_gpus_place_a_chinese_question_in_the_domain(question, expected):
    from service.ask import in_domain, tokens

    assert in_domain(tokens(question)) is expected


def test_names_inside_a_quoted_message_are_the_messages(asker):
    """A name inside a message the question quotes (the pieces whose message was found) is the
    message's word, not the asker's: it does not name its document."""
    index = asker.index()
    question = "after LL128 I see: NCCL_P2P_DISABLE is set, LL is off"
    at = question.index("NCCL_P2P_DISABLE")
    ids = lambda found: [index.docs[i].id for i in found]
    assert "NCCL_P2P_DISABLE" in ids(asker._exact(index, question))
    assert ids(asker._exact(index, question, skip=[(at, len(question))])) == ["concept.nccl_proto_ll128"]


@pytest.mark.parametrize("question", [
    # the whole question finds curated entries only: a record's few fixed words ("could not
    # find {ptr}") are in any sentence
    "I could not find how to increase the openresty gateway time-out",
    # a quoted piece found only by the semantic tier counts only in a question of this domain
    # (a Slurm errno text is near a JDBC error, and is not it)
    "com.mysql.cj.jdbc.exceptions.CommunicationsException: Communications link failure",
])
def test_other_softwares_messages_are_not_answered_by_record_words(explainer, tmp_path_factory, question):
    from service.ask import Asker

    asker = Asker(explainer.kb_dir, explainer.kb, None, tmp_path_factory.mktemp("realask"), explainer=explainer)
    assert asker.ask(question)["known"] is False


def test_time_out_other_software_and_cpp_exceptions(asker):
    """"nccl time out" is "nccl timeout"; a question about another framework or cluster
    software that names none the KB covers is declined; a C function's name before a message
    marks it as one; what a C++ exception says comes before the "terminate called" wrapper."""
    from service.ask import foreign, quoted_pieces, tokens

    assert asker.ask("训练时报 collective time out，怎么办")["answers"][0]["id"] == "demo.watchdog_timeout"
    assert asker.ask("why does torchrun report a collective time-out?")["answers"][0]["id"] == "demo.watchdog_timeout"
    assert foreign(tokens("PaddlePaddle 0.11.0，P40卡，训练时单卡比8卡快是什么原因？"))
    assert foreign(tokens("nvidia.com/gpu 值超过1，pod 的状态就一直为 Pending"))
    assert not foreign(tokens("k8s pod 里 torchrun 启动后 NCCL 超时"))
    # "stuck forever" names the watchdog entry in a training question, not in Paddle's
    assert asker.ask("多卡训练 stuck forever")["answers"][0]["id"] == "demo.watchdog_timeout"
    assert asker.ask("PaddlePaddle 多卡训练 stuck forever")["known"] is False
    assert quoted_pieces("socketStartConnect: exceeded timeouts (3)\n\n你好，两机16卡可以，4机32卡报错") == \
        ["socketStartConnect: exceeded timeouts (3)"]
    pieces = quoted_pieces("报错\nterminate called after throwing an instance of 'std::runtime_error'\n"
                           "  what():  NCCL Error 1: unhandled cuda error")
    assert pieces[0] == "NCCL Error 1: unhandled cuda error" and pieces[1].startswith("terminate called")


def test_a_message_quoted_in_part_finds_the_entry_whose_example_holds_it(asker):
    """A quoted message cut short ("...") that no pattern takes is found in the example lines:
    five words or more, from a word's start; its span then belongs to the message."""
    index = asker.index()
    question = 'Why do I get "Watchdog caught collective operation timeout..." after 30 minutes?'
    piece = "Watchdog caught collective operation timeout..."
    sure, likely, inside = [], [], []
    asker._cut_short(index, question, piece, sure, likely, inside)
    assert [index.docs[i].id for i in sure] == ["demo.watchdog_timeout"] and likely == []
    assert inside == [(question.find(piece), question.find(piece) + len(piece))]
    for short in ("collective operation timeout", "atchdog caught collective operation timeout", "the watchdog caught it"):
        sure, likely, inside = [], [], []
        asker._cut_short(index, question, short, sure, likely, inside)
        assert (sure, likely, inside) == ([], [], []), short


def test_a_snake_case_name_the_kb_does_not_know_is_read_as_words(asker):
    """"deepspeed_zero3_offload" names ZeRO-3 and offload; a name the KB knows keeps its
    parts to itself (NCCL_PROTO is a variable, not the LL protocol's words)."""
    got = asker.ask("my bench_ll128_small config is slow, why?")
    assert got["known"] and got["answers"][0]["id"] == "concept.nccl_proto_ll128"
    got = asker.ask("what does NCCL_PROTO do?")
    assert got["answers"][0]["id"] == "NCCL_PROTO"
