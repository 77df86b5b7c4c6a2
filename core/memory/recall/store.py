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
writers run in a background thread every ``optimize_every`` commits to the table.
The commits are counted by the table's version, so the writes of every handle
count, those of earlier opens and other processes too: an agent opened for a few
writes at a time, as a server does, has its small fragments merged and its old
versions deleted like one kept open (a count of its own handle's writes never got
there, and each search read one more fragment each time).

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
from dataclasses import replace
from datetime import timedelta
from pathlib import Path
from typing import Any, Callable, Sequence

from core.errors import ColdStoreError, EmbedderMismatchError, LockTimeoutError
from core.llm import Embedder
from core.memory.recall import ann_index, lance_table
from core.memory.recall.lance_table import (
    CLEANUP_AFTER, COLUMNS, LEGACY_TABLES, META_DIMENSION, META_EMBEDDER, SEARCHED, TABLE, VectorRow,
    cold_store_error, compaction_steps, sql_string, upsert,
)
from core.durable import AgentLock, fault_points, leave_ctrl_c_to_the_main_thread
from core.memory.secrets.redaction import Redactor

log = logging.getLogger(__name__)


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
        self._had_rows = False
        self._maintenance: ThreadPoolExecutor | None = None
        self._optimizing: Future | None = None

    # -- opening --------------------------------------------------------------

    @property
    def table(self):
        """The Lance dataset at its latest version, opened (or created) on first use.

        A handle whose dataset another process dropped and made anew (``agentos rebuild-index``) is
        opened again: the table at the path is the one to read and write.
        """
        with self._guard:
            if self._table is not None:
                try:
                    if self._table.latest_version != self._table.version:
                        self._table = self._table.checkout_version(self._table.latest_version)
                    return self._table
                except (OSError, ValueError, RuntimeError) as exc:
                    log.info("the cold store %s changed under its handle (%s): opening it again", self.path,
                             " ".join(str(exc).split())[:200])
                    self._table = None
        # Opened outside ``_guard``: opening takes the write lock, which is always taken before ``_guard``.
        opened = self._open()
        with self._guard:
            if self._table is None:
                self._table = opened
            return self._table

    def writable(self):
        """A handle of the dataset's latest version of its own, for one write (the caller holds
        :meth:`writing`).

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

        try:
            self.path.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise cold_store_error(exc, f"cannot create the cold store's folder {self.path}") from exc
        # Before the lock: an Ollama embedder learns its dimension from a call to the model.
        schema = None if self.uri.is_dir() else lance_table.schema(self.embedder)
        with self.writing():
            try:
                swept = lance_table.sweep_orphans(self.uri)
                if swept[0]:
                    log.warning("removed %d orphan LanceDB temp files (%d bytes) under %s", *swept, self.path)
                for legacy in LEGACY_TABLES:
                    if (self.path / f"{legacy}.lance").is_dir():
                        shutil.rmtree(self.path / f"{legacy}.lance")
                        log.info("dropped the cold store's old %r table in %s: memories are embedded again",
                                 legacy, self.path)
                # Checked again under the lock: another process may have created the table meanwhile.
                exists = self.uri.is_dir()
                table = (
                    lance.dataset(self.uri)
                    if exists
                    else self._create(schema or lance_table.schema(self.embedder))
                )
            except (OSError, ValueError, RuntimeError) as exc:
                raise cold_store_error(exc, f"cannot open the cold store at {self.path}") from exc
        self._check_embedder(table)
        return table

    def _open_read_only(self):
        import lance

        if not self.uri.is_dir():
            raise ColdStoreError(f"there is no cold store at {self.path} yet: nothing was stored or indexed")
        try:
            table = lance.dataset(self.uri)
        except (OSError, ValueError, RuntimeError) as exc:
            raise cold_store_error(exc, f"cannot open the cold store at {self.path}") from exc
        self._check_embedder(table)
        return table

    def _create(self, schema):
        import lance

        table = lance.write_dataset(schema.empty_table(), self.uri, schema=schema, mode="create")
        log.info("created cold store %s with embedder %s (%d-d)", self.path, self.embedder.name,
                 self.embedder.dimension())
        return table

    def _check_embedder(self, table) -> None:
        meta = table.schema.metadata or {}
        built_by = meta.get(META_EMBEDDER, b"?").decode()
        dimension = meta.get(META_DIMENSION, b"?").decode()
        if built_by != self.embedder.name:
            raise EmbedderMismatchError(
                f"the cold store {self.path} was built with embedder {built_by} ({dimension}-d) but the "
                f"config asks for {self.embedder.name}; re-index it with: {self.reindex_hint}"
            )

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
        return int((self.table.schema.metadata or {})[META_DIMENSION])

    # -- writing --------------------------------------------------------------

    def put(self, rows: Sequence[VectorRow], replace_chunks_of: Sequence[str] = (), *,
            then: Callable[[], object] | None = None) -> int:
        """Embed ``rows`` and upsert them by id (one LanceDB write); return rows written.

        No other row is touched, except the piece rows of the memories ``replace_chunks_of`` that are
        not in ``rows`` (see :mod:`core.memory.recall.lance_table`), deleted in the same write.
        ``then()`` runs right after the write, under the same hold of the write lock: what records the
        rows as written then cannot be undone by a re-index (:meth:`drop`) of another process in between.

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
        while not self._write_if_unchanged(rows, vectors, table.schema, replace_chunks_of, then):
            # A secret was saved while the vectors were computed (its scrub may have run already): the rows
            # it is in are embedded again, outside the lock, which writers of other processes wait for.
            late = self._redacted(rows)
            changed = [n for n, (row, now) in enumerate(zip(rows, late))
                       if (row.text, row.memory) != (now.text, now.memory)]
            rows, fresh = late, self._embed([late[n] for n in changed])
            for n, vector in zip(changed, fresh):
                vectors[n] = vector
        return len(rows)

    def _write_if_unchanged(self, rows: list[VectorRow], vectors, schema,
                            replace_chunks_of: Sequence[str] = (),
                            then: Callable[[], object] | None = None) -> bool:
        """Upsert ``rows`` unless a secret saved since they were redacted is in them; True if written."""
        with self.writing():
            now = self._redacted(rows)
            if any((row.text, row.memory) != (late.text, late.memory) for row, late in zip(rows, now)):
                return False
            records = lance_table.arrow(rows, vectors, schema)
            try:
                table = self.writable()
                before = table.version
                stale = lance_table.pieces_filter(table, replace_chunks_of)
                fault_points.reach("cold.write")
                upsert(table, records, stale)
                fault_points.reach("cold.written")
            except (OSError, ValueError, RuntimeError) as exc:
                raise cold_store_error(exc, f"cannot write to the cold store {self.path}") from exc
            if then is not None:
                then()
        self._committed(before, table.version)
        return True

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
        """Delete the rows of ``ids`` and their piece rows (ids that have none are ignored)."""
        if not ids:
            return
        self.table  # opened (its embedder checked) before the write lock
        with self.writing():
            try:
                for start in range(0, len(ids), 100):
                    part = ids[start:start + 100]
                    table = self.writable()
                    before = table.version
                    pieces = lance_table.pieces_filter(table, part)
                    fault_points.reach("cold.write")
                    table.delete(f"id IN ({', '.join(map(sql_string, part))})"
                                 + (f" OR ({pieces})" if pieces else ""))
                    fault_points.reach("cold.written")
                    self._committed(before, table.version)
            except (OSError, ValueError, RuntimeError) as exc:
                raise cold_store_error(exc, f"cannot delete from the cold store {self.path}") from exc

    def optimize(self, cleanup_older_than: timedelta = CLEANUP_AFTER) -> None:
        """Merge small fragments, fold new rows into the index, delete old versions, and
        build or retrain the vector index once the table has ``ann_min_rows`` rows.

        Searches go on meanwhile; writers wait for one step at a time (each a Lance commit of its own),
        not for the whole of it. A failed index build is logged and leaves exact search in place.
        """
        self.table  # opened (its embedder checked) before the write lock
        try:
            for step in compaction_steps(cleanup_older_than):
                with self.writing():
                    table = self.writable()
                    step(table)
        except (OSError, ValueError, RuntimeError) as exc:
            raise cold_store_error(exc, f"cannot optimize the cold store {self.path}") from exc
        log.info("cold store %s optimized (version %d)", self.path, table.version)
        with self.writing():
            ann_index.maintain(self.writable(), self.ann_min_rows, self.path)

    def vector_index(self) -> dict[str, Any] | None:
        """The ANN index's type, indexed/unindexed rows and segments, or None while search is exact."""
        return ann_index.describe(self.table)

    def _committed(self, before: int, after: int) -> None:
        """A write took the table from version ``before`` to ``after``: optimize it in the background if that
        passed a multiple of ``optimize_every`` (each writer passes its own, whichever handle or process)."""
        if after // self.optimize_every > before // self.optimize_every:
            self._optimize_soon()

    def _optimize_soon(self) -> None:
        """Run :meth:`optimize` in the background (once at a time) so that writers do not wait for it."""
        with self._guard:
            if self._optimizing is not None and not self._optimizing.done():
                return
            if self._maintenance is None:
                self._maintenance = ThreadPoolExecutor(1, thread_name_prefix="cold-optimize",
                                                       initializer=leave_ctrl_c_to_the_main_thread)
            self._optimizing = self._maintenance.submit(self._optimize_in_background)

    def _optimize_in_background(self) -> None:
        try:
            self.optimize()
        except (ColdStoreError, LockTimeoutError) as exc:
            # Nothing is lost: the next batch of writes tries again.
            log.warning("background optimize of the cold store %s failed: %s", self.path, exc)

    # -- reading --------------------------------------------------------------

    def count(self) -> int:
        """Number of memories (rows that are not chunks of one)."""
        return self.table.count_rows(filter=f"NOT starts_with(id, {sql_string(lance_table.CHUNK_PREFIX)})")

    def may_have_rows(self) -> bool:
        """False while the table is empty; once it has had a row, True without asking LanceDB again
        (a search of a table emptied since then finds nothing, which is as good)."""
        if not self._had_rows:
            self._had_rows = self.count() > 0
        return self._had_rows

    def rows_of(self, id_prefix: str) -> list[dict[str, Any]]:
        """Every row whose id starts with ``id_prefix`` (e.g. ``note:``), without its vector."""
        try:
            return self.table.to_table(columns=COLUMNS,
                                       filter=f"starts_with(id, {sql_string(id_prefix)})").to_pylist()
        except (OSError, ValueError, RuntimeError) as exc:
            raise cold_store_error(exc, f"cannot read the cold store {self.path}") from exc

    def ids(self) -> list[str]:
        """Every memory's id (duplicates included: there should be none), chunk rows left out."""
        return [i for i in self._row_ids() if not lance_table.is_chunk(i)]

    def chunk_ids(self) -> list[str]:
        """Every chunk row's id (see :mod:`core.memory.recall.lance_table`)."""
        return [i for i in self._row_ids() if lance_table.is_chunk(i)]

    def _row_ids(self) -> list[str]:
        return self.table.to_table(columns=["id"]).column("id").to_pylist()

    def nearest(
        self, vector, depth: int, where: str | None = None, *, exact: bool = False,
        columns: Sequence[str] = SEARCHED,
    ) -> list[dict]:
        """The ``depth`` rows closest to ``vector`` (cosine), through the ANN index if any, best first.

        Each row has ``columns`` (by default ``id, kind, text, source, occurred_at``) and ``_distance``; a
        memory with pieces (sentences, chunks) is one hit at its best row, its own or a piece's (with the
        memory's id), and every hit has ``own_distance``, its own row's (see
        :func:`~core.memory.recall.lance_table.folded_hits`); ``exact=True`` bypasses the index (to measure
        what it loses). Every column read costs a random read a row: recall asks for ``("id",)`` only.
        """
        try:
            # Naming the distance column keeps Lance from warning that it adds it implicitly.
            # Twice the depth: the pieces of a memory may hold several of the nearest rows.
            rows = self.table.to_table(columns=[*columns, "_distance"], filter=where, prefilter=bool(where),
                                       nearest=ann_index.nearest(vector, 2 * depth, exact=exact)).to_pylist()
        except (OSError, ValueError, RuntimeError) as exc:
            raise cold_store_error(exc, f"vector search failed in {self.path}") from exc
        return lance_table.folded_hits(rows, depth)

    def explain_nearest(self, vector, *, exact: bool = False) -> str:
        """The plan of :meth:`nearest`'s search (it shows whether the index is used)."""
        return self.table.scanner(columns=["id", "_distance"],
                                  nearest=ann_index.nearest(vector, 10, exact=exact)).explain_plan()

    def drop(self) -> None:
        """Delete the whole table (``rebuild_index`` recreates it from the files)."""
        with self.writing(), self._guard:
            if self.uri.is_dir():
                shutil.rmtree(self.uri)
            self._table = None
            self._had_rows = False

    def close(self) -> None:
        """Wait for a background optimize, release the table handle and close the write lock's file."""
        with self._guard:
            pool, self._maintenance = self._maintenance, None
        # Outside ``_guard``: the background optimize needs it to reach the table.
        if pool is not None:
            pool.shutdown(wait=True)
        with self._guard:
            self._table = None
        self._write_lock.close()
