// The paste-a-line page: send the pasted lines, show one card per line in input order, keep
// the query in the URL hash (a permalink that never reaches the server's access log). A paste of
// more than TRIAGE_MIN_LINES non-blank lines is also triaged as one log (/v1/triage): a root-cause
// card above the per-line cards, its line linked to that line's card, the cascade folded.
import { api, el, pattern, provenance, setupLanguageSwitch, severityBadge, t } from "./common.js";

const form = document.getElementById("explain-form");
const input = document.getElementById("input");
const results = document.getElementById("results");
const status = document.getElementById("status");
const permalink = document.getElementById("permalink");
const copyButton = document.getElementById("copy-link");
const triageBox = document.getElementById("triage");
const askForm = document.getElementById("ask-form");
const askInput = document.getElementById("ask");

const TRIAGE_MIN_LINES = 3; // more non-blank lines than this: also ask for the root cause
// Python's str.splitlines() (which /v1/triage numbers lines with) also breaks at these; the
// page numbers lines at "\n" only, so they become spaces in the text sent for triage.
const PY_LINE_BREAKS = /[\r\v\f\x1c\x1d\x1e\x85\u2028\u2029]/g;

let lastAnswers = []; // [{number, answer}] — kept so a language switch re-renders without a request
let lastTriage = null; // null (no triage asked), {result} or {failed: true}
let generation = 0; // answers of an older paste, arriving late, are dropped
let lastAsk = null; // the /v1/ask result shown, or null

// A paste that is one short line asking something is a question, unless the KB knows it as a
// log line (the server's regex tier decides that: see explain()). Mirrors service/ask.py.
const QUESTION_START = /^(?:what|what's|whats|how|why|when|where|which|who|is|are|does|do|did|can|could|should|would|explain|tell me|define|meaning of)\b/i;
const ZH_QUESTION = /什么|怎么|为什么|为何|如何|是否|吗[？?]?$|哪个|哪些|多少|区别|作用|含义|意思|有啥|咋|是啥/;
const LOG_PREFIX = /^(?:\[?\d{2,4}[-/:]\d|[IWEF]\d{4} |\[rank\d+\]|[\w.-]+:\d+:\d+ \[\d+\]|\S+ NCCL (?:INFO|WARN))/;
function looksLikeQuestion(text) {
  const line = text.trim();
  if (!line || line.length > 300 || line.includes("\n") || LOG_PREFIX.test(line)) return false;
  return /[?？]$/.test(line) || QUESTION_START.test(line) || ZH_QUESTION.test(line);
}

function answerCard(number, answer, lang) {
  const where = sourceLine(answer.source, lang);
  return el("li", { class: "card answer", id: `answer-${number}`, "data-kind": answer.kind, "data-id": answer.id },
    el("div", { class: "card-head" },
      el("span", { class: "kind", text: t("kind")[answer.kind] || answer.kind }),
      el("h2", { class: "title", text: answer.title })),
    el("p", { class: "meta" }, el("code", { text: answer.id }), answer.component ? ` · ${answer.component}` : ""),
    el("p", { class: "explanation", text: answer.text }),
    where ? el("p", { class: "source-line", text: where }) : null);
}

function renderAsk() {
  if (!lastAsk) return false;
  status.classList.remove("error");
  if (!lastAsk.known) {
    results.replaceChildren();
    status.textContent = t("not_known");
  } else {
    results.replaceChildren(...lastAsk.answers.map((answer, i) => answerCard(i + 1, answer, pageLang())));
    status.textContent = t("answers")(lastAsk.answers.length);
  }
  return true;
}

async function ask(question) {
  const mine = ++generation;
  lastAnswers = [];
  lastTriage = null;
  renderTriage();
  status.classList.remove("error");
  status.textContent = t("asking");
  try {
    const result = await api(`/v1/ask?${new URLSearchParams({ q: question, lang: pageLang() })}`);
    if (mine !== generation) return;
    lastAsk = result;
    renderAsk();
  } catch (error) {
    if (mine !== generation) return;
    lastAsk = null;
    results.replaceChildren();
    status.classList.add("error");
    status.textContent = `${t("error")}: ${error.message}`;
  }
}

/** Non-blank lines with their 1-based position in the paste. */
function pastedLines(text) {
  return text.split("\n")
    .map((line, index) => ({ number: index + 1, text: line.replace(/\r$/, "") }))
    .filter((line) => line.text.trim() !== "");
}

/** The paste as /v1/triage should read it: every line, blank ones included, so that its line
 *  numbers are the ones pastedLines gives. */
function triageText(text) {
  return text.split("\n").map((line) => line.replace(/\r$/, "").replace(PY_LINE_BREAKS, " ")).join("\n");
}

function queryFromHash() {
  const params = new URLSearchParams(location.hash.slice(1));
  return params.get("q");
}

function setPermalink(text) {
  const hash = "#" + new URLSearchParams({ q: text }).toString();
  history.replaceState(null, "", hash);
  permalink.href = hash;
  permalink.hidden = false;
  copyButton.hidden = !navigator.clipboard;
}

function confidenceBar(confidence) {
  const percent = Math.round(confidence * 100);
  const fill = el("span", { class: "fill" });
  fill.style.width = `${percent}%`; // CSSOM, which the page's CSP allows (inline style attributes it does not)
  return el("div", { class: "confidence" },
    el("span", { class: "bar", "aria-hidden": "true" }, fill),
    el("span", { class: "value", text: `${t("confidence")} ${percent}%` }));
}

function meaningSlot(slots, name) {
  const dd = el("dd");
  slots.set(name, dd);
  return dd;
}

function fieldList(answer, entryPromise, lang) {
  const names = Object.keys(answer.fields || {});
  if (!names.length) return null;
  const meanings = new Map();
  const list = el("dl", { class: "fields" }, names.map((name) => [
    el("dt", {}, el("code", { text: name }), " = ", el("code", { class: "value", text: answer.fields[name] })),
    meaningSlot(meanings, name),
  ]));
  entryPromise.then((entry) => {
    for (const [name, dd] of meanings) {
      const spec = entry.fields && entry.fields[name];
      if (spec) dd.textContent = spec[lang];
    }
  }).catch(() => {});
  return [el("h3", { text: t("fields") }), list];
}

// Where the line is printed and in which releases: the same sentence as service/presentation.py.
function sourceLine(source, lang) {
  if (!source || !source.repo) return null;
  let where = `${source.repo} ${source.file || ""}`.trim();
  if (source.line) where += `:${source.line}`;
  const sep = lang === "zh" ? "，" : ", ";
  const parts = [lang === "zh" ? `${t("source")}：${where}` : `${t("source").toLowerCase()} ${where}`];
  if (source.function) parts.push(`${t("printed_in")} ${source.function}`);
  if (source.versions) parts.push(source.versions);
  let text = parts.join(sep);
  for (const also of source.also || []) {
    text += lang === "zh" ? `（${t("also")} ${also.repo} ${also.versions}）` : ` (${t("also")} ${also.repo} ${also.versions})`;
  }
  return text;
}

function knownCard(number, answer, lang) {
  const entryPromise = pattern(answer.pattern_id);
  const sourceBox = el("div", { class: "provenance" });
  entryPromise.then((entry) => sourceBox.append(...provenance(entry))).catch(() => {});
  return el("li", { class: `card sev-${answer.severity}`, id: `line-${number}`, tabindex: "-1", "data-pattern-id": answer.pattern_id },
    el("div", { class: "card-head" },
      severityBadge(answer.severity),
      el("h2", { class: "title", text: answer.title[lang] })),
    el("p", { class: "meta" },
      `${t("line")(number)} · `,
      el("a", { href: `/kb#id=${encodeURIComponent(answer.pattern_id)}` }, el("code", { text: answer.pattern_id })),
      ` · ${answer.component} · ${t("role")[answer.role] || answer.role} · ${t("tier")[answer.tier] || answer.tier}`),
    confidenceBar(answer.confidence),
    el("pre", { class: "line", text: answer.line }),
    // what the line means here first, then what to do; the long form is folded
    answer.summary ? el("p", { class: "summary", text: answer.summary[lang] }) : null,
    answer.action ? el("div", { class: "action" }, el("h3", { text: t("action") }), el("p", { text: answer.action[lang] })) : null,
    el("details", { class: "more" },
      el("summary", { text: t("details") }),
      el("p", { class: "explanation", text: answer.explanation[lang] }),
      fieldList(answer, entryPromise, lang),
      sourceLine(answer.source, lang) ? el("p", { class: "source-line", text: sourceLine(answer.source, lang) }) : null,
      sourceBox));
}

function unknownCard(number, answer, lang) {
  const nearest = el("ul", { class: "candidates" });
  for (const candidate of answer.candidates || []) {
    const item = el("li", {},
      el("a", { href: `/kb#id=${encodeURIComponent(candidate.pattern_id)}` }, el("code", { text: candidate.pattern_id })),
      ` · ${Math.round(candidate.confidence * 100)}%`);
    pattern(candidate.pattern_id).then((entry) => item.append(" — ", entry.title[lang])).catch(() => {});
    nearest.append(item);
  }
  return el("li", { class: "card unknown", id: `line-${number}`, tabindex: "-1" },
    el("div", { class: "card-head" }, severityBadge(null), el("h2", { class: "title", text: t("unknown_title") })),
    answer.summary ? el("p", { class: "summary", text: answer.summary[lang] }) : null,
    el("p", { class: "meta", text: t("line")(number) }),
    el("pre", { class: "line", text: answer.line }),
    el("h3", { text: t("nearest") }),
    answer.candidates && answer.candidates.length ? nearest : el("p", { text: t("none_near") }));
}

/** A link to the per-line card of paste line ``number``. It scrolls there itself: following
 *  "#line-N" would replace the "#q=" permalink in the address bar. */
function lineLink(number) {
  return el("a", {
    href: `#line-${number}`, class: "line-link",
    onclick: (event) => {
      event.preventDefault();
      const card = document.getElementById(`line-${number}`);
      if (!card) return;
      for (const other of results.querySelectorAll(".card.target")) other.classList.remove("target");
      card.classList.add("target");
      card.scrollIntoView({ block: "start" });
      card.focus({ preventScroll: true });
    },
  }, t("line")(number));
}

function rankList(ranks) {
  // "0, 1, 2, 3, 7" reads as "0-3, 7"; ranks that are not numbers are listed as they are
  const numbers = ranks.map(Number);
  if (!numbers.every(Number.isInteger)) return ranks.join(", ");
  const parts = [];
  for (let i = 0; i < numbers.length;) {
    let j = i;
    while (j + 1 < numbers.length && numbers[j + 1] === numbers[j] + 1) j++;
    parts.push(j > i ? `${numbers[i]}-${numbers[j]}` : String(numbers[i]));
    i = j + 1;
  }
  return parts.join(", ");
}

function cascadeItem(group, lang) {
  const title = group.title && group.title[lang];
  const sample = (group.sample_lines || [])[0] || "";
  const where = [];
  if (group.ranks && group.ranks.length) where.push(`${t("rc_ranks")} ${rankList(group.ranks)}`);
  if (group.hosts && group.hosts.length) where.push(`${t("rc_hosts")} ${group.hosts.join(", ")}`);
  return el("li", { class: "cascade-group" },
    el("span", { class: "cascade-title", text: title || sample }),
    " ", el("span", { class: "count", text: `×${group.count}` }),
    where.length ? ` · ${where.join(" · ")}` : null,
    " · ", lineLink(group.first_line),
    title && sample ? el("code", { class: "sample", text: sample }) : null);
}

function triageCard(result, lang) {
  const root = result.root_cause;
  const parts = [];
  if (!root) {
    parts.push(el("h2", { id: "triage-heading", text: t("rc_heading") }),
      el("p", { class: "no-failure", text: t("rc_no_failure") }));
  } else {
    const kind = t("rc_kind")[root.kind] || root.kind;
    parts.push(
      el("div", { class: "card-head" },
        el("h2", { id: "triage-heading", text: t("rc_heading") }),
        el("span", { class: "badge kind", text: kind })),
      el("p", { class: "triage-title", text: (root.title && root.title[lang]) || root.line }),
      el("p", { class: "meta" }, lineLink(root.line_number)),
      el("pre", { class: "line", text: root.line }),
      el("h3", { text: t("rc_why") }),
      el("p", { class: "why", text: root.why[lang] }),
      root.action ? el("div", { class: "action" }, el("h3", { text: t("action") }), el("p", { text: root.action[lang] })) : null);
  }
  const cascade = result.cascade || [];
  if (cascade.length) {
    const lines = cascade.reduce((sum, group) => sum + group.count, 0);
    parts.push(el("details", { class: "cascade" },
      el("summary", { text: t("rc_cascade")(lines, cascade.length) }),
      el("ul", {}, cascade.map((group) => cascadeItem(group, lang)))));
  }
  if (root && result.summary) parts.push(el("p", { class: "triage-summary", text: result.summary[lang] }));
  return parts;
}

function pageLang() {
  return document.documentElement.lang.startsWith("zh") ? "zh" : "en";
}

function renderTriage() {
  if (!lastTriage) {
    triageBox.hidden = true;
    triageBox.replaceChildren();
    return;
  }
  const lang = pageLang();
  const open = Boolean(triageBox.querySelector("details[open]")); // a re-render keeps the cascade open
  triageBox.hidden = false;
  triageBox.classList.toggle("failed", Boolean(lastTriage.failed));
  triageBox.classList.toggle("clean", Boolean(lastTriage.result && !lastTriage.result.root_cause));
  triageBox.replaceChildren(...(lastTriage.failed
    ? [el("p", { class: "note", text: t("rc_failed") })]
    : triageCard(lastTriage.result, lang)));
  if (open) triageBox.querySelector("details")?.setAttribute("open", "");
  if (lastTriage.failed) triageBox.removeAttribute("aria-labelledby");
  else triageBox.setAttribute("aria-labelledby", "triage-heading");
}

function render() {
  if (lastAsk && !lastAnswers.length) {
    // the language switch: ask again, the answers' texts are in one language
    ask(lastAsk.question);
    return;
  }
  const lang = pageLang();
  renderTriage();
  results.replaceChildren(...lastAnswers.map(({ number, answer }) =>
    answer.known ? knownCard(number, answer, lang) : unknownCard(number, answer, lang)));
  if (lastAnswers.length) {
    const known = lastAnswers.filter(({ answer }) => answer.known).length;
    status.textContent = t("summary")(lastAnswers.length, known, lastAnswers.length - known);
  }
}

function clearAnswers() {
  lastAsk = null;
  lastAnswers = [];
  lastTriage = null;
  results.replaceChildren();
  renderTriage();
}

async function explain() {
  const lines = pastedLines(input.value);
  status.classList.remove("error");
  if (!lines.length) {
    status.textContent = t("empty");
    input.focus();
    return;
  }
  const mine = ++generation;
  setPermalink(input.value);
  status.textContent = t("working");
  form.setAttribute("aria-busy", "true");
  // Asked at the same time as the per-line answers; a failure here never costs those.
  const triage = lines.length > TRIAGE_MIN_LINES
    ? api("/v1/triage", {
      method: "POST",
      headers: { "Content-Type": "application/json" },
      body: JSON.stringify({ log: triageText(input.value) }),
    }).then((result) => ({ result }), () => ({ failed: true }))
    : null;
  try {
    const body = await api("/v1/explain", {
      method: "POST",
      headers: { "Content-Type": "application/json" },
      body: JSON.stringify({ lines: lines.map((line) => line.text) }),
    });
    if (mine !== generation) return;
    const only = body.answers.length === 1 ? body.answers[0] : null;
    if (only && !(only.known && only.tier === "regex") && looksLikeQuestion(lines[0].text)) {
      form.removeAttribute("aria-busy");
      await ask(lines[0].text); // a question in words, not a log line the KB knows
      return;
    }
    lastAsk = null;
    lastAnswers = body.answers.map((answer, i) => ({ number: lines[i].number, answer }));
    lastTriage = null;
    render();
  } catch (error) {
    if (mine !== generation) return;
    clearAnswers();
    status.classList.add("error");
    status.textContent = `${t("error")}: ${error.message}`;
    return;
  } finally {
    if (mine === generation) form.removeAttribute("aria-busy");
  }
  if (triage) {
    const outcome = await triage;
    if (mine !== generation) return;
    lastTriage = outcome;
    renderTriage();
  }
}

askForm.addEventListener("submit", (event) => {
  event.preventDefault();
  const question = askInput.value.trim();
  if (!question) {
    status.textContent = t("ask_empty");
    askInput.focus();
    return;
  }
  ask(question);
});

form.addEventListener("submit", (event) => {
  event.preventDefault();
  explain();
});
input.addEventListener("keydown", (event) => {
  if (event.key === "Enter" && (event.ctrlKey || event.metaKey)) {
    event.preventDefault();
    explain();
  }
});
document.getElementById("clear").addEventListener("click", () => {
  input.value = "";
  generation++;
  clearAnswers();
  status.textContent = "";
  history.replaceState(null, "", location.pathname);
  permalink.hidden = copyButton.hidden = true;
  input.focus();
});
copyButton.addEventListener("click", async () => {
  await navigator.clipboard.writeText(location.href);
  status.textContent = t("copied");
});
window.addEventListener("hashchange", () => {
  const query = queryFromHash();
  if (query !== null && query !== input.value) {
    input.value = query;
    explain();
  }
});

setupLanguageSwitch(render);
const initial = queryFromHash();
if (initial) {
  input.value = initial;
  explain();
}
