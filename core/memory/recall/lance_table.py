"""The Lance table under the cold store (:mod:`core.memory.recall.store`): its rows, its schema, and the
operations that take a dataset handle (an upsert, a compaction, a search's prefilter).

Scrubbing a secret rewrites the table with these too, without a :class:`~core.memory.recall.store.ColdStore`.
lance and pyarrow are imported on first use.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import timedelta
from pathlib import Path
from typing import Any, Callable, Sequence

from core.llm.embedding.embedders import Embedder
from core.memory.files import fault_points

TABLE = "memories"
LEGACY_TABLES = ("chunks",)
"""Tables of earlier versions (archive chunks fused with LanceDB's full-text search). Their rows
are not recall docs: the table is dropped on open and every memory is embedded again."""
CLEANUP_AFTER = timedelta(hours=1)
"""Table versions older than this are deleted by :meth:`ColdStore.optimize`."""
META_EMBEDDER = b"agentos.embedder"
META_DIMENSION = b"agentos.dimension"
COLUMNS = ["id", "kind", "text", "source", "occurred_at", "memory"]
SEARCHED = COLUMNS[:-1]
"""What a vector search returns of each row (not the memory's JSON)."""


@dataclass(frozen=True)
class VectorRow:
    """What the cold store keeps of one memory (its vector is computed from ``text``)."""

    id: str
    """The recall doc's id: ``note:<hex>``, ``fact:<key>``, ``log:<seq>``, ``item:<id>:<n>``, ..."""
    kind: str
    text: str
    """What the vector is computed from: the memory with its speaker and the turn before it."""
    source: str
    """Where the original lives, e.g. ``LOG.md#seq=12`` or ``store:memories.ada/fact-0``."""
    occurred_at: str
    """UTC ISO-8601 time the memory happened (what ``since``/``until`` filter)."""
    memory: str = field(default="{}", compare=False)
    """The memory itself as JSON (text, metadata, times): what a lost memory.db gets its notes back from.
    Not part of what a row must match: it never changes the vector."""


def sql_string(value: str) -> str:
    """``value`` as a SQL string literal."""
    return "'" + value.replace("'", "''") + "'"


def schema(embedder: Embedder):
    """The table's Arrow schema for ``embedder``'s vectors; its metadata names the embedder and dimension."""
    import pyarrow as pa

    dimension = embedder.dimension()
    return pa.schema(
        [pa.field(name, pa.string(), nullable=False) for name in COLUMNS]
        + [pa.field("vector", pa.list_(pa.float32(), dimension), nullable=False)],
        metadata={META_EMBEDDER: embedder.name.encode(), META_DIMENSION: str(dimension).encode()},
    )


def arrow(rows: Sequence[VectorRow], vectors, schema):
    """``rows`` with their ``vectors`` as an Arrow table of ``schema``."""
    import pyarrow as pa

    columns = {name: [getattr(r, name) for r in rows] for name in COLUMNS}
    dimension = schema.field("vector").type.list_size
    flat = pa.array(vectors.astype("float32", copy=False).reshape(-1))
    columns["vector"] = pa.FixedSizeListArray.from_arrays(flat, dimension)
    return pa.table(columns, schema=schema)


def sweep_orphans(table_dir: Path) -> tuple[int, int]:
    """Delete the ``.tmp*`` files a killed writer left in ``table_dir`` (the caller holds the write lock);
    return how many and their bytes."""
    count = size = 0
    for leftover in table_dir.rglob(".tmp*") if table_dir.is_dir() else ():
        if leftover.is_file():
            size += leftover.stat().st_size
            leftover.unlink()
            count += 1
    return count, size


def upsert(table, records, stale: str | None = None) -> None:
    """Insert ``records`` (an Arrow table) into the Lance ``table``, replacing the rows of the same id, and
    delete the rows that match the filter ``stale`` and are not in ``records``, in the same commit."""
    builder = table.merge_insert("id").when_matched_update_all().when_not_matched_insert_all()
    if stale:
        builder = builder.when_not_matched_by_source_delete(stale)
    builder.execute(records)


def compact(table, cleanup_older_than: timedelta, *, delete_unverified: bool = False) -> None:
    """Merge small fragments, fold new rows into the indexes, and delete versions older than ``cleanup_older_than``
    (with ``delete_unverified``, also files no version uses, as a write killed before its commit leaves)."""
    for step in compaction_steps(cleanup_older_than, delete_unverified=delete_unverified):
        step(table)


def compaction_steps(cleanup_older_than: timedelta, *,
                     delete_unverified: bool = False) -> list[Callable[[Any], None]]:
    """The steps of :func:`compact`, each one Lance commit that takes a dataset handle."""
    def step(write: Callable[[Any], None]) -> Callable[[Any], None]:
        def run(table) -> None:
            fault_points.reach("cold.write")
            write(table)
            fault_points.reach("cold.written")
        return run

    return [step(lambda t: t.optimize.compact_files()), step(lambda t: t.optimize.optimize_indices()),
            step(lambda t: t.cleanup_old_versions(older_than=cleanup_older_than,
                                                  delete_unverified=delete_unverified))]


def where_clause(kinds: Sequence[str] | None = None, since: str | None = None, until: str | None = None,
                 source_prefix: str | None = None) -> str | None:
    """The prefilter of a vector search: kinds, a time window (on ``occurred_at``), a source prefix."""
    clauses = []
    if kinds:
        clauses.append("kind IN (" + ", ".join(sql_string(k) for k in kinds) + ")")
    if since:
        clauses.append(f"occurred_at >= {sql_string(since)}")
    if until:
        clauses.append(f"occurred_at <= {sql_string(until)}")
    if source_prefix:
        clauses.append(f"starts_with(source, {sql_string(source_prefix)})")
    return " AND ".join(clauses) or None
