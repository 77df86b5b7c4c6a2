"""Fixtures of the PostgreSQL tests: an agents home whose agents keep their tables on the test server."""

from __future__ import annotations

import uuid
from pathlib import Path

import psycopg
import pytest


@pytest.fixture
def pg_home(agents_home: Path, postgres_server, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The test's agents home, on PostgreSQL through ``$AGENTOS_DSN`` with a schema prefix of its own."""
    from core.memory.postgres.pool import close_pools

    prefix = f"t{uuid.uuid4().hex[:8]}_"
    agents_home.mkdir(parents=True, exist_ok=True)
    (agents_home / "config.yaml").write_text(f"storage:\n  schema_prefix: {prefix}\n", encoding="utf-8")
    monkeypatch.setenv("AGENTOS_DSN", postgres_server.dsn)
    yield agents_home
    close_pools()
    with psycopg.connect(postgres_server.dsn, autocommit=True) as conn:
        for (schema,) in conn.execute("SELECT nspname FROM pg_namespace WHERE nspname LIKE %s", (prefix + "%",)):
            conn.execute(f'DROP SCHEMA "{schema}" CASCADE')
