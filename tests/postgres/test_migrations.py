"""Migrations of an agent's schema: every one of memory.db's, in PostgreSQL's SQL, applied once."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import psycopg

from core.memory.storage.sqlite import migrations
from core.memory.storage.postgres.migrate import postgres_migrations

ROOT = Path(__file__).resolve().parents[2]


def test_every_migration_has_a_postgres_form():
    """Each mNNN migration of memory.db has its PostgreSQL script, in the same order."""
    assert [name for name, _ in postgres_migrations()] == [name for name, _ in migrations()]


def test_four_processes_starting_together_apply_each_migration_once(postgres_server, tmp_path):
    """Four processes opening a new schema at the same moment: one applies the migrations (LangGraph's too),
    each once; all succeed."""
    schema = "race_" + tmp_path.name[-12:].replace("-", "_").lower()
    go = tmp_path / "go"
    children = [subprocess.Popen([sys.executable, "-m", "tests.postgres.workers", "migrate",
                                  postgres_server.dsn,
                                  schema, str(go)], cwd=ROOT, stdout=subprocess.PIPE,
                                  text=True) for _ in range(4)]
    for child in children:
        assert child.stdout.readline().strip() == "ready"
    go.touch()
    outputs = []
    for child in children:
        out, _ = child.communicate(timeout=120)
        assert child.returncode == 0
        outputs.append(out.strip())
    from langgraph.checkpoint.postgres import PostgresSaver

    ours = [name for name, _ in migrations()]
    expected = ",".join(ours + [f"checkpoints v{v}" for v in range(len(PostgresSaver.MIGRATIONS))])
    assert sorted(outputs) == ["", "", "", expected]
    with psycopg.connect(postgres_server.dsn) as conn:
        rows = conn.execute(f'SELECT name FROM "{schema}"._migrations ORDER BY name').fetchall()
        assert [row[0] for row in rows] == ours
        conn.execute(f'DROP SCHEMA "{schema}" CASCADE')


def test_the_migrations_build_the_schema_earlier_versions_built(postgres_db):
    """A new schema has exactly the columns, indexes, triggers, functions and constraints of one an earlier
    version made (tests/data/schema-postgres.txt), so a schema that version upgraded opens as it is."""
    from core.memory.storage.postgres.migrate import ensure, forget_ready
    from tests.schema_snapshot import POSTGRES_SNAPSHOT, postgres_schema

    postgres_db.conn.execute("SELECT 1").fetchone()  # sets the schema up
    with psycopg.connect(postgres_db.dsn, autocommit=True) as conn:
        assert (
            postgres_schema(conn, postgres_db.schema)
            == POSTGRES_SNAPSHOT.read_text(encoding="utf-8").splitlines()
        )
    forget_ready()
    assert ensure(postgres_db.dsn, postgres_db.schema, postgres_db.config) == []
