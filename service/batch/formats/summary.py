"""``--format summary``: the run as a table a person reads first, errors at the top.

Plain text (no colour) so it reads the same on a terminal, in a CI log and in a file; with an
output path ending in ``.json`` the same summary is written as JSON for scripts.
"""

from __future__ import annotations

import orjson

from service.batch.summary import Summary
from service.presentation import display_width, severity_name, term

ANNOTATES = False  # lines are counted per shape (``Engine.summarize``), not annotated one by one
NEEDS_CONTEXT = False

MAX_TEMPLATES_SHOWN = 40

# The frame of the summary in both languages (the texts themselves come from the KB).
WORDS = {
    "en": {
        "head": "explainlog summary: {total} lines in {files} input(s); {known} explained ({share}), "
                "{unknown} unknown in {templates} template(s)",
        "interrupted": " — INTERRUPTED, partial", "severity": "severity: ", "first_error": "first error: ",
        "first_warning": "first warning: ", "problems": "problems with the input ({n}):", "more": "  ... and {n} more",
        "cols": ("SEVERITY", "COUNT", "FIRST", "LAST", "ENTRY"), "none": "no line matched a KB entry",
        "templates": "lines nobody explains, grouped by template (most frequent first):",
        "tcols": ("COUNT", "FIRST", "TEMPLATE"), "more_templates": "... in {n} more template(s)",
        "untracked": "... unknown lines in templates beyond the tracking limit", "sep": " · ",
    },
    "zh": {
        "head": "explainlog 汇总：{files} 个输入共 {total} 行；已解释 {known} 行（{share}），"
                "未收录 {unknown} 行，分属 {templates} 个模板",
        "interrupted": "——运行被中断，结果不完整", "severity": "严重程度：", "first_error": "首个错误：",
        "first_warning": "首个警告：", "problems": "输入问题（{n} 个）：", "more": "  ……另有 {n} 个",
        "cols": ("严重程度", "次数", "首次", "末次", "条目"), "none": "没有任何一行匹配知识库条目",
        "templates": "未能解释的行（按模板出现次数排序）：",
        "tcols": ("次数", "首次", "模板"), "more_templates": "……另有 {n} 个模板",
        "untracked": "……超出跟踪上限的模板中的未收录行", "sep": " · ",
    },
}


def _pad(text: str, width: int, right: bool = False) -> str:
    """Pad to a display width (a Chinese header takes two columns a character)."""
    gap = " " * max(0, width - display_width(text))
    return gap + text if right else text + gap


def _cut(text: str, width: int) -> str:
    return text if len(text) <= width else text[: width - 1] + "…"


def render_root_cause(triage: dict, lang: str) -> list[str]:
    """The triage verdict in a few lines, above the counts: what a person wants first."""
    zh = lang == "zh"
    root = triage["root_cause"]
    out = [""]
    if root is None:
        out.append("根因：日志中没有发现故障" if zh else "root cause: no failure found in this log")
        return out + [""]
    title = (root.get("title") or {}).get(lang) or ""
    out.append(f"{'根因：' if zh else 'root cause: '}{root['file']}:{root['line_number']}  {title}")
    out.append(f"  {_cut(root['line'], 300)}")
    out.append(f"  {root['why'][lang]}")
    if root.get("action"):
        out.append(f"  → {_cut(root['action'][lang], 600)}")
    groups = triage["cascade"]
    if groups:
        n = sum(g["count"] for g in groups)
        out.append(f"  连带报错（已折叠）：{n:,} 行，{len(groups)} 组" if zh else
                   f"  cascade (folded): {n:,} line(s), {len(groups)} group(s)")
        for g in groups[:8]:
            label = ((g.get("title") or {}).get(lang)) or g["sample_lines"][0]
            out.append(f"    ×{g['count']:<7,} {g['file']}:{g['first_line']}  {_cut(label, 120)}")
        if len(groups) > 8:
            out.append(f"    ... {len(groups) - 8} {'组未列出' if zh else 'more group(s)'}")
    return out + [""]


def render_summary(summary: Summary, lang: str = "en") -> str:
    lang = "zh" if lang == "zh" else "en"
    total = summary.total_lines
    known = summary.known_lines
    share = f"{known / total:.1%}" if total else "-"
    files = len([f for f in summary.files if f])
    w = WORDS[lang]
    out = [
        w["head"].format(total=f"{total:,}", files=files, known=f"{known:,}", share=share,
                         unknown=f"{summary.unknown_lines:,}", templates=f"{len(summary.templates):,}")
        + (w["interrupted"] if summary.interrupted else ""),
    ]
    if summary.triage is not None:
        out += render_root_cause(summary.triage, lang)
    if summary.semantic_skipped:
        out.append(
            f"语义检索预算已用完：{summary.semantic_skipped:,} 行未收录的日志没有做语义匹配（--semantic-budget）" if lang == "zh" else
            f"semantic budget spent: {summary.semantic_skipped:,} unknown line(s) were not matched by meaning (--semantic-budget)")
    counts = summary.severity_counts()
    out.append(w["severity"] + w["sep"].join(f"{severity_name(name, lang)} {counts[name]:,}" for name in counts)
               + f"{w['sep']}{term(lang, 'unknown')} {summary.unknown_lines:,}")
    out.append(f"{w['first_error']}{summary.where(summary.first_at_least('error'))}    "
               f"{w['first_warning']}{summary.where(summary.first_at_least('warning'))}")
    problems = summary.all_problems()
    if problems:
        out.append("")
        out.append(w["problems"].format(n=len(problems)))
        out += [f"  {p}" for p in problems[:50]]
        if len(problems) > 50:
            out.append(w["more"].format(n=len(problems) - 50))
    out.append("")
    ranked = summary.ranked_entries()
    if ranked:
        width = max(len(summary.where(s.first)) for _, s in ranked)
        width = min(max(width, 5), 48)
        c = w["cols"]
        out.append(f"{_pad(c[0], 9)} {_pad(c[1], 10, True)}  {_pad(c[2], width)}  {_pad(c[3], width)}  {c[4]}")
        for pattern_id, stat in ranked:
            out.append(
                f"{_pad(severity_name(stat.severity, lang), 9)} {stat.count:>10,}  {_cut(summary.where(stat.first), width):<{width}}  "
                f"{_cut(summary.where(stat.last), width):<{width}}  {pattern_id} — {stat.title.get(lang, '')}"
            )
    else:
        out.append(w["none"])
    templates = summary.ranked_templates()
    if templates:
        out.append("")
        out.append(w["templates"])
        width = min(max(len(summary.where(s.first)) for _, s in templates[:MAX_TEMPLATES_SHOWN]), 48)
        c = w["tcols"]
        out.append(f"{_pad(c[0], 10, True)}  {_pad(c[1], width)}  {c[2]}")
        for template, tstat in templates[:MAX_TEMPLATES_SHOWN]:
            out.append(f"{tstat.count:>10,}  {_cut(summary.where(tstat.first), width):<{width}}  {_cut(template, 160)}")
        if len(templates) > MAX_TEMPLATES_SHOWN:
            rest = sum(s.count for _, s in templates[MAX_TEMPLATES_SHOWN:])
            out.append(f"{rest:>10,}  " + w["more_templates"].format(n=f"{len(templates) - MAX_TEMPLATES_SHOWN:,}"))
    if summary.untracked_unknown:
        out.append(f"{summary.untracked_unknown:>10,}  " + w["untracked"])
    return "\n".join(out) + "\n"


class SummaryWriter:
    """Writes nothing while lines stream by; the whole summary at the end."""

    def __init__(self, out, lang: str, as_json: bool) -> None:
        self.out = out
        self.lang = lang
        self.as_json = as_json

    def begin_source(self, name: str) -> None:
        pass

    def write(self, data: bytes, result) -> None:
        pass

    def note(self, problem) -> None:
        pass  # problems are part of the summary itself

    def close(self, summary: Summary) -> None:
        if self.as_json:
            self.out.write(orjson.dumps(summary.to_json(), option=orjson.OPT_INDENT_2) + b"\n")
        else:
            self.out.write(render_summary(summary, self.lang).encode("utf-8"))


class Renderer:
    """Nothing to render per chunk: the summary is all in ``ChunkResult.summary``."""

    def __init__(self, slot: int = 0, stride: int = 1) -> None:
        pass

    def render(self, annotated, source_name: str, options, result) -> None:
        pass


def writer(out, options, multi_source: bool, as_json: bool = False) -> SummaryWriter:
    return SummaryWriter(out, "zh" if options.lang == "zh" else "en", as_json)
