// The knowledge-base browser: search and filter entries, open one in full. The state lives
// in the URL hash (#q=...&component=...&id=...) so every view can be linked to.
import { api, el, pattern, provenance, setupLanguageSwitch, severityBadge, t } from "./common.js";

const form = document.getElementById("search-form");
const query = document.getElementById("q");
const component = document.getElementById("component");
const severity = document.getElementById("severity");
const list = document.getElementById("entries");
const detail = document.getElementById("detail");
const status = document.getElementById("status");

let listing = null;

function lang() {
  return document.documentElement.lang.startsWith("zh") ? "zh" : "en";
}

function hashState() {
  return new URLSearchParams(location.hash.slice(1));
}

/** Record the search form in the hash; a new search closes any open entry. */
function writeHash() {
  const params = new URLSearchParams();
  if (query.value.trim()) params.set("q", query.value.trim());
  if (component.value) params.set("component", component.value);
  if (severity.value) params.set("severity", severity.value);
  const hash = params.toString();
  history.replaceState(null, "", hash ? `#${hash}` : location.pathname);
  showDetail(null);
}

/** The current view's hash with one key changed (null removes it). */
function linkWith(key, value) {
  const state = hashState();
  if (value === null) state.delete(key);
  else state.set(key, value);
  return `#${state}`;
}

function fillSelect(select, counts, labels, chosen) {
  select.replaceChildren(el("option", { value: "", text: t("any") }),
    ...Object.entries(counts).map(([value, n]) => el("option", { value, text: `${labels ? labels[value] || value : value} (${n})` })));
  select.value = chosen || "";
}

function renderList() {
  if (!listing) return;
  const state = hashState();
  fillSelect(component, listing.facets.component, null, state.get("component"));
  fillSelect(severity, listing.facets.severity, t("severity"), state.get("severity"));
  status.textContent = t("results")(listing.total);
  list.replaceChildren(...listing.patterns.map((entry) => el("li", {},
    el("a", { href: linkWith("id", entry.id), class: "entry-link" },
      severityBadge(entry.severity), " ",
      el("span", { class: "entry-title", text: entry.title[lang()] }), " ",
      el("code", { class: "entry-id", text: entry.id })),
    el("span", { class: "entry-meta", text: ` · ${entry.component} · ${t("role")[entry.role] || entry.role}` }))));
}

/** The hash is the one source of truth for filters: the selects have no options until the
 * first listing arrives, so a linked #component=nccl could not be read back from them. */
async function search() {
  const state = hashState();
  const params = new URLSearchParams();
  for (const key of ["q", "component", "severity"]) if (state.get(key)) params.set(key, state.get(key));
  try {
    listing = await api(`/v1/patterns?${params}`);
    renderList();
  } catch (error) {
    status.textContent = `${t("error")}: ${error.message}`;
  }
}

async function showDetail(id) {
  if (!id) {
    detail.hidden = true;
    list.hidden = false;
    return;
  }
  let entry;
  try {
    entry = await pattern(id);
  } catch (error) {
    status.textContent = `${t("error")}: ${error.message}`;
    return;
  }
  const l = lang();
  const fields = Object.entries(entry.fields || {});
  const parts = [
    el("p", {}, el("a", { href: linkWith("id", null), id: "back", text: `← ${t("back")}` })),
    el("div", { class: "card-head" }, severityBadge(entry.severity), el("h2", { class: "title", text: entry.title[l] })),
    el("p", { class: "meta" }, el("code", { text: entry.id }),
      ` · ${entry.component} · ${t("role")[entry.role] || entry.role}`, entry.versions ? ` · ${t("versions")}: ${entry.versions}` : ""),
    el("p", { class: "explanation", text: entry.explanation[l] }),
    entry.action ? el("div", { class: "action" }, el("h3", { text: t("action") }), el("p", { text: entry.action[l] })) : null,
    fields.length ? [el("h3", { text: t("fields") }), el("dl", { class: "fields" }, fields.map(([name, spec]) => [
      el("dt", {}, el("code", { text: name })), el("dd", { text: spec[l] })]))] : null,
    el("h3", { text: t("pattern") }), el("pre", { class: "line", text: entry.pattern }),
    el("h3", { text: t("examples") }), ...entry.examples.map((example) => el("pre", { class: "line", text: example.line })),
    ...provenance(entry)];
  detail.replaceChildren(...parts.flat().filter(Boolean));
  detail.hidden = false;
  list.hidden = true;
  detail.focus();
}

function fromHash() {
  const state = hashState();
  query.value = state.get("q") || "";
  showDetail(state.get("id"));
  search();
}

let timer = null;
query.addEventListener("input", () => {
  clearTimeout(timer);
  timer = setTimeout(() => { writeHash(); search(); }, 150);
});
for (const select of [component, severity]) select.addEventListener("change", () => { writeHash(); search(); });
form.addEventListener("submit", (event) => { event.preventDefault(); writeHash(); search(); });
window.addEventListener("hashchange", fromHash);

setupLanguageSwitch(() => { renderList(); showDetail(hashState().get("id")); });
fromHash();
