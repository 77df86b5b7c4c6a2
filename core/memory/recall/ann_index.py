"""The cold store's approximate-nearest-neighbour (ANN) vector index.

Tables of at least ``cold.ann_min_rows`` rows get an IVF_FLAT index (cosine,
about sqrt(rows) partitions). IVF_FLAT keeps the exact vectors, so probing
enough partitions loses almost nothing, and it trains in seconds (an HNSW
graph over 100k rows took a minute and found fewer of the exact
neighbours). The index is built and retrained by ``ColdStore.optimize``, never
by a search. Rows added after the last optimize are outside the index:
LanceDB searches them exactly and merges both result sets, so a fresh row
is found at once; the next optimize folds them in as a new index segment.

A growing store keeps its search fast: every segment is searched on its own
(at 100k rows, 7 segments made a search twice as slow as 1), and the
partitions are those of the rows the index was trained on (trained at 5k
rows, 71 partitions would each hold 1,400 rows at 100k). So the index is
retrained on the whole table past ``ANN_MAX_SEGMENTS`` segments and whenever
the table has doubled since it was trained (the row count it was trained on is
kept in the vector column's metadata): retraining costs about 4 s at 100k
rows, in the background, about twice in all as the table grows.
"""

from __future__ import annotations

import logging
import math
import time
from pathlib import Path
from typing import Any

log = logging.getLogger(__name__)

INDEX_NAME = "vector_idx"
ANN_NPROBES = 40
"""IVF partitions probed at least per query: with ~sqrt(rows) partitions this kept
recall@10 at 0.99-1.0 of exact search on MiniLM embeddings at 10k and 100k rows."""
ANN_MAX_SEGMENTS = 4
"""Each optimize that folds new rows in adds an index segment and keeps the old
partitioning; past this many segments the index is retrained on the whole table."""
ANN_REGROW = 2.0
"""The index is retrained when the table has this many times the rows it was trained on."""
TRAINED_ROWS = "agentos:index_trained_rows"
"""Key of the vector column's metadata: the rows the index was last trained on."""


def maintain(table, min_rows: int, where: Path) -> None:
    """Build the index once ``table`` (a Lance dataset) has ``min_rows`` rows (0: never); retrain it when
    it has too many segments or has doubled since it was trained. A failed build is logged and leaves
    exact search in place.

    The caller holds the store's write lock.
    """
    if not min_rows:
        return
    rows = table.count_rows()
    if rows < min_rows:
        return
    index = _index(table)
    if (
        index is not None
        and len(index.segments) <= ANN_MAX_SEGMENTS
        and rows < ANN_REGROW * trained_rows(table)
    ):
        return
    start = time.perf_counter()
    partitions = max(1, round(math.sqrt(rows)))
    try:
        table.create_index("vector", index_type="IVF_FLAT", name=INDEX_NAME, metric="cosine",
                           num_partitions=partitions, replace=True)
        table.update_field_metadata({"vector": {TRAINED_ROWS: str(rows)}})
    except (OSError, ValueError, RuntimeError) as exc:
        log.warning("building the vector index of %s failed; search stays exact: %s", where, exc)
        return
    log.info("vector index of %s built over %d rows (%d partitions) in %.1f s",
             where, rows, partitions, time.perf_counter() - start)


def _index(table):
    """The vector index's description, or None."""
    return next((i for i in table.describe_indices() if i.name == INDEX_NAME), None)


def trained_rows(table) -> int:
    """The rows the index was last trained on (0: unknown, e.g. an index of an earlier version)."""
    metadata = table.schema.field("vector").metadata or {}
    value = metadata.get(TRAINED_ROWS.encode(), b"0")
    return int(value) if value.isdigit() else 0


def describe(table) -> dict[str, Any] | None:
    """The index's type, indexed and unindexed rows and segments; None while search is exact."""
    index = _index(table)
    if index is None:
        return None
    indexed = index.num_rows_indexed
    return {"type": index.index_type, "indexed_rows": indexed,
            "unindexed_rows": max(0, table.count_rows() - indexed),
            "segments": len(index.segments)}


def nearest(vector, depth: int, *, exact: bool = False) -> dict[str, Any]:
    """The ``nearest`` argument of a cosine search for ``vector``'s ``depth`` nearest rows: through the
    index if there is one, unless ``exact``."""
    query = {"column": "vector", "q": vector, "k": depth, "metric": "cosine"}
    if exact:
        return {**query, "use_index": False}
    # No maximum: a narrow filter may leave too few rows in the first partitions, and the search probes on.
    return {**query, "minimum_nprobes": ANN_NPROBES}
