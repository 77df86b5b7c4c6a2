"""A brand-new agent's first use by several engines at once: its schema is set up once, and nobody waits for
ever."""

from __future__ import annotations

import os
import subprocess
import sys
import time

import psycopg
import pytest
import yaml

from core.config import StorageConfig
from core.errors import LockTimeoutError
from core.memory.storage.postgres import migrate
from core.memory.storage.postgres.pool import advisory_key
from core.memory.storage.backend import schema_name
from tests.engine.conftest import ROOT

ENGINES = 4
ROUNDS = 5
HANG_S = 300
"""Only a hang guard: an engine still running after this long is a failure whatever the machine's load."""


def setup_lock_id(schema: str) -> tuple[int, int]:
    """``(classid, objid)`` of the schema's setup lock as ``pg_locks`` shows a bigint advisory key."""
    key = advisory_key("migrate", schema) & 0xFFFFFFFFFFFFFFFF
    return key >> 32, key & 0xFFFFFFFF


def waiting_for(admin: psycopg.Connection, schema: str) -> int:
    """How many sessions wait for the schema's setup lock right now."""
    classid, objid = setup_lock_id(schema)
    return admin.execute("SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND NOT granted"
                         " AND classid = %s AND objid = %s AND objsubid = 1", (classid, objid)).fetchone()[0]


def start_engines(agent: str) -> list[subprocess.Popen]:
    """ENGINES engines of ``agent`` (new), one a session, each saving one fact (the offline backend)."""
    return [subprocess.Popen([sys.executable, "-m", "core.engine", "--create", "--offline", "--agent", agent,
                              "--session", f"s{n}", f"remember that my session {n} colour is blue"], cwd=ROOT,
                             env=dict(os.environ), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
            for n in range(ENGINES)]


def released_together(admin: psycopg.Connection, schema: str, engines: list[subprocess.Popen]) -> None:
    """Hold the schema's setup lock until every engine waits for it, then let them all go at once."""
    admin.execute("SELECT pg_advisory_lock(%s)", (advisory_key("migrate", schema),))
    try:
        # a condition, polled: how long it takes does not matter
        while waiting_for(admin, schema) < len(engines):
            ended = [e.communicate() for e in engines if e.poll() is not None]
            assert ended == [], ended  # an engine that ended before the release failed
            time.sleep(0.05)
    finally:
        admin.execute("SELECT pg_advisory_unlock(%s)", (advisory_key("migrate", schema),))


def test_engines_started_together_on_a_new_agent_all_run(pg_home, postgres_server):
    """N engines released at the same instant onto a brand-new agent's schema, round after round: every one
    sets up (or finds set up) the agent's tables and LangGraph's, runs its turn and exits 0."""
    config = pg_home / "config.yaml"
    data = yaml.safe_load(config.read_text(encoding="utf-8"))
    # a deadlock ends there, as a failure, instead of hanging the suite
    data["storage"]["statement_timeout_s"] = 20
    config.write_text(yaml.safe_dump(data), encoding="utf-8")
    storage = StorageConfig(schema_prefix=data["storage"]["schema_prefix"])
    failures = []
    with psycopg.connect(postgres_server.dsn, autocommit=True) as admin:
        for round_no in range(ROUNDS):
            agent = f"nova{round_no}"
            schema = schema_name(agent, storage)
            engines = start_engines(agent)
            released_together(admin, schema, engines)
            for n, engine in enumerate(engines):
                out, err = engine.communicate(timeout=HANG_S)
                if engine.returncode != 0:
                    failures.append(f"round {round_no} engine s{n}: exit {engine.returncode}: "
                                    f"{err.strip()[-400:]}")
            if not failures:  # every engine's turn was stored
                facts = admin.execute(f'SELECT key FROM "{schema}".user_facts ORDER BY key').fetchall()
                assert [row[0] for row in facts] == [f"session_{n}_colour" for n in range(ENGINES)]
    assert failures == [], "\n".join(failures)


def test_a_wait_for_the_setup_lock_is_reported_as_a_lock_wait(postgres_server):
    """An agent's setup that waits too long for another process's setup says it was a lock wait, and on
    whom."""
    schema = "test_lockwait_setup"
    migrate.forget_ready()
    with psycopg.connect(postgres_server.dsn, autocommit=True, application_name="a stuck setup") as holder:
        holder.execute("SELECT pg_advisory_lock(%s)", (advisory_key("migrate", schema),))
        pid = holder.info.backend_pid
        with pytest.raises(LockTimeoutError) as caught:
            migrate.ensure(postgres_server.dsn, schema, StorageConfig(statement_timeout_s=1))
    message = str(caught.value)
    assert "waited" in message and "setup lock of schema test_lockwait_setup" in message
    assert f"pid {pid}" in message and "a stuck setup" in message
    assert "statement_timeout_s" in message and "ran longer" not in message
    with psycopg.connect(postgres_server.dsn, autocommit=True) as admin:  # nothing was created meanwhile
        assert admin.execute("SELECT 1 FROM pg_namespace WHERE nspname = %s", (schema,)).fetchone() is None
