"""The inspector's HTTP answers over a real agent: what it shows, how it pages, and that it is safe."""

from __future__ import annotations

import hashlib
import http.client
import json
import os
import time
import urllib.parse
from pathlib import Path

import psycopg
from psycopg import sql

from core.memory_manager import MemoryManager
from tests.inspector.conftest import SCRIPT_TEXT, SECRET


def get(url: str, path: str, method: str = "GET", headers: dict | None = None) -> tuple[int, bytes]:
    parts = urllib.parse.urlsplit(url)
    conn = http.client.HTTPConnection(parts.hostname, parts.port, timeout=30)
    try:
        conn.request(method, path, headers=headers or {})
        response = conn.getresponse()
        return response.status, response.read()
    finally:
        conn.close()


def get_json(url: str, path: str) -> dict:
    status, body = get(url, path)
    assert status == 200, body
    return json.loads(body)


def all_entries(url: str, agent: str, query: str = "", limit: int = 5) -> list[dict]:
    """Every timeline entry, paging down with ``before``."""
    entries, before = [], ""
    while True:
        page = get_json(url, f"/api/agents/{agent}/log?limit={limit}{query}{before}")
        entries += page["entries"]
        if not page["has_older"]:
            return entries
        before = f"&before={page['entries'][-1]['seq']}"


def test_every_agent_of_the_home_is_listed(demo, serve):
    """/api/agents lists each agent folder of the home with its NOW status and objective."""
    with MemoryManager("ada", demo.home) as mm:
        mm.update_now("idle")
    agents = get_json(serve(), "/api/agents")["agents"]
    assert [a["name"] for a in agents] == ["ada", "finn"]
    assert agents[1]["status"] == "active" and agents[1]["objective"] == "Write the weekly report for Maria"


def test_the_first_view_shows_every_panel(demo, serve):
    """The overview holds NOW, tier sizes, facts, runs, the newest entries, notes, conversations and
    compactions."""
    view = get_json(serve(), "/api/agents/finn")
    assert view["now"]["plan"][0] == {"text": "Read last week's report", "done": True}
    assert view["now"]["blockers"] == ["numbers.csv is missing March"]
    assert view["sizes"]["hot"]["NOW.md"] > 0 and view["sizes"]["warm"]["archive_files"] == 1
    assert view["sizes"]["cold"]["memory.db"] > 0
    assert {f["key"]: f["value"] for f in view["facts"]}["preferred_currency"] == "USD"
    assert [n["text"] for n in view["notes"]["notes"]][-1] == "The report goes to Maria on Fridays"
    assert view["conversations"][0]["session_id"] == demo.session_id
    assert view["compactions"]["compactions"][0]["archive_id"] == demo.archive_id
    outcomes = {r["run_id"]: r["outcome"] for r in view["runs"]}
    assert outcomes[demo.failed_run] == "error" and outcomes[demo.current_run] == "running"
    assert outcomes[demo.interrupted_run] == "never ended"
    assert [r["run_id"] for r in view["never_ended"] if not r["running"]] == [demo.interrupted_run]
    assert view["timeline"]["entries"][0]["seq"] == view["timeline"]["newest_seq"]


def test_timeline_pages_through_log_and_archives_without_gaps(demo, serve):
    """Paging newest first with ``before`` returns every seq of LOG.md and its archives once, in order."""
    url = serve()
    entries = all_entries(url, "finn")
    seqs = [e["seq"] for e in entries]
    assert seqs == sorted(seqs, reverse=True) and len(seqs) == len(set(seqs))
    assert seqs == list(range(seqs[0], 0, -1))
    assert {e["archive"] for e in entries if e["seq"] <= 12} == {demo.archive_id}
    newer = get_json(url, f"/api/agents/finn/log?limit=5&after={seqs[10]}")
    assert [e["seq"] for e in newer["entries"]] == seqs[5:10] and newer["has_newer"] and newer["has_older"]


def test_filters_by_type_run_and_archive(demo, serve):
    """type, run and archive filters keep only matching entries, and the total counts them."""
    url = serve()
    errors = get_json(url, "/api/agents/finn/log?type=ERROR")
    assert [e["text"]
            for e in errors["entries"]] == ["Deploy failed with error 137 (the container was OOM-killed)"]
    assert errors["total"] == 1
    run = all_entries(url, "finn", f"&run={demo.failed_run}")
    assert [e["type"] for e in run] == ["RUN_END", "ERROR", "TOOL_USE", "RUN_START"]
    both = all_entries(url, "finn", "&type=RUN_START,RUN_END")
    assert {e["type"] for e in both} == {"RUN_START", "RUN_END"} and len(both) == 6
    archived = all_entries(url, "finn", f"&archive={demo.archive_id}")
    assert [e["seq"] for e in archived] == list(range(demo.archived, 0, -1))


def test_search_is_case_insensitive_across_archives_and_never_finds_a_secret(demo, serve):
    """q finds entries in LOG.md and archives in any case, in text or metadata, but not by a masked secret."""
    url = serve()
    found = all_entries(url, "finn", "&q=ASYNCIO", limit=2)
    assert [(e["seq"], e["archive"]) for e in found] == [(demo.archived + 1, None)] + [
        (demo.history + s, demo.archive_id) for s in (4, 3, 2, 1)
    ]
    assert [e["type"] for e in all_entries(url, "finn", "&q=write_file")] == ["TOOL_USE"]
    assert [e["type"] for e in all_entries(url, "finn", "&q=maria&type=THOUGHT")] == ["THOUGHT"]
    assert all_entries(url, "finn", f"&q={SECRET}") == []
    assert all_entries(url, "finn", "&q=x%C3%A9zzz") == []


def test_secrets_are_masked_in_every_answer(demo, serve):
    """No answer carries a secret value: facts of category secret, LOG text written before the secret
    was saved, and conversation messages all show [REDACTED]."""
    url = serve()
    view = get_json(url, "/api/agents/finn")
    conv = view["conversations"][0]["id"]
    paths = ["/api/agents", "/api/agents/finn", "/api/agents/finn/state", "/api/agents/finn/log?limit=500",
             f"/api/agents/finn/log?archive={demo.archive_id}", "/api/agents/finn/notes",
             "/api/agents/finn/compactions", f"/api/agents/finn/conversations/{conv}"]
    bodies = [get(url, p)[1] for p in paths]
    roots = get_json(url, f"/api/agents/finn/conversations/{conv}")["roots"]
    bodies += [get(url, f"/api/agents/finn/summaries/{r['id']}")[1] for r in roots]
    raw = (demo.home / "finn" / "memory" / "archive" / f"{demo.archive_id}.md").read_text()
    assert SECRET in raw  # the archive holds it; the inspector must not show it
    assert all(SECRET.encode() not in body for body in bodies)
    entry = next(e for e in all_entries(url, "finn") if e["seq"] == demo.secret_seq)
    assert entry["text"] == "My deploy key is [REDACTED], use it for the release"
    assert {f["key"]: f["value"] for f in view["facts"]}["deploy_api_key"] == "[REDACTED]"


def test_a_fact_lists_its_earlier_values_and_never_a_secret(demo, serve):
    """The facts say how many earlier values each kept; /facts/<key> lists the values newest first with when
    each was saved and replaced, as MemoryManager.get_fact(key, history=True) does; a secret's values, and a
    fact's earlier values while it is secret, are [REDACTED]; an unknown key is a 404."""
    with MemoryManager("finn", demo.home) as mm:
        mm.save_fact("home_city", "Porto", category="personal")
        mm.save_fact("home_city", "Berlin", category="personal")
        mm.save_fact("deploy_api_key", "sk-live-5555-efgh", category="secret")
        mm.save_fact("staging_token", "tok-plain-123456")
        mm.save_fact("staging_token", "tok-secret-654321", category="secret")
        expected = mm.get_fact("home_city", history=True)
    url = serve()
    counts = {f["key"]: f["versions"] for f in get_json(url, "/api/agents/finn/state")["facts"]}
    assert counts == {"deploy_api_key": 1, "home_city": 2, "preferred_currency": 0, "report_day": 0,
                      "staging_token": 1}
    city = get_json(url, "/api/agents/finn/facts/home_city")
    assert city["history"] == expected and city["earlier"] == 2
    assert [(v["value"], v["replaced_at"] is None) for v in city["history"]] == [
        ("Berlin", True), ("Porto", False), ("Lisbon", False)]
    assert city["history"][1]["replaced_at"] == city["history"][0]["saved_at"]
    bodies = [get(url, f"/api/agents/finn/facts/{key}")[1] for key in ("deploy_api_key", "staging_token")]
    for body in bodies:
        assert [v["value"] for v in json.loads(body)["history"]] == ["[REDACTED]", "[REDACTED]"]
    for value in (SECRET, "sk-live-5555-efgh", "tok-plain-123456", "tok-secret-654321"):
        assert all(value.encode() not in body for body in bodies)
    assert get(url, "/api/agents/finn/facts/no_such_fact")[0] == 404
    assert get(url, "/api/agents/finn/facts/home_city/more")[0] == 404


def test_html_in_an_entry_is_returned_as_text_and_the_page_runs_no_inline_script(demo, serve):
    """A LOG entry holding <script> comes back as the same text in JSON; every answer forbids inline
    scripts."""
    url = serve()
    entry = next(e for e in all_entries(url, "finn") if e["seq"] == demo.script_seq)
    assert entry["text"] == SCRIPT_TEXT
    conn = http.client.HTTPConnection(*urllib.parse.urlsplit(url).netloc.split(":"))
    conn.request("GET", "/")
    response = conn.getresponse()
    page = response.read().decode()
    assert "script-src 'self'" in response.getheader("Content-Security-Policy")
    assert response.getheader("X-Content-Type-Options") == "nosniff"
    scripts = [f"<script src=\"/static/{name}\" defer></script>" for name in ("chart.js", "app.js",
                                                                              "reflection.js")]
    assert all(tag in page for tag in scripts) and page.count("<script") == len(scripts)
    for name in ("app.js", "chart.js", "reflection.js"):
        script = get(url, f"/static/{name}")[1].decode()
        assert (
            "innerHTML" not in script
            and "insertAdjacentHTML" not in script
            and "document.write" not in script
        )
        assert "outerHTML" not in script and "DOMParser" not in script and "eval(" not in script


CRAFTED = [
    "/api/agents/..", "/api/agents/%2e%2e", "/api/agents/..%2f..%2fetc", "/api/agents/FINN",
    "/api/agents/finn%00",
    "/api/agents/ghost", "/api/agents/finn/../../etc/passwd", "/api/agents/finn/log?archive=../../etc/passwd",
    "/api/agents/finn/log?archive=LOG-1-12.md", "/api/agents/finn/log?archive=%2Fetc%2Fpasswd",
    "/api/agents/finn/log?archive=LOG-99-100", "/api/agents/finn/conversations/1;drop",
    "/api/agents/finn/conversations/-1", "/api/agents/finn/conversations/99999",
    "/api/agents/finn/summaries/..%2f..%2fx", "/api/agents/finn/summaries/sum_nope",
    "/static/../cli.py", "/static/%2e%2e%2fcli.py", "/static/server.py", "/api/agents/finn/nothing",
    "/api/agents/finn/facts/..%2f..%2fetc%2fpasswd", "/api/agents/finn/facts/%00", "/api/agents/finn/facts",
    "/api/agents/finn/now", "/api/agents/finn/now/..%2f..%2fNOW.md", "/api/agents/finn/now/versions/1",
    "/api/agents/finn/now/diff?from=1&to=2", "/api/agents/finn/activity/LOG.md",
]


def test_a_crafted_name_or_file_parameter_is_not_found(demo, serve):
    """Agent names, archive ids, conversation and summary ids and asset names that are not ones get a 404."""
    url = serve()
    assert {path: get(url, path)[0] for path in CRAFTED} == {path: 404 for path in CRAFTED}


def tree_digest(folder: Path) -> dict[str, str]:
    return {str(p.relative_to(folder)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(folder.rglob("*")) if p.is_file()}


def schema_digest() -> dict[str, str]:
    """A digest of every table's rows in the PostgreSQL schemas of ``$AGENTOS_DSN`` ({} with SQLite)."""
    dsn = os.environ.get("AGENTOS_DSN")
    if not dsn:
        return {}
    with psycopg.connect(dsn) as conn:
        tables = conn.execute("SELECT table_schema, table_name FROM information_schema.tables WHERE "
                              "table_schema NOT IN ('pg_catalog', 'information_schema') AND table_type = "
                              "'BASE TABLE'").fetchall()
        return {f"{schema}.{table}": conn.execute(
            sql.SQL("SELECT md5(coalesce(string_agg(t::text, '|' ORDER BY t::text), '')) FROM {} t").format(
                sql.Identifier(schema, table))).fetchone()[0] for schema, table in tables}


def test_no_request_writes(demo, serve):
    """Every endpoint, and every write method, leaves the agent's files byte-identical (SQLite may add
    its empty -wal/-shm companions beside memory.db) and its PostgreSQL schema's rows as they were;
    write methods are refused with 405."""
    url = serve()
    before = tree_digest(demo.home)
    rows_before = schema_digest()
    view = get_json(url, "/api/agents/finn")
    conv = view["conversations"][0]["id"]
    for path in ["/", "/static/app.js", "/api/agents", "/api/agents/finn/state",
                 "/api/agents/finn/log?q=asyncio",
                 f"/api/agents/finn/log?archive={demo.archive_id}", "/api/agents/finn/notes",
                 "/api/agents/finn/compactions", f"/api/agents/finn/conversations/{conv}",
                 "/api/agents/finn/facts/home_city", "/static/chart.js", "/api/agents/finn/activity",
                 "/api/agents/finn/now/versions"]:
        assert get(url, path)[0] == 200
    versions = get_json(url, "/api/agents/finn/now/versions")["versions"]
    assert get(url, f"/api/agents/finn/now/diff?from={versions[-1]['seq']}&to={versions[0]['seq']}")[0] == 200
    for root in get_json(url, f"/api/agents/finn/conversations/{conv}")["roots"]:
        assert get(url, f"/api/agents/finn/summaries/{root['id']}")[0] == 200
    for method in ("POST", "PUT", "PATCH", "DELETE"):
        assert get(url, "/api/agents/finn", method)[0] == 405
    after = tree_digest(demo.home)
    companions = {"finn/memory/memory.db-wal", "finn/memory/memory.db-shm"}
    assert {k: v for k, v in after.items() if k not in companions} == before
    assert after.get("finn/memory/memory.db-wal",
                     hashlib.sha256(b"").hexdigest()) == hashlib.sha256(b"").hexdigest()
    assert schema_digest() == rows_before


HOST_REFUSED = {"error": "unexpected Host header: open the address the inspector printed, or start it with "
                         "--allow-host NAME for the name you open it by", "status": 403}


def test_a_foreign_host_header_is_refused(demo, serve):
    """A request whose Host is not the loopback address (DNS rebinding) gets 403 and no data."""
    url = serve()
    for path in ("/api/agents/finn", "/api/agents/finn/activity", "/api/agents/finn/now/versions"):
        status, body = get(url, path, headers={"Host": "attacker.example:80"})
        assert status == 403 and json.loads(body) == HOST_REFUSED


def test_bound_to_every_interface_it_answers_only_the_names_it_was_given(demo, serve):
    """``--host 0.0.0.0`` skipped the Host check, so a page of attacker.example whose name was made to
    resolve to this machine read every agent's memory: the Host must be the bound address, a loopback name or
    one given with ``--allow-host``, whatever the bound address."""
    url = serve(host="0.0.0.0", allow_hosts=("inspector.lan",))
    port = urllib.parse.urlsplit(url).port
    local = f"http://127.0.0.1:{port}/"
    for host in ("attacker.example", f"attacker.example:{port}", f"inspector.lan.attacker.example:{port}",
                 f"inspector.lan:{port + 1}"):
        status, body = get(local, "/api/agents/finn", headers={"Host": host})
        assert status == 403 and json.loads(body) == HOST_REFUSED, host
    for host in (f"127.0.0.1:{port}", f"localhost:{port}", f"0.0.0.0:{port}", f"inspector.lan:{port}"):
        status, body = get(local, "/api/agents/finn", headers={"Host": host})
        assert status == 200 and json.loads(body)["now"]["blockers"] == ["numbers.csv is missing March"], host


def test_entries_not_yet_indexed_are_shown(demo, serve):
    """An entry whose line reached LOG.md but not the index (a writer killed between the two) is on the first
    page."""
    with MemoryManager("finn", demo.home) as mm:
        late = mm.log.append("THOUGHT", "written, then the process died before indexing it")
    page = get_json(serve(), "/api/agents/finn/log?limit=3")
    assert page["entries"][0]["seq"] == late.seq and page["entries"][0]["text"].startswith("written, then")
    assert page["newest_seq"] == late.seq


def test_a_damaged_line_is_reported_and_the_rest_shown(demo, serve):
    """A LOG.md line that fails its CRC is shown as unreadable; the entries around it are intact."""
    log = demo.home / "finn" / "memory" / "LOG.md"
    data = log.read_bytes()
    target = data.index(b"Load numbers.csv")
    log.write_bytes(data[:target] + b"L0ad" + data[target + 4:])
    entries = all_entries(serve(), "finn")
    damaged = [e for e in entries if e.get("unreadable")]
    assert [e["type"] for e in damaged] == ["STEP_START"]
    assert all(e["text"] for e in entries if not e.get("unreadable"))


def test_a_summary_expands_down_to_its_original_messages(demo, serve):
    """From the DAG's tops, expanding summaries reaches every message outside the fresh tail once, in
    order."""
    url = serve()
    conv = get_json(url, "/api/agents/finn")["conversations"][0]
    detail = get_json(url, f"/api/agents/finn/conversations/{conv['id']}")
    assert [r["kind"] for r in detail["roots"]] == ["condensed", "leaf"] and detail["roots"][0]["depth"] == 1

    def leaves(summary_id: str) -> list[int]:
        node = get_json(url, f"/api/agents/finn/summaries/{summary_id}")
        if "messages" in node:
            return [m["seq"] for m in node["messages"]]
        return [seq for child in node["children"] for seq in leaves(child["id"])]

    covered = [seq for root in detail["roots"] for seq in leaves(root["id"])]
    assert covered == list(range(1, len(covered) + 1))
    assert sum(r["descendant_count"] for r in detail["roots"]) == len(covered)
    first = get_json(url, f"/api/agents/finn/summaries/{detail['roots'][0]['id']}")
    assert first["children"][0]["earliest_at"] <= first["children"][-1]["latest_at"]


def test_events_report_a_new_entry(demo, serve):
    """The event stream sends a change with the new newest seq after an engine appends (the stream's 60 s
    timeout only guards against a hang: the server checks every POLL_S)."""
    url = serve()
    parts = urllib.parse.urlsplit(url)
    conn = http.client.HTTPConnection(parts.hostname, parts.port, timeout=60)
    conn.request("GET", "/api/agents/finn/events")
    stream = conn.getresponse()
    assert stream.getheader("Content-Type").startswith("text/event-stream")

    def next_change() -> dict:
        lines = []
        while (line := stream.readline().decode()) != "\n":
            lines.append(line)
        return json.loads(next(l for l in lines if l.startswith("data: "))[6:])

    first = next_change()
    with MemoryManager("finn", demo.home) as mm:
        seq = mm.append_log("THOUGHT", "a new thought")
    deadline = time.monotonic() + 60
    change = next_change()
    while change["newest_seq"] == first["newest_seq"] and time.monotonic() < deadline:
        change = next_change()  # opening the agent changed memory.db before LOG.md: a change, no new entry
    assert change["newest_seq"] == seq
    assert first["newest_seq"] == seq - 1
    conn.close()


def test_a_conversation_is_not_titled_with_a_forgotten_message(agents_home, storage_backend, serve):
    """The conversation's title is its first request; once that message is forgotten, the title is the next
    request that is not."""
    from core.engine.cli import main as engine
    from tests.inprocess import run_main

    for request in ("remember that my city is Porto", "what is my city"):
        assert run_main(engine, ["--agent", "finn", "--create", "--offline", request]).returncode == 0
    url = serve()
    conv = get_json(url, "/api/agents/finn")["conversations"][0]
    assert conv["title"] == "remember that my city is Porto"
    with MemoryManager("finn") as mm:
        found = mm.recall_memory("remember that my city is Porto", n_results=10, kind="message")
        assert mm.forget_memory(next(h["id"] for h in found
                                     if h["content"] == "remember that my city is Porto"))
    shown = get_json(url, "/api/agents/finn")["conversations"][0]
    assert shown["title"] == "what is my city"
    assert (
        get_json(url, f"/api/agents/finn/conversations/{conv['id']}")["conversation"]["title"]
        == "what is my city"
    )
