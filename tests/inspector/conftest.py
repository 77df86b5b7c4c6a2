"""An agent with a realistic memory, made through the public API, and an inspector serving it."""

from __future__ import annotations

import threading
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone
from pathlib import Path
from unittest import mock

import pytest

from core.config import load_config
from core.memory.files import log_file
from core.memory.files.log_format import utc_timestamp
from core.inspector.server import InspectorServer
from core.memory.storage.backend import open_database
from core.memory.provider import CompactionMode, Message, Session
from core.memory_manager import MemoryManager
from core.plugins.memory import open_provider
from core.paths import AgentPaths
from core.plugins.memory.lcm import DeterministicSummarizer

SECRET = "sk-live-4242-abcd"
SCRIPT_TEXT = (
    "<script>window.__pwned = 1; alert('xss')</script><img src=x onerror=\"window.__pwned = 2\"> looks fine"
)


@dataclass
class Demo:
    """What the demo agent holds, for tests to look for."""

    home: Path
    name: str
    interrupted_run: str
    current_run: str
    failed_run: str
    archive_id: str
    session_id: str
    secret_seq: int
    script_seq: int
    history: int
    """How many entries the history before the runs holds (seqs 1 to this)."""

    @property
    def archived(self) -> int:
        """How many entries the compaction archived (seqs 1 to this)."""
        return int(self.archive_id.rsplit("-", 1)[1])


HISTORY_DAYS = 9
"""How many days before today the demo agent's history starts."""


@contextmanager
def logged_on(days_ago: int, hour: int):
    """LOG.md entries written in the block are stamped ``days_ago`` days before now at ``hour`` UTC, a minute
    apart: a history written in a moment, as if over days (the format takes any time; seqs still increase)."""
    day = datetime.now(timezone.utc).replace(hour=hour, minute=0, second=0,
                                             microsecond=0) - timedelta(days=days_ago)
    minutes = iter(range(60))
    with mock.patch.object(log_file, "utc_timestamp", lambda moment=None: utc_timestamp(
            day + timedelta(minutes=next(minutes)))):
        yield


def write_history(mm: MemoryManager) -> None:
    """Nine days of an agent keeping a watch list, before the demo's runs: 20 entries and two NOW updates,
    with no run, error or word the demo's tests look for."""
    days = {
        9: [("USER_FEEDBACK", "Keep a watch list of AAPL, MSFT and the bond fund"),
            ("NOW", "Listing the holdings"), ("TOOL_USE", "load_csv holdings.csv -> 4 KB")],
        8: [("THOUGHT", "The bond fund is a third of the holdings"),
            ("TOOL_USE", "fetch_prices AAPL MSFT -> 2 quotes")],
        7: [("TOOL_USE", "edit_file watchlist.md -> 1 KB")],
        5: [("USER_FEEDBACK", "Add NVDA to the watch list"), ("NOW", "Adding NVDA to the watch list"),
            ("TOOL_USE", "fetch_prices NVDA -> 1 quote"), ("THOUGHT", "NVDA moved 4% this week"),
            ("TOOL_USE", "edit_file watchlist.md -> 1 KB")],
        4: [("THOUGHT", "Prices update at 22:00 UTC; check them the next morning")],
        3: [("TOOL_USE", "fetch_prices AAPL MSFT NVDA -> 3 quotes"),
            ("TOOL_USE", "edit_file watchlist.md -> 1 KB"),
            ("THOUGHT", "MSFT is flat since Monday")],
        2: [("USER_FEEDBACK", "Drop the bond fund from the list"),
            ("TOOL_USE", "edit_file watchlist.md -> 1 KB"),
            ("THOUGHT", "The watch list holds three shares now")],
    }
    for days_ago, entries in days.items():
        with logged_on(days_ago, hour=9):
            for entry_type, text in entries:
                if entry_type == "NOW":
                    mm.update_now(text, objective="Keep the watch list current",
                                  next_steps=["Update the prices", "Note what moved"])
                else:
                    mm.append_system(entry_type, text)


def build_demo_agent(home: Path, name: str = "finn") -> Demo:
    """An agent with nine days of history, runs (done, failed, interrupted, running), a compaction, facts (one
    secret whose value an older LOG entry holds), notes, a `<script>` entry and an LCM conversation with a
    summary DAG."""
    config = home / name / "config"
    config.mkdir(parents=True)
    # An unreachable embedder: notes and archives wait for the cold store, like an agent whose model is off.
    (config / "config.yaml").write_text('cold: {embedder: "ollama:nomic-embed-text"}\nmemory: {auto_compact: '
                                        'false}\n')
    with MemoryManager(name, home) as mm:
        write_history(mm)
        history = mm.log.last_seq()
        done = mm.start_run("Research Python asyncio and create a summary")
        mm.update_now("Reading the asyncio docs", objective="Research Python asyncio and create a summary",
                      next_steps=["Read the docs", "Write the summary"], run_id=done)
        mm.append_system("TOOL_USE", "read_file docs/asyncio.md -> 18 KB",
                         {"run_id": done, "tool": "read_file"})
        mm.append_system("THOUGHT", "asyncio runs coroutines on one event loop; gather() waits for several",
                         {"run_id": done})
        mm.append_system("TOOL_USE", "write_file summary.md -> 2 KB", {"run_id": done, "tool": "write_file"})
        mm.end_run(done, "done", "summary.md written")
        secret_seq = mm.append_system("USER_FEEDBACK", f"My deploy key is {SECRET}, use it for the release")
        with mm.db.transaction() as conn:  # a secret whose scrub has not run yet: the files still hold it
            conn.execute("INSERT INTO user_facts (key, value, category, created_at, updated_at) "
                         "VALUES ('deploy_api_key', ?, 'secret', '2026-01-31T12:00:00.000Z', "
                         "'2026-01-31T12:00:00.000Z')",
                         (SECRET,))
            conn.execute("DELETE FROM secret_scrubs")
        mm.save_fact("preferred_currency", "USD", category="preference")
        mm.save_fact("home_city", "Lisbon", category="personal")
        mm.save_fact("report_day", "Friday", category="general")
        failed = mm.start_run("Deploy the report service")
        mm.append_system("TOOL_USE", "shell: docker compose up report", {"run_id": failed, "tool": "shell"})
        mm.append_system("ERROR", "Deploy failed with error 137 (the container was OOM-killed)",
                         {"run_id": failed})
        mm.end_run(failed, "error", "error 137")
        script_seq = mm.append_system("USER_FEEDBACK", SCRIPT_TEXT)
        report = mm.compact_log("Researched asyncio (summary.md written); the deploy failed with error 137.")
        interrupted = mm.start_run("Summarise the quarterly numbers")
        mm.append_system("STEP_START", "Load numbers.csv", {"run_id": interrupted})
        mm.append_system("TOOL_USE", "read_file numbers.csv -> 3 KB",
                         {"run_id": interrupted, "tool": "read_file"})
        current = mm.start_run("Write the weekly report for Maria")
        mm.update_now("Collecting this week's numbers", objective="Write the weekly report for Maria",
                      next_steps=["Collect numbers", "Draft the report", "Send it on Friday"],
                      done_steps=["Read last week's report"], blockers=["numbers.csv is missing March"],
                      run_id=current)
        mm.append_system("THOUGHT", "The report goes to Maria on Fridays", {"run_id": current})
        mm.store_memory("The report goes to Maria on Fridays")
        mm.store_memory("Exit code 137 means the kernel killed the process for using too much memory")
    session_id = f"{name}:cli:main"
    paths = AgentPaths.for_agent(name, home)
    provider = open_provider("lcm", open_database(paths, load_config(paths).storage),
                             summarizer=DeterministicSummarizer())
    try:
        session = Session(session_id, agent_id=name, user_id="ada", channel="cli")
        provider.bootstrap(session)
        for turn in range(40):
            provider.append(session,
                            [Message("user", f"Question {turn}: how do I handle task {turn} in asyncio?"),
                                      Message("assistant", f"Answer {turn}: wrap task {turn} in "
                                                           "asyncio.create_task and await it.")])
            if turn == 3:
                provider.append(session, [Message("user", f"The staging key is {SECRET} if you need it")])
            if turn % 10 == 9:  # compacted as the conversation grows, like the engine does
                provider.compact(session, CompactionMode.INCREMENTAL)
        provider.compact(session, CompactionMode.FULL)
    finally:
        provider.close()
    return Demo(home, name, interrupted, current, failed, report.archive_id, session_id, secret_seq,
                script_seq,
                history)


@pytest.fixture
def demo(agents_home: Path, storage_backend: str) -> Demo:
    """The demo agent, with its memory tables in memory.db, then in a PostgreSQL schema."""
    return build_demo_agent(agents_home)


@pytest.fixture
def serve(agents_home: Path):
    """Start an inspector on a free port (of the loopback address unless ``host`` names another); yields a
    function returning its base URL."""
    servers: list[InspectorServer] = []

    def start(home: Path = agents_home, host: str = "127.0.0.1", allow_hosts: tuple[str, ...] = ()) -> str:
        server = InspectorServer(host, 0, home, allow_hosts)
        threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True).start()
        servers.append(server)
        return server.url

    yield start
    for server in servers:
        server.shutdown()
        server.stop()


@dataclass
class Learner:
    """An agent whose reflection learned facts from a LOG entry, a message and a note, one entry
    quarantined."""

    name: str
    target_seq: int
    """The LOG entry that says the deploy target."""
    message_id: int
    note_id: str
    quarantined_seq: int
    reason: str


def build_learning_agent(home: Path, name: str = "rhea") -> Learner:
    """An agent that learned, with the offline backend's rules (a real reflection pass):
    ``user.deploy_target`` from a LOG entry, ``user.favourite_editor`` from a conversation message,
    ``user.favourite_tea`` from a note and a secret ``user.api_token``; then an entry read by a model whose
    reply failed, quarantined."""
    from core.llm.select import choose_backend
    from core.memory.reflection import state

    with MemoryManager(name, home) as mm:
        mm.append_system("THOUGHT", "The watch list is done")
        target_seq = mm.append_system("USER_FEEDBACK", "Remember that my deploy target is fly.io")
        mm.append_system("USER_FEEDBACK", f"my api token is {SECRET}")
        note_id = mm.store_memory("My favourite tea is sencha")
    paths = AgentPaths.for_agent(name, home)
    provider = open_provider("simple", open_database(paths, load_config(paths).storage))
    try:
        session = Session(f"{name}:cli:main", agent_id=name, user_id="ada", channel="cli")
        provider.bootstrap(session)
        provider.append(session,
                        [Message("user", "My favourite editor is helix."), Message("assistant", "Noted.")])
    finally:
        provider.close()
    with MemoryManager(name, home) as mm:
        mm.reflection.run(choose_backend(mm.config.llm, offline=True).backend)
        message_id = int(mm.db.conn.execute("SELECT id FROM ctx_messages WHERE role = 'user'").fetchone()[0])
        quarantined_seq = mm.append_system("USER_FEEDBACK", "I moved to Porto last week")
        reason = "the reply was not JSON: 'Sure! Here are the facts' (asked again, then split)"
        with mm.db.transaction() as conn:  # as a pass whose model failed on the entry leaves it
            state.quarantine(conn, f"log:{quarantined_seq}", reason, "qwen2.5:7b", 60)
    return Learner(name, target_seq, message_id, note_id.partition(":")[2] or note_id, quarantined_seq,
                   reason)
