"""``explainlog mcp``: the explainer as a Model Context Protocol server, for AI assistants.

Tools (each returns the same JSON as the CLI's ``--json``):
- ``explain_line(line)``: one answer of ``explainlog explain --json``;
- ``explain_lines(lines)``: ``{"answers": [...]}``, one per line, in order;
- ``triage_log(log)``: the verdict of ``explainlog triage --json`` for a pasted log;
- ``ask(question, lang)``: ``explainlog ask --json``;
- ``get_entry(id)``: one KB entry, catalogue record, variable or concept by id or name.

Resources: ``explainlog://entries`` lists the curated entries (id, component, title), and
``explainlog://entry/{entry_id}`` is one entry's whole text, as JSON.

Transports: stdio (what assistants launch), or streamable HTTP bound to 127.0.0.1 on request
(``--http PORT``); nothing listens on other interfaces.
"""

from __future__ import annotations

import json
from typing import Any

from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError

MAX_LINES = 10_000
MAX_LOG_BYTES = 64 * 1024 * 1024

INSTRUCTIONS = (
    "explainlog explains log lines of distributed deep-learning training (NCCL/RCCL, torch.distributed, "
    "DeepSpeed, Megatron, HF, CUDA/ROCm, InfiniBand, Slurm) from a curated bilingual knowledge base and a "
    "catalogue extracted from the source code. Use explain_line/explain_lines for log lines, triage_log for a "
    "whole log (what killed the job), ask for questions in words (environment variables, concepts), "
    "get_entry to read one entry. Answers never invent causes: 'known: false' means the KB does not know."
)


def build_server(explainer) -> MCPServer:
    from service.ask import asker_for
    from service.triage import triage_lines

    server = MCPServer("explainlog", instructions=INSTRUCTIONS)

    @server.tool(description="Explain one log line: what it means, whether it matters, what to do. "
                             "Returns the JSON answer of `explainlog explain --json`.")
    def explain_line(line: str) -> dict[str, Any]:
        return explainer.explain(line)

    @server.tool(description=f"Explain several log lines (at most {MAX_LINES}), one answer per line in order. "
                             "Returns {\"answers\": [...]}.")
    def explain_lines(lines: list[str]) -> dict[str, Any]:
        if len(lines) > MAX_LINES:
            raise ToolError(f"at most {MAX_LINES} lines per call; use triage_log or the CLI for more")
        return {"answers": list(explainer.explain_many(lines))}

    @server.tool(description="Triage a whole log pasted as one string: the root cause, the cascade folded, "
                             "the job's facts. Returns the JSON of `explainlog triage --json`.")
    def triage_log(log: str) -> dict[str, Any]:
        if len(log.encode("utf-8", errors="replace")) > MAX_LOG_BYTES:
            raise ToolError(f"a log of at most {MAX_LOG_BYTES >> 20} MiB per call; use `explainlog triage` for more")
        lines = log.splitlines()
        if not any(line.strip() for line in lines):
            raise ToolError("the log is empty")
        return triage_lines(explainer, [("<mcp>", line) for line in lines])

    @server.tool(description="Answer a question in words (Chinese or English) from the knowledge base: "
                             "environment variables (NCCL_*, TORCH_NCCL_*, ...), concepts (LL128, PXN, ZeRO-3, "
                             "rendezvous ...) and log messages. Returns {question, lang, known, answers}; "
                             "known=false when the KB has no answer.")
    def ask(question: str, lang: str | None = None) -> dict[str, Any]:
        if lang not in (None, "en", "zh"):
            raise ToolError("lang is en or zh")
        return asker_for(explainer).ask(question, lang=lang)

    @server.tool(description="One KB entry, catalogue record, environment variable or concept, by its id or "
                             "exact name (e.g. nccl.init.version, NCCL_IB_GID_INDEX, concept.nccl_pxn).")
    def get_entry(id: str, lang: str = "en") -> dict[str, Any]:
        found = asker_for(explainer).get(id, lang if lang in ("en", "zh") else "en")
        if found is None:
            raise ToolError(f"no entry, record, variable or concept is called {id!r}")
        return found

    @server.resource("explainlog://entries", name="entries", mime_type="application/json",
                     description="The curated KB entries: id, component, severity and title (en, zh).")
    def entries() -> str:
        rows = [{"id": l.entry.id, "component": l.entry.component.value, "severity": l.entry.severity.value,
                 "title": l.entry.title.model_dump()} for l in explainer.kb.entries]
        return json.dumps(rows, ensure_ascii=False)

    @server.resource("explainlog://entry/{entry_id}", name="entry", mime_type="application/json",
                     description="One curated KB entry, whole: pattern, texts, fields, examples, sources.")
    def entry(entry_id: str) -> str:
        loaded = explainer.kb.by_id().get(entry_id)
        if loaded is None:
            raise ToolError(f"no curated entry {entry_id!r}")
        return json.dumps(loaded.entry.model_dump(mode="json", exclude_none=True), ensure_ascii=False)

    return server


def run(explainer, http_port: int | None = None) -> None:
    server = build_server(explainer)
    if http_port is None:
        server.run("stdio")
    else:
        server.run("streamable-http", host="127.0.0.1", port=http_port)
