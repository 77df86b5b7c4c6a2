"""Shared fixtures: every test gets its own agents home and a one-thread torch."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

# Torch threads collapse when the other core is busy; child processes inherit these.
os.environ.setdefault("OMP_NUM_THREADS", "1")
os.environ.setdefault("MKL_NUM_THREADS", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
os.environ.setdefault("HF_HUB_OFFLINE", "1")


from faults import full_disk  # noqa: E402,F401 - a fixture for every test: the agents home on a small tmpfs


@pytest.fixture(autouse=True)
def agents_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Point ``AGENTOS_HOME`` at a fresh folder and keep Ollama unreachable unless a test says so."""
    home = tmp_path / "agents"
    monkeypatch.setenv("AGENTOS_HOME", str(home))
    monkeypatch.setenv("OLLAMA_HOST", "http://127.0.0.1:9")
    monkeypatch.delenv("AGENTOS_DSN", raising=False)  # a developer's server is never a test's
    return home


@pytest.fixture(scope="session")
def postgres_server():
    """A PostgreSQL server of this test run; without one the tests that need it skip and say why.

    ``AGENTOS_TEST_POSTGRES=require`` (set by .ci/run) makes that a failure instead.
    """
    from core.memory.storage.postgres.pool import close_pools
    from tests.postgres_server import PostgresServer, ServerUnavailable

    try:
        server = PostgresServer.start()
    except ServerUnavailable as exc:
        if os.environ.get("AGENTOS_TEST_POSTGRES") == "require":
            pytest.fail(str(exc))
        pytest.skip(str(exc))
    yield server
    close_pools()
    server.stop()


@pytest.fixture
def postgres_db(postgres_server):
    """A PostgresDatabase in a fresh schema of the test server, dropped afterwards."""
    import uuid

    import psycopg

    from core.memory.storage.postgres.database import PostgresDatabase
    from core.memory.storage.postgres.pool import close_pools

    schema = f"test_{uuid.uuid4().hex[:12]}"
    db = PostgresDatabase(postgres_server.dsn, schema)
    yield db
    db.close()
    close_pools(schema)
    with psycopg.connect(postgres_server.dsn, autocommit=True) as conn:
        conn.execute(f'DROP SCHEMA IF EXISTS "{schema}" CASCADE')


@pytest.fixture(scope="session")
def minilm():
    """The real all-MiniLM-L6-v2 model, loaded once for the whole session."""
    from core.llm.embedders import load_minilm

    return load_minilm()


@pytest.fixture
def manager(agents_home: Path):
    """A MemoryManager for agent ``finn`` in the test's home."""
    from core.memory_manager import MemoryManager

    mm = MemoryManager("finn")
    yield mm
    mm.close()


@pytest.fixture(params=("sqlite", "postgres"))
def storage_backend(request: pytest.FixtureRequest, agents_home: Path) -> str:
    """Each database in turn for the agents of the test's home: their memory.db files, then schemas on the
    test PostgreSQL server (through ``$AGENTOS_DSN``, see ``pg_home``)."""
    if request.param == "postgres":
        request.getfixturevalue("pg_home")
    return request.param


@pytest.fixture
def pg_home(agents_home: Path, postgres_server, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The test's agents home, on PostgreSQL through ``$AGENTOS_DSN`` with a schema prefix of its own."""
    import uuid

    import psycopg

    from core.memory.storage.postgres.pool import close_pools

    import yaml

    prefix = f"t{uuid.uuid4().hex[:8]}_"
    agents_home.mkdir(parents=True, exist_ok=True)
    config = agents_home / "config.yaml"
    data = (yaml.safe_load(config.read_text(encoding="utf-8")) if config.exists() else None) or {}
    data.setdefault("storage", {})["schema_prefix"] = prefix
    config.write_text(yaml.safe_dump(data), encoding="utf-8")
    monkeypatch.setenv("AGENTOS_DSN", postgres_server.dsn)
    yield agents_home
    close_pools()
    with psycopg.connect(postgres_server.dsn, autocommit=True) as conn:
        for (schema,) in conn.execute("SELECT nspname FROM pg_namespace WHERE nspname LIKE %s", (prefix + "%",)):
            conn.execute(f'DROP SCHEMA "{schema}" CASCADE')
