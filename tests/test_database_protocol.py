"""Both databases answer one Database protocol: code above storage asks the database, never its class."""

from __future__ import annotations

from core.config import load_config
from core.memory.storage import Database, open_database
from core.paths import AgentPaths


def _open(name: str) -> Database:
    paths = AgentPaths.for_agent(name)
    return open_database(paths, load_config(paths).storage)


def test_each_database_says_what_it_is_and_where_its_tables_are(storage_backend):
    """kind, file and location name the database: memory.db's path, or the server and schema without a
    file."""
    db = _open("finn")
    try:
        db.conn.execute("SELECT count(*) FROM _migrations").fetchone()
        assert db.kind == storage_backend == db.dialect.name
        paths = AgentPaths.for_agent("finn")
        if storage_backend == "sqlite":
            assert db.file == paths.db_file and db.location == str(paths.db_file)
        else:
            assert db.file is None and not paths.db_file.exists()
            assert f"schema='{db.schema}'" in db.location and "password" not in db.location
    finally:
        db.close()


def test_the_size_of_the_tables_grows_with_what_they_hold(storage_backend):
    """size_bytes counts the tables' bytes on either database: a large write makes it grow."""
    db = _open("finn")
    try:
        db.conn.execute("SELECT 1").fetchone()
        db.checkpoint()
        before = db.size_bytes()
        assert before > 0
        with db.transaction() as conn:
            conn.executemany("INSERT INTO user_facts (key, value, category, created_at, updated_at)"
                             " VALUES (?, ?, 'general', '2026-01-01T00:00:00Z', '2026-01-01T00:00:00Z')",
                             [(f"k{n}", "x" * 2000) for n in range(200)])
        db.checkpoint()
        if db.kind == "sqlite":
            db.conn.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchall()
        assert db.size_bytes() > before
    finally:
        db.close()


def test_both_databases_define_every_member_of_the_protocol():
    """SqliteDatabase and PostgresDatabase each have every attribute, property and method Database names."""
    from core.memory.storage import SqliteDatabase
    from core.memory.storage.postgres.database import PostgresDatabase

    members = {name for name in vars(Database) if not name.startswith("_")} | set(Database.__annotations__)
    assert {"conn", "transaction", "close", "kind", "file", "dialect"} <= members
    for cls in (SqliteDatabase, PostgresDatabase):
        db = cls.__new__(cls)  # no connection: only what the class defines is looked at
        missing = sorted(name for name in members if not hasattr(cls, name) and name not in ("path",))
        assert missing == [], f"{cls.__name__} lacks {missing}"
        assert db.kind in ("sqlite", "postgres")
