"""Moving an existing agent to PostgreSQL: memory.db copied into the agent's schema, whole, once."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from core.errors import ValidationError
from core.memory.storage.postgres.copy import copy_memory_db
from core.memory.provider import CompactionMode, Message, SearchQuery, Session
from core.memory.storage.backend import open_database
from core.memory_manager import MemoryManager
from core.plugins.memory.lcm import DeterministicSummarizer, LCMProvider
from tests.providers.conftest import SMALL_CONFIG, conversation

ROOT = Path(__file__).resolve().parents[2]
SESSION = Session("finn:main", agent_id="finn", user_id="ada", channel="cli")


def test_copy_moves_every_table_and_new_rows_follow(pg_home, monkeypatch):
    """After copy-to-postgres the agent reads the same facts, history, summaries and profile; new rows get new
    ids; a secret whose scrub was still queued is copied with its queue row and scrubbed at the first open;
    the reflection queue is memory.db's (a message already reflected is not queued again by the copy)."""
    dsn = os.environ["AGENTOS_DSN"]
    monkeypatch.delenv("AGENTOS_DSN")
    with MemoryManager("finn") as manager:  # an agent kept in SQLite so far
        manager.save_fact("city", "Porto")
        manager.save_fact("pin", "4455-9911", "secret")
        manager.db.conn.execute("INSERT INTO secret_scrubs (key, queued_at) VALUES ('pin', "
                                "'2026-01-01T00:00:00.000Z')")
        manager.append_log("THOUGHT", "before the move")
        sqlite_lcm = LCMProvider(manager.paths.db_file, summarizer=DeterministicSummarizer(),
                                 config=SMALL_CONFIG)
        for turn in conversation(12):
            sqlite_lcm.append(SESSION, turn)
        sqlite_lcm.compact(SESSION, CompactionMode.FULL)
        sqlite_lcm.set_profile("ada", "finn", "likes trains")
        history, context = sqlite_lcm.load_history(SESSION.id), sqlite_lcm.assemble(SESSION, 10**6, 4)
        sqlite_lcm.close()
        manager.db.conn.execute("DELETE FROM reflect_pending WHERE item = 'msg:1'")  # reflected already
        queued = sorted(row[0] for row in manager.db.conn.execute("SELECT item FROM reflect_pending"))
        assert queued and "msg:1" not in queued

    monkeypatch.setenv("AGENTOS_DSN", dsn)
    result = subprocess.run([sys.executable, "-m", "core", "copy-to-postgres", "--agent", "finn"], cwd=ROOT,
                            env=dict(os.environ), capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    assert f"ctx_messages: {len(history)} rows" in result.stdout and "user_facts: 2 rows" in result.stdout
    assert "secret_scrubs: 1 rows" in result.stdout

    with MemoryManager("finn") as manager:
        assert manager.db.dialect.name == "postgres" and manager.get_fact("city") == "Porto"
        assert manager.get_fact("pin") == "4455-9911" and manager.scrubber.pending() == []
        lcm = LCMProvider(open_database(manager.paths, manager.config.storage),
                          summarizer=DeterministicSummarizer(), config=SMALL_CONFIG)
        assert lcm.load_history(SESSION.id) == history and lcm.assemble(SESSION, 10**6, 4) == context
        assert (lcm.get_profile("ada", "finn") == "likes trains"
                and lcm.get_profile_at("ada", "finn", 1) == "likes trains")
        assert lcm.search(SESSION, SearchQuery("module m3"))
        assert sorted(row[0] for row in manager.db.conn.execute("SELECT item FROM reflect_pending")) == queued
        lcm.append(SESSION, [Message("user", "after the move")])
        assert lcm.load_history(SESSION.id)[-1].content == "after the move"
        manager.save_fact("country", "Portugal")
        with pytest.raises(ValidationError, match="already holds rows"):
            copy_memory_db(manager.paths.db_file, lcm.db)
        lcm.close()
