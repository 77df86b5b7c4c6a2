"""The agent's history as the inspector draws it: activity over time, a page's runs, NOW.md's versions."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone

from core.memory_manager import MemoryManager
from tests.inspector.conftest import HISTORY_DAYS, SECRET, logged_on
from tests.inspector.test_api import get, get_json


def day(days_ago: int) -> str:
    return (datetime.now(timezone.utc) - timedelta(days=days_ago)).strftime("%Y-%m-%d")


def types_of(activity: dict) -> dict[str, int]:
    """Entries by type over every period drawn (a test's entries may straddle an hour)."""
    counted: dict[str, int] = {}
    for period in activity["bins"]:
        for entry_type, n in period["types"].items():
            counted[entry_type] = counted.get(entry_type, 0) + n
    return counted


def test_activity_counts_entries_by_type_each_day_with_compactions_and_memory_growth(demo, serve):
    """A history of days is counted by the UTC day, from its first day to today, each day's entries by type
    with the seqs they span; today holds the compaction; memory grows to the totals."""
    url = serve()
    activity = get_json(url, "/api/agents/finn/activity")
    assert activity["unit"] == "day"
    bins = {b["at"]: b for b in activity["bins"]}
    assert list(bins)[-1] == day(0) and day(HISTORY_DAYS) in bins
    first = bins[day(HISTORY_DAYS)]
    assert first["types"] == {"USER_FEEDBACK": 1, "NOW_UPDATE": 1, "TOOL_USE": 1} and first["entries"] == 3
    assert (first["first_seq"], first["last_seq"]) == (1, 3)
    assert bins[day(6)]["entries"] == 0 and bins[day(6)]["first_seq"] is None, "a quiet day is drawn empty"
    assert [c["archive_id"] for c in bins[day(0)]["compactions"]] == [demo.archive_id]
    newest = get_json(url, "/api/agents/finn/log")["newest_seq"]
    assert sum(b["entries"] for b in activity["bins"]) == activity["totals"]["entries"] == newest
    logged = [b["memory"]["log"] for b in activity["bins"]]
    assert logged == sorted(logged) and logged[-1] == activity["totals"]["entries"]
    memory = activity["bins"][-1]["memory"]
    assert memory["facts"] == 4 and memory["notes"] == 2 and memory["messages"] == 81
    assert activity["totals"]["compactions"] == 1 and activity["earlier"] == {"entries": 0, "compactions": 0}


def test_a_history_of_hours_is_counted_by_the_hour(agents_home, storage_backend, serve):
    """A new agent whose entries all came today is drawn by the hour (a day would be one bar), with at least
    twelve periods so the bar has a scale."""
    with MemoryManager("ada", agents_home) as mm:
        with logged_on(0, hour=1):
            mm.append_log("THOUGHT", "the first hour")
        with logged_on(0, hour=3):
            mm.append_log("THOUGHT", "two hours later")
            mm.append_log("TOOL_USE", "and a tool")
    activity = get_json(serve(), "/api/agents/ada/activity")
    assert activity["unit"] == "hour" and len(activity["bins"]) == 12
    counted = {b["at"][-2:]: b["types"] for b in activity["bins"] if b["entries"]}
    assert counted == {"01": {"THOUGHT": 1}, "03": {"THOUGHT": 1, "TOOL_USE": 1}}


def test_an_agent_with_nothing_logged_has_no_activity(agents_home, storage_backend, serve):
    """An agent folder with no memory yet answers an empty activity, not an error."""
    (agents_home / "bo" / "config").mkdir(parents=True)
    activity = get_json(serve(), "/api/agents/bo/activity")
    assert activity["bins"] == [] and activity["totals"]["entries"] == 0


def test_a_timeline_page_names_its_runs(demo, serve):
    """A page carries each run of its entries: objective (its RUN_START's text), outcome, entries, errors."""
    runs = get_json(serve(), "/api/agents/finn/log")["runs"]
    failed = runs[demo.failed_run]
    assert failed["objective"] == "Deploy the report service" and failed["outcome"] == "error"
    assert failed["entries"] == 4 and failed["errors"] == 1 and failed["last_seq"] - failed["first_seq"] == 3
    assert runs[demo.interrupted_run]["outcome"] == "never ended"
    assert runs[demo.current_run]["outcome"] == "running"


def test_now_versions_are_rebuilt_from_their_now_update_entries(demo, serve):
    """Every NOW_UPDATE entry (LOG.md and the archive) is a version, newest first, with what NOW said then."""
    versions = get_json(serve(), "/api/agents/finn/now/versions")["versions"]
    assert [v["version"] for v in versions] == [4, 3, 2, 1] and all(v["whole"] for v in versions)
    assert versions[0]["current_step"] == "Collecting this week's numbers" and versions[0]["archive"] is None
    assert (
        versions[-1]["current_step"] == "Listing the holdings" and versions[-1]["archive"] == demo.archive_id
    )


def test_two_now_versions_are_compared_line_by_line(demo, serve):
    """The diff holds every line of both versions, marked kept, removed or added; NOW.md's text is rebuilt
    exactly as it was written (the newest version is the file on disk)."""
    url = serve()
    versions = get_json(url, "/api/agents/finn/now/versions")["versions"]
    diff = get_json(url, f"/api/agents/finn/now/diff?from={versions[1]['seq']}&to={versions[0]['seq']}")
    assert diff["newer"]["text"] == (demo.home / "finn" / "memory" / "NOW.md").read_text()
    removed = [line["text"] for line in diff["lines"] if line["op"] == "-"]
    added = [line["text"] for line in diff["lines"] if line["op"] == "+"]
    assert "Research Python asyncio and create a summary" in removed
    assert "- [x] Read last week's report" in added and "- numbers.csv is missing March" in added
    assert [line["text"] for line in diff["lines"] if line["op"] != "+"] == diff["older"]["text"].splitlines()
    assert [line["text"] for line in diff["lines"] if line["op"] != "-"] == diff["newer"]["text"].splitlines()
    assert diff["changed"] == len(removed) + len(added)


def test_a_seq_that_is_not_a_now_version_is_refused(demo, serve):
    """from/to must name NOW_UPDATE entries: another entry is a 404, a missing or bad number a 400."""
    url = serve()
    newest = get_json(url, "/api/agents/finn/now/versions")["versions"][0]["seq"]
    assert get(url, f"/api/agents/finn/now/diff?from=1&to={newest}")[0] == 404
    assert get(url, f"/api/agents/finn/now/diff?from=999999&to={newest}")[0] == 404
    assert get(url, f"/api/agents/finn/now/diff?to={newest}")[0] == 400
    assert get(url, f"/api/agents/finn/now/diff?from=x&to={newest}")[0] == 400
    # digits that isdigit() takes but int() does not, and more digits than int() reads: a 500 and a traceback
    for number in ("%C2%B2", "%E2%91%A0", "9" * 5000):
        assert get(url, f"/api/agents/finn/log?limit={number}")[0] == 400, number
        assert get(url, f"/api/agents/finn/now/diff?from={number}&to={newest}")[0] == 400, number
    assert get(url, "/api/agents/finn/now/elsewhere")[0] == 404


def test_a_secret_in_an_earlier_now_is_masked(agents_home, storage_backend, serve):
    """A NOW written with a value before it was saved as a secret shows [REDACTED] in versions and diffs."""
    with MemoryManager("ada", agents_home) as mm:
        mm.update_now("Deploying", blockers=[f"the key {SECRET} is not accepted"])
        mm.update_now("Deploying again", blockers=[])
        with mm.db.transaction() as conn:  # a secret whose scrub has not run yet: LOG.md still holds it
            conn.execute("INSERT INTO user_facts (key, value, category, created_at, updated_at) "
                         "VALUES ('deploy_key', ?, 'secret', '2026-01-31T12:00:00.000Z', "
                         "'2026-01-31T12:00:00.000Z')",
                         (SECRET,))
            conn.execute("DELETE FROM secret_scrubs")
    assert SECRET.encode() in (agents_home / "ada" / "memory" / "LOG.md").read_bytes()
    url = serve()
    status, listing = get(url, "/api/agents/ada/now/versions")
    assert status == 200 and SECRET.encode() not in listing
    versions = get_json(url, "/api/agents/ada/now/versions")["versions"]
    status, diff = get(url, f"/api/agents/ada/now/diff?from={versions[1]['seq']}&to={versions[0]['seq']}")
    assert status == 200 and SECRET.encode() not in diff and b"the key [REDACTED] is not accepted" in diff


def test_activity_follows_new_entries_and_a_replaced_memory(agents_home, serve):
    """The server keeps the counts between requests and reads only what was indexed since; a memory.db whose
    rows changed under it (the agent made again under the same name) is counted again from nothing."""
    import shutil

    with MemoryManager("ada", agents_home) as mm:
        for i in range(5):
            mm.append_log("THOUGHT", f"thought {i}")
    url = serve()
    assert get_json(url, "/api/agents/ada/activity")["totals"]["entries"] == 5
    with MemoryManager("ada", agents_home) as mm:
        mm.append_log("TOOL_USE", "a tool")
    activity = get_json(url, "/api/agents/ada/activity")
    assert activity["totals"]["entries"] == 6 and types_of(activity) == {"THOUGHT": 5, "TOOL_USE": 1}
    shutil.rmtree(agents_home / "ada" / "memory")
    with MemoryManager("ada", agents_home) as mm:
        for i in range(3):
            mm.append_log("USER_FEEDBACK", f"again {i}")
    activity = get_json(url, "/api/agents/ada/activity")
    assert activity["totals"]["entries"] == 3 and types_of(activity) == {"USER_FEEDBACK": 3}


def test_a_compactions_reservation_counted_on_a_live_page_becomes_its_summary(agents_home, serve,
                                                                              monkeypatch):
    """The SYSTEM entry that reserves a compaction is replaced by its SUMMARY under the same seq: a page that
    counted the reservation (and an entry after it) counts the SUMMARY once the compaction is done."""
    import threading

    from core.memory.compaction.log_compaction import LogCompactor

    reserved, go = threading.Event(), threading.Event()
    summarize = LogCompactor._summarize

    def held(self, summarizer, plan):
        reserved.set()
        go.wait(120)
        return summarize(self, summarizer, plan)

    monkeypatch.setattr(LogCompactor, "_summarize", held)
    url = serve()
    with MemoryManager("ada", agents_home) as mm:
        for i in range(5):
            mm.append_log("THOUGHT", f"thought {i}")
        compaction = threading.Thread(target=mm.compact_log)
        compaction.start()
        assert reserved.wait(120)
        mm.append_log("TOOL_USE", "a tool, while the summary is written")
        assert types_of(get_json(url, "/api/agents/ada/activity")) == {"THOUGHT": 5, "SYSTEM": 1,
                                                                       "TOOL_USE": 1}
        go.set()
        compaction.join(120)
    assert types_of(get_json(url, "/api/agents/ada/activity")) == {"THOUGHT": 5, "SUMMARY": 1, "TOOL_USE": 1}
