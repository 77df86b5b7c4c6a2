"""Memory spaces of a home on PostgreSQL: the index in the space's own schema, publishers in many processes,
membership, purge, one folder per schema, and no fork when the storage changes."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import psycopg
import pytest
import yaml

from core.config import load_home_config
from core.errors import PermissionDeniedError, StorageError
from core.memory.files.log_file import scan_bytes
from core.memory.spaces import Space
from core.memory.spaces.purge import PURGED
from core.memory.storage.postgres.space_schema import space_schema
from core.memory_manager import MemoryManager
from tests.spaces.team import research_team

ROOT = Path(__file__).resolve().parents[2]
PUBLISHER = """
import sys
from core.memory_manager import MemoryManager

agent, count = sys.argv[1], int(sys.argv[2])
with MemoryManager(agent) as manager:
    for n in range(count):
        manager.publish("shared", f"finding {n} of {agent} about kelp", {"n": n})
        if n % 10 == 0:  # every publisher catches the index up too, from its own process
            manager.recall_memory("kelp", spaces=["shared"])
print("done", flush=True)
"""


def schema_of(home: Path, space: str = "research") -> str:
    return space_schema(space, load_home_config(home).storage)


def rows(dsn: str, schema: str, query: str) -> list[tuple]:
    with psycopg.connect(dsn, autocommit=True) as conn:
        conn.execute(f'SET search_path TO "{schema}"')
        return conn.execute(query).fetchall()


@pytest.fixture
def team(pg_home: Path):
    with research_team() as agents:
        yield agents


def test_publish_recall_forget_purge_and_rebuild_with_the_index_in_the_spaces_schema(team, pg_home,
                                                                                     postgres_server):
    first = team["researcher"].publish("research", "Sea otters hold hands while they sleep",
                                       {"source": "notes"})
    second = team["researcher"].publish("research", "The vault opens with the zebrafinch sequence")
    hits = team["writer"].recall_memory("otters hold hands sleep", spaces=["research"])
    assert ([(h["id"], h["author"], h["metadata"]) for h in hits][:1]
            == [(first, "researcher", {"source": "notes"})])
    schema = schema_of(pg_home)
    assert schema.endswith("space$research")
    assert rows(postgres_server.dsn, schema, "SELECT seq, author FROM entries ORDER BY seq") == [
        (1, "researcher"), (2, "researcher")]
    assert not (pg_home / "spaces" / "research" / "index.db").exists()
    assert (pg_home / "spaces" / "research" / "storage.id").is_file()  # the folder that owns the schema

    with Space("research") as space:
        assert space.forget("researcher", [second]) == [second]
        assert "zebrafinch" not in str(team["writer"].recall_memory("zebrafinch vault", spaces=["research"]))
        report = space.purge_forgotten()
        assert report.purged == [2] and report.index_scrubbed
        journal = (pg_home / "spaces" / "research" / "LOG.md").read_bytes()
        assert b"zebrafinch" not in journal
        assert next(e for e in scan_bytes(journal, "j").entries if e.seq == 2).content == PURGED
        assert rows(postgres_server.dsn, schema,
                    "SELECT count(*) FROM entries WHERE content LIKE '%zebrafinch%'") \
            == [(0,)]
        entries = len(scan_bytes(journal, "j").entries)
        assert space.rebuild_index() == entries
        assert [m["id"] for m in space.latest(None, 5)] == [first]


def test_membership_is_enforced_on_postgresql(team):
    team["researcher"].publish("research", "Kelp forests shelter sea otters")
    with pytest.raises(PermissionDeniedError, match="may only read"):
        team["writer"].publish("research", "a draft")
    with pytest.raises(PermissionDeniedError, match="not a member"):
        team["outsider"].recall_memory("kelp", spaces=["research"])
    with pytest.raises(PermissionDeniedError, match="not a member"):
        team["outsider"].publish("research", "an intrusion")
    assert [h["space"] for h in team["outsider"].recall_memory("kelp otters")] == []


def test_publishers_in_six_processes_lose_and_double_nothing(pg_home, postgres_server):
    agents = [f"agent{i}" for i in range(6)]
    for agent in agents:
        MemoryManager(agent).close()
    Space.create("shared", {agent: "read-write" for agent in agents})
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    procs = [subprocess.Popen([sys.executable, "-c", PUBLISHER, agent, "40"], env=env, stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True) for agent in agents]
    for proc in procs:
        out, err = proc.communicate(timeout=600)
        assert proc.returncode == 0, err
    entries = scan_bytes((pg_home / "spaces" / "shared" / "LOG.md").read_bytes(), "journal").entries
    assert [e.seq for e in entries] == list(range(1, 241))
    with Space("shared") as space:
        assert space.show()["memories"] == 240
    indexed = rows(postgres_server.dsn, schema_of(pg_home, "shared"), "SELECT author, metadata FROM entries")
    assert len(indexed) == 240 and len(set(indexed)) == 240


def test_a_space_folder_of_another_home_is_refused_by_the_schema(team, pg_home, tmp_path, monkeypatch):
    team["researcher"].publish("research", "Kelp forests shelter sea otters")
    # the first open: this folder owns the schema
    assert team["writer"].recall_memory("kelp", spaces=["research"])
    other = tmp_path / "elsewhere"
    other.mkdir()
    (other / "config.yaml").write_text((pg_home / "config.yaml").read_text(encoding="utf-8"),
                                       encoding="utf-8")
    monkeypatch.setenv("AGENTOS_HOME", str(other))
    target = other / "spaces" / "research"
    target.mkdir(parents=True)
    for name in ("LOG.md", "members.yaml"):  # the same space's files, copied by hand: a second folder
        (target / name).write_bytes((pg_home / "spaces" / "research" / name).read_bytes())
    with Space("research", other) as copy:
        with pytest.raises(StorageError, match="indexes the space research of the folder"):
            copy.latest(None, 5)


def test_switching_storage_refuses_a_fork_until_the_index_is_moved(agents_home, postgres_server, monkeypatch):
    prefix = "tmove_"
    (agents_home / "config.yaml").write_text(yaml.safe_dump({"cold": {"embedder": "fake"},
                                                              "storage": {"schema_prefix": prefix}}),
                                             encoding="utf-8")
    # its own memory stays in memory.db: this test is the space's
    with MemoryManager("researcher") as researcher:
        Space.create("research", {"researcher": "read-write"})
        researcher.publish("research", "Kelp forests shelter sea otters")
        with Space("research") as space:
            assert space.latest("researcher", 5)  # index.db holds the memory now
    monkeypatch.setenv("AGENTOS_DSN", postgres_server.dsn)
    try:
        with Space("research") as space:
            with pytest.raises(StorageError, match="move-index research --to postgres"):
                space.latest(None, 5)
            assert space.move_index("postgres") == 1
        assert not (agents_home / "spaces" / "research" / "index.db").exists()
        with Space("research") as space:
            assert [m["content"] for m in space.latest(None, 5)] == ["Kelp forests shelter sea otters"]
        monkeypatch.delenv("AGENTOS_DSN")
        with Space("research") as space:
            with pytest.raises(StorageError, match="lives in PostgreSQL"):
                space.latest(None, 5)
        monkeypatch.setenv("AGENTOS_DSN", postgres_server.dsn)
        with Space("research") as space:
            assert space.move_index("sqlite") == 1
        assert rows(postgres_server.dsn, "public",
                    f"SELECT nspname FROM pg_namespace WHERE nspname LIKE '{prefix}%'") \
            == []
        with Space("research") as space:
            with pytest.raises(StorageError, match="moved back to SQLite"):
                space.latest(None, 5)
        monkeypatch.delenv("AGENTOS_DSN")
        with Space("research") as space:
            assert [m["content"] for m in space.latest(None, 5)] == ["Kelp forests shelter sea otters"]
    finally:
        from core.memory.storage.postgres.pool import close_pools

        close_pools()
        with psycopg.connect(postgres_server.dsn, autocommit=True) as conn:
            for (schema,) in conn.execute("SELECT nspname FROM pg_namespace WHERE nspname LIKE %s",
                                          (prefix + "%",)):
                conn.execute(f'DROP SCHEMA "{schema}" CASCADE')
