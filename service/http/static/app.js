// The paste-a-line page: send the pasted lines, show one card per line in input order, keep
// the query in the URL hash (a permalink that never reaches the server's access log).
import { api, el, pattern, provenance, setupLanguageSwitch, severityBadge, t } from "./common.js";

const form = document.getElementById("explain-form");
const input = document.getElementById("input");
const results = document.getElementById("results");
const status = document.getElementById("status");
const permalink = document.getElementById("permalink");
const copyButton = document.getElementById("copy-link");

let lastAnswers = []; // [{number, answer}] — kept so a language switch re-renders without a request

/** Non-blank lines with their 1-based position in the paste. */
function pastedLines(text) {
  return text.split("\n")
    .map((line, index) => ({ number: index + 1, text: line.replace(/\r$/, "") }))
    .filter((line) => line.text.trim() !== "");
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
  return el("li", { class: `card sev-${answer.severity}`, "data-pattern-id": answer.pattern_id },
    el("div", { class: "card-head" },
      severityBadge(answer.severity),
      el("h2", { class: "title", text: answer.title[lang] })),
    el("p", { class: "meta" },
      `${t("line")(number)} · `,
      el("a", { href: `/kb#id=${encodeURIComponent(answer.pattern_id)}` }, el("code", { text: answer.pattern_id })),
      ` · ${answer.component} · ${t("role")[answer.role] || answer.role} · ${t("tier")[answer.tier] || answer.tier}`),
    confidenceBar(answer.confidence),
    el("pre", { class: "line", text: answer.line }),
    el("p", { class: "explanation", text: answer.explanation[lang] }),
    answer.action ? el("div", { class: "action" }, el("h3", { text: t("action") }), el("p", { text: answer.action[lang] })) : null,
    fieldList(answer, entryPromise, lang),
    sourceLine(answer.source, lang) ? el("p", { class: "source-line", text: sourceLine(answer.source, lang) }) : null,
    sourceBox);
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
  return el("li", { class: "card unknown" },
    el("div", { class: "card-head" }, severityBadge(null), el("h2", { class: "title", text: t("unknown_title") })),
    el("p", { class: "meta", text: t("line")(number) }),
    el("pre", { class: "line", text: answer.line }),
    el("h3", { text: t("nearest") }),
    answer.candidates && answer.candidates.length ? nearest : el("p", { text: t("none_near") }));
}

function render() {
  const lang = document.documentElement.lang.startsWith("zh") ? "zh" : "en";
  results.replaceChildren(...lastAnswers.map(({ number, answer }) =>
    answer.known ? knownCard(number, answer, lang) : unknownCard(number, answer, lang)));
  if (lastAnswers.length) {
    const known = lastAnswers.filter(({ answer }) => answer.known).length;
    status.textContent = t("summary")(lastAnswers.length, known, lastAnswers.length - known);
  }
}

async function explain() {
  const lines = pastedLines(input.value);
  status.classList.remove("error");
  if (!lines.length) {
    status.textContent = t("empty");
    input.focus();
    return;
  }
  setPermalink(input.value);
  status.textContent = t("working");
  form.setAttribute("aria-busy", "true");
  try {
    const body = await api("/v1/explain", {
      method: "POST",
      headers: { "Content-Type": "application/json" },
      body: JSON.stringify({ lines: lines.map((line) => line.text) }),
    });
    lastAnswers = body.answers.map((answer, i) => ({ number: lines[i].number, answer }));
    render();
  } catch (error) {
    lastAnswers = [];
    results.replaceChildren();
    status.classList.add("error");
    status.textContent = `${t("error")}: ${error.message}`;
  } finally {
    form.removeAttribute("aria-busy");
  }
}

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
  lastAnswers = [];
  results.replaceChildren();
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
