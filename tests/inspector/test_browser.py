"""The inspector page in a real Chromium (Debian's, driven by Playwright) over an agent made by the test.

Skipped with the reason where /usr/bin/chromium is missing (``scripts/setup.sh`` installs it
when run as root); under CI (``CI=true``) a missing browser is a failure, not a skip.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest

from core.memory_manager import MemoryManager
from tests.inspector.conftest import SCRIPT_TEXT, SECRET, build_learning_agent

CHROMIUM = Path(os.environ.get("AGENTOS_CHROMIUM", "/usr/bin/chromium"))
ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--no-first-run", "--disable-background-networking",
        "--disable-component-update", "--disable-sync"]
MISSING = (f"no Chromium at {CHROMIUM}: run scripts/setup.sh as root (or apt-get install chromium) "
           "to run the browser tests")

if not CHROMIUM.exists() and os.environ.get("CI") == "true":
    raise RuntimeError(f"CI must run the browser tests, but {MISSING}")
pytestmark = [pytest.mark.browser, pytest.mark.skipif(not CHROMIUM.exists(), reason=MISSING)]


EXPECT_TIMEOUT_MS = 30_000
"""How long an expectation waits for the page: a bound for a page that never gets there, not a speed target
(Chromium and the inspector share two cores with the other test worker)."""


def expect(locator):
    from playwright.sync_api import expect as playwright_expect

    playwright_expect.set_options(timeout=EXPECT_TIMEOUT_MS)
    return playwright_expect(locator)


@pytest.fixture(scope="module")
def browser(tmp_path_factory):
    """One Chromium for the module, with a fresh profile."""
    sync_playwright = pytest.importorskip("playwright.sync_api",
                                          reason="pip install -r requirements.txt").sync_playwright

    with sync_playwright() as playwright:
        context = playwright.chromium.launch_persistent_context(
            tmp_path_factory.mktemp("chromium-profile"), executable_path=str(CHROMIUM), headless=True,
            args=ARGS,
            viewport={"width": 1400, "height": 1000})
        yield context
        context.close()


@pytest.fixture
def page(browser, demo, serve):
    """The inspector page open on the demo agent; fails the test on a JavaScript error or a dialog."""
    tab = browser.new_page()
    problems: list[str] = []
    tab.on("pageerror", lambda error: problems.append(f"page error: {error}"))
    tab.on("dialog", lambda dialog: (problems.append(f"dialog: {dialog.message}"), dialog.dismiss()))
    tab.goto(serve() + "#agent=finn")
    tab.wait_for_selector("#log > li")
    tab.problems = problems
    yield tab
    tab.close()
    assert problems == []


def entries(page) -> list[str]:
    return page.locator("#log li.entry").evaluate_all("items => items.map(i => i.dataset.seq)")


def test_timeline_shows_the_entries_newest_first(page, demo, tmp_path):
    """The timeline lists every entry of LOG.md and its archive, newest first, and the page is
    screenshotted."""
    seqs = [int(s) for s in entries(page)]
    assert seqs == list(range(seqs[0], 0, -1)) and seqs[0] > 15
    assert page.locator("#log li[data-seq='1'] .head").inner_text().count(f"in {demo.archive_id}") == 1
    assert "Write the weekly report for Maria" in page.locator("#now").inner_text()
    page.screenshot(path=str(tmp_path / "inspector.png"), full_page=True)
    assert (tmp_path / "inspector.png").stat().st_size > 10_000
    if os.environ.get("AGENTOS_SCREENSHOT"):  # how docs/inspector.png is made
        page.screenshot(path=os.environ["AGENTOS_SCREENSHOT"])


def test_type_filter_run_filter_and_search_narrow_the_timeline(page, demo):
    """Clicking a type chip, choosing a run and typing a search show only the matching entries."""
    page.click("#log-types button[data-type='ERROR']")
    expect(page.locator("#log li.entry")).to_have_count(1)
    assert "error 137" in page.locator("#log li.entry").inner_text()
    page.click("#log-clear")
    page.select_option("#log-run", demo.failed_run)
    expect(page.locator("#log li.entry")).to_have_count(4)
    page.click("#log-clear")
    page.fill("#log-search", "ASYNCIO")
    expect(page.locator("#log li.entry")).to_have_count(5)
    assert all("asyncio" in text.lower() for text in page.locator("#log li.entry").all_inner_texts())


def test_interrupted_runs_and_errors_stand_out(page, demo):
    """A run that never ended is named in an alert and badged; errors and the failed run end are marked."""
    assert demo.interrupted_run in page.locator("#alerts .alert").inner_text()
    start = page.locator("#log li.entry.never-ended")
    assert start.count() == 1 and "never ended" in start.inner_text()
    assert (
        page.locator("#log li.entry.type-ERROR").count() == 1
        and page.locator("#log li.entry.failed").count() == 1
    )
    assert "running" in page.locator("#log li.entry.type-RUN_START").first.inner_text()


def test_a_summary_entry_opens_its_archive(page, demo):
    """The SUMMARY entry links to its archive; following it shows exactly the archived entries."""
    page.click("#log .archive-link")
    expect(page.locator("#log li.entry")).to_have_count(demo.archived)
    assert demo.archive_id in page.locator("#log-status").inner_text()


def test_a_summary_expands_down_to_its_messages(page, demo):
    """In Conversations, clicking the condensed summary shows its leaves, and a leaf its original messages."""
    page.click(".tabs button[data-tab='conversations']")
    page.click("#conversations button.conversation")
    page.click("#conversation .tree button.node.condensed")
    page.click("#conversation .tree .tree button.node.leaf >> nth=0")
    first = page.locator("#conversation .tree .tree .children .message").first
    first.wait_for()
    assert "Question 0: how do I handle task 0 in asyncio?" in first.inner_text()


def test_a_secret_is_masked(page, demo):
    """The secret's value appears nowhere on the page, in facts, the timeline or the conversation."""
    page.click(".tabs button[data-tab='conversations']")
    page.click("#conversations button.conversation")
    page.wait_for_selector("#conversation .message")
    html = page.content()
    assert SECRET not in html and "[REDACTED]" in page.locator("#facts").inner_text()
    assert (
        "My deploy key is [REDACTED]" in page.locator(f"#log li[data-seq='{demo.secret_seq}']").inner_text()
    )


def test_a_fact_opens_its_earlier_values_and_a_secret_shows_none(page, demo):
    """A fact saved again gets an "earlier value" button (through the live update) that lists the values it
    held with their dates, and stays open while more values arrive; a secret's earlier value is [REDACTED]."""
    page.wait_for_selector("#live.on")
    assert page.locator("#facts dd button").count() == 0, "no fact has an earlier value yet"
    with MemoryManager("finn", demo.home) as mm:
        mm.save_fact("home_city", "Porto", category="personal")
        mm.save_fact("deploy_api_key", "sk-live-5555-efgh", category="secret")
        saved = mm.get_fact("home_city", history=True)[1]["saved_at"]
    city = page.locator("#facts dd[data-key='home_city']")
    expect(city.locator("button")).to_have_text("1 earlier value")
    assert city.locator(".versions").is_hidden()
    city.locator("button").click()
    expect(city.locator(".versions li")).to_have_count(1)
    item = city.locator(".versions li").inner_text()
    assert (
        item.startswith("Lisbon") and f"saved {saved.replace('T', ' ')[:16]}" in item and "replaced" in item
    )
    assert city.locator("button").get_attribute("aria-expanded") == "true"
    with MemoryManager("finn", demo.home) as mm:
        mm.save_fact("home_city", "Berlin", category="personal")
    expect(city.locator("button")).to_have_text("2 earlier values")
    expect(city.locator(".versions li")).to_have_count(2)
    expect(city.locator(".versions li .value")).to_have_text(["Porto", "Lisbon"])
    secret = page.locator("#facts dd[data-key='deploy_api_key']")
    secret.locator("button").click()
    expect(secret.locator(".versions li .value")).to_have_text(["[REDACTED]"])
    html = page.content()
    assert SECRET not in html and "sk-live-5555-efgh" not in html
    city.locator("button").click()
    assert city.locator(".versions").is_hidden()


def test_a_script_entry_is_shown_as_text_and_stays_inert(page, demo):
    """A LOG entry holding <script> and an onerror image is shown as its text: no dialog, no new element
    runs."""
    item = page.locator(f"#log li[data-seq='{demo.script_seq}'] .text")
    assert item.inner_text() == SCRIPT_TEXT
    assert item.locator("script, img").count() == 0
    assert page.evaluate("window.__pwned") is None
    assert page.evaluate("[...document.scripts].map(s => s.getAttribute('src'))") == ["/static/chart.js",
                                                                                      "/static/app.js",
                                                                                   "/static/reflection.js"]


def test_live_update_shows_a_newly_appended_entry(page, demo):
    """An entry appended by another process appears at the top of the timeline, marked fresh: brought by the
    event stream (the server checks every POLL_S), not by a reload."""
    page.wait_for_selector("#live.on")
    with MemoryManager("finn", demo.home) as mm:
        seq = mm.append_log("THOUGHT", "a thought that arrives while the page is open")
    page.wait_for_selector(f"#log li.entry.fresh[data-seq='{seq}']", timeout=EXPECT_TIMEOUT_MS)
    assert entries(page)[0] == str(seq)


def test_type_chips_are_core_entry_types_and_follow_live_updates(page, demo):
    """A chip for every LOG.md entry type core writes (FACT and FORGET too), whose counts follow new
    entries."""
    from core.memory.files.log_format import ENTRY_TYPES

    chips = page.locator("#log-types .chip")
    assert chips.evaluate_all("chips => chips.map(c => c.dataset.type)") == list(ENTRY_TYPES)

    def count(entry_type: str):
        return page.locator(f"#log-types .chip[data-type='{entry_type}'] small")

    facts, thoughts = int(count("FACT").inner_text()), int(count("THOUGHT").inner_text())
    assert facts >= 3 and count("FORGET").inner_text() == "0"
    page.click("#log-types button[data-type='THOUGHT']")  # a pressed chip stays pressed through the updates
    page.wait_for_selector("#live.on")
    # forgetting opens the cold store: a reachable embedder
    config = demo.home / "finn" / "config" / "config.yaml"
    config.write_text(config.read_text().replace("ollama:nomic-embed-text", "minilm"))
    with MemoryManager("finn", demo.home) as mm:
        mm.append_log("THOUGHT", "a thought that arrives while the page is open")
        mm.save_fact("editor", "vim", category="preference")
        assert mm.forget_memory(mm.store_memory("a note that is forgotten at once"))
    expect(count("FORGET")).to_have_text("1")
    expect(count("FACT")).to_have_text(str(facts + 1))
    expect(count("THOUGHT")).to_have_text(str(thoughts + 1))
    assert page.locator("#log-types button[data-type='THOUGHT']").get_attribute("aria-pressed") == "true"
    page.click("#log-clear")
    page.click("#log-types button[data-type='FORGET']")
    expect(page.locator("#log li.entry")).to_have_count(1)
    assert page.locator("#log li.entry .badge.type-FORGET").count() == 1


def test_the_recall_panel_explains_its_results_when_asked(page, demo):
    """With "explain" ticked, each result shows why it ranked and the panel says what was left out;
    unticked, neither shows."""
    page.click(".tabs button[data-tab='recall']")
    page.fill("#recall-query", "who gets the report on Fridays?")
    page.click("#recall-form button[type=submit]")
    expect(page.locator("#recall")).to_contain_text("The report goes to Maria on Fridays")
    assert page.locator("#recall .why").count() == 0 and page.locator("#recall-left-out").inner_text() == ""
    page.check("#recall-explain")
    page.click("#recall-form button[type=submit]")
    expect(page.locator("#recall li.hit .why").first).to_contain_text("why: words: report, Fridays")
    expect(page.locator("#recall li.hit .why").first).to_contain_text("kind ")
    expect(page.locator("#recall-left-out")).to_contain_text("left out")


def test_the_activity_chart_draws_each_day_its_compaction_and_memory_growth(page, demo):
    """The chart has a column a day from the history's first day to today, bars stacked by entry type, a
    compaction mark on today and a growth line ending at the memory's total; clicking a day's bar opens the
    timeline at that day's newest entry."""
    from tests.inspector.test_history import day

    chart = page.locator("#activity-chart svg.chart")
    expect(chart).to_be_visible()
    columns = chart.locator("g.bin")
    assert columns.count() == 12
    first = chart.locator(f"g.bin[data-at='{day(9)}']")
    assert sorted(first.locator("rect.bar").evaluate_all("bars => bars.map(b => b.dataset.type)")) == [
        "NOW_UPDATE", "TOOL_USE", "USER_FEEDBACK"]
    assert chart.locator(f"g.bin[data-at='{day(6)}'] rect.bar").count() == 0
    assert (
        chart.locator(f"g.bin[data-at='{day(0)}'] path.compaction").get_attribute("data-archives")
        == demo.archive_id
    )
    assert len(chart.locator("polyline.growth").get_attribute("points").split()) == 12
    assert "day" in page.locator("#activity-scope").inner_text()
    assert "TOOL_USE" in page.locator("#activity-legend").inner_text()
    chart.locator(f"g.bin[data-at='{day(5)}']").click()
    expect(page.locator("#log li.entry.target")).to_have_count(1)
    day_five = page.locator("#log li.entry.target")
    assert (
        day_five.get_attribute("data-seq") == entries(page)[0]
        and "edit_file watchlist.md" in day_five.inner_text()
    )


def test_a_run_is_folded_into_one_row_that_opens(page, demo):
    """A run's entries (its step markers and NOW updates too) are one row naming its objective, outcome and
    what it did; the row opens to show them, and unticking "fold runs" lists every entry flat."""
    failed = page.locator(f"#log li.run-fold[data-run='{demo.failed_run}']")
    head = failed.locator(".fold-head")
    assert "Deploy the report service" in head.inner_text() and "error" in head.inner_text()
    assert "4 entries: 1 tool use, 1 error" in head.inner_text()
    assert failed.locator("li.entry").count() == 4 and failed.locator(".fold-body").is_hidden()
    head.click()
    expect(failed.locator("li.entry").first).to_be_visible()
    assert head.get_attribute("aria-expanded") == "true"
    current = page.locator(f"#log li.run-fold[data-run='{demo.current_run}']")
    assert (
        current.locator("li.entry.type-NOW_UPDATE").count() == 1
        and "running" in current.locator(".fold-head").inner_text()
    )
    interrupted = page.locator(f"#log li.run-fold[data-run='{demo.interrupted_run}']")
    assert interrupted.locator("li.entry.type-STEP_START").count() == 1
    assert "never ended" in interrupted.locator(".fold-head").inner_text()
    page.uncheck("#log-fold")
    expect(page.locator("#log li.run-fold")).to_have_count(0)
    assert [int(s) for s in entries(page)] == list(range(int(entries(page)[0]), 0, -1))
    page.check("#log-fold")
    assert (
        page.locator(f"#log li.run-fold[data-run='{demo.failed_run}'] .fold-head").get_attribute(
            "aria-expanded"
        )
        == "true"
    )


def test_search_hits_are_marked_as_text(page, demo):
    """The words a search found are marked in each entry (case kept), and markup searched for is marked as
    text."""
    page.fill("#log-search", "ASYNCIO")
    expect(page.locator("#log li.entry")).to_have_count(5)
    # as the entries write it
    assert set(page.locator("#log li.entry .text mark").all_inner_texts()) == {"asyncio"}
    page.fill("#log-search", "<script>window")
    expect(page.locator("#log li.entry")).to_have_count(1)
    assert page.locator("#log li.entry .text mark").all_inner_texts() == ["<script>window"]
    assert page.locator("#log li.entry .text").inner_text() == SCRIPT_TEXT
    assert page.locator("#log script, #log img").count() == 0 and page.evaluate("window.__pwned") is None


def test_a_recall_hit_opens_its_place(page, demo):
    """A recall hit from LOG.md opens the timeline at its entry (its folded run opened, the entry marked); one
    from the conversation opens the conversation at its message."""
    with MemoryManager("finn", demo.home) as mm:  # the docs the agent's background indexer writes
        mm.cold.sync()
    page.click(".tabs button[data-tab='recall']")
    page.fill("#recall-query", "quarterly numbers")
    page.click("#recall-form button[type=submit]")
    hit = page.locator("#recall li.hit").first
    expect(hit).to_contain_text("Summarise the quarterly numbers")
    assert hit.locator("mark").all_inner_texts() == ["quarterly", "numbers"]
    hit.locator("button.place").click()
    target = page.locator("#log li.entry.target")
    expect(target).to_have_count(1)
    assert "Summarise the quarterly numbers" in target.inner_text() and target.is_visible()
    assert (
        page.locator(f"#log li.run-fold[data-run='{demo.interrupted_run}'] .fold-head").get_attribute(
            "aria-expanded"
        )
        == "true"
    )
    page.click(".tabs button[data-tab='recall']")
    page.fill("#recall-query", "how do I handle task 17")
    page.click("#recall-form button[type=submit]")
    message = page.locator("#recall li.hit", has_text="Question 17").first
    message.locator("button.place").click()
    expect(page.locator("#conversation li.message.target")).to_contain_text("Question 17: how do I handle "
                                                                            "task 17")


def test_two_now_versions_are_compared(page, demo):
    """"Compare with earlier versions" shows what changed from the version before the newest; another pair
    can be chosen, and a NOW_UPDATE entry opens the change it made."""
    page.click("#now-compare")
    diff = page.locator("#now-diff")
    expect(diff.locator("li.op-del",
                        has_text="objective: Research Python asyncio and create a summary")).to_have_count(1)
    expect(diff.locator("li.op-add",
                        has_text="objective: Write the weekly report for Maria")).to_have_count(1)
    assert (
        "v3" in page.locator("#now-diff-status").inner_text()
        and "v4" in page.locator("#now-diff-status").inner_text()
    )
    versions = page.locator("#now-older option").evaluate_all("options => options.map(o => o.value)")
    assert len(versions) == 4
    page.select_option("#now-older", versions[-1])
    expect(diff.locator("li.op-del", has_text="current_step: Listing the holdings")).to_have_count(1)
    page.click(".tabs button[data-tab='timeline']")
    page.fill("#log-search", "Adding NVDA")
    expect(page.locator("#log li.entry")).to_have_count(1)
    page.locator("#log li.entry.type-NOW_UPDATE .now-diff-link").click()
    expect(diff.locator("li.op-add", has_text="current_step: Adding NVDA to the watch list")).to_have_count(1)
    assert page.locator("#now-newer").input_value() == page.locator(
        "#log li.entry.type-NOW_UPDATE"
    ).get_attribute("data-seq")


def test_a_running_run_grows_in_its_row_and_the_chart_follows(page, demo):
    """An entry of the running run, appended while the page is open, joins its run's row, and
    the activity chart counts it."""
    page.wait_for_selector("#live.on")
    # the chart has loaded
    expect(page.locator("#activity-scope")).to_have_text(re.compile(r" · \d+ entries"))
    caption = page.locator("#activity-scope").inner_text()
    total = int(caption.split(" · ")[1].split()[0])
    with MemoryManager("finn", demo.home) as mm:
        seq = mm.append_system("TOOL_USE", "read_file numbers.csv -> 3 KB", {"run_id": demo.current_run})
    row = page.locator(f"#log li.run-fold[data-run='{demo.current_run}']")
    expect(row.locator(f"li.entry[data-seq='{seq}']")).to_have_count(1)
    assert "4 entries" in row.locator(".fold-head").inner_text() and entries(page)[0] == str(seq)
    expect(page.locator("#activity-scope")).to_contain_text(f"{total + 1} entries", timeout=15_000)


def test_the_reflection_tab_shows_its_status_and_each_learned_fact_opens_its_source(page, demo):
    """The reflection tab shows what is waiting (the quarantined entry with its reason, the model's figures)
    and each learned fact with its sources: a LOG entry's link opens the timeline at that entry, a message's
    opens the conversation at it, a note's marks it in the notes; a learned secret is masked."""
    learner = build_learning_agent(demo.home)
    page.goto(page.url.split("#")[0] + "#agent=rhea&tab=reflection")
    page.reload()
    facts = page.locator("#reflection-facts li.learned-fact")
    expect(facts).to_have_count(4)
    expect(page.locator("#reflection-status")).to_contain_text("last pass")
    expect(page.locator("#reflection-figures")).to_contain_text("to read: 1 entry of LOG.md")
    expect(page.locator("#reflection-figures tr[data-model='offline-rules']")).to_have_count(1)
    waiting = page.locator(f"#reflection-quarantine li[data-item='log:{learner.quarantined_seq}']")
    expect(waiting).to_contain_text(learner.reason)
    expect(waiting).to_contain_text("qwen2.5:7b")
    secret = page.locator("#reflection-facts li[data-key='user.api_token'] .value")
    expect(secret).to_have_text("[REDACTED]")
    assert SECRET not in page.content()
    target = page.locator("#reflection-facts li[data-key='user.deploy_target']")
    expect(target.locator(".value")).to_have_text("fly.io")
    target.locator("button.place", has_text=f"#{learner.target_seq}").click()
    expect(page.locator("#tab-timeline")).to_be_visible()
    entry = page.locator("#log li.entry.target")
    expect(entry).to_have_count(1)
    assert entry.get_attribute("data-seq") == str(learner.target_seq)
    assert "Remember that my deploy target is fly.io" in entry.inner_text() and entry.is_visible()
    page.click(".tabs button[data-tab='reflection']")
    page.locator("#reflection-facts li[data-key='user.favourite_editor'] button.place").click()
    expect(page.locator("#conversation li.message.target")).to_contain_text("My favourite editor is helix.")
    page.click(".tabs button[data-tab='reflection']")
    page.locator("#reflection-facts li[data-key='user.favourite_tea'] button.place").click()
    expect(page.locator(f"#notes li.target[data-note='{learner.note_id}']")).to_contain_text("My favourite "
                                                                                             "tea is sencha")
