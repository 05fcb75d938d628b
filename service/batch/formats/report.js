// explainlog batch report: reads the JSON blocks written while the log streamed by, then
// shows the summary and one page of the (filtered) log at a time, so a million-line log stays
// responsive. No network, no libraries: the file works offline as it is.
"use strict";
(function () {
  const PAGE = 500;
  const UI = {
    en: { lines: "lines", explained: "explained", unknown: "unknown", first_error: "First error", first_warning: "First warning",
          entries: "Entries by count", templates: "Lines nobody explains (templates by frequency)", components: "By component",
          problems: "Problems with the input", count: "Count", first: "First", last: "Last", entry: "Entry", template: "Template",
          only: "explained lines only", component: "component", all: "all", page: "page", of: "of", prev: "‹ prev", next: "next ›",
          interrupted: "Interrupted: this report covers only the lines read before the run was stopped.",
          action: "What to do", none: "none", root_cause: "Root cause", details: "Details", colon: ": ",
          pageinfo: (p, n, shown) => `page ${p} of ${n} · ${shown} lines shown`,
          sev: { fatal: "fatal", error: "error", warning: "warning", info: "info", unknown: "unknown" },
          role: { context: "context", progress: "progress", advice: "advice", root_cause: "root cause", cascade: "knock-on error", wrapper: "wrapper" },
          tier: { regex: "exact match", catalog: "source catalogue", semantic: "similar entry" }, confidence: "confidence",
          cascade: "Cascade (folded)", no_failure: "No failure found in this log", lines_word: "lines", ranks: "ranks" },
    zh: { lines: "行", explained: "已解释", unknown: "未收录", first_error: "首个错误", first_warning: "首个警告",
          entries: "条目（按出现次数）", templates: "未能解释的行（按模板出现次数）", components: "按组件",
          problems: "输入问题", count: "次数", first: "首次", last: "末次", entry: "条目", template: "模板",
          only: "只看已解释的行", component: "组件", all: "全部", page: "页", of: "/", prev: "‹ 上一页", next: "下一页 ›",
          interrupted: "运行被中断：本报告只包含中断前读到的行。",
          action: "建议操作", none: "无", root_cause: "根因", details: "详情", colon: "：",
          pageinfo: (p, n, shown) => `第 ${p}/${n} 页 · 显示 ${shown} 行`,
          sev: { fatal: "致命", error: "错误", warning: "警告", info: "信息", unknown: "未收录" },
          role: { context: "背景", progress: "进度", advice: "建议", root_cause: "根因", cascade: "连带报错", wrapper: "包装信息" },
          tier: { regex: "精确匹配", catalog: "源码目录", semantic: "语义相似" }, confidence: "置信度",
          cascade: "连带报错（已折叠）", no_failure: "日志中没有发现故障", lines_word: "行", ranks: "rank" },
  };
  const SEVERITIES = ["fatal", "error", "warning", "info", "unknown"];
  let lang = "en";
  const answers = [];
  const text = [], ref = [], file = [], line = [];
  const notes = new Map();
  for (const node of document.querySelectorAll("script.answers, script.chunk")) {
    const data = JSON.parse(node.textContent);
    if (node.classList.contains("answers")) {
      for (const [id, a] of data) answers[id] = a;
      continue;
    }
    for (let i = 0; i < data.t.length; i++) {
      text.push(data.t[i]); ref.push(data.a[i]); file.push(data.f); line.push(data.s + i);
    }
    for (const [i, msg] of data.n || []) notes.set(text.length - data.t.length + i, msg);
  }
  const summary = JSON.parse(document.getElementById("summary-data").textContent);
  const files = summary.files;
  const sevOf = (i) => (ref[i] >= 0 ? answers[ref[i]].severity : "unknown");
  const where = (loc) => (loc ? `${files[loc[0]]}:${loc[1]}` : "-");
  const anchor = (loc) => (loc ? `<a href="#L${loc[0]}-${loc[1]}">${esc(where(loc))}</a>` : "-");
  function esc(s) { return String(s).replace(/[&<>"]/g, (c) => ({ "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;" }[c])); }
  const t = (k) => UI[lang][k];

  const filter = { sev: new Set(SEVERITIES), component: "", only: false };
  let view = [];
  let page = 0;

  function renderSummary() {
    const s = summary;
    const pct = s.total_lines ? ((100 * s.known_lines) / s.total_lines).toFixed(1) : "0";
    let h = "";
    if (s.interrupted) h += `<div class="banner" id="interrupted">${t("interrupted")}</div>`;
    if (s.triage) h += rootCause(s.triage);
    h += `<div class="stats"><span id="total-lines"><b>${s.total_lines.toLocaleString()}</b> ${t("lines")}</span>` +
      `<span><b>${s.known_lines.toLocaleString()}</b> ${t("explained")} (${pct}%)</span>` +
      `<span><b>${s.unknown_lines.toLocaleString()}</b> ${t("unknown")}</span></div>`;
    h += `<div class="stats">` + SEVERITIES.map((v) => {
      const n = v === "unknown" ? s.unknown_lines : s.severity_counts[v] || 0;
      return `<span><span class="badge ${v}">${t("sev")[v]}</span> ${n.toLocaleString()}</span>`;
    }).join("") + `</div>`;
    h += `<div class="stats"><span>${t("first_error")}${t("colon")}<span id="first-error">${s.first_error ? anchor(firstOf("error")) : "-"}</span></span>` +
      `<span>${t("first_warning")}${t("colon")}<span id="first-warning">${s.first_warning ? anchor(firstOf("warning")) : "-"}</span></span></div>`;
    const problems = s.problems.map((p) => `${p.file}${p.line ? ":" + p.line : ""}: ${p.message}`)
      .concat(s.notes.map(([src, kind, count, ln]) => `${files[src]}:${ln}: ${count} × ${kind}`));
    if (problems.length) h += `<details open><summary>${t("problems")} (${problems.length})</summary><ul>` +
      problems.map((p) => `<li class="note">${esc(p)}</li>`).join("") + `</ul></details>`;
    h += `<details open><summary>${t("entries")} (${s.entries.length})</summary><table id="entries"><tr><th></th><th>${t("count")}</th>` +
      `<th>${t("first")}</th><th>${t("last")}</th><th>${t("entry")}</th></tr>` +
      s.entries.map((e) => `<tr><td><span class="badge ${e.severity}">${e.severity}</span></td><td class="num">${e.count.toLocaleString()}</td>` +
        `<td>${anchor(e.first)}</td><td>${anchor(e.last)}</td><td><code>${esc(e.pattern_id)}</code> ${esc(e.title[lang])}</td></tr>`).join("") +
      `</table></details>`;
    const comps = Object.entries(s.component_counts);
    h += `<details><summary>${t("components")} (${comps.length})</summary><table>` +
      comps.map(([c, n]) => `<tr><td>${esc(c)}</td><td class="num">${n.toLocaleString()}</td></tr>`).join("") + `</table></details>`;
    h += `<details><summary>${t("templates")} (${s.templates.length})</summary><table id="templates"><tr><th>${t("count")}</th>` +
      `<th>${t("first")}</th><th>${t("template")}</th></tr>` +
      s.templates.slice(0, 200).map((x) => `<tr><td class="num">${x.count.toLocaleString()}</td><td>${anchor(x.first)}</td>` +
        `<td><code>${esc(x.template)}</code></td></tr>`).join("") + `</table></details>`;
    document.getElementById("summary").innerHTML = h;
  }
  // What killed the job (service/triage.py's verdict), first; the line links into the log.
  function rootCause(tr) {
    const r = tr.root_cause;
    let h = `<section id="root-cause" class="root-cause"><h2>${t("root_cause")}</h2>`;
    if (!r) return h + `<p id="no-failure">${t("no_failure")}</p></section>`;
    const fi = files.indexOf(r.file);
    const loc = fi >= 0 ? [fi, r.line_number] : null;
    h += `<p class="rc-title"><b>${esc((r.title && r.title[lang]) || "")}</b></p>` +
      `<p class="rc-where">${loc ? anchor(loc) : esc(`${r.file}:${r.line_number}`)}</p>` +
      `<pre class="rc-line">${esc(r.line)}</pre>` +
      `<p class="rc-why">${esc(r.why[lang])}</p>` +
      (r.action ? `<p class="rc-action"><b>${t("action")}${lang === "zh" ? "：" : ":"}</b> ${esc(r.action[lang])}</p>` : "");
    const n = tr.cascade.reduce((a, g) => a + g.count, 0);
    if (tr.cascade.length) {
      const counted = lang === "zh" ? `：${n.toLocaleString()} 行，${tr.cascade.length} 组`
        : `: ${n.toLocaleString()} line${n === 1 ? "" : "s"} in ${tr.cascade.length} group${tr.cascade.length === 1 ? "" : "s"}`;
      h += `<details id="cascade"><summary>${t("cascade")}${counted}</summary><table>` +
        tr.cascade.slice(0, 50).map((g) => {
          const gi = files.indexOf(g.file);
          const first = gi >= 0 ? anchor([gi, g.first_line]) : esc(String(g.first_line));
          const title = (g.title && g.title[lang]) || g.sample_lines[0];
          const ranks = g.ranks.length ? ` · ${t("ranks")} ${esc(g.ranks.slice(0, 12).join(","))}${g.ranks.length > 12 ? "…" : ""}` : "";
          return `<tr><td class="num">${g.count.toLocaleString()}</td><td>${first}</td><td>${esc(title)}${ranks}</td></tr>`;
        }).join("") + `</table></details>`;
    }
    return h + `<pre class="rc-summary">${esc(tr.summary[lang])}</pre></section>`;
  }
  function firstOf(sev) {
    const floor = { warning: 1, error: 2 }[sev];
    const rank = { info: 0, warning: 1, error: 2, fatal: 3 };
    let best = null;
    for (const e of summary.entries) {
      if (rank[e.severity] >= floor && (!best || e.first[0] < best[0] || (e.first[0] === best[0] && e.first[1] < best[1]))) best = e.first;
    }
    return best;
  }

  function renderControls() {
    const comps = Object.keys(summary.component_counts);
    document.getElementById("controls").innerHTML =
      SEVERITIES.map((v) => `<label><input type="checkbox" class="sev" value="${v}" ${filter.sev.has(v) ? "checked" : ""}>` +
        `<span class="badge ${v}">${t("sev")[v]}</span></label>`).join("") +
      `<label>${t("component")} <select id="component"><option value="">${t("all")}</option>` +
      comps.map((c) => `<option ${filter.component === c ? "selected" : ""}>${esc(c)}</option>`).join("") + `</select></label>` +
      `<label><input type="checkbox" id="only" ${filter.only ? "checked" : ""}> ${t("only")}</label>` +
      `<span class="pager"><button id="prev">${t("prev")}</button><span id="pageinfo"></span><button id="next">${t("next")}</button></span>` +
      `<span><button id="lang-en" ${lang === "en" ? "disabled" : ""}>EN</button><button id="lang-zh" ${lang === "zh" ? "disabled" : ""}>中文</button></span>`;
    for (const box of document.querySelectorAll("input.sev")) box.onchange = () => {
      box.checked ? filter.sev.add(box.value) : filter.sev.delete(box.value); applyFilter(); };
    document.getElementById("component").onchange = (e) => { filter.component = e.target.value; applyFilter(); };
    document.getElementById("only").onchange = (e) => { filter.only = e.target.checked; applyFilter(); };
    document.getElementById("prev").onclick = () => { if (page > 0) { page--; renderPage(); } };
    document.getElementById("next").onclick = () => { if ((page + 1) * PAGE < view.length) { page++; renderPage(); } };
    document.getElementById("lang-en").onclick = () => setLang("en");
    document.getElementById("lang-zh").onclick = () => setLang("zh");
  }
  function setLang(l) { lang = l; document.documentElement.lang = l === "zh" ? "zh-CN" : l; renderSummary(); renderControls(); renderPage(); }

  function applyFilter() {
    const out = [];
    for (let i = 0; i < text.length; i++) {
      if (filter.only && ref[i] < 0) continue;
      if (!filter.sev.has(sevOf(i))) continue;
      if (filter.component && (ref[i] < 0 || answers[ref[i]].component !== filter.component)) continue;
      out.push(i);
    }
    view = out; page = 0; renderPage();
  }

  // what the line means here (summary) and what to do first; the explanation is folded
  function explanation(a) {
    const summary = a.summary && a.summary[lang] !== a.title[lang] ? `<div class="sum">${esc(a.summary[lang])}</div>` : "";
    return `<div class="exp"><b>${esc(a.title[lang])}</b> <span class="badge ${a.severity}">${t("sev")[a.severity]}</span>` +
      summary + (a.action ? `<div class="act"><b>${t("action")}${t("colon")}</b>${esc(a.action[lang])}</div>` : "") +
      `<details><summary>${t("details")}</summary><div>${esc(a.explanation[lang])}</div>` +
      `<div class="meta">${esc(a.pattern_id)} · ${esc(a.component)} · ${esc(t("role")[a.role] || a.role)} · ` +
      `${esc(t("tier")[a.tier] || a.tier)} · ${t("confidence")} ${a.confidence}</div>` +
      (a.source && a.source.repo ? `<div class="meta">${esc(sourceLine(a.source))}</div>` : "") + `</details></div>`;
  }

  // the same sentence as service/presentation.py
  const KINDS = {
    "docs:": ["documented in ", "出处（文档）："], "kernel:": ["printed by the Linux kernel: ", "出处（Linux 内核）："],
    "vendor:": ["printed by the vendor tool ", "出处（厂商工具）："], "man:": ["described in the man page ", "出处（man 手册）："],
  };
  function sourceLine(s) {
    const kind = KINDS[s.repo];
    let where = (kind ? (s.file || "") : `${s.repo} ${s.file || ""}`.trim()) + (s.line ? `:${s.line}` : "");
    const parts = [(kind ? kind[lang === "zh" ? 1 : 0] : (lang === "zh" ? "打印位置：" : "printed by ")) + where];
    if (s.function) parts.push((lang === "zh" ? "函数 " : "in ") + s.function);
    if (s.versions) parts.push(s.versions);
    return parts.join(lang === "zh" ? "，" : ", ");
  }

  function renderPage(highlight) {
    const main = document.getElementById("log");
    const start = page * PAGE, end = Math.min(view.length, start + PAGE);
    const pages = Math.max(1, Math.ceil(view.length / PAGE));
    document.getElementById("pageinfo").textContent = t("pageinfo")(page + 1, pages, view.length.toLocaleString());
    let h = "";
    for (let k = start; k < end; k++) {
      const i = view[k];
      const cls = ref[i] >= 0 ? `row k s-${sevOf(i)}` : "row";
      if (notes.has(i)) h += `<div class="row note"><span class="ln"></span><span class="tx"># ${esc(notes.get(i))}</span></div>`;
      h += `<div class="${cls}${i === highlight ? " hit" : ""}" id="L${file[i]}-${line[i]}" data-i="${i}">` +
        `<span class="ln">${files.length > 1 ? esc(files[file[i]]) + ":" : ""}${line[i]}</span><span class="tx">${esc(text[i])}</span></div>`;
    }
    main.innerHTML = h;
  }

  document.getElementById("log").addEventListener("click", (e) => {
    const row = e.target.closest(".row.k");
    if (!row) return;
    const next = row.nextElementSibling;
    if (next && next.classList.contains("exp")) { next.remove(); return; }
    row.insertAdjacentHTML("afterend", explanation(answers[ref[+row.dataset.i]]));
  });

  function goTo(hash) {
    const m = /^#L(\d+)-(\d+)$/.exec(hash);
    if (!m) return;
    const f = +m[1], n = +m[2];
    let i = -1;
    for (let k = 0; k < text.length; k++) if (file[k] === f && line[k] === n) { i = k; break; }
    if (i < 0) return;
    let pos = view.indexOf(i);
    if (pos < 0) { filter.sev = new Set(SEVERITIES); filter.component = ""; filter.only = false; renderControls(); applyFilter(); pos = view.indexOf(i); }
    page = Math.floor(pos / PAGE);
    renderPage(i);
    const row = document.getElementById(`L${f}-${n}`);
    if (row) { row.scrollIntoView({ block: "center" }); if (ref[i] >= 0) row.click(); }
  }
  window.addEventListener("hashchange", () => goTo(location.hash));

  renderSummary();
  renderControls();
  applyFilter();
  if (location.hash) goTo(location.hash);
  document.body.dataset.ready = "1";
})();
