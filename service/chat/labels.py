"""The bots' own words (labels, buttons, help), in both languages, for Block Kit and cards alike.

Explanations always come from the KB; only this interface chrome is written here.
"""

from __future__ import annotations

LABELS: dict[str, dict[str, str]] = {
    "en": {
        "fatal": "fatal", "error": "error", "warning": "warning", "info": "info", "unknown": "unknown",
        "unknown_title": "Not in the knowledge base",
        "unknown_body": "explainlog has no curated explanation for this line.",
        "nearest": "Nearest entries",
        "no_nearest": "No entry comes close.",
        "fields": "Fields",
        "action": "What to do",
        "confidence": "confidence",
        "open": "Open in explainlog",
        "helped": "This helped",
        "wrong": "Wrong answer",
        "details": "Details",
        "switch": "中文",
        "summary": "Explained {total} lines ({distinct} distinct), most severe first: {counts}",
        "more_like": "{n} more lines like this",
        "others": "Also in the paste",
        "skipped": "Only the first {max} lines were explained; {skipped} more were left out.",
        "thanks_helped": "Thanks — noted that this helped.",
        "thanks_wrong": "Thanks — a curator will look at this answer.",
        "expired": "That answer is too old to take feedback; paste the line again.",
        "lang_set": "Answers will be in English from now on.",
        "working": "Explaining {n} line(s)…",
        "help": "Paste log lines after `/explain` (or mention me with them, or in a ``` code block). "
                "`/explain --zh` switches your answers to Chinese, `--en` back to English.",
        "not_in_channel": "I can't post in that channel; invite me with `/invite @explainlog` first.",
        "failed": "Sorry — explaining failed on the server ({error}). Its log has the details.",
        "root_cause": "Root cause: {title}",
        "no_failure": "No failure found: no line is an error, a failed worker or a crash.",
        "why": "Why this line",
        "cascade": "Cascade: {n} knock-on line(s) in {g} group(s)",
        "ranks": "ranks",
        "hosts": "hosts",
    },
    "zh": {
        "fatal": "致命", "error": "错误", "warning": "警告", "info": "信息", "unknown": "未收录",
        "unknown_title": "知识库里没有这一行",
        "unknown_body": "explainlog 还没有为这一行整理过解释。",
        "nearest": "最接近的条目",
        "no_nearest": "没有相近的条目。",
        "fields": "字段",
        "action": "建议操作",
        "confidence": "置信度",
        "open": "在 explainlog 中打开",
        "helped": "有帮助",
        "wrong": "答案有误",
        "details": "详情",
        "switch": "English",
        "summary": "共解释 {total} 行（{distinct} 种），按严重程度排序：{counts}",
        "more_like": "另有 {n} 行与此相同",
        "others": "其余各行",
        "skipped": "只解释了前 {max} 行，另有 {skipped} 行未处理。",
        "thanks_helped": "谢谢，已记录：这个回答有帮助。",
        "thanks_wrong": "谢谢，维护者会检查这个回答。",
        "expired": "这个回答太久了，无法反馈；请重新粘贴这一行。",
        "lang_set": "之后的回答将使用中文。",
        "working": "正在解释 {n} 行…",
        "help": "在 `/explain` 后粘贴日志行（或 @我 并附上日志、或放进 ``` 代码块）。"
                "`/explain --en` 切换为英文回答，`--zh` 切换回中文。",
        "not_in_channel": "我无法在该频道发言，请先用 `/invite @explainlog` 邀请我。",
        "failed": "抱歉，服务端解释失败（{error}），详情见服务日志。",
        "root_cause": "根因：{title}",
        "no_failure": "未发现故障：没有哪一行是错误、失败的 worker 或崩溃。",
        "why": "判断依据",
        "cascade": "连带报错：{g} 组，共 {n} 行",
        "ranks": "rank",
        "hosts": "主机",
    },
}


def label(lang: str, key: str, **values: object) -> str:
    text = LABELS[lang][key]
    return text.format(**values) if values else text


def severity_counts_text(counts: dict[str, int], lang: str) -> str:
    return " · ".join(f"{n} {LABELS[lang][severity]}" for severity, n in counts.items())


def _ranges(values: list[str]) -> str:
    """"0, 1, 2, 3, 7" as "0-3, 7"; values that are not all numbers are listed as they are."""
    if not values or not all(str(v).isdigit() for v in values):
        return ", ".join(map(str, values))
    runs: list[list[int]] = []
    for n in sorted({int(v) for v in values}):
        if runs and n == runs[-1][1] + 1:
            runs[-1][1] = n
        else:
            runs.append([n, n])
    return ", ".join(f"{a}-{b}" if b > a else str(a) for a, b in runs)


def spread_text(group: dict, lang: str, limit: int = 80) -> str:
    """Where a cascade group was printed: " · ranks 0-7 · hosts a, b" (empty when the log says nowhere)."""
    out = ""
    if group.get("ranks"):
        out += f" · {LABELS[lang]['ranks']} {_ranges(group['ranks'])}"
    if group.get("hosts"):
        out += f" · {LABELS[lang]['hosts']} {', '.join(group['hosts'])}"
    return out if len(out) <= limit else out[: limit - 1] + "…"
