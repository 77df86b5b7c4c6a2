"""memory.db from an archive, rebuilt rather than trusted.

A memory.db file is a schema as well as rows, and a schema can act: a trigger runs on every later
write (one that turns each new secret into a general fact), a view or a generated column computes
what a query reads. So an imported memory.db is never opened as an agent's database. A new one is
built with this version's migrations, those the archive's database records (which must be the
first of ours, in order); then the rows of each of its tables are copied in, column by column,
from the archive's table of the same name, which must be a plain table with the same columns,
and each value is checked as the readers will take it (:func:`_check_values`: of its column's type, a
time that parses, JSON of the shape the code reads). Triggers, views, other tables and indexes of the
archive's file are left behind (and named), the full-text indexes are rebuilt from the rows, and the
foreign keys are checked. The archive's file is read only, with ``trusted_schema`` off, so nothing in its
schema runs.
"""

from __future__ import annotations

import sqlite3
from contextlib import closing
from datetime import datetime
from pathlib import Path
from typing import Any, Callable

from core.durable import load_json
from core.errors import CorruptionError, ValidationError
from core.memory.storage.facts import check_key
from core.memory.storage.sqlite import migrations

_SQLITE_INTERNAL = ("sqlite_sequence", "sqlite_stat1", "sqlite_stat2", "sqlite_stat3", "sqlite_stat4")
_STORAGE_CLASSES = {"TEXT": ("text",), "INTEGER": ("integer",), "BIGINT": ("integer",),
                    "BOOLEAN": ("integer",), "REAL": ("real", "integer")}
"""What SQLite may hold in a column of each declared type once the row is copied (SQLite itself keeps a
blob, or text in a number's column, as it is)."""


def _is_object(value: Any) -> bool:
    return isinstance(value, dict)


def _pairs_of_text(value: Any) -> bool:
    return isinstance(value, list) and all(isinstance(v, list) and len(v) == 2
                                           and all(isinstance(p, str) for p in v) for v in value)


def _tool_calls(value: Any) -> bool:
    return isinstance(value, list) and all(isinstance(v, dict) and isinstance(v.get("name"), str)
                                           and isinstance(v.get("arguments"), dict) for v in value)


def _constraints(value: Any) -> bool:
    return isinstance(value, list) and all(isinstance(v, dict) and {"id", "text", "created_at"} <= set(v)
                                           for v in value)


_JSON: dict[tuple[str, str], tuple[str, Callable[[Any], bool]]] = {
    ("cold_notes", "metadata"): ("an object", _is_object),
    ("recall_docs", "metadata"): ("an object", _is_object),
    ("store_items", "value"): ("an object", _is_object),
    ("store_items", "texts"): ("a list of [path, text] pairs", _pairs_of_text),
    ("ctx_messages", "tool_calls"): ("a list of calls with a name and arguments", _tool_calls),
    ("ctx_agent_memory", "constraints"): ("a list of constraints", _constraints),
}
"""The columns that hold JSON, and the shape the code that reads them expects (an empty text or NULL
is none)."""
_FACT_KEYS = (("user_facts", "key"), ("fact_versions", "key"))
"""The columns that hold a fact's key: each must be a key ``save_fact`` takes (one line, no control
character)."""


def rebuild_database(archived: Path, target: Path) -> list[str]:
    """Build memory.db at ``target`` (which must not exist) from the archive's copy at ``archived``;
    return what of the archive's schema was left behind (e.g. ``["trigger leak_secrets"]``).

    Raises:
        CorruptionError: ``archived`` is not an SQLite database, is damaged, records migrations that are
            not this version's first ones, or a table of ours differs in it, or its rows break a constraint.
    """
    try:
        with closing(sqlite3.connect(target, isolation_level=None, uri=True)) as conn:
            conn.execute("PRAGMA trusted_schema = OFF")  # nothing of the archive's schema may call a function
            conn.execute("PRAGMA cell_size_check = ON")
            conn.execute("ATTACH DATABASE ? AS src", (archived.absolute().as_uri() + "?mode=ro&immutable=1",))
            check = conn.execute("PRAGMA src.quick_check").fetchall()
            if check != [("ok",)]:
                raise CorruptionError(f"{archived.name} in the archive is damaged: {check[0][0]}")
            applied = _applied(conn, archived)
            conn.execute("BEGIN")
            _create(conn, applied)
            _copy_rows(conn, archived)
            conn.execute("COMMIT")
            violations = conn.execute("PRAGMA main.foreign_key_check").fetchall()
            if violations:
                raise CorruptionError("memory.db in the archive has rows that point to no row (table "
                                      f"{violations[0][0]}): the archive is damaged")
            left = _left_behind(conn)
            conn.execute("DETACH DATABASE src")
            return left
    except sqlite3.DatabaseError as exc:
        target.unlink(missing_ok=True)
        raise CorruptionError(f"memory.db in the archive is not a readable AgentOS database: {exc}") from exc
    except BaseException:
        target.unlink(missing_ok=True)
        raise


def _applied(conn: sqlite3.Connection, archived: Path) -> list[tuple[str, str]]:
    """The ``(name, applied_at)`` of the migrations the archive's database records: ours, the first ones."""
    if not conn.execute("SELECT 1 FROM src.sqlite_master WHERE type = 'table' AND name = "
                        "'_migrations'").fetchone():
        raise CorruptionError(f"{archived.name} in the archive is not an AgentOS memory.db (no _migrations "
                              "table)")
    recorded = {row[0]: row[1] for row in conn.execute("SELECT name, applied_at FROM src._migrations")}
    known = [name for name, _ in migrations()]
    if set(recorded) - set(known):
        newest = sorted(set(recorded) - set(known))[-1]
        raise CorruptionError("memory.db in the archive was written by a later version of AgentOS (migration "
                              f"{newest!r}): upgrade AgentOS to import it")
    if [name for name in known if name in recorded] != known[:len(recorded)]:
        raise CorruptionError("memory.db in the archive records migrations out of order: the archive is "
                              "damaged")
    return [(name, str(recorded[name])) for name in known[:len(recorded)]]


def _create(conn: sqlite3.Connection, applied: list[tuple[str, str]]) -> None:
    """This version's schema as the archive's database had it: the migrations it records, ours."""
    conn.execute("CREATE TABLE _migrations (name TEXT PRIMARY KEY, applied_at TEXT NOT NULL)")
    scripts = dict(migrations())
    for name, applied_at in applied:
        scripts[name](conn)
        conn.execute("INSERT INTO _migrations (name, applied_at) VALUES (?, ?)", (name, applied_at))


def _copy_rows(conn: sqlite3.Connection, archived: Path) -> None:
    """Copy each of our tables' rows from the archive's table of that name; rebuild the full-text indexes."""
    triggers = conn.execute("SELECT name, sql FROM main.sqlite_master WHERE type = 'trigger'").fetchall()
    for name, _ in triggers:  # ours: they would queue work for rows that are copied as they are
        conn.execute(f"DROP TRIGGER main.{_quoted(name)}")
    virtual = {row[0] for row in conn.execute(
        "SELECT name FROM main.sqlite_master WHERE type = 'table' AND sql LIKE 'CREATE VIRTUAL TABLE%'")}
    shadows = tuple(f"{name}_" for name in virtual)
    tables = [row[0] for row in conn.execute(
        "SELECT name FROM main.sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%' ORDER BY name")
        if row[0] not in virtual and not row[0].startswith(shadows) and row[0] != "_migrations"]
    for table in tables:
        columns = _columns(conn, "main", table)
        found = conn.execute("SELECT type FROM src.sqlite_master WHERE name = ?", (table,)).fetchone()
        if found is None or found[0] != "table" or _columns(conn, "src", table) != columns:
            raise CorruptionError(f"memory.db in the archive: {table} is not the table AgentOS's migrations "
                                  "make (other columns, or not a table): the archive is damaged or was "
                                  "altered")
        names = [_quoted(c) for c in sorted(columns)]
        if _has_rowid(conn, table):
            names.insert(0, "rowid")
        listed = ", ".join(names)
        conn.execute(f"INSERT INTO main.{_quoted(table)} ({listed}) SELECT {listed} FROM "
                     f"src.{_quoted(table)}")
        _check_values(conn, table, columns)
    _copy_sequences(conn, tables)
    for name in virtual:
        sql = conn.execute("SELECT sql FROM main.sqlite_master WHERE name = ?", (name,)).fetchone()[0]
        if "fts5" in sql.lower() and "fts5vocab" not in sql.lower():
            conn.execute(f"INSERT INTO main.{_quoted(name)} ({_quoted(name)}) VALUES ('rebuild')")
    for _, sql in triggers:
        conn.execute(sql)


def _check_values(conn: sqlite3.Connection, table: str, columns: dict[str, tuple]) -> None:
    """Refuse a copied value that the code reading it would trip on: one not of its column's type (a blob
    where text is kept), a time (``*_at``, ``timestamp``) that does not parse, JSON of another shape."""
    for column, (declared, _, _) in columns.items():
        where, name = f"memory.db in the archive: {table}.{column}", _quoted(column)
        classes = _STORAGE_CLASSES.get(declared)
        if classes is not None:
            found = conn.execute(f"SELECT typeof({name}) FROM main.{_quoted(table)} WHERE {name} IS NOT NULL "
                                 f"AND typeof({name}) NOT IN ({', '.join('?' * len(classes))}) LIMIT 1",
                                 classes).fetchone()
            if found:
                raise CorruptionError(f"{where} holds a value of type {found[0]}, not {declared.lower()}: "
                                      "the archive is damaged or was altered")
        if (table, column) in _FACT_KEYS:
            _check_keys(conn, table, name, where)
        shape = _JSON.get((table, column))
        if not (shape or column.endswith("_at") or column == "timestamp"):
            continue
        for (value,) in conn.execute(f"SELECT {name} FROM main.{_quoted(table)} WHERE {name} IS NOT NULL "
                                     f"AND {name} <> ''"):
            if shape is None:
                _check_time(value, where)
            elif not shape[1](_json(value, where)):
                raise CorruptionError(f"{where} holds JSON that is not {shape[0]}: the archive is damaged or "
                                      "was altered")


def _check_keys(conn: sqlite3.Connection, table: str, column: str, where: str) -> None:
    for (key,) in conn.execute(f"SELECT {column} FROM main.{_quoted(table)}"):
        try:
            if check_key(key) == key:
                continue
            problem = "surrounding white space"
        except ValidationError as exc:
            problem = str(exc)
        raise CorruptionError(f"{where} holds a fact key that save_fact refuses ({problem}): the archive is "
                              "damaged or was altered")


def _check_time(value: Any, where: str) -> None:
    try:
        datetime.fromisoformat(str(value).replace("Z", "+00:00"))
    except ValueError as exc:
        raise CorruptionError(f"{where} holds {str(value)[:40]!r}, not a time: the archive is damaged or was "
                              "altered") from exc


def _json(value: Any, where: str) -> Any:
    try:
        return load_json(value)
    except (ValueError, TypeError) as exc:
        raise CorruptionError(f"{where} does not hold JSON: the archive is damaged or was altered") from exc


def _columns(conn: sqlite3.Connection, schema: str, table: str) -> dict[str, tuple]:
    """``{column: (declared type, not null, hidden)}`` of a table (generated and hidden columns included)."""
    rows = conn.execute(f"PRAGMA {schema}.table_xinfo({_quoted(table)})").fetchall()
    return {row[1]: (str(row[2]).upper(), row[3], row[6]) for row in rows}


def _has_rowid(conn: sqlite3.Connection, table: str) -> bool:
    """Whether ``table`` keeps a rowid that no column of its own names (it must be copied with the rows)."""
    sql = conn.execute("SELECT sql FROM main.sqlite_master WHERE name = ?", (table,)).fetchone()[0]
    if "WITHOUT ROWID" in sql.upper():
        return False
    keys = [row for row in conn.execute(f"PRAGMA main.table_info({_quoted(table)})") if row[5]]
    return not (len(keys) == 1 and str(keys[0][2]).upper() == "INTEGER")


def _copy_sequences(conn: sqlite3.Connection, tables: list[str]) -> None:
    """Keep the archive's AUTOINCREMENT counters: an id once used (and forgotten) is never given again."""
    if not conn.execute("SELECT 1 FROM src.sqlite_master WHERE name = 'sqlite_sequence'").fetchone():
        return
    ours = {row[0] for row in conn.execute("SELECT name FROM main.sqlite_sequence")}
    for name, seq in conn.execute("SELECT name, seq FROM src.sqlite_sequence").fetchall():
        if name not in tables or type(seq) is not int:
            continue
        if name in ours:
            conn.execute("UPDATE main.sqlite_sequence SET seq = max(seq, ?) WHERE name = ?", (seq, name))
        else:
            conn.execute("INSERT INTO main.sqlite_sequence (name, seq) VALUES (?, ?)", (name, seq))


def _left_behind(conn: sqlite3.Connection) -> list[str]:
    """What the archive's schema holds that ours does not (triggers, views, tables, indexes), by type and
    name."""
    ours = {(row[0], row[1]) for row in conn.execute("SELECT type, name FROM main.sqlite_master")}
    theirs = conn.execute("SELECT type, name FROM src.sqlite_master ORDER BY type, name").fetchall()
    return [f"{kind} {name}" for kind, name in theirs if (kind, name) not in ours
            and not name.startswith("sqlite_autoindex_") and name not in _SQLITE_INTERNAL]


def _quoted(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'

