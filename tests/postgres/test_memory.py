"""An agent's memory on PostgreSQL: the same behaviour as memory.db, shared across processes, with clear
errors."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import threading
from pathlib import Path

import psycopg
import pytest

from core.config import StorageConfig, load_config
from core.errors import ConfigError, StorageError
from core.memory.storage.postgres.database import PostgresDatabase
from core.memory.storage.postgres.pool import advisory_key
from core.memory.provider import Message, Session
from core.memory.recall.docs import Filters
from core.memory.storage.backend import schema_name
from core.memory_manager import MemoryManager
from core.paths import AgentPaths
from core.plugins.memory.lcm import LCMProvider
from tests.postgres_server import free_port

ROOT = Path(__file__).resolve().parents[2]


def test_memory_manager_keeps_its_tables_in_the_agents_schema(pg_home):
    """Facts, the LOG.md index, interrupted runs and recall's word index work on PostgreSQL, and no memory.db
    is made."""
    with MemoryManager("finn") as manager:
        manager.save_fact("city", "Porto")
        manager.save_fact("city", "Lisbon", "personal")
        manager.append_log("THOUGHT", "a thought kept in LOG.md, indexed in PostgreSQL")
        run_id = manager.start_run("an objective")
        assert manager.get_fact("city") == "Lisbon"
        assert [run["run_id"] for run in manager.interrupted_runs()] == [run_id]
        assert manager.rebuild_log_index() == 4  # two FACT entries, the thought, the RUN_START
        manager.cold.indexer.sync()
        assert [doc_id for doc_id,
                _ in manager.cold.docs.words("which city? Lisbon", 5, Filters())] == ["fact:city"]
        schema = manager.db.schema
    assert schema == schema_name("finn", load_config(AgentPaths.for_agent("finn")).storage)
    assert not (pg_home / "finn" / "memory" / "memory.db").exists()
    with MemoryManager("finn") as again:
        assert again.list_facts()[0]["value"] == "Lisbon"
    status = subprocess.run([sys.executable, "-m", "core", "status", "--agent", "finn", "--json"], cwd=ROOT,
                            env=dict(os.environ), capture_output=True, text=True, timeout=120)
    assert status.returncode == 0, status.stderr
    assert f"schema='{schema}'" in json.loads(status.stdout)["database"]


def test_another_folder_of_the_agent_is_refused(pg_home, tmp_path, monkeypatch):
    """A schema belongs to one agent folder: a moved copy of it is accepted, a different folder is refused."""
    MemoryManager("finn").close()
    moved = tmp_path / "other-host"
    shutil.copytree(pg_home, moved)
    monkeypatch.setenv("AGENTOS_HOME", str(moved))
    MemoryManager("finn").close()
    shutil.rmtree(moved / "finn")
    with pytest.raises(StorageError, match="from the folder .* run the agent from that folder"):
        MemoryManager("finn")


def test_storage_backend_is_chosen_by_config_or_environment(monkeypatch):
    """SQLite by default; AGENTOS_DSN selects PostgreSQL; postgres without a DSN or an unknown backend is
    refused."""
    assert StorageConfig().resolved() == ("sqlite", "")
    monkeypatch.setenv("AGENTOS_DSN", "host=db.example port=5432")
    assert StorageConfig().resolved() == ("postgres", "host=db.example port=5432")
    assert StorageConfig(backend="postgres", dsn="host=a").resolved() == ("postgres", "host=a")
    monkeypatch.delenv("AGENTOS_DSN")
    with pytest.raises(ConfigError, match="storage.dsn or \\$AGENTOS_DSN"):
        StorageConfig(backend="postgres").resolved()
    with pytest.raises(ConfigError, match="unknown storage.backend"):
        StorageConfig(backend="mysql").resolved()
    assert schema_name("x" * 64, StorageConfig()).startswith("agentos_x")
    assert len(schema_name("x" * 64, StorageConfig())) == 63


def test_a_server_that_is_down_is_one_clear_line_and_exit_code_5(agents_home, tmp_path):
    """With no server at the DSN, agentos status fails with exit 5 and a line naming the fix, never the
    password."""
    MemoryManager("finn").close()  # an agent kept in SQLite so far
    env = {**os.environ, "AGENTOS_DSN": f"postgresql://agentos:hunter2@127.0.0.1:{free_port()}/agentos"}
    result = subprocess.run([sys.executable, "-m", "core", "status", "--agent", "finn"], cwd=ROOT, env=env,
                            capture_output=True, text=True, timeout=120)
    assert result.returncode == 5, result.stderr
    assert "cannot reach PostgreSQL at 127.0.0.1:" in result.stderr and "storage.dsn" in result.stderr
    assert "hunter2" not in result.stderr and "Traceback" not in result.stderr


def test_a_stuck_lock_holder_ends_in_the_statement_timeout(postgres_db):
    """An append waiting on a conversation locked by a stuck transaction fails after statement_timeout_s;
    nothing stored."""
    db = PostgresDatabase(postgres_db.dsn, postgres_db.schema, StorageConfig(statement_timeout_s=0.5))
    provider = LCMProvider(db)
    session = Session("stuck")
    provider.bootstrap(session)
    conv = provider.store.conversation_id("stuck")
    with psycopg.connect(postgres_db.dsn) as holder:
        holder.execute("SELECT pg_advisory_xact_lock(%s)", (advisory_key(db.schema, "conversation", conv),))
        with pytest.raises(StorageError, match="statement_timeout_s"):
            provider.append(session, [Message("user", "waits for the lock")])
    assert provider.stats(session).message_count == 0
    provider.close()


def test_every_connection_busy_is_a_pool_timeout(postgres_db):
    """With storage.pool_max connections all held, the next operation fails after pool_timeout_s with the
    fix."""
    db = PostgresDatabase(postgres_db.dsn, postgres_db.schema, StorageConfig(pool_max=1, pool_timeout_s=0.3))
    db.conn.execute("SELECT 1")
    held, release = threading.Event(), threading.Event()

    def hold() -> None:
        with db.transaction():
            held.set()
            release.wait(10)

    holder = threading.Thread(target=hold)
    holder.start()
    held.wait(10)
    try:
        with pytest.raises(StorageError, match="raise storage.pool_max"):
            db.conn.execute("SELECT 1")
    finally:
        release.set()
        holder.join()
    assert db.conn.execute("SELECT 1").fetchone()[0] == 1


def test_text_postgres_cannot_hold_is_bad_input(postgres_db):
    """A message with a NUL character is refused as bad input on PostgreSQL, and nothing is stored."""
    from core.errors import ValidationError

    provider = LCMProvider(postgres_db)
    with pytest.raises(ValidationError, match="NUL"):
        provider.append(Session("nul"), [Message("user", "a\x00b")])
    assert provider.stats(Session("nul")).message_count == 0
    provider.close()


def test_a_huge_message_is_stored_whole_and_searched_by_its_beginning(postgres_db):
    """A message near a provider's 1 MiB limit, whose tsvector would pass PostgreSQL's 1 MB, is stored whole;
    its first 200,000 characters are searchable."""
    from core.memory.provider import SearchQuery
    from core.plugins.memory.lcm import DeterministicSummarizer

    provider = LCMProvider(postgres_db, summarizer=DeterministicSummarizer())
    words = " ".join(f"w{n:09d}" for n in range(95_000))
    assert len(words) > 1_000_000
    provider.append(Session("big"), [Message("tool", "needle " + words, tool_name="read_file")])
    assert provider.load_history("big")[0].content == "needle " + words
    assert [hit.source_type for hit in provider.search(Session("big"), SearchQuery("needle"))] == ["message"]
    provider.close()


def test_connections_the_server_dropped_are_replaced(postgres_db):
    """After the server ends the pool's connections (a restart, a failover) one call fails as unavailable,
    then calls work."""
    from core.errors import DatabaseUnavailableError
    from core.memory.storage.postgres.pool import application_name

    provider = LCMProvider(postgres_db)
    provider.append(Session("s"), [Message("user", "before")])
    with psycopg.connect(postgres_db.dsn, autocommit=True) as admin:
        admin.execute("SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = %s",
                      (application_name(postgres_db.schema),))
    with pytest.raises(DatabaseUnavailableError, match="cannot reach PostgreSQL"):
        provider.append(Session("s"), [Message("user", "cut off")])
    provider.append(Session("s"), [Message("user", "after")])
    assert [m.content for m in provider.load_history("s")] == ["before", "after"]
    provider.close()


def test_a_dropped_schema_is_rebuilt_from_the_agents_files(pg_home):
    """A schema dropped while LOG.md has a history is recreated at the next open and rebuilt from the files:
    the LOG.md index, the facts from their FACT entries; the repair is reported."""
    from core.memory.storage.postgres.migrate import forget_ready
    from core.memory.storage.postgres.pool import close_pools

    with MemoryManager("finn") as manager:
        manager.save_fact("city", "Lisbon", "personal")
        manager.append_log("THOUGHT", "kept in LOG.md")
        assert manager.compact_log().done
        manager.append_log("THOUGHT", "after the compaction")
        schema = manager.db.schema
    close_pools(schema)
    with psycopg.connect(os.environ["AGENTOS_DSN"], autocommit=True) as conn:
        conn.execute(f'DROP SCHEMA "{schema}" CASCADE')
    forget_ready()
    with MemoryManager("finn") as again:
        assert again.repairs and f"schema {schema} is new and empty" in again.repairs[0]
        assert again.get_fact("city") == "Lisbon"
        assert again.db.conn.execute("SELECT max(id) FROM log_metadata").fetchone()[0] == again.log.last_seq()
        assert "restore them from a backup" in again.repairs[2]
        assert again.db.conn.execute("SELECT count(*) FROM compaction_history").fetchone()[0] == 1
