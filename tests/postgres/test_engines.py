"""Engines on PostgreSQL: several serve one agent's sessions at once, and a run killed on one host resumes on
another."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys

import psycopg
import pytest

from core.engine import Engine
from core.errors import LockTimeoutError
from core.memory_manager import MemoryManager
from tests.engine.conftest import (
    ROOT,
    RESEARCH_TASK,
    kill_engine_at,
    research_then_outline,
    sigkill,
    start_engine,
)
from tests.ollama_server import Block, ScriptedOllama



@pytest.fixture
def server(monkeypatch):
    with ScriptedOllama() as scripted:
        monkeypatch.setenv("OLLAMA_HOST", scripted.host)
        yield scripted


@pytest.fixture
def ollama_home(pg_home):
    """The PostgreSQL agents home with the Ollama backend (the scripted server) chosen."""
    with (pg_home / "config.yaml").open("a", encoding="utf-8") as config:
        config.write("llm:\n  backend: ollama\n")
    return pg_home


def test_run_killed_on_one_host_resumes_on_another(server, ollama_home, postgres_server, tmp_path,
                                                   monkeypatch):
    """kill -9 mid-turn; the agent's folder moves to another home (host); "Continue" resumes from the
    PostgreSQL checkpoint."""
    blocked = Block()
    server.enqueue(*research_then_outline(blocked))
    kill_engine_at(blocked, "--agent", "finn", RESEARCH_TASK)
    assert not (ollama_home / "finn" / "memory" / "checkpoints.db").exists()

    other_host = tmp_path / "other-host"
    shutil.copytree(ollama_home, other_host)  # the agent's volume, attached to another host
    monkeypatch.setenv("AGENTOS_HOME", str(other_host))
    result = subprocess.run([sys.executable, "-m", "core.engine", "--agent", "finn", "Continue"], cwd=ROOT,
                            env=dict(os.environ), capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    assert "interrupted run" in result.stderr and "outline.md" in result.stdout
    resumed = server.chat_requests[2]["messages"]
    # from the checkpoint
    assert any(m["role"] == "tool" and m.get("tool_name") == "write_file" for m in resumed)
    with MemoryManager("finn") as memory:
        entries = memory.scan_log().entries
        writes = [e for e in entries if e.type == "TOOL_USE" and e.metadata.get("tool") == "write_file"
                  and e.metadata["arguments"]["path"] == "research.md"]
        assert len(writes) == 1 and [e.type for e in entries].count("INTERRUPTED") == 1
        schema = memory.db.schema
    assert (other_host / "finn" / "workspace" / "outline.md").is_file()
    with psycopg.connect(postgres_server.dsn) as conn:  # the finished turn's checkpoints are gone
        assert conn.execute(f'SELECT count(*) FROM "{schema}".checkpoints').fetchone()[0] == 0


def test_engines_serve_sessions_of_one_agent_at_once(server, ollama_home):
    """Two sessions of one agent run in two engines; a session has one engine; a live run is never taken for
    dead."""
    blocked = Block()
    server.enqueue(blocked, "done at last")
    busy = start_engine("--agent", "finn", "--session", "a", "a long task")
    try:
        assert blocked.entered.wait(60), "the first engine never called the model"
        with Engine("finn", session="b") as second:
            assert second.recovered == []  # session a's run is live in the other engine
            with pytest.raises(LockTimeoutError, match="session finn:a is already served"):
                Engine("finn", session="a")
    finally:
        sigkill(busy)
    server.enqueue("hello")
    with Engine("finn", session="c") as third:
        assert len(third.recovered) == 1  # the killed engine's run
        assert third.run("say hello").ok


def test_an_engine_whose_lock_connection_dropped_takes_its_session_again(server, ollama_home,
                                                                         postgres_server):
    """After the server drops the engine's lock connection, the next turn re-takes the session and runs."""
    with Engine("finn", session="a") as engine:
        with psycopg.connect(postgres_server.dsn, autocommit=True) as admin:
            admin.execute("SELECT pg_terminate_backend(%s)", (engine._lease._conn.info.backend_pid,))
        server.enqueue("hello again")
        assert engine.run("say hello").ok
        with pytest.raises(LockTimeoutError, match="already served"):
            Engine("finn", session="a")



def test_a_session_let_go_is_free_for_the_next_engine_at_once(ollama_home, postgres_server):
    """An engine's lease unlocks its session before its connection closes: the server drops a closed
    connection's locks only once its own process has exited, which may come after the next engine asks
    (here that process is kept alive: the lease's connection is closed only after the next lease is taken)."""
    from core.config import load_home_config
    from core.memory.storage.postgres.lease import SessionLease

    storage = load_home_config(ollama_home).storage
    first = SessionLease(postgres_server.dsn, "agent_lease", "finn:a", storage)
    real_close, first._conn.close = first._conn.close, lambda: None  # its server process outlives the release
    first.release()
    second = SessionLease(postgres_server.dsn, "agent_lease", "finn:a", storage)
    with pytest.raises(LockTimeoutError, match="already served"):
        SessionLease(postgres_server.dsn, "agent_lease", "finn:a", storage)
    second.release()
    real_close()
