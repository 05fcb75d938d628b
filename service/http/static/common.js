// Shared by the explain page and the KB page: UI strings in both languages, the remembered
// language choice, the API client (with the optional bearer token), and a DOM helper that
// only ever sets text — log lines are hostile input and must never become HTML.

export const STRINGS = {
  en: {
    nav_explain: "Explain", nav_kb: "Knowledge base", nav_docs: "API docs", lang_label: "Language",
    input_label: "Log lines", input_hint: "Paste one line or a whole screen of log. Ctrl+Enter explains.",
    explain: "Explain", clear: "Clear", permalink: "Permalink", copy_link: "Copy link", copied: "Link copied",
    working: "Explaining…", summary: (n, k, u) => `${n} line${n === 1 ? "" : "s"} explained: ${k} known, ${u} unknown.`,
    empty: "Paste at least one log line first.", line: (n) => `Line ${n}`, confidence: "confidence",
    unknown: "unknown", unknown_title: "Not in the knowledge base",
    nearest: "Nearest entries", none_near: "No entry is close.", action: "What to do", fields: "Fields", details: "Details",
    references: "References", source: "Printed by",
    source_kind: { "docs:": "Documented in", "kernel:": "Printed by the Linux kernel", "vendor:": "Printed by the vendor tool", "man:": "Described in the man page" },
    tier: { regex: "exact match", catalog: "source catalogue", semantic: "similar entry" },
    printed_in: "in", also: "also",
    severity: { info: "info", warning: "warning", error: "error", fatal: "fatal" },
    role: { context: "context", progress: "progress", advice: "advice", root_cause: "root cause", cascade: "knock-on error", wrapper: "wrapper" },
    token_title: "This service needs an API token", token_label: "API token", token_save: "Use token",
    search_label: "Search the knowledge base", search_hint: "Words in titles, explanations, ids or example lines (English or 中文).",
    component: "Component", severity_label: "Severity", any: "any", results: (n) => `${n} entr${n === 1 ? "y" : "ies"}`,
    examples: "Example lines", pattern: "Pattern", versions: "Versions", back: "All entries", kb_title: "Knowledge base",
    error: "Error", skip: "Skip to content",
    rc_heading: "Root cause", rc_why: "Why this line", rc_no_failure: "No failure found: no line is an error, a failed worker or a crash.",
    rc_failed: "Root-cause analysis is unavailable for this paste; the line-by-line answers below are unaffected.",
    rc_kind: {
      root_cause: "known root cause", exception: "exception", signal: "killed by a signal", unexplained_error: "unexplained error",
      error: "error line", timeout: "timeout", worker_failed: "worker failed", cascade: "knock-on error", wrapper: "wrapper",
    },
    rc_cascade: (n, g) => `Cascade: ${n} knock-on line${n === 1 ? "" : "s"} in ${g} group${g === 1 ? "" : "s"}`,
    rc_ranks: "ranks", rc_hosts: "hosts",
    ask_label: "Ask a question", ask_hint: "A variable, a concept or a message, in English or 中文: what does NCCL_IB_GID_INDEX do?",
    ask: "Ask", asking: "Looking it up…", ask_empty: "Type a question first.",
    not_known: "Not in the knowledge base: no variable, concept or message of the KB answers this question.",
    answers: (n) => `${n} answer${n === 1 ? "" : "s"} from the knowledge base.`,
    kind: { variable: "variable", concept: "concept", entry: "message", record: "message (source)" },
  },
  zh: {
    nav_explain: "解释日志", nav_kb: "知识库", nav_docs: "API 文档", lang_label: "语言",
    input_label: "日志行", input_hint: "粘贴一行或整屏日志，按 Ctrl+Enter 解释。",
    explain: "解释", clear: "清空", permalink: "永久链接", copy_link: "复制链接", copied: "链接已复制",
    working: "正在解释…", summary: (n, k, u) => `已解释 ${n} 行：${k} 行已收录，${u} 行未收录。`,
    empty: "请先粘贴至少一行日志。", line: (n) => `第 ${n} 行`, confidence: "置信度",
    unknown: "未收录", unknown_title: "知识库里没有这一行",
    nearest: "最接近的条目", none_near: "没有相近的条目。", action: "建议操作", fields: "字段", details: "详情",
    references: "参考资料", source: "打印位置",
    source_kind: { "docs:": "出处（文档）", "kernel:": "出处（Linux 内核）", "vendor:": "出处（厂商工具）", "man:": "出处（man 手册）" },
    tier: { regex: "精确匹配", catalog: "源码目录", semantic: "语义相似" },
    printed_in: "函数", also: "另见",
    severity: { info: "信息", warning: "警告", error: "错误", fatal: "致命" },
    role: { context: "背景", progress: "进度", advice: "建议", root_cause: "根因", cascade: "连带报错", wrapper: "包装信息" },
    token_title: "此服务需要 API 令牌", token_label: "API 令牌", token_save: "使用令牌",
    search_label: "搜索知识库", search_hint: "标题、解释、条目 id 或示例日志中的词（中文或英文）。",
    component: "组件", severity_label: "严重程度", any: "全部", results: (n) => `${n} 个条目`,
    examples: "示例日志", pattern: "正则", versions: "适用版本", back: "全部条目", kb_title: "知识库",
    error: "错误", skip: "跳到正文",
    rc_heading: "根因", rc_why: "判断依据", rc_no_failure: "未发现故障：没有哪一行是错误、失败的 worker 或崩溃。",
    rc_failed: "这次粘贴的根因分析失败了，下面的逐行解释不受影响。",
    rc_kind: {
      root_cause: "知识库标注的根因", exception: "异常", signal: "被信号终止", unexplained_error: "未收录的错误",
      error: "错误日志", timeout: "超时", worker_failed: "worker 异常退出", cascade: "连带报错", wrapper: "包装信息",
    },
    rc_cascade: (n, g) => `连带报错：${g} 组，共 ${n} 行`,
    rc_ranks: "rank", rc_hosts: "主机",
    ask_label: "提问", ask_hint: "问一个环境变量、概念或日志消息，中英文均可：NCCL_IB_GID_INDEX 有什么用？",
    ask: "提问", asking: "正在查找…", ask_empty: "请先输入问题。",
    not_known: "知识库中没有相关内容：没有哪个环境变量、概念或日志消息能回答这个问题。",
    answers: (n) => `知识库中找到 ${n} 条回答。`,
    kind: { variable: "环境变量", concept: "概念", entry: "日志消息", record: "日志消息（源码）" },
  },
};

const LANG_KEY = "explainlog.lang";
const TOKEN_KEY = "explainlog.token";

export function currentLang() {
  const saved = localStorage.getItem(LANG_KEY);
  if (saved === "en" || saved === "zh") return saved;
  return (navigator.language || "").toLowerCase().startsWith("zh") ? "zh" : "en";
}

export function t(key) {
  return STRINGS[currentLang()][key];
}

/** Build an element; children are nodes or strings (always inserted as text). */
export function el(tag, attrs = {}, ...children) {
  const node = document.createElement(tag);
  for (const [name, value] of Object.entries(attrs)) {
    if (value === null || value === undefined || value === false) continue;
    if (name === "text") node.textContent = value;
    else if (name.startsWith("on")) node.addEventListener(name.slice(2), value);
    else node.setAttribute(name, value === true ? "" : String(value));
  }
  for (const child of children.flat(Infinity)) {
    if (child === null || child === undefined || child === false) continue;
    node.append(child instanceof Node ? child : document.createTextNode(String(child)));
  }
  return node;
}

/** Fill every [data-i18n] element and mark the pressed language button. */
export function applyStrings() {
  const lang = currentLang();
  document.documentElement.lang = lang === "zh" ? "zh-CN" : "en";
  for (const node of document.querySelectorAll("[data-i18n]")) {
    const value = STRINGS[lang][node.dataset.i18n];
    if (typeof value === "string") node.textContent = value;
  }
  for (const node of document.querySelectorAll("[data-i18n-placeholder]")) {
    node.setAttribute("placeholder", STRINGS[lang][node.dataset.i18nPlaceholder]);
  }
  for (const button of document.querySelectorAll("[data-lang]")) {
    button.setAttribute("aria-pressed", String(button.dataset.lang === lang));
  }
}

/** Wire the zh/en buttons; ``onChange`` re-renders the page's dynamic content. */
export function setupLanguageSwitch(onChange) {
  for (const button of document.querySelectorAll("[data-lang]")) {
    button.addEventListener("click", () => {
      localStorage.setItem(LANG_KEY, button.dataset.lang);
      applyStrings();
      onChange();
    });
  }
  applyStrings();
}

export class ApiError extends Error {
  constructor(status, body) {
    // a Chinese reader gets the service's Chinese sentence for the same error
    super((body && currentLang() === "zh" && body.detail_zh) || (body && body.detail) || `HTTP ${status}`);
    this.status = status;
    this.body = body;
  }
}

/** Call the API; on 401 ask for the token once, keep it for this browser session, retry. */
export async function api(path, options = {}) {
  for (let attempt = 0; attempt < 2; attempt++) {
    const headers = { ...(options.headers || {}) };
    const token = sessionStorage.getItem(TOKEN_KEY);
    if (token) headers.Authorization = `Bearer ${token}`;
    const response = await fetch(path, { ...options, headers });
    const body = await response.json().catch(() => null);
    if (response.ok) return body;
    if (response.status === 401 && attempt === 0 && (await askForToken())) continue;
    throw new ApiError(response.status, body);
  }
  throw new ApiError(401, null);
}

function askForToken() {
  return new Promise((resolve) => {
    const form = document.getElementById("token-form");
    if (!form) return resolve(false);
    form.hidden = false;
    const input = form.querySelector("input");
    input.focus();
    form.addEventListener("submit", (event) => {
      event.preventDefault();
      sessionStorage.setItem(TOKEN_KEY, input.value.trim());
      form.hidden = true;
      resolve(true);
    }, { once: true });
  });
}

const patternCache = new Map();

/** Full KB entry (fields, references, source), fetched once per id. */
export function pattern(id) {
  if (!patternCache.has(id)) {
    const promise = api(`/v1/patterns/${encodeURIComponent(id)}`);
    promise.catch(() => patternCache.delete(id));
    patternCache.set(id, promise);
  }
  return patternCache.get(id);
}

export function severityBadge(severity) {
  const text = severity ? t("severity")[severity] : t("unknown");
  return el("span", { class: `badge sev-${severity || "unknown"}`, text });
}

/** Links and source line for a KB entry: shared by result cards and the KB page. */
export function provenance(entry) {
  const parts = [];
  // a source that is documentation, the kernel or a vendor tool, not a repository: say which
  const [head, ...rest] = (entry.source || "").split(" ");
  const kind = t("source_kind")[head];
  const shown = kind ? rest.join(" ") : entry.source;
  const source = entry.source_url
    ? el("a", { href: entry.source_url, rel: "noreferrer" }, el("code", { text: shown }))
    : el("code", { text: shown });
  parts.push(el("p", { class: "source" }, `${kind || t("source")}: `, source));
  if (entry.references && entry.references.length) {
    parts.push(el("h3", { text: t("references") }));
    parts.push(el("ul", { class: "refs" }, entry.references.map((url) => el("li", {}, el("a", { href: url, rel: "noreferrer" }, url)))));
  }
  return parts;
}
