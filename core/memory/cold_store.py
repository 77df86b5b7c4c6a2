"""The cold store: one LanceDB table of text chunks with real embeddings.

Search is hybrid: a vector search and LanceDB's native full-text search run
with the same filters and their rankings are fused by reciprocal rank fusion
(RRF), so a query matches by meaning and by exact words (names, error codes).
The full-text query runs alongside the vector query.

Tables of at least ``ann_min_rows`` chunks get an ANN vector index (see
:mod:`core.memory.ann_index`), built by :meth:`ColdStore.optimize`, which
writers run in a background thread every ``optimize_every`` writes.

The table's schema metadata records the embedder and dimension that built it;
opening it with another embedder raises :class:`EmbedderMismatchError`.
Writers serialise on ``memory/.cold.lock`` (so a chunk id is never inserted
twice) and upsert by chunk id, which makes every indexing step idempotent.
lancedb, pyarrow and numpy are imported on first use.
"""

from __future__ import annotations

import json
import logging
import threading
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from datetime import timedelta
from pathlib import Path
from typing import Any, Iterable, Sequence

from core.errors import ColdStoreError, EmbedderMismatchError, LockTimeoutError, ValidationError
from core.llm.embedders import Embedder
from core.memory import ann_index
from core.memory.locking import AgentLock

log = logging.getLogger(__name__)

TABLE = "chunks"
KINDS = ("log_archive", "fact", "note", "summary", "log", "message")
RRF_K = 60
"""The usual RRF constant: a rank-r hit scores 1 / (RRF_K + r)."""
CLEANUP_AFTER = timedelta(hours=1)
"""Table versions older than this are deleted by :meth:`ColdStore.optimize`."""
_META_EMBEDDER = b"agentos.embedder"
_META_DIMENSION = b"agentos.dimension"


@dataclass(frozen=True)
class Chunk:
    """One piece of text in the cold store."""

    id: str
    """Stable id: ``log:<archive_id>:<n>``, ``summary:<archive_id>``, ``fact:<key>``, ``note:<id>``."""
    origin: str
    """What it was cut from (``archive:<id>``, ``fact:<key>``, ``note:<id>``); re-indexing an origin replaces its chunks."""
    kind: str
    """One of ``KINDS``."""
    text: str
    source: str
    """Where the original lives, e.g. ``archive/LOG-1-120.md#seq=1-40`` or ``fact:preferred_currency``."""
    created_at: str
    """UTC ISO-8601 time of the underlying event."""
    metadata: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class Hit:
    """A search result, best first."""

    chunk: Chunk
    score: float
    """Fused RRF score (higher is better)."""


def sql_string(value: str) -> str:
    """``value`` as a SQL string literal."""
    return "'" + value.replace("'", "''") + "'"


class ColdStore:
    """One agent's LanceDB table, opened on first use."""

    def __init__(
        self, path: Path, embedder: Embedder, lock_file: Path, *, reindex_hint: str,
        optimize_every: int = 50, ann_min_rows: int = 5000, lock_timeout_s: float = 60.0,
    ) -> None:
        self.path = path
        self.embedder = embedder
        self.reindex_hint = reindex_hint
        self.optimize_every = optimize_every
        self.ann_min_rows = ann_min_rows
        self._write_lock = AgentLock(lock_file, lock_timeout_s)
        self._guard = threading.RLock()
        self._table = None
        self._writes = 0
        self._pool: ThreadPoolExecutor | None = None
        self._maintenance: ThreadPoolExecutor | None = None
        self._optimizing: Future | None = None

    # -- opening --------------------------------------------------------------

    @property
    def table(self):
        """The LanceDB table, opened (or created) on first use."""
        with self._guard:
            if self._table is None:
                self._table = self._open()
            return self._table

    def _open(self):
        import lancedb

        self.path.mkdir(parents=True, exist_ok=True)
        with self.writing():
            swept = self._sweep_orphans()
            if swept[0]:
                log.warning("removed %d orphan LanceDB temp files (%d bytes) under %s", *swept, self.path)
            try:
                # A zero interval makes every read see other processes' writes.
                db = lancedb.connect(self.path, read_consistency_interval=timedelta(0))
                if TABLE in db.list_tables().tables:
                    table = db.open_table(TABLE)
                else:
                    table = self._create(db)
            except (OSError, ValueError, RuntimeError) as exc:
                raise ColdStoreError(f"cannot open the cold store at {self.path}: {exc}") from exc
        self._check_embedder(table)
        return table

    def _create(self, db):
        import pyarrow as pa
        from lancedb.index import FTS

        dimension = self.embedder.dimension()
        schema = pa.schema(
            [
                pa.field("id", pa.string(), nullable=False),
                pa.field("origin", pa.string(), nullable=False),
                pa.field("kind", pa.string(), nullable=False),
                pa.field("text", pa.string(), nullable=False),
                pa.field("source", pa.string(), nullable=False),
                pa.field("created_at", pa.string(), nullable=False),
                pa.field("metadata", pa.string(), nullable=False),
                pa.field("vector", pa.list_(pa.float32(), dimension), nullable=False),
            ],
            metadata={_META_EMBEDDER: self.embedder.name.encode(), _META_DIMENSION: str(dimension).encode()},
        )
        table = db.create_table(TABLE, schema=schema)
        table.create_index("text", config=FTS())
        log.info("created cold store %s with embedder %s (%d-d)", self.path, self.embedder.name, dimension)
        return table

    def _check_embedder(self, table) -> None:
        meta = table.schema.metadata or {}
        built_by = meta.get(_META_EMBEDDER, b"?").decode()
        dimension = meta.get(_META_DIMENSION, b"?").decode()
        if built_by != self.embedder.name:
            raise EmbedderMismatchError(
                f"the cold store {self.path} was built with embedder {built_by} ({dimension}-d) but the "
                f"config asks for {self.embedder.name}; re-index it with: {self.reindex_hint}"
            )

    def _sweep_orphans(self) -> tuple[int, int]:
        """Delete ``.tmp*`` files a killed writer left in the table folder (we hold the write lock)."""
        count = size = 0
        table_dir = self.path / f"{TABLE}.lance"
        for leftover in table_dir.rglob(".tmp*") if table_dir.is_dir() else ():
            if leftover.is_file():
                size += leftover.stat().st_size
                leftover.unlink()
                count += 1
        return count, size

    def writing(self):
        """The write lock of this store, across threads and processes."""
        return self._write_lock.hold()

    @property
    def dimension(self) -> int:
        """Vector length of the table."""
        return int((self.table.schema.metadata or {})[_META_DIMENSION])

    # -- writing --------------------------------------------------------------

    def upsert(self, origin_chunks: dict[str, list[Chunk]], delete_stale: bool = True) -> int:
        """Make the chunks of each origin exactly ``chunks`` (embedding them); return rows written.

        An origin mapped to ``[]`` is deleted, and so are an origin's chunks not given (unless not
        ``delete_stale``). Re-running with the same input changes nothing.

        Raises:
            BackendError: the embedder failed; nothing was written.
            ColdStoreError: LanceDB failed; the table is at its previous version.
        """
        chunks = [c for group in origin_chunks.values() for c in group]
        for chunk in chunks:
            if chunk.kind not in KINDS:
                raise ValidationError(f"unknown chunk kind {chunk.kind!r}; valid: {', '.join(KINDS)}")
        vectors = self.embedder.embed([c.text for c in chunks]) if chunks else None
        dimension = self.dimension if vectors is not None else 0
        if vectors is not None and vectors.shape[1] != dimension:
            raise EmbedderMismatchError(
                f"embedder {self.embedder.name} returned {vectors.shape[1]}-d vectors but the cold store "
                f"holds {dimension}-d ones; re-index it with: {self.reindex_hint}"
            )
        rows = [_row(c, v) for c, v in zip(chunks, vectors if vectors is not None else [])]
        table = self.table
        with self.writing():
            try:
                if rows:
                    (table.merge_insert("id").when_matched_update_all()
                     .when_not_matched_insert_all().execute(rows))
                if delete_stale:
                    self._delete_stale(table, origin_chunks)
            except (OSError, ValueError, RuntimeError) as exc:
                raise ColdStoreError(f"cannot write to the cold store {self.path}: {exc}") from exc
            self._writes += 1
        if self._writes % self.optimize_every == 0:
            self._optimize_soon()
        return len(rows)

    def put(self, chunks: Sequence[Chunk]) -> int:
        """Embed ``chunks`` and upsert them by id (one LanceDB write, no other row touched); return rows written.

        Raises:
            BackendError: the embedder failed; nothing was written.
            ColdStoreError: LanceDB failed; the table is at its previous version.
        """
        return self.upsert({c.id: [c] for c in chunks}, delete_stale=False)

    def remove(self, ids: Sequence[str]) -> None:
        """Delete the rows of ``ids`` (and any chunk cut from them)."""
        if not ids:
            return
        table = self.table
        listed = ", ".join(sql_string(i) for i in ids)
        with self.writing():
            try:
                table.delete(f"id IN ({listed}) OR origin IN ({listed})")
            except (OSError, ValueError, RuntimeError) as exc:
                raise ColdStoreError(f"cannot delete from the cold store {self.path}: {exc}") from exc

    def _delete_stale(self, table, origin_chunks: dict[str, list[Chunk]]) -> None:
        for origin, group in origin_chunks.items():
            where = f"origin = {sql_string(origin)}"
            if group:
                where += " AND id NOT IN (" + ", ".join(sql_string(c.id) for c in group) + ")"
            table.delete(where)

    def optimize(self, cleanup_older_than: timedelta = CLEANUP_AFTER) -> None:
        """Merge small fragments, fold new rows into the indexes, delete old versions, and
        build or retrain the vector index once the table has ``ann_min_rows`` chunks.

        Searches go on meanwhile; writers wait. A failed index build is logged and
        leaves exact search in place.
        """
        table = self.table  # before the write lock: opening takes ``_guard`` first
        with self.writing():
            try:
                table.optimize(cleanup_older_than=cleanup_older_than)
            except (OSError, ValueError, RuntimeError) as exc:
                raise ColdStoreError(f"cannot optimize the cold store {self.path}: {exc}") from exc
            log.info("cold store %s optimized (version %d)", self.path, table.version)
            ann_index.maintain(table, self.ann_min_rows, self.path)

    def vector_index(self) -> dict[str, Any] | None:
        """The ANN index's type, indexed/unindexed rows and segments, or None while search is exact."""
        return ann_index.describe(self.table)

    def _optimize_soon(self) -> None:
        """Run :meth:`optimize` in the background (once at a time) so that writers do not wait for it."""
        with self._guard:
            if self._optimizing is not None and not self._optimizing.done():
                return
            if self._maintenance is None:
                self._maintenance = ThreadPoolExecutor(1, thread_name_prefix="cold-optimize")
            self._optimizing = self._maintenance.submit(self._optimize_in_background)

    def _optimize_in_background(self) -> None:
        try:
            self.optimize()
        except (ColdStoreError, LockTimeoutError) as exc:
            # Nothing is lost: the next batch of writes tries again.
            log.warning("background optimize of the cold store %s failed: %s", self.path, exc)

    # -- reading --------------------------------------------------------------

    def count(self, origin: str | None = None) -> int:
        """Number of chunks (of one ``origin``)."""
        return self.table.count_rows(None if origin is None else f"origin = {sql_string(origin)}")

    def ids(self) -> list[str]:
        """Every chunk id (duplicates included: there should be none)."""
        return self.table.to_arrow().column("id").to_pylist()

    def search(
        self, query: str, n_results: int = 5, kinds: Sequence[str] | None = None,
        since: str | None = None, until: str | None = None,
    ) -> list[Hit]:
        """The ``n_results`` chunks that best match ``query`` by meaning and words, best first."""
        where = where_clause(kinds, since, until)
        depth = max(4 * n_results, 20)
        table = self.table
        with self._guard:
            if self._pool is None:
                self._pool = ThreadPoolExecutor(1, thread_name_prefix="cold-fts")
        vector = self.embedder.embed([query])[0]
        # Started after the embedding, not during it: the forward pass re-takes the GIL between
        # its hundreds of small operations, and a concurrent LanceDB call's Python threads slowed
        # it by ~4 ms, more than the ~3 ms full-text search that overlapped.
        words = self._pool.submit(self._fts, table, query, where, depth)
        nearest = self.nearest(vector, depth, where)
        return fuse([nearest, words.result()], n_results)

    def nearest(self, vector, depth: int, where: str | None = None, *, exact: bool = False) -> list[dict]:
        """The ``depth`` rows closest to ``vector`` (cosine), through the ANN index if any, best first.

        ``exact=True`` bypasses the index (to measure what it loses).
        """
        try:
            return _run(self.vector_query(vector, exact=exact), where, depth, "_distance")
        except (OSError, ValueError, RuntimeError) as exc:
            raise ColdStoreError(f"vector search failed in {self.path}: {exc}") from exc

    def vector_query(self, vector, *, exact: bool = False):
        """The LanceDB query :meth:`nearest` runs (its ``explain_plan()`` shows whether the index is used)."""
        return ann_index.nearest_query(self.table, vector, exact=exact)

    def _fts(self, table, query: str, where: str | None, depth: int) -> list[dict]:
        try:
            return _run(table.search(query, query_type="fts"), where, depth, "_score")
        except (OSError, ValueError, RuntimeError) as exc:
            raise ColdStoreError(f"full-text search failed in {self.path}: {exc}") from exc

    def drop(self) -> None:
        """Delete the whole table (``rebuild_index`` recreates it from the files)."""
        import lancedb

        with self._guard, self.writing():
            db = lancedb.connect(self.path)
            if TABLE in db.list_tables().tables:
                db.drop_table(TABLE)
            self._table = None

    def close(self) -> None:
        """Wait for a background optimize, release the search thread and the table handle."""
        with self._guard:
            pools = [p for p in (self._maintenance, self._pool) if p is not None]
            self._maintenance = self._pool = None
        # Outside ``_guard``: the background optimize needs it to reach the table.
        for pool in pools:
            pool.shutdown(wait=True)
        with self._guard:
            self._table = None


def _row(chunk: Chunk, vector) -> dict[str, Any]:
    return {
        "id": chunk.id, "origin": chunk.origin, "kind": chunk.kind, "text": chunk.text,
        "source": chunk.source, "created_at": chunk.created_at,
        "metadata": json.dumps(chunk.metadata, ensure_ascii=False, sort_keys=True),
        "vector": vector.tolist(),
    }


def _run(query, where: str | None, depth: int, score_column: str) -> list[dict]:
    if where:
        query = query.where(where, prefilter=True)
    # Naming the score column keeps LanceDB from warning that it adds it implicitly.
    columns = ["id", "origin", "kind", "text", "source", "created_at", "metadata", score_column]
    return query.select(columns).limit(depth).to_list()


def where_clause(kinds: Sequence[str] | None, since: str | None, until: str | None) -> str | None:
    clauses = []
    if kinds:
        unknown = [k for k in kinds if k not in KINDS]
        if unknown:
            raise ValidationError(f"unknown memory kind {unknown[0]!r}; valid: {', '.join(KINDS)}")
        clauses.append("kind IN (" + ", ".join(sql_string(k) for k in kinds) + ")")
    if since:
        clauses.append(f"created_at >= {sql_string(since)}")
    if until:
        clauses.append(f"created_at <= {sql_string(until)}")
    return " AND ".join(clauses) or None


def fuse(rankings: Iterable[list[dict]], n_results: int) -> list[Hit]:
    """Reciprocal rank fusion of several rankings of rows (each best first)."""
    scores: dict[str, float] = {}
    rows: dict[str, dict] = {}
    for ranking in rankings:
        for rank, row in enumerate(ranking, start=1):
            scores[row["id"]] = scores.get(row["id"], 0.0) + 1.0 / (RRF_K + rank)
            rows.setdefault(row["id"], row)
    # sorted() is stable: ties keep the order of the first ranking (the vector search).
    best = sorted(scores, key=scores.__getitem__, reverse=True)[:n_results]
    return [Hit(_chunk(rows[i]), scores[i]) for i in best]


def _chunk(row: dict) -> Chunk:
    return Chunk(
        id=row["id"], origin=row["origin"], kind=row["kind"], text=row["text"], source=row["source"],
        created_at=row["created_at"], metadata=json.loads(row["metadata"] or "{}"),
    )
