"""The web page in real headless Chromium (Debian's ``chromium``, driven by Playwright).

Paste a seed line, read the right title, switch to Chinese, open the permalink elsewhere,
browse the KB, check the phone layout, and load /docs with the outside network cut off.
Screenshots go to ``test-artifacts/`` (gitignored) for a person to look at.
"""

from __future__ import annotations

import re
from pathlib import Path
from urllib.parse import urlparse

import pytest
from playwright.sync_api import Page, expect, sync_playwright

from http_testing import UNRELATED_LINE, serve
from seed_lines import AFFINITY_LINE, CDB_LINE, FLUSH_LINE, IB_LINE

CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = [
    "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
    "--disable-background-networking", "--disable-component-update", "--disable-sync",
]
ARTIFACTS = Path(__file__).resolve().parent.parent / "test-artifacts"


@pytest.fixture(scope="module")
def server(explainer):
    with serve(explainer) as running:
        yield running


@pytest.fixture(scope="module")
def browser():
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        yield browser
        browser.close()


@pytest.fixture
def page(browser, server):
    context = browser.new_context(viewport={"width": 1280, "height": 900}, locale="en-US")
    page = context.new_page()
    errors: list[str] = []
    page.on("pageerror", lambda exc: errors.append(str(exc)))
    # Chromium also logs every non-2xx fetch as a console error; those are tested answers here.
    page.on("console", lambda msg: errors.append(msg.text)
            if msg.type == "error" and not msg.text.startswith("Failed to load resource") else None)
    yield page
    context.close()
    assert errors == [], errors


def _explain(page: Page, text: str) -> None:
    page.get_by_label("Log lines").fill(text)
    page.get_by_label("Log lines").press("Control+Enter")


def test_paste_a_seed_line_switch_language_and_open_the_permalink(page, browser, server, explainer):
    entry = explainer.by_id["nccl.net.ib_devices"]
    page.goto(server.url + "/")
    _explain(page, IB_LINE)
    card = page.locator(".card").first
    expect(card.locator("h2")).to_have_text(entry.title.en)
    expect(card.locator(".explanation")).to_contain_text("Relaxed Ordering")
    expect(card.locator(".badge")).to_have_text(re.compile("info", re.I))
    expect(card.locator(".confidence")).to_contain_text("99%")
    expect(card.locator(".source")).to_contain_text(entry.source)
    if entry.references:
        expect(card.locator(".refs a").first).to_have_attribute("href", entry.references[0])

    page.get_by_role("button", name="中文").click()
    expect(card.locator("h2")).to_have_text(entry.title.zh)
    expect(card.locator(".explanation")).to_have_text(re.compile(r"[\u4e00-\u9fff]"))
    expect(page.locator("html")).to_have_attribute("lang", "zh-CN")
    ARTIFACTS.mkdir(exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / "http-page-zh.png"), full_page=True)

    page.reload()  # the choice is remembered, and the hash re-runs the query
    expect(page.locator(".card h2").first).to_have_text(entry.title.zh)
    assert page.evaluate("localStorage.getItem('explainlog.lang')") == "zh"

    permalink = page.url
    assert "#q=" in permalink
    other = browser.new_context(locale="en-US").new_page()
    other.goto(permalink)
    expect(other.get_by_label("Log lines")).to_have_value(IB_LINE)
    expect(other.locator(".card h2").first).to_have_text(entry.title.en)
    other.context.close()


def test_many_lines_render_in_input_order_with_unknowns_and_fields(page, server, explainer):
    page.goto(server.url + "/")
    _explain(page, "\n".join([FLUSH_LINE, "", UNRELATED_LINE, AFFINITY_LINE, CDB_LINE]))
    cards = page.locator(".card")
    expect(cards).to_have_count(4)
    expect(cards.nth(0).locator("h2")).to_have_text(explainer.by_id["deepspeed.zero3.allocator_cache_flushes"].title.en)
    expect(cards.nth(0).locator(".badge")).to_have_text(re.compile("warning", re.I))
    expect(cards.nth(0).locator(".action")).to_be_visible()
    expect(cards.nth(0).locator(".meta")).to_contain_text("Line 1")
    unknown = cards.nth(1)
    expect(unknown).to_have_class(re.compile("unknown"))
    expect(unknown.locator(".meta")).to_have_text("Line 3")
    expect(unknown.locator(".candidates li").first).to_be_visible()
    affinity = cards.nth(2)
    expect(affinity.locator(".explanation")).to_contain_text("16-23")
    expect(affinity.locator(".fields")).to_contain_text("ff0000")
    expect(cards.nth(3).locator(".meta")).to_contain_text("deepspeed.comm.cdb_none")
    expect(page.get_by_role("status")).to_have_text("4 lines explained: 3 known, 1 unknown.")
    ARTIFACTS.mkdir(exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / "http-page.png"), full_page=True)


def test_errors_and_empty_input_are_announced(page, server):
    page.goto(server.url + "/")
    page.get_by_role("button", name="Explain").click()
    expect(page.get_by_role("status")).to_have_text("Paste at least one log line first.")
    _explain(page, "x" * 20_000)
    expect(page.get_by_role("status")).to_contain_text("16384")
    expect(page.locator(".card")).to_have_count(0)


def test_phone_layout_has_no_sideways_scrolling(browser, server):
    context = browser.new_context(viewport={"width": 390, "height": 844}, is_mobile=True, has_touch=True)
    page = context.new_page()
    page.goto(server.url + "/")
    page.get_by_label("Log lines").fill("\n".join([IB_LINE, FLUSH_LINE, UNRELATED_LINE]))
    page.get_by_role("button", name="Explain").click()
    expect(page.locator(".card")).to_have_count(3)
    assert page.evaluate("document.documentElement.scrollWidth <= window.innerWidth")
    ARTIFACTS.mkdir(exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / "http-page-phone.png"), full_page=True)
    context.close()


def test_kb_page_searches_and_opens_an_entry(page, server, explainer):
    entry = explainer.by_id["nccl.net.ib_devices"]
    page.goto(server.url + "/kb")
    # the list holds every entry and catalogue record with text (33,000+): on a loaded 2-core
    # machine the first drawing and each redraw can take longer than expect()'s default 5 s
    expect(page.locator("#entries li")).to_have_count(len(explainer.entries), timeout=30_000)
    page.get_by_label("Search the knowledge base").fill("Relaxed Ordering")
    expect(page).to_have_url(re.compile(r"#q=Relaxed"), timeout=30_000)
    expect(page.locator("#entries li")).not_to_have_count(len(explainer.entries))
    link = page.locator(".entry-link", has_text=entry.title.en)
    expect(link).to_be_visible()
    link.click()
    detail = page.locator("#detail")
    expect(detail.locator("h2")).to_have_text(entry.title.en)
    expect(detail).to_contain_text(entry.source)
    expect(detail.locator("pre.line").first).to_have_text(entry.pattern)
    assert "id=nccl.net.ib_devices" in page.url and "q=Relaxed" in page.url
    page.get_by_role("button", name="中文").click()
    expect(detail.locator("h2")).to_have_text(entry.title.zh)
    page.get_by_label("搜索知识库").fill("")
    page.get_by_label("组件").select_option("deepspeed")
    expect(page).to_have_url(re.compile(r"#component=deepspeed$"))
    # the list is redrawn after the URL changes: wait for the filtered list, not the old one
    expect(page.locator("#entries .entry-meta").first).to_contain_text("deepspeed")
    expect(page.locator("#entries li")).not_to_have_count(len(explainer.entries))
    components = page.locator("#entries .entry-meta").all_inner_texts()
    assert components and all("deepspeed" in c for c in components)


def test_docs_render_with_the_outside_network_cut_off(page, server):
    outside: list[str] = []

    def only_loopback(route):
        if urlparse(route.request.url).hostname == "127.0.0.1":
            route.continue_()
        else:
            outside.append(route.request.url)
            route.abort()

    page.route("**/*", only_loopback)
    page.goto(server.url + "/docs")
    expect(page.locator(".opblock-summary-path", has_text="/v1/explain").first).to_be_visible(timeout=20_000)
    expect(page.locator(".opblock-summary-path", has_text="/v1/annotate").first).to_be_visible()
    assert outside == []


# ---- a pasted log: the root-cause card (/v1/triage) above the per-line cards ------------------
TRIAGE_DATA = Path(__file__).resolve().parent / "data" / "triage"


def _triage_case(name: str) -> tuple[str, dict]:
    import json

    labels = {row["case"]: row for row in map(json.loads, (TRIAGE_DATA / "labels.jsonl").read_text(encoding="utf-8").splitlines())}
    return (TRIAGE_DATA / f"{name}.log").read_text(encoding="utf-8"), labels[name]


def test_a_pasted_log_shows_the_root_cause_card_first_linked_to_its_line(page, server):
    import httpx

    # case_43: a blank line (8) comes before the root cause (line 12), so the link only lands on
    # the right card if the page and the triage number lines alike
    text, label = _triage_case("case_43")
    lines = text.splitlines()
    number = next(i for i, line in enumerate(lines, 1) if label["root_cause"] in line)
    assert number == 12 and lines[7] == ""
    verdict = httpx.post(server.url + "/v1/triage", json={"log": text}, timeout=60).json()  # what the card shows
    root, cascade = verdict["root_cause"], verdict["cascade"]
    assert root["line_number"] == number and root["kind"] == "signal"
    folded = [g for g in cascade if g["count"] > 1]
    assert folded, cascade  # the three SIGTERM lines
    page.goto(server.url + "/")
    _explain(page, text)
    triage = page.locator("#triage")
    expect(triage.locator("h2")).to_have_text("Root cause")
    expect(page.locator(".card").first).to_be_visible()
    # first: before the per-line cards in the page, and above them on screen
    assert page.evaluate("""() => {
        const triage = document.getElementById('triage'), card = document.querySelector('.card');
        return Boolean(triage.compareDocumentPosition(card) & Node.DOCUMENT_POSITION_FOLLOWING)
            && triage.getBoundingClientRect().bottom <= card.getBoundingClientRect().top;
    }""")
    expect(triage.locator(".triage-title")).to_have_text(root["title"]["en"])
    expect(triage.locator(".triage-title")).to_contain_text("SIGABRT")
    expect(triage.locator(".badge")).to_have_text("killed by a signal")
    expect(triage.locator("pre.line")).to_have_text(lines[number - 1])
    expect(triage.locator(".why")).to_have_text(root["why"]["en"])
    expect(triage.locator(".action p")).to_have_text(root["action"]["en"])
    link = triage.locator(".meta a")
    expect(link).to_have_text(f"Line {number}")
    expect(link).to_have_attribute("href", f"#line-{number}")
    target = page.locator(f"#line-{number}")
    expect(target.locator("pre.line")).to_have_text(lines[number - 1])
    expect(target.locator(".meta")).to_contain_text(f"Line {number}")
    url = page.url
    link.click()
    expect(target).to_be_in_viewport()
    expect(target).to_be_focused()
    assert page.url == url  # the permalink stays in the address bar
    # the cascade is folded: a closed <details>, one row per group with its count
    details = triage.locator("details.cascade")
    expect(details).to_have_count(1)
    expect(details).not_to_have_attribute("open", re.compile(".*"))
    n = sum(g["count"] for g in cascade)
    expect(details.locator("summary")).to_have_text(
        f"Cascade: {n} knock-on line{'s' if n > 1 else ''} in {len(cascade)} group{'s' if len(cascade) > 1 else ''}")
    rows = details.locator("li")
    expect(rows).to_have_count(len(cascade))
    expect(rows.first).to_be_hidden()
    details.locator("summary").click()
    row = rows.nth(cascade.index(folded[0]))
    expect(row.locator(".count")).to_have_text(f"×{folded[0]['count']}")
    expect(row.locator(".sample")).to_have_text(folded[0]["sample_lines"][0])
    expect(row.locator("a")).to_have_attribute("href", f"#line-{folded[0]['first_line']}")
    assert "SIGTERM" in folded[0]["sample_lines"][0] and lines[folded[0]["first_line"] - 1] == folded[0]["sample_lines"][0]
    expect(triage.locator(".triage-summary")).to_contain_text(verdict["summary"]["en"].splitlines()[0])
    ARTIFACTS.mkdir(exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / "http-page-root-cause.png"), full_page=True)

    page.get_by_role("button", name="中文").click()
    expect(triage.locator("h2")).to_have_text("根因")
    expect(triage.locator(".triage-title")).to_have_text(root["title"]["zh"])
    expect(triage.locator(".badge")).to_have_text("被信号终止")
    expect(triage.locator(".meta a")).to_have_text(f"第 {number} 行")
    expect(triage.locator(".why")).to_have_text(root["why"]["zh"])
    expect(details.locator("summary")).to_have_text(f"连带报错：{len(cascade)} 组，共 {n} 行")
    expect(details).to_have_attribute("open", "")  # the switch keeps the cascade as the reader left it
    expect(triage.locator(".triage-summary")).to_contain_text(verdict["summary"]["zh"].splitlines()[0])
    page.screenshot(path=str(ARTIFACTS / "http-page-root-cause-zh.png"), full_page=True)


def test_a_short_paste_asks_for_no_root_cause(page, server):
    asked: list[str] = []
    page.on("request", lambda request: asked.append(urlparse(request.url).path))
    page.goto(server.url + "/")
    _explain(page, "\n".join([IB_LINE, "", FLUSH_LINE]))
    expect(page.locator(".card")).to_have_count(2)
    expect(page.locator("#line-1")).to_be_visible()
    expect(page.locator("#line-3")).to_be_visible()
    expect(page.locator("#triage")).to_be_hidden()
    expect(page.locator("#triage > *")).to_have_count(0)
    assert "/v1/explain" in asked and "/v1/triage" not in asked


def test_a_log_with_no_failure_says_so_in_the_root_cause_card(page, server):
    text, label = _triage_case("case_22")
    assert label["root_cause"] is None
    page.goto(server.url + "/")
    _explain(page, text)
    triage = page.locator("#triage")
    expect(triage.locator(".no-failure")).to_have_text("No failure found: no line is an error, a failed worker or a crash.")
    expect(triage.locator("pre.line")).to_have_count(0)
    expect(page.locator(".card")).to_have_count(len([l for l in text.splitlines() if l.strip()]))
    page.get_by_role("button", name="中文").click()
    expect(triage.locator("h2")).to_have_text("根因")
    expect(triage.locator(".no-failure")).to_have_text("未发现故障：没有哪一行是错误、失败的 worker 或崩溃。")


def test_a_failed_triage_leaves_the_line_cards_alone(page, server):
    page.route("**/v1/triage", lambda route: route.fulfill(status=500, content_type="application/json",
                                                          body='{"detail": "boom"}'))
    page.goto(server.url + "/")
    _explain(page, "\n".join([FLUSH_LINE, UNRELATED_LINE, AFFINITY_LINE, CDB_LINE]))
    expect(page.locator(".card")).to_have_count(4)
    expect(page.locator("#triage .note")).to_have_text(re.compile("Root-cause analysis is unavailable"))
    expect(page.get_by_role("status")).to_have_text("4 lines explained: 3 known, 1 unknown.")


def test_the_ask_box_and_a_pasted_question_are_answered_from_the_kb(page, server, explainer):
    """A question gets the KB's answers (or its 'not in the knowledge base'), never 'unknown line'."""
    from service.ask import asker_for

    question = "ProcessGroupNCCL 的 watchdog 超时是什么原因？"
    expected = asker_for(explainer).ask(question, lang="en")
    assert expected["known"]
    page.goto(server.url + "/")
    page.get_by_label("Ask a question").fill(question)
    page.get_by_role("button", name="Ask", exact=True).click()
    cards = page.locator(".card.answer")
    expect(cards.first.locator("h2")).to_have_text(expected["answers"][0]["title"])
    expect(cards).to_have_count(len(expected["answers"]))
    expect(page.get_by_role("status")).to_have_text(f"{len(expected['answers'])} answers from the knowledge base.")
    # a question pasted where log lines go is a question too; an unrelated one is declined
    _explain(page, "how do I center a div in CSS?")
    expect(page.get_by_role("status")).to_have_text(
        "Not in the knowledge base: no variable, concept or message of the KB answers this question.")
    expect(page.locator(".card")).to_have_count(0)
    # a log line that ends in a question mark is still a log line when the KB knows it
    _explain(page, IB_LINE)
    expect(page.locator(".card").first.locator("h2")).to_have_text(explainer.by_id["nccl.net.ib_devices"].title.en)


OOM_FRAGMENTED = (
    "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 64.00 MiB. GPU 3 has a total capacity of "
    "79.15 GiB of which 21.50 MiB is free. Including non-PyTorch memory, this process has 79.12 GiB memory in "
    "use. Of the allocated memory 70.02 GiB is allocated by PyTorch, and 8.48 GiB is reserved by PyTorch but "
    "unallocated. If reserved but unallocated memory is large try setting PYTORCH_CUDA_ALLOC_CONF="
    "expandable_segments:True to avoid fragmentation."
)


@pytest.mark.parametrize("viewport,name", [((1280, 800), "desktop"), ((390, 844), "phone")])
def test_a_card_says_the_verdict_first_and_folds_the_details(browser, server, viewport, name):
    """Issue 22: the summary (here the OOM verdict) comes first, the long form is folded, a
    known line's card fits in one 1280x800 screen, and the field table stays readable."""
    width, height = viewport
    context = browser.new_context(viewport={"width": width, "height": height}, is_mobile=name == "phone")
    page = context.new_page()
    page.goto(server.url + "/")
    page.get_by_label("Log lines").fill(OOM_FRAGMENTED)
    page.get_by_role("button", name="Explain").click()
    card = page.locator(".card").first
    expect(card.locator(".summary")).to_contain_text("Fragmentation: 8.48 GiB")
    details = card.locator("details.more")
    expect(details).not_to_have_attribute("open", "")
    expect(card.locator(".explanation")).to_be_hidden()
    if name == "desktop":
        box = card.bounding_box()
        assert box is not None and box["height"] <= height, box
    ARTIFACTS.mkdir(exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / f"http-card-{name}-folded.png"), full_page=True)
    details.locator("summary").click()
    expect(card.locator(".explanation")).to_be_visible()
    expect(card.locator(".fields dd").first).not_to_be_empty()
    # every meaning gets a readable column, however long the values beside it
    widths = card.locator(".fields dd").evaluate_all("els => els.map(e => e.getBoundingClientRect().width)")
    assert widths and min(widths) >= (300 if name == "desktop" else 250), widths
    assert page.evaluate("document.documentElement.scrollWidth <= window.innerWidth")
    page.screenshot(path=str(ARTIFACTS / f"http-card-{name}-open.png"), full_page=True)
    page.get_by_role("button", name="中文").click()
    expect(card.locator(".summary")).to_contain_text("碎片化")
    context.close()
