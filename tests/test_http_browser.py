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
    expect(page.locator("#entries li")).to_have_count(len(explainer.entries))
    page.get_by_label("Search the knowledge base").fill("Relaxed Ordering")
    expect(page).to_have_url(re.compile(r"#q=Relaxed"))
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
    expect(page.locator("#entries li").first).to_be_visible()
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
