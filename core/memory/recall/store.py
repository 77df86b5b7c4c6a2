"""The cold store: one Lance table holding the vector of every memory recall knows.

A row is keyed by its recall doc's id (see :mod:`core.memory.recall.docs`): the
vector of what the memory says, computed by the configured embedder, beside its
kind, source and time, so a vector search can be filtered like the word search,
and the memory itself as JSON (``memory``: its text, metadata and times), from
which notes are restored if memory.db is lost. Words are searched in memory.db
(SQLite FTS5); this table only answers "which memories are nearest in meaning"
(:meth:`ColdStore.nearest`). Every row is written with the secrets known then
redacted (the ``redactor`` given).

Tables of at least ``ann_min_rows`` rows get an ANN vector index (see
:mod:`core.memory.recall.ann_index`), built by :meth:`ColdStore.optimize`, which
writers run in a background thread every ``optimize_every`` writes.

The table's schema metadata records the embedder and dimension that built it;
opening it with another embedder raises :class:`EmbedderMismatchError`.
Writers serialise on ``memory/.cold.lock`` and upsert by id, which makes every
write idempotent. A store opened with ``read_only=True`` only searches: it
creates, sweeps and locks nothing, and refuses every write.

The table is a Lance dataset (``<lancedb dir>/memories.lance``, the layout LanceDB
uses), read and written with the ``lance`` library, which LanceDB is built on:
importing it takes about 0.15 s where ``import lancedb`` took 1–2.5 s, which a
fresh ``agentos recall`` paid in full. Every read sees the table's latest version
(other processes' writes included). lance, pyarrow and numpy are imported on
first use.
"""

from __future__ import annotations

import logging
import shutil
import threading
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field, replace
from datetime import timedelta
from pathlib import Path
from typing import Any, Callable, Sequence

from core.errors import ColdStoreError, EmbedderMismatchError, LockTimeoutError
from core.llm.embedders import Embedder
from core.memory.recall import ann_index
from core.memory.files import fault_points
from core.memory.files.locking import AgentLock
from core.memory.secrets.redaction import Redactor

log = logging.getLogger(__name__)

TABLE = "memories"
LEGACY_TABLES = ("chunks",)
"""Tables of earlier versions (archive chunks fused with LanceDB's full-text search). Their rows
are not recall docs: the table is dropped on open and every memory is embedded again."""
CLEANUP_AFTER = timedelta(hours=1)
"""Table versions older than this are deleted by :meth:`ColdStore.optimize`."""
_META_EMBEDDER = b"agentos.embedder"
_META_DIMENSION = b"agentos.dimension"
_COLUMNS = ["id", "kind", "text", "source", "occurred_at", "memory"]
_SEARCHED = _COLUMNS[:-1]
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


class ColdStore:
    """One agent's LanceDB table, opened on first use."""

    def __init__(
        self, path: Path, embedder: Embedder, lock_file: Path, *, reindex_hint: str,
        optimize_every: int = 50, ann_min_rows: int = 5000, lock_timeout_s: float = 60.0,
        read_only: bool = False, redactor: Callable[[], Redactor] | None = None,
    ) -> None:
        """``read_only=True``: search an existing table only (no folder, lock or table is created).

        ``redactor()`` hides the secrets known now in every row written (its texts, and so its vector).
        """
        self.path = path
        self.read_only = read_only
        self.redactor = redactor
        self.embedder = embedder
        self.reindex_hint = reindex_hint
        self.optimize_every = optimize_every
        self.ann_min_rows = ann_min_rows
        self._write_lock = AgentLock(lock_file, lock_timeout_s)
        self._guard = threading.RLock()
        self._table = None
        self._writes = 0
        self._had_rows = False
        self._maintenance: ThreadPoolExecutor | None = None
        self._optimizing: Future | None = None

    # -- opening --------------------------------------------------------------

    @property
    def table(self):
        """The Lance dataset at its latest version, opened (or created) on first use."""
        with self._guard:
            if self._table is None:
                self._table = self._open()
            elif self._table.latest_version != self._table.version:
                self._table = self._table.checkout_version(self._table.latest_version)
            return self._table

    def writable(self):
        """A handle of the dataset's latest version of its own, for one write (the caller holds :meth:`writing`).

        A Lance dataset handle is not to be written while another thread reads through it, so reads share
        :attr:`table` and each write opens its own handle (about 0.1 ms).
        """
        import lance

        self.table  # created if need be, and its embedder checked
        return lance.dataset(self.uri)

    @property
    def uri(self) -> Path:
        """The dataset's folder."""
        return self.path / f"{TABLE}.lance"

    def _open(self):
        if self.read_only:
            return self._open_read_only()
        import lance

        self.path.mkdir(parents=True, exist_ok=True)
        # Before the lock: an Ollama embedder learns its dimension from a call to the model.
        schema = None if self.uri.is_dir() else self._schema()
        with self.writing():
            swept = self._sweep_orphans()
            if swept[0]:
                log.warning("removed %d orphan LanceDB temp files (%d bytes) under %s", *swept, self.path)
            try:
                for legacy in LEGACY_TABLES:
                    if (self.path / f"{legacy}.lance").is_dir():
                        shutil.rmtree(self.path / f"{legacy}.lance")
                        log.info("dropped the cold store's old %r table in %s: memories are embedded again",
                                 legacy, self.path)
                # Checked again under the lock: another process may have created the table meanwhile.
                exists = self.uri.is_dir()
                table = lance.dataset(self.uri) if exists else self._create(schema or self._schema())
            except (OSError, ValueError, RuntimeError) as exc:
                raise ColdStoreError(f"cannot open the cold store at {self.path}: {exc}") from exc
        self._check_embedder(table)
        return table

    def _open_read_only(self):
        import lance

        if not self.uri.is_dir():
            raise ColdStoreError(f"there is no cold store at {self.path} yet: nothing was stored or indexed")
        try:
            table = lance.dataset(self.uri)
        except (OSError, ValueError, RuntimeError) as exc:
            raise ColdStoreError(f"cannot open the cold store at {self.path}: {exc}") from exc
        self._check_embedder(table)
        return table

    def _create(self, schema):
        import lance

        table = lance.write_dataset(schema.empty_table(), self.uri, schema=schema, mode="create")
        log.info("created cold store %s with embedder %s (%d-d)", self.path, self.embedder.name,
                 self.embedder.dimension())
        return table

    def _schema(self):
        import pyarrow as pa

        dimension = self.embedder.dimension()
        return pa.schema(
            [pa.field(name, pa.string(), nullable=False) for name in _COLUMNS]
            + [pa.field("vector", pa.list_(pa.float32(), dimension), nullable=False)],
            metadata={_META_EMBEDDER: self.embedder.name.encode(), _META_DIMENSION: str(dimension).encode()},
        )

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
        self._refuse_if_read_only()
        return self._write_lock.hold()

    def _refuse_if_read_only(self) -> None:
        if self.read_only:
            raise ColdStoreError(f"the cold store {self.path} was opened read-only: it cannot be written")

    @property
    def dimension(self) -> int:
        """Vector length of the table."""
        return int((self.table.schema.metadata or {})[_META_DIMENSION])

    # -- writing --------------------------------------------------------------

    def put(self, rows: Sequence[VectorRow]) -> int:
        """Embed ``rows`` and upsert them by id (one LanceDB write, no other row touched); return rows written.

        Raises:
            BackendError: the embedder failed; nothing was written.
            EmbedderMismatchError: the embedder's vectors do not fit the table.
            ColdStoreError: LanceDB failed; the table is at its previous version.
        """
        self._refuse_if_read_only()  # before anything is embedded
        if not rows:
            return 0
        rows = self._redacted(rows)
        vectors = self._embed(rows)
        table = self.table
        while not self._write_if_unchanged(rows, vectors, table.schema):
            # A secret was saved while the vectors were computed (its scrub may have run already): the rows
            # it is in are embedded again, outside the lock, which writers of other processes wait for.
            late = self._redacted(rows)
            changed = [n for n, (row, now) in enumerate(zip(rows, late))
                       if (row.text, row.memory) != (now.text, now.memory)]
            rows, fresh = late, self._embed([late[n] for n in changed])
            for n, vector in zip(changed, fresh):
                vectors[n] = vector
        if self._writes % self.optimize_every == 0:
            self._optimize_soon()
        return len(rows)

    def _write_if_unchanged(self, rows: list[VectorRow], vectors, schema) -> bool:
        """Upsert ``rows`` unless a secret saved since they were redacted is in them; True if written."""
        with self.writing():
            now = self._redacted(rows)
            if any((row.text, row.memory) != (late.text, late.memory) for row, late in zip(rows, now)):
                return False
            records = self._arrow(rows, vectors, schema)
            try:
                fault_points.reach("cold.write")
                upsert(self.writable(), records)
                fault_points.reach("cold.written")
            except (OSError, ValueError, RuntimeError) as exc:
                raise ColdStoreError(f"cannot write to the cold store {self.path}: {exc}") from exc
            self._writes += 1
        return True

    @staticmethod
    def _arrow(rows: Sequence[VectorRow], vectors, schema):
        """``rows`` with their ``vectors`` as an Arrow table of ``schema``."""
        import pyarrow as pa

        columns = {name: [getattr(r, name) for r in rows] for name in _COLUMNS}
        dimension = schema.field("vector").type.list_size
        flat = pa.array(vectors.astype("float32", copy=False).reshape(-1))
        columns["vector"] = pa.FixedSizeListArray.from_arrays(flat, dimension)
        return pa.table(columns, schema=schema)

    def _redacted(self, rows: Sequence[VectorRow]) -> list[VectorRow]:
        """``rows`` with the secrets known now hidden in their text and memory."""
        redactor = self.redactor() if self.redactor is not None else None
        if not redactor:
            return list(rows)
        return [replace(r, text=redactor.text(r.text), memory=redactor.text(r.memory)) for r in rows]

    def _embed(self, rows: Sequence[VectorRow]):
        vectors = self.embedder.embed([r.text for r in rows])
        if vectors.shape[1] != self.dimension:
            raise EmbedderMismatchError(
                f"embedder {self.embedder.name} returned {vectors.shape[1]}-d vectors but the cold store "
                f"holds {self.dimension}-d ones; re-index it with: {self.reindex_hint}"
            )
        return vectors

    def remove(self, ids: Sequence[str]) -> None:
        """Delete the rows of ``ids`` (ids that have none are ignored)."""
        if not ids:
            return
        self.table  # opened before the write lock: opening takes ``_guard`` first
        with self.writing():
            try:
                for start in range(0, len(ids), 500):
                    fault_points.reach("cold.write")
                    self.writable().delete(f"id IN ({', '.join(sql_string(i) for i in ids[start:start + 500])})")
                    fault_points.reach("cold.written")
            except (OSError, ValueError, RuntimeError) as exc:
                raise ColdStoreError(f"cannot delete from the cold store {self.path}: {exc}") from exc

    def optimize(self, cleanup_older_than: timedelta = CLEANUP_AFTER) -> None:
        """Merge small fragments, fold new rows into the index, delete old versions, and
        build or retrain the vector index once the table has ``ann_min_rows`` rows.

        Searches go on meanwhile; writers wait for one step at a time (each a Lance commit of its own),
        not for the whole of it. A failed index build is logged and leaves exact search in place.
        """
        self.table  # before the write lock: opening takes ``_guard`` first
        try:
            for step in compaction_steps(cleanup_older_than):
                with self.writing():
                    table = self.writable()
                    step(table)
        except (OSError, ValueError, RuntimeError) as exc:
            raise ColdStoreError(f"cannot optimize the cold store {self.path}: {exc}") from exc
        log.info("cold store %s optimized (version %d)", self.path, table.version)
        with self.writing():
            ann_index.maintain(self.writable(), self.ann_min_rows, self.path)

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

    def count(self) -> int:
        """Number of rows."""
        return self.table.count_rows()

    def may_have_rows(self) -> bool:
        """False while the table is empty; once it has had a row, True without asking LanceDB again
        (a search of a table emptied since then finds nothing, which is as good)."""
        if not self._had_rows:
            self._had_rows = self.count() > 0
        return self._had_rows

    def rows_of(self, id_prefix: str) -> list[dict[str, Any]]:
        """Every row whose id starts with ``id_prefix`` (e.g. ``note:``), without its vector."""
        try:
            return self.table.to_table(columns=_COLUMNS,
                                       filter=f"starts_with(id, {sql_string(id_prefix)})").to_pylist()
        except (OSError, ValueError, RuntimeError) as exc:
            raise ColdStoreError(f"cannot read the cold store {self.path}: {exc}") from exc

    def ids(self) -> list[str]:
        """Every row's id (duplicates included: there should be none)."""
        return self.table.to_table(columns=["id"]).column("id").to_pylist()

    def nearest(
        self, vector, depth: int, where: str | None = None, *, exact: bool = False,
        columns: Sequence[str] = _SEARCHED,
    ) -> list[dict]:
        """The ``depth`` rows closest to ``vector`` (cosine), through the ANN index if any, best first.

        Each row has ``columns`` (by default ``id, kind, text, source, occurred_at``) and ``_distance``;
        ``exact=True`` bypasses the index (to measure what it loses). Every column read costs a random
        read a row: recall asks for ``("id",)`` only.
        """
        try:
            # Naming the distance column keeps Lance from warning that it adds it implicitly.
            return self.table.to_table(columns=[*columns, "_distance"], filter=where, prefilter=bool(where),
                                       nearest=ann_index.nearest(vector, depth, exact=exact)).to_pylist()
        except (OSError, ValueError, RuntimeError) as exc:
            raise ColdStoreError(f"vector search failed in {self.path}: {exc}") from exc

    def explain_nearest(self, vector, *, exact: bool = False) -> str:
        """The plan of :meth:`nearest`'s search (it shows whether the index is used)."""
        return self.table.scanner(columns=["id", "_distance"],
                                  nearest=ann_index.nearest(vector, 10, exact=exact)).explain_plan()

    def drop(self) -> None:
        """Delete the whole table (``rebuild_index`` recreates it from the files)."""
        with self._guard, self.writing():
            if self.uri.is_dir():
                shutil.rmtree(self.uri)
            self._table = None
            self._had_rows = False

    def close(self) -> None:
        """Wait for a background optimize and release the table handle."""
        with self._guard:
            pool, self._maintenance = self._maintenance, None
        # Outside ``_guard``: the background optimize needs it to reach the table.
        if pool is not None:
            pool.shutdown(wait=True)
        with self._guard:
            self._table = None


def upsert(table, records) -> None:
    """Insert ``records`` (an Arrow table) into the Lance ``table``, replacing the rows of the same id."""
    table.merge_insert("id").when_matched_update_all().when_not_matched_insert_all().execute(records)


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
