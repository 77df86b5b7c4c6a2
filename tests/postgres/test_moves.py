"""Where an agent's memory lives: neither side opens the other's, and the copies between them go both ways,
crash-safely (a real SIGKILL at each named point leaves the source whole and the copy rerunnable)."""

from __future__ import annotations

import hashlib
import os
import subprocess
import sys
from pathlib import Path

import psycopg
import pytest

from core.memory.storage.postgres.pool import close_pools
from core.memory.provider import Message, Session
from core.memory.storage.backend import open_database, schema_name
from core.memory_manager import MemoryManager
from core.plugins.memory.lcm import LCMProvider
from tests.engine.conftest import ROOT
from tests.providers.conftest import SMALL_CONFIG

SESSION = Session("ada:main", agent_id="ada", user_id="ada", channel="cli")

KILL_AT = """
import os, signal, sys
from core.config import load_config
from core.memory.storage.postgres import move
from core.paths import existing_agent

def step(name):
    if name == sys.argv[2]:
        os.kill(os.getpid(), signal.SIGKILL)

paths = existing_agent("ada")
getattr(move, sys.argv[1])(paths, load_config(paths).storage, step)
"""


def agentos(*args: str, dsn: str | None) -> subprocess.CompletedProcess:
    """Run ``agentos ARGS`` with ``$AGENTOS_DSN`` as given (this process's pools closed first: a copy to
    SQLite refuses while other processes are connected to the schema)."""
    close_pools()
    env = {k: v for k, v in os.environ.items() if k != "AGENTOS_DSN"}
    if dsn:
        env["AGENTOS_DSN"] = dsn
    return subprocess.run([sys.executable, "-m", "core", *args], cwd=ROOT, env=env, capture_output=True,
                          text=True,
                          timeout=300)


def folder_state(folder: Path) -> dict[str, str]:
    """Every file under ``folder`` and a hash of its bytes."""
    return {str(p.relative_to(folder)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(folder.rglob("*")) if p.is_file()}


def schemas(dsn: str) -> list[str]:
    with psycopg.connect(dsn) as conn:
        return [r[0] for r in conn.execute("SELECT nspname FROM pg_namespace WHERE nspname LIKE 't%\\_ada'")]


@pytest.fixture
def sqlite_ada(pg_home, monkeypatch):
    """Agent ada kept in SQLite (a fact, a secret, a conversation), with ``$AGENTOS_DSN`` unset; yields the
    DSN."""
    dsn = os.environ["AGENTOS_DSN"]
    monkeypatch.delenv("AGENTOS_DSN")
    with MemoryManager("ada") as manager:
        manager.save_fact("city", "Porto")
        manager.save_fact("pin", "4455-9911", "secret")
        manager.append_log("THOUGHT", "kept in SQLite")
        lcm = LCMProvider(manager.paths.db_file, config=SMALL_CONFIG)
        lcm.append(SESSION, [Message("user", "my train leaves at nine"), Message("assistant", "noted")])
        lcm.close()
    return dsn


def memory_of(dsn: str | None, monkeypatch) -> tuple[dict, list[str]]:
    """ada's facts and conversation, read in this process with ``$AGENTOS_DSN`` as given."""
    if dsn:
        monkeypatch.setenv("AGENTOS_DSN", dsn)
    else:
        monkeypatch.delenv("AGENTOS_DSN", raising=False)
    with MemoryManager("ada") as manager:
        facts = {key: manager.get_fact(key) for key in ("city", "pin", "country")}
        lcm = LCMProvider(open_database(manager.paths, manager.config.storage), config=SMALL_CONFIG)
        history = [m.content for m in lcm.load_history(SESSION.id)]
        lcm.close()
    return facts, history


def test_a_server_set_over_an_agent_kept_in_sqlite_is_refused_and_nothing_is_written(sqlite_ada, pg_home):
    """status (read only) and an engine, with $AGENTOS_DSN set over an agent whose memory.db holds data,
    refuse with the command that moves it; the folder and the server are left exactly as they were."""
    before = folder_state(pg_home / "ada")
    for command in (("status", "--agent", "ada"), ("compact-log", "--agent", "ada", "--dry-run")):
        result = agentos(*command, dsn=sqlite_ada)
        assert result.returncode == 5, result.stderr
        assert "agentos copy-to-postgres --agent ada" in result.stderr and "memory.db" in result.stderr
        assert "WARNING" not in result.stderr
    engine = subprocess.run([sys.executable, "-m", "core.engine", "--offline", "--agent", "ada", "status"],
                            cwd=ROOT,
                            env=dict(os.environ, AGENTOS_DSN=sqlite_ada), capture_output=True, text=True,
                            timeout=300)
    assert engine.returncode == 5 and "copy-to-postgres" in engine.stderr
    assert folder_state(pg_home / "ada") == before
    assert schemas(sqlite_ada) == []


def test_an_agent_kept_in_postgres_opened_without_the_server_is_refused(pg_home):
    """An agent whose memory lives in PostgreSQL, opened with $AGENTOS_DSN unset, starts no empty
    memory.db."""
    dsn = os.environ["AGENTOS_DSN"]
    with MemoryManager("ada") as manager:
        manager.save_fact("city", "Porto")
    before = folder_state(pg_home / "ada")
    result = agentos("status", "--agent", "ada", dsn=None)
    assert result.returncode == 5
    assert "lives in PostgreSQL" in result.stderr and "AGENTOS_DSN" in result.stderr
    assert "agentos copy-to-sqlite --agent ada" in result.stderr
    assert folder_state(pg_home / "ada") == before and not (pg_home / "ada" / "memory" / "memory.db").exists()
    assert agentos("status", "--agent", "ada", dsn=dsn).returncode == 0


def test_the_way_to_postgres_and_back_and_there_again(sqlite_ada, pg_home, monkeypatch):
    """copy-to-postgres, a write there, copy-to-sqlite, a write there, copy-to-postgres (over the older copy):
    each side sees all of the memory, and the side it left refuses to open it."""
    moved = agentos("copy-to-postgres", "--agent", "ada", dsn=sqlite_ada)
    assert moved.returncode == 0, moved.stderr
    assert "user_facts: 2 rows" in moved.stdout
    refused = agentos("status", "--agent", "ada", dsn=None)
    assert refused.returncode == 5 and "copy-to-sqlite" in refused.stderr
    assert memory_of(sqlite_ada, monkeypatch) == ({"city": "Porto", "pin": "4455-9911", "country": None},
                                                  ["my train leaves at nine", "noted"])
    with MemoryManager("ada") as manager:
        manager.save_fact("country", "Portugal")

    back = agentos("copy-to-sqlite", "--agent", "ada", dsn=sqlite_ada)
    assert back.returncode == 0, back.stderr
    assert "user_facts: 3 rows" in back.stdout and "ctx_messages: 2 rows" in back.stdout
    refused = agentos("status", "--agent", "ada", dsn=sqlite_ada)
    assert refused.returncode == 5 and "copy-to-postgres" in refused.stderr
    facts, history = memory_of(None, monkeypatch)
    assert facts == {"city": "Porto", "pin": "4455-9911", "country": "Portugal"}
    assert history == ["my train leaves at nine", "noted"]
    with MemoryManager("ada") as manager:
        manager.save_fact("city", "Lisbon")

    again = agentos("copy-to-postgres", "--agent", "ada", dsn=sqlite_ada)
    assert again.returncode == 0, again.stderr
    facts, history = memory_of(sqlite_ada, monkeypatch)
    assert facts["city"] == "Lisbon" and history == ["my train leaves at nine", "noted"]
    twice = agentos("copy-to-postgres", "--agent", "ada", dsn=sqlite_ada)
    assert twice.returncode != 0 and "already" in twice.stderr


@pytest.mark.parametrize("where", ["marked", "table user_facts", "copied"])
def test_a_copy_to_postgres_killed_midway_leaves_memory_db_whole_and_is_finished_by_a_rerun(
        sqlite_ada, pg_home, monkeypatch, where):
    """SIGKILL at each named point of copy-to-postgres: memory.db is untouched, the schema empty or complete,
    neither side opens the agent until the copy is run again, and the rerun finishes it."""
    db_file = pg_home / "ada" / "memory" / "memory.db"
    source = hashlib.sha256(db_file.read_bytes()).hexdigest()
    killed = subprocess.run([sys.executable, "-c", KILL_AT, "to_postgres", where], cwd=ROOT,
                            env=dict(os.environ, AGENTOS_DSN=sqlite_ada), capture_output=True, text=True,
                            timeout=300)
    assert killed.returncode == -9, killed.stderr  # it reached the point and died there
    assert hashlib.sha256(db_file.read_bytes()).hexdigest() == source
    schema = schemas(sqlite_ada)
    with psycopg.connect(sqlite_ada) as conn:
        facts = conn.execute(f'SELECT count(*) FROM "{schema[0]}".user_facts').fetchone()[0] if schema else 0
    assert facts == (2 if where == "copied" else 0)
    for dsn in (None, sqlite_ada):
        refused = agentos("status", "--agent", "ada", dsn=dsn)
        assert refused.returncode == 5 and "agentos copy-to-postgres --agent ada" in refused.stderr
    rerun = agentos("copy-to-postgres", "--agent", "ada", dsn=sqlite_ada)
    assert rerun.returncode == 0, rerun.stderr
    assert memory_of(sqlite_ada, monkeypatch) == ({"city": "Porto", "pin": "4455-9911", "country": None},
                                                  ["my train leaves at nine", "noted"])


@pytest.mark.parametrize("where", ["marked", "table user_facts", "copied", "swapped"])
def test_a_copy_to_sqlite_killed_midway_leaves_the_schema_whole_and_is_finished_by_a_rerun(
        sqlite_ada, pg_home, monkeypatch, where):
    """SIGKILL at each named point of copy-to-sqlite: the schema is untouched, memory.db the older copy or the
    complete new one, neither side opens the agent until the copy is run again, and the rerun finishes it."""
    assert agentos("copy-to-postgres", "--agent", "ada", dsn=sqlite_ada).returncode == 0
    with _on(sqlite_ada, monkeypatch) as manager:
        manager.save_fact("country", "Portugal")
    monkeypatch.delenv("AGENTOS_DSN")
    db_file = pg_home / "ada" / "memory" / "memory.db"
    older = hashlib.sha256(db_file.read_bytes()).hexdigest()
    close_pools()
    killed = subprocess.run([sys.executable, "-c", KILL_AT, "to_sqlite", where], cwd=ROOT,
                            env=dict(os.environ, AGENTOS_DSN=sqlite_ada), capture_output=True, text=True,
                            timeout=300)
    assert killed.returncode == -9, killed.stderr
    if where != "swapped":
        assert hashlib.sha256(db_file.read_bytes()).hexdigest() == older
    for dsn in (None, sqlite_ada):
        refused = agentos("status", "--agent", "ada", dsn=dsn)
        assert refused.returncode == 5 and "agentos copy-to-sqlite --agent ada" in refused.stderr
    with psycopg.connect(sqlite_ada) as conn:  # the source is whole
        schema = schema_name("ada", _storage(pg_home))
        assert conn.execute(f'SELECT count(*) FROM "{schema}".user_facts').fetchone()[0] == 3
    rerun = agentos("copy-to-sqlite", "--agent", "ada", dsn=sqlite_ada)
    assert rerun.returncode == 0, rerun.stderr
    assert memory_of(None, monkeypatch) == ({"city": "Porto", "pin": "4455-9911", "country": "Portugal"},
                                            ["my train leaves at nine", "noted"])
    assert not (pg_home / "ada" / "memory" / "memory.db.copying").exists()


def _storage(home: Path):
    import yaml

    from core.config import StorageConfig

    return StorageConfig(
        schema_prefix=yaml.safe_load((home / "config.yaml").read_text())["storage"]["schema_prefix"]
    )


def _on(dsn: str, monkeypatch) -> MemoryManager:
    monkeypatch.setenv("AGENTOS_DSN", dsn)
    return MemoryManager("ada")


def test_the_inspector_reads_only_the_side_that_holds_the_memory(sqlite_ada, pg_home, monkeypatch):
    """The inspector pointed at the side that does not hold the memory refuses, rather than showing it
    empty."""
    from core.config import load_config
    from core.errors import StorageError
    from core.memory.storage import reading
    from core.paths import AgentPaths

    paths = AgentPaths.for_agent("ada")
    monkeypatch.setenv("AGENTOS_DSN", sqlite_ada)
    with pytest.raises(StorageError, match="agentos copy-to-postgres --agent ada"):
        with reading(paths, load_config(paths).storage):
            pass
    assert schemas(sqlite_ada) == []
    assert agentos("copy-to-postgres", "--agent", "ada", dsn=sqlite_ada).returncode == 0
    monkeypatch.delenv("AGENTOS_DSN")
    with pytest.raises(StorageError, match="agentos copy-to-sqlite --agent ada"):
        with reading(paths, load_config(paths).storage):
            pass
