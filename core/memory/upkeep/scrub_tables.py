"""Scrubbing secret values from the tables: every text column of memory.db, and the cold store.

Both scrubs are generic: they look at every table and column there is, so a
table a later feature adds is covered without being named here. Neither leaves
the old text behind on disk: memory.db rewrites with ``secure_delete`` (freed
space zeroed), rebuilds the full-text indexes whose content changed and
truncates its WAL; the cold store rewrites the whole fragments that held a
value (so none keeps it under a deletion mark) and deletes every older table
version and every file no version uses.
"""

from __future__ import annotations

import logging
import re
import sqlite3
from dataclasses import dataclass
from datetime import timedelta

from core.errors import ColdStoreError
from core.durable import fault_points
from core.memory.recall.lance_table import compact, upsert
from core.memory.storage.sqlite import transaction, truncate_wal
from core.memory.secrets.redaction import Redactor

log = logging.getLogger(__name__)

_FTS5 = re.compile(r"CREATE\s+VIRTUAL\s+TABLE\s+.*\bUSING\s+fts5\s*\(", re.IGNORECASE | re.DOTALL)
_CONTENT = re.compile(r"\bcontent\s*=\s*['\"]?(\w*)", re.IGNORECASE)
_SHADOW = ("_data", "_idx", "_content", "_docsize", "_config")
_BATCH = 500
KEPT = ("_migrations", "forgotten_values")
"""Tables no scrub rewrites: the migrations, and the forgotten values (what a purge searches for)."""


def _quoted(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


def scrub_database(conn: sqlite3.Connection, redactor: Redactor) -> tuple[dict[str, int], bool]:
    """Redact every text column of every table (a secret fact's own value excepted).

    Identifiers (primary keys and indexed columns) are left alone. Returns the rows
    changed per ``table.column`` and whether the WAL could be truncated (False:
    another connection was reading; old pages may stay in the WAL until the next scrub).
    """
    conn.execute("PRAGMA secure_delete = ON")  # freed space is zeroed, not left with the old text
    conn.create_function("agentos_redact", 1, lambda v: redactor.text(v) if isinstance(v, str) else v,
                         deterministic=True)
    changed: dict[str, int] = {}
    tables, fts = _tables(conn)
    with transaction(conn):
        for table in tables:
            for column in _free_columns(conn, table):
                where = (
                    f"typeof({_quoted(column)}) = 'text' AND agentos_redact({_quoted(column)}) IS NOT "
                    f"{_quoted(column)}"
                )
                if table == "user_facts":
                    where += " AND category != 'secret'"
                count = conn.execute(
                    f"UPDATE {_quoted(table)} SET {_quoted(column)} = agentos_redact({_quoted(column)}) "
                    f"WHERE {where}"
                ).rowcount
                if count:
                    changed[f"{table}.{column}"] = count
        touched = {key.split(".")[0] for key in changed}
        for name, content in fts.items():
            if content == "":
                log.warning("full-text index %s stores no text of its own; not rebuilt", name)
            elif content is None:
                # The index keeps its own copy of the text: update it there, then rebuild.
                for column in [r[1] for r in conn.execute(f"PRAGMA table_info({_quoted(name)})")]:
                    conn.execute(f"UPDATE {_quoted(name)} SET {_quoted(column)} = "
                                 f"agentos_redact({_quoted(column)})"
                                 f" WHERE agentos_redact({_quoted(column)}) IS NOT {_quoted(column)}")
                conn.execute(f"INSERT INTO {_quoted(name)} ({_quoted(name)}) VALUES ('rebuild')")
            elif content in touched:
                # Deleted terms stay in an index's older segments until a merge: rebuild it from its table.
                conn.execute(f"INSERT INTO {_quoted(name)} ({_quoted(name)}) VALUES ('rebuild')")
    truncated = truncate_wal(conn)
    if not truncated:
        log.warning("memory.db: the WAL could not be truncated (another connection is reading); retried "
                    "later")
    return changed, truncated


def _tables(conn: sqlite3.Connection) -> tuple[list[str], dict[str, str | None]]:
    """Ordinary tables to scrub, and the FTS5 tables with their content table (None: their own; '': none)."""
    rows = conn.execute("SELECT name, sql FROM sqlite_master WHERE type = 'table'").fetchall()
    fts: dict[str, str | None] = {}
    for name, sql in rows:
        if sql and _FTS5.match(sql):
            found = _CONTENT.search(sql)
            fts[name] = found.group(1) if found else None
    shadows = {f"{name}{suffix}" for name in fts for suffix in _SHADOW}
    tables = [name for name, sql in rows
              if name not in fts and name not in shadows and not name.startswith("sqlite_")
              and name not in KEPT and not (sql or "").upper().startswith("CREATE VIRTUAL")]
    return tables, fts


def _free_columns(conn: sqlite3.Connection, table: str) -> list[str]:
    """The columns of ``table`` that are not identifiers (neither in the primary key nor in an index)."""
    columns = conn.execute(f"PRAGMA table_info({_quoted(table)})").fetchall()
    keyed = {c[1] for c in columns if c[5]}
    for index in conn.execute(f"PRAGMA index_list({_quoted(table)})").fetchall():
        keyed |= {c[2] for c in conn.execute(f"PRAGMA index_info({_quoted(index[1])})").fetchall()}
    return [c[1] for c in columns if c[1] not in keyed]


def scrub_cold_store(store, redactor: Redactor) -> int:
    """Rewrite the cold store's rows that hold a secret (re-embedding their text); return how many.

    Every row of the fragments that held one is rewritten, so those fragments are dropped whole;
    every older table version is deleted. The rows are embedded again outside the write lock (an
    embedding, or loading the model, can take seconds on a busy machine, and writers of other
    processes wait for the lock); they are written if no writer changed them meanwhile, else the
    scrub plans again.

    Raises:
        ColdStoreError: LanceDB failed; the table is at a consistent version (the scrub is retried).
        BackendError: the embedder failed; nothing was written.
    """
    store.table  # opened (and its embedder checked) before the write lock
    try:
        while True:
            with store.writing():
                plan = _plan(store.writable(), redactor)
                if plan is None:
                    # Older versions, and the files of a write killed before its commit, may still hold it.
                    _drop_old_files(store)
                    return 0
            vectors = store.embedder.embed([row["text"] for row in plan.changed]) if plan.changed else []
            with store.writing():
                table = store.writable()
                if _plan(table, redactor) == plan:
                    _write(store, table, plan, vectors)
                    return plan.holding
    except (OSError, ValueError, RuntimeError) as exc:
        raise ColdStoreError(f"cannot scrub the cold store {store.path}: {exc}") from exc


def _drop_old_files(store) -> None:
    """Delete every older version of the store's table and every file no version uses (we hold the write
    lock)."""
    compact(store.writable(), timedelta(0), delete_unverified=True)


@dataclass(frozen=True)
class _Plan:
    """What a scrub of the cold store rewrites."""

    holding: int
    """How many rows hold a secret."""
    rows: list[dict]
    """Every row of the fragments that hold one, redacted (their vectors still those of the old text)."""
    changed: list[dict]
    """The rows of ``rows`` whose text the redaction changed: their vectors are computed again."""


def _plan(table, redactor: Redactor) -> _Plan | None:
    """What to rewrite in ``table`` (the write lock held), or None if no row holds a secret."""
    import pyarrow as pa

    texts = [f.name for f in table.schema if pa.types.is_string(f.type) or pa.types.is_large_string(f.type)]
    scan = table.to_table(columns=texts, with_row_id=True)
    columns = {name: scan.column(name).to_pylist() for name in texts}
    row_ids = scan.column("_rowid").to_pylist()
    holding = [n for n in range(scan.num_rows) if any(redactor.holds(columns[c][n]) for c in texts)]
    if not holding:
        return None
    fragments = {row_ids[n] >> 32 for n in holding}  # a row id is fragment << 32 | offset
    ids = [columns["id"][n] for n in range(scan.num_rows) if row_ids[n] >> 32 in fragments]
    rows = []
    for start in range(0, len(ids), _BATCH):
        listed = ", ".join("'" + i.replace("'", "''") + "'" for i in ids[start:start + _BATCH])
        rows += table.to_table(filter=f"id IN ({listed})").to_pylist()
    changed = [row for row in rows if row["text"] != redactor.text(row["text"])]
    for row in rows:
        for name in texts:
            row[name] = redactor(row[name])
    return _Plan(len(holding), rows, changed)


def _write(store, table, plan: _Plan, vectors) -> None:
    """Write ``plan``'s rows with the new ``vectors`` of its changed rows, and drop the old files."""
    import pyarrow as pa

    fresh = {row["id"]: vector.tolist() for row, vector in zip(plan.changed, vectors)}
    rows = [{**row, "vector": fresh.get(row["id"], row["vector"])} for row in plan.rows]
    fault_points.reach("cold.write")
    upsert(table, pa.Table.from_pylist(rows, schema=table.schema))
    fault_points.reach("cold.written")
    _drop_old_files(store)
    log.info("cold store %s: %d rows held a secret; %d rows of their fragments rewritten", store.path,
             plan.holding, len(rows))
