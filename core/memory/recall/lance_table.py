"""The Lance table under the cold store (:mod:`core.memory.recall.store`): its rows, its schema, and the
operations that take a dataset handle (an upsert, a compaction, a search's prefilter).

Scrubbing a secret rewrites the table with these too, without a :class:`~core.memory.recall.store.ColdStore`.
lance and pyarrow are imported on first use.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from datetime import timedelta
from pathlib import Path
from typing import Any, Callable, Iterable, Sequence

from core.errors import ColdStoreError, ColdStoreFilesError
from core.llm import Embedder
from core.durable import fault_points, os_error_number, storage_error

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
    """Merge small fragments, fold new rows into the indexes, and delete versions older than
    ``cleanup_older_than`` (with ``delete_unverified``, also files no version uses, as a write killed before
    its commit leaves)."""
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


# -- piece rows: the sentences of a memory, the chunks of a long one ---------------------------
#
# A memory's own vector speaks for all of it, so a remark in passing inside a turn about something else
# ("I'm looking for tools for social media analytics. By the way, I just attended a digital marketing
# workshop") is diluted by the rest. A memory of several sentences therefore also gets a row for each
# sentence (:func:`sentences`), and one longer than ``LONG_CHARS`` (its own vector sees about that much of
# it, see :mod:`core.llm.embedding.token_batches`) a row for each chunk of about ``CHUNK_CHARS`` characters
# instead (cut between words, overlapping by ``OVERLAP_CHARS`` so that a sentence on a cut is whole in one
# of them). A piece row has the memory's kind, source and time, so that the vector search's filters hold
# for it. It is no memory of its own: a hit on it is evidence for its memory (:func:`folded_hits`), which
# recall returns once, and its text is the memory's own.
#
# A piece row's id is ``chunk:<memory id>#<n>`` (n from 1, without gaps) with ``#`` and ``%`` of the memory
# id escaped (a fact key may hold them), so ``starts_with(id, 'chunk:<escaped id>#')`` selects the pieces
# of one memory and no other's. They are written in the same Lance commit as the memory's row, and that
# commit deletes the memory's piece rows it does not rewrite (its text changed, or was redacted, and has
# fewer pieces now): no stale piece keeps a secret, or finds a memory by what it no longer says.

CHUNK_PREFIX = "chunk:"
LONG_CHARS = 2000
"""A memory longer than this gets chunk rows instead of sentence rows (its own vector sees about this much
of it)."""
CHUNK_CHARS = 400
"""About how long a chunk is: three or four sentences, some 100 tokens. A sentence's meaning is diluted by
what shares its vector: a fact in 1,000 characters of unrelated talk was at cosine 0.16 from a question
about it, in 400 at 0.36 (0.49 alone), which recall's default ``min_score`` lets through."""
OVERLAP_CHARS = 80
"""How much of the end of a chunk the next one repeats (a sentence on a cut is whole in one of them)."""
SENTENCE_CHARS = 25
"""The shortest sentence that gets a row of its own: a shorter piece ("Thanks!", "It was great.", an
abbreviation's "e.g.") joins the sentence before it."""

_SENTENCE_END = re.compile(r"(?<=[.!?])\s+|(?<=[.!?][\"')\]])\s+|\s*\n+\s*")
"""Where a sentence ends: after ``.``, ``!`` or ``?`` (and a closing quote or bracket) before white space,
and at a line break."""


def _escaped(memory_id: str) -> str:
    return memory_id.replace("%", "%25").replace("#", "%23")


def chunk_id(memory_id: str, number: int) -> str:
    """The id of piece ``number`` (from 1) of the memory ``memory_id``."""
    return f"{CHUNK_PREFIX}{_escaped(memory_id)}#{number}"


def memory_of(row_id: str) -> str:
    """The memory a row stands for: itself, or a piece's memory."""
    if not row_id.startswith(CHUNK_PREFIX):
        return row_id
    return row_id[len(CHUNK_PREFIX):].rpartition("#")[0].replace("%23", "#").replace("%25", "%")


def is_chunk(row_id: str) -> bool:
    """True for a piece row's id."""
    return row_id.startswith(CHUNK_PREFIX)


def sentences(text: str, shortest: int = SENTENCE_CHARS) -> list[str]:
    """``text`` cut into sentences; a piece shorter than ``shortest`` characters joins the one before it
    (the first one, the one after it)."""
    found: list[str] = []
    for piece in (p.strip() for p in _SENTENCE_END.split(text)):
        if not piece:
            continue
        if found and (len(piece) < shortest or len(found[-1]) < shortest):
            found[-1] = f"{found[-1]} {piece}"
        else:
            found.append(piece)
    return found


def chunk_texts(text: str, size: int = CHUNK_CHARS, overlap: int = OVERLAP_CHARS) -> list[str]:
    """``text`` in overlapping pieces of about ``size`` characters, cut at white space where there is some."""
    found: list[str] = []
    start = 0
    while start < len(text):
        end = min(len(text), start + size)
        if end < len(text):
            cut = text.rfind(" ", start + size // 2, end)
            end = cut if cut > start else end
        found.append(text[start:end].strip())
        if end >= len(text):
            break
        start = max(start + 1, end - overlap)
        space = text.find(" ", start, end)
        start = space + 1 if space != -1 else start
    return [piece for piece in found if piece]


def piece_texts(text: str) -> list[str]:
    """The texts of a memory's piece rows: the chunks of a long one, the sentences of one that has several,
    none for one sentence."""
    if len(text) > LONG_CHARS:
        return chunk_texts(text)
    found = sentences(text)
    return found if len(found) > 1 else []


def chunk_rows(row: VectorRow, text: str, speaker: str = "") -> list[VectorRow]:
    """The piece rows of the memory whose own row is ``row`` and whose text is ``text`` (see
    :func:`piece_texts`)."""
    said = f"{speaker}: " if speaker else ""
    return [VectorRow(id=chunk_id(row.id, n), kind=row.kind, text=said + piece, source=row.source,
                      occurred_at=row.occurred_at, memory="")
            for n, piece in enumerate(piece_texts(text), start=1)]


def chunks_filter(memory_ids: Iterable[str]) -> str | None:
    """A Lance filter that selects every piece row of ``memory_ids`` (None for no id). It is evaluated on
    every row of the table (about 10 ms a memory at 300,000 rows): :func:`pieces_filter` narrows the ids
    first."""
    ids = list(memory_ids)
    if not ids:
        return None
    either = " OR ".join(f"starts_with(id, {sql_string(CHUNK_PREFIX + _escaped(i) + '#')})" for i in ids)
    return f"starts_with(id, {sql_string(CHUNK_PREFIX)}) AND ({either})"


def pieces_filter(table, memory_ids: Sequence[str]) -> str | None:
    """A Lance filter that selects every piece row of those of ``memory_ids`` that have some in the Lance
    ``table`` (None: none has), for a write that holds the write lock.

    A memory has piece rows if and only if it has its first (they are numbered from 1 without gaps), which an
    ``IN`` list finds at once: usually none of a batch has (new memories), and :func:`chunks_filter` is slow.
    """
    if not memory_ids:
        return None
    firsts = ", ".join(sql_string(chunk_id(i, 1)) for i in memory_ids)
    found = table.to_table(columns=["id"], filter=f"id IN ({firsts})").column("id").to_pylist()
    return chunks_filter(memory_of(i) for i in found)


def folded_hits(rows: Sequence[dict[str, Any]], depth: int) -> list[dict[str, Any]]:
    """Vector hits (best first) folded into their memories: each memory once, at its best row's place and
    distance (its own row's or a piece's), at most ``depth`` of them.

    Each hit also has ``own_distance``: its own row's distance, or, when the search did not reach that row,
    the distance of the farthest row it returned (the own row is at least that far).
    """
    found: dict[str, dict[str, Any]] = {}
    for row in rows:
        memory = memory_of(row["id"])
        hit = found.get(memory)
        if hit is None and len(found) < depth:
            hit = found[memory] = {**row, "id": memory, "own_distance": None}
        if hit is not None and hit["own_distance"] is None and not is_chunk(row["id"]):
            hit["own_distance"] = row["_distance"]
    farthest = rows[-1]["_distance"] if rows else None
    for hit in found.values():
        if hit["own_distance"] is None:
            hit["own_distance"] = farthest
    return list(found.values())


def cold_store_error(exc: Exception, what: str) -> ColdStoreError:
    """The ColdStoreError for LanceDB's ``exc`` met while ``what``; an OS error's message names its fix."""
    number = os_error_number(exc)  # LanceDB words an OS error in any of its exceptions' messages
    if number is not None:
        return ColdStoreFilesError(str(storage_error(OSError(number, " ".join(str(exc).split())[:300]),
                                                     what)))
    return ColdStoreError(f"{what}: {' '.join(str(exc).split())[:500]}")
