"""The HTML report in real headless Chromium: summary, links, inline explanations, filters, zh/en."""

from __future__ import annotations

import pytest

from batch_helpers import annotate, seed_style_lines
from seed_lines import AFFINITY_LINE

CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = [
    "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
    "--disable-background-networking", "--disable-component-update", "--disable-sync",
]


@pytest.fixture(scope="module")
def report(explainer, tmp_path_factory):
    root = tmp_path_factory.mktemp("html")
    log = root / "train.log"
    lines = seed_style_lines() * 30  # > one page of 500 lines, so paging matters
    log.write_text("\n".join(lines) + "\n", encoding="utf-8")
    out, summary = annotate(explainer, [str(log)], "html")
    path = root / "report.html"
    path.write_bytes(out)
    return path, summary, lines


@pytest.fixture(scope="module")
def page(report):
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        tab = browser.new_page()
        errors: list[str] = []
        tab.on("pageerror", lambda exc: errors.append(str(exc)))
        tab.goto(report[0].as_uri())
        tab.wait_for_selector("body[data-ready='1']")
        yield tab, errors
        browser.close()


def test_summary_header_counts_every_line(page, report):
    tab, errors = page
    _, summary, lines = report
    assert not errors
    assert tab.inner_text("#total-lines").replace(",", "").startswith(str(len(lines)))
    assert summary.total_lines == len(lines)
    entries = tab.inner_text("#entries")
    assert "nccl.init.affinity" in entries and "deepspeed.zero3.allocator_cache_flushes" in entries
    assert tab.locator("#templates tr").count() > 1  # unknown templates listed
    assert "500" in tab.inner_text("#pageinfo") or "page 1 of" in tab.inner_text("#pageinfo")


def test_first_warning_link_jumps_and_expands(page, report):
    tab, _ = page
    _, summary, _ = report
    source, line = summary.first_at_least("warning")
    tab.click("#first-warning a")
    row = tab.locator(".row.hit")
    row.wait_for()
    assert row.get_attribute("id") == f"L{source}-{line}"
    explanation = tab.locator(".row.hit + .exp")
    explanation.wait_for()
    explanation.locator("details summary").click()  # the id and the long form are folded
    first = min((s.first, pid) for pid, s in summary.entries.items() if s.severity in ("warning", "error", "fatal"))
    assert first[1] in explanation.inner_text()
    assert "warning" in explanation.inner_text() or "error" in explanation.inner_text()


def test_rows_expand_inline_and_language_switches(page):
    tab, _ = page
    row = tab.locator(".row.k", has_text=AFFINITY_LINE.split("] ", 1)[1]).first
    row.click()
    box = row.locator("xpath=following-sibling::div[1]")
    box.wait_for()
    # the summary names the decoded CPU set; the explanation is folded under "details" ...
    assert "16-23" in box.inner_text() and "intersected" not in box.inner_text()
    box.locator("details summary").click()
    assert "intersected" in box.inner_text()  # ... and opens on a click
    tab.click("#lang-zh")
    row = tab.locator(".row.k", has_text=AFFINITY_LINE.split("] ", 1)[1]).first
    row.click()
    text = tab.locator(".exp").first.inner_text()
    assert any("\u4e00" <= ch <= "\u9fff" for ch in text)
    tab.click("#lang-en")


def test_filters_by_severity_and_paging(page, report):
    tab, _ = page
    _, summary, _ = report
    for severity in ("info", "unknown"):
        tab.uncheck(f"input.sev[value='{severity}']")
    shown = tab.locator("#log .row").count()
    assert shown == summary.severity_counts()["warning"] + summary.severity_counts()["error"] + summary.severity_counts()["fatal"]
    assert all("s-warning" in c or "s-error" in c or "s-fatal" in c
               for c in tab.eval_on_selector_all("#log .row", "rows => rows.map(r => r.className)"))
    for severity in ("info", "unknown"):
        tab.check(f"input.sev[value='{severity}']")
    assert tab.locator("#log .row").count() == 500
    tab.click("#next")
    assert tab.inner_text("#pageinfo").startswith("page 2")
    tab.select_option("#component", "nccl")
    components = tab.eval_on_selector_all("#log .row", "rows => rows.length")
    assert components > 0


# ---- the root-cause section (triage) -------------------------------------------------------
ROOT_CAUSE_TAIL = [
    "[rank0]:[W socket.cpp:464] [c10d] Sending process 4101 closing signal SIGTERM",
    "host-a:4100:4300 [1] NCCL INFO comm 0x5566aa00 rank 1 nranks 2 cudaDev 1 busId 2000 commId 0x1234 - Init COMPLETE",
    "host-a:4100:4300 [1] include/shm.h:28 NCCL WARN Error while creating shared memory segment /dev/shm/nccl-1YsMbG (size 7340384)",
    "torch.distributed.DistBackendError: NCCL error in: ../torch/csrc/distributed/c10d/ProcessGroupNCCL.cpp:1691, unhandled system error (run with NCCL_DEBUG=INFO for details), NCCL version 2.18.1",
    "ncclSystemError: System call (e.g. socket, malloc) or external library call failed or device error.",
]


@pytest.fixture(scope="module")
def rc_page(explainer, tmp_path_factory, page):
    from service.triage import TriageStream

    root = tmp_path_factory.mktemp("html_rc")
    log = root / "job.log"
    lines = seed_style_lines() * 2 + ROOT_CAUSE_TAIL
    log.write_text("\n".join(lines) + "\n", encoding="utf-8")
    out, summary = annotate(explainer, [str(log)], "html", triage=TriageStream(explainer, semantic=False))
    path = root / "report.html"
    path.write_bytes(out)
    tab = page[0].context.browser.new_page()  # the module's browser: one Playwright per thread
    errors: list[str] = []
    tab.on("pageerror", lambda exc: errors.append(str(exc)))
    tab.goto(path.as_uri())
    tab.wait_for_selector("body[data-ready='1']")
    yield tab, errors, summary, lines
    tab.close()


def test_root_cause_section_comes_first_and_links_to_its_line(rc_page):
    tab, errors, summary, lines = rc_page
    assert not errors
    assert summary.triage["root_cause"]["line"] == ROOT_CAUSE_TAIL[2]
    number = lines.index(ROOT_CAUSE_TAIL[2]) + 1
    # the section sits above the counts
    order = tab.evaluate("() => [...document.querySelectorAll('#root-cause, #total-lines')].map(e => e.id)")
    assert order == ["root-cause", "total-lines"]
    section = tab.inner_text("#root-cause")
    assert "shared" in section and "Error while creating shared memory segment" in section
    tab.click("#root-cause .rc-where a")
    row = tab.locator(".row.hit")
    row.wait_for()
    assert row.get_attribute("id") == f"L0-{number}"
    # the cascade is folded, and lists the wrapper printed after the cause
    assert tab.evaluate("() => document.querySelector('#cascade').tagName") == "DETAILS"
    assert not tab.evaluate("() => document.querySelector('#cascade').open")
    tab.click("#cascade summary")
    assert "NCCL" in tab.inner_text("#cascade")
    tab.click("#lang-zh")
    assert "根因" in tab.inner_text("#root-cause")
    tab.click("#lang-en")


def test_a_report_of_a_clean_log_says_no_failure(explainer, tmp_path):
    from service.triage import TriageStream

    log = tmp_path / "ok.log"
    log.write_text("\n".join(l for l in seed_style_lines() if "WARN" not in l and "rror" not in l)[:2000] + "\n")
    out, summary = annotate(explainer, [str(log)], "html", triage=TriageStream(explainer, semantic=False))
    if summary.triage["root_cause"] is not None:
        pytest.fail(f"a failure was found in a clean log: {summary.triage['root_cause']['line']}")
    assert b'"triage":' in out
