"""Looking for a secret's value everywhere an agent keeps anything, in every form it could take.

``leaks(agent_root, value)`` reads every file under the agent's folder as raw
bytes: LOG.md, the archives, NOW.md, quarantine, handoff summaries, every data,
index and version file of LanceDB, memory.db page by page (free pages and the
WAL's frames included), the LangGraph checkpoint database. It also reads
memory.db's tables and full-text vocabularies and the LanceDB table through
their own APIs. The only place allowed to hold the value is the page of
``user_facts`` that stores the secret fact itself (``get_fact`` reads it there).

An agent kept on PostgreSQL is read in its schema instead: every row of every
table (LangGraph's checkpoints included), and every index's files on the test
server, read byte by byte after a CHECKPOINT (the full-text GIN indexes hold
their words there). The tables' own files are not read: a scrub vacuums them,
which frees the old row versions without overwriting them (docs/scaling.md).
"""

from __future__ import annotations

import json
import sqlite3
import struct
import unicodedata
from pathlib import Path

DB_FILES = ("memory.db", "memory.db-wal")


def forms(value: str) -> set[bytes]:
    """The value as it could appear in a file: as typed, NFKC-normalised, whitespace-collapsed,
    JSON-escaped."""
    found = set()
    stripped = value.strip()
    for text in (stripped, unicodedata.normalize("NFKC", stripped)):
        for variant in (text, " ".join(text.split())):
            found.add(variant)
            found.add(json.dumps(variant, ensure_ascii=False)[1:-1])
            found.add(json.dumps(variant)[1:-1])
    return {f.lower().encode("utf-8") for f in found if f}


def holds(data: bytes, value: str) -> bool:
    """True when ``data`` contains the value in any of its forms (ASCII case ignored)."""
    lowered = data.lower()
    return any(form in lowered for form in forms(value))


def leaks(root: Path, value: str, *, checkpoints: bool = True, kept: tuple[str, ...] = ()) -> list[str]:
    """Every place under ``root`` (an agent folder) that holds ``value``, but the secret fact itself and the
    tables named in ``kept`` (their rows and pages)."""
    found = []
    for path in sorted(p for p in root.rglob("*") if p.is_file()):
        if path.name in DB_FILES or path.name.endswith("-shm"):
            continue
        if path.name.startswith("checkpoints.db") and not checkpoints:
            continue
        try:
            data = path.read_bytes()
        except FileNotFoundError:  # a temp file of background work (LanceDB's optimize) gone meanwhile
            continue
        if holds(data, value):
            found.append(str(path.relative_to(root)))
    db = root / "memory" / "memory.db"
    if db.exists():
        found += database_leaks(db, value, kept)
    found += schema_leaks(root, value, checkpoints=checkpoints, kept=kept)
    found += cold_store_leaks(root / "memory" / "lancedb", value)
    return found


def database_leaks(db: Path, value: str, kept: tuple[str, ...] = ()) -> list[str]:
    """Rows, full-text terms, pages and WAL frames of memory.db holding ``value`` (the secret fact's own page
    and the ``kept`` tables excepted)."""
    conn = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    tables = ("user_facts", *kept)
    marks = ", ".join("?" * len(tables))
    try:
        found = [f for f in _rows_holding(conn, value) + _terms_holding(conn, value)
                 if not any(f.startswith(f"memory.db {t}.") for t in kept)]
        facts_pages = {row[0] for row in conn.execute(
            f"SELECT pageno FROM dbstat WHERE name IN ({marks}) OR name IN "
            f"(SELECT name FROM sqlite_master WHERE tbl_name IN ({marks}) AND type = 'index')",
            tables + tables)}
    finally:
        conn.close()
    data = db.read_bytes()
    page_size = struct.unpack(">H", data[16:18])[0] or 65536
    for number in range(len(data) // page_size):
        if number + 1 not in facts_pages and holds(data[number * page_size:(number + 1) * page_size], value):
            found.append(f"memory.db page {number + 1}")
    wal = db.with_name(db.name + "-wal")
    frames = wal.read_bytes() if wal.exists() else b""
    for start in range(32, len(frames) - 24, 24 + page_size):
        page = struct.unpack(">I", frames[start:start + 4])[0]
        if page not in facts_pages and holds(frames[start + 24:start + 24 + page_size], value):
            found.append(f"memory.db-wal frame of page {page}")
    return found


def _rows_holding(conn: sqlite3.Connection, value: str) -> list[str]:
    found = []
    tables = [r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")]
    for table in tables:
        try:
            rows = conn.execute(f'SELECT * FROM "{table}"').fetchall()
            names = [d[0] for d in conn.execute(f'SELECT * FROM "{table}" LIMIT 0').description]
        except sqlite3.OperationalError:  # fts5vocab tables of another schema, and the like
            continue
        for row in rows:
            record = dict(zip(names, row))
            if table == "user_facts" and record.get("category") == "secret":
                record.pop("value")
            for column, cell in record.items():
                raw = cell if isinstance(cell, bytes) else str(cell).encode("utf-8")
                if holds(raw, value):
                    found.append(f"memory.db {table}.{column}")
    return sorted(set(found))


def _terms_holding(conn: sqlite3.Connection, value: str) -> list[str]:
    """Full-text index terms equal to the value (a one-word secret is a term of its own)."""
    word = "".join(ch for ch in unicodedata.normalize("NFKC", value.strip()).lower() if ch.isalnum())
    found = []
    for (name,
         ) in conn.execute("SELECT name FROM sqlite_master WHERE sql LIKE 'CREATE VIRTUAL TABLE%fts5(%'"):
        try:
            conn.execute(f'CREATE VIRTUAL TABLE IF NOT EXISTS temp."{name}_terms" USING fts5vocab(main, '
                         f'"{name}", row)')
        except sqlite3.OperationalError:  # a read-only connection may still make temp tables; if not, skip
            continue
        terms = {row[0] for row in conn.execute(f'SELECT term FROM temp."{name}_terms"')}
        if word in terms:
            found.append(f"memory.db full-text term in {name}")
    return found


def schema_leaks(root: Path, value: str, *, checkpoints: bool = True,
                 kept: tuple[str, ...] = ()) -> list[str]:
    """Rows and index files of the agent's PostgreSQL schema holding ``value`` ([] for an agent on SQLite)."""
    from core.config import load_config
    from core.memory.storage.backend import schema_name
    from core.paths import AgentPaths

    paths = AgentPaths.for_agent(root.name, root.parent)
    storage = load_config(paths).storage
    backend, dsn = storage.resolved()
    if backend != "postgres":
        return []
    return postgres_schema_leaks(dsn, schema_name(paths.name, storage), value, checkpoints=checkpoints,
                                 kept=kept)


def postgres_schema_leaks(dsn: str, schema: str, value: str, *, checkpoints: bool = True,
                          kept: tuple[str, ...] = ()) -> list[str]:
    """Rows and index files of the PostgreSQL schema ``schema`` (an agent's, a space's) holding ``value``."""
    import psycopg
    from psycopg import sql

    found = []
    with psycopg.connect(dsn, autocommit=True) as conn:
        tables = [r[0] for r in conn.execute("SELECT table_name FROM information_schema.tables WHERE "
                                             "table_schema = %s AND table_type = 'BASE TABLE' ORDER BY 1",
                                             (schema,))]
        for table in tables:
            if (table.startswith("checkpoint") and not checkpoints) or table in kept:
                continue
            cursor = conn.execute(sql.SQL("SELECT * FROM {}").format(sql.Identifier(schema, table)))
            names = [column.name for column in cursor.description]
            for row in cursor:
                record = dict(zip(names, row))
                if table == "user_facts" and record.get("category") == "secret":
                    record.pop("value")
                for column, cell in record.items():
                    raw = (cell if isinstance(cell, bytes)
                           else json.dumps(cell, ensure_ascii=False, default=str).encode())
                    if holds(raw, value) or holds(str(cell).encode("utf-8"), value):
                        found.append(f"postgres {table}.{column}")
        conn.execute("CHECKPOINT")  # the indexes' pages on disk, as the server keeps them
        data = Path(conn.execute("SHOW data_directory").fetchone()[0])
        for index, table, path in conn.execute(
                "SELECT x.relname, t.relname, pg_relation_filepath(x.oid) FROM pg_index i"
                " JOIN pg_class x ON x.oid = i.indexrelid JOIN pg_class t ON t.oid = i.indrelid"
                " JOIN pg_namespace n ON n.oid = t.relnamespace WHERE n.nspname = %s", (schema,)).fetchall():
            if (table.startswith("checkpoint") and not checkpoints) or table in kept:
                continue
            # the file, its .1, .2 ... segments and _fsm/_vm forks
            for segment in sorted(data.glob(path + "*")):
                if holds(segment.read_bytes(), value):
                    found.append(f"postgres index {index} ({segment.name})")
    return sorted(set(found))


def cold_store_leaks(folder: Path, value: str) -> list[str]:
    """Rows of the LanceDB table whose text or memory (JSON) hold ``value``."""
    from core.memory.recall.store import TABLE

    if not (folder / f"{TABLE}.lance").is_dir():
        return []
    import lance

    rows = lance.dataset(folder / f"{TABLE}.lance").to_table(columns=["id", "text", "memory",
                                                                      "source"]).to_pylist()
    return [f"lancedb row {row['id']}" for row in rows
            if holds(json.dumps(row, ensure_ascii=False).encode("utf-8"), value)
            or holds(f"{row['text']} {row['memory']}".encode("utf-8"), value)]


def prompt_leaks(requests: list[dict], value: str, typed: tuple[str, ...] = ()) -> list[str]:
    """Messages of recorded ``/api/chat`` requests holding ``value`` that are neither get_fact's replies nor
    a request the user typed (``typed``: what the user wrote, holding the value)."""
    found = []
    for number, request in enumerate(requests):
        for message in request.get("messages", []):
            if message.get("role") == "tool" and message.get("tool_name") == "get_fact":
                continue
            if message.get("role") == "user" and message.get("content") in typed:
                continue
            if holds(json.dumps(message, ensure_ascii=False).encode("utf-8"), value) or \
                    holds(json.dumps(message).encode("utf-8"), value):
                found.append(f"request {number} {message.get('role')}: {str(message.get('content'))[:80]}")
    return found
