"""``AgentOSStore``: LangGraph's ``BaseStore`` on an agent's memory.

    from core.langgraph_store import AgentOSStore
    graph = builder.compile(store=AgentOSStore("finn"))     # nodes use runtime.store

Items live in the agent's memory.db (table ``store_items``), so they survive
restarts and are exported with the agent. The passages chosen by the index
config (``{"fields": [...]}``, default the whole value) become recall docs of
kind ``item`` (secrets redacted), so ``search(query=...)`` is the agent's
recall: searchable by words as soon as ``put`` returns and by meaning once the
background indexer has embedded them, and ``recall_memory`` finds them too.
An item's score is its best passage's recall score (0-1). Behaviour follows
LangGraph's ``InMemoryStore``: namespace rules, overwrite, delete with
``PutOp(value=None)`` (the item's docs and vectors leave recall), ``filter`` on
values with ``$eq``/``$ne``/``$gt``/``$gte``/``$lt``/``$lte``, ordering by score
when a query is given (items with nothing indexed come after the scored ones),
``limit``/``offset``, ``list_namespaces`` with prefix, suffix and ``max_depth``.
Without a query, items come most recently updated first. Reads in a batch see
the items as they were before the batch's writes, which are applied together.
"""

from __future__ import annotations

import asyncio
import logging
from typing import Iterable

from langgraph.store.base import (
    BaseStore,
    GetOp,
    IndexConfig,
    InvalidNamespaceError,
    Item,
    ListNamespacesOp,
    Op,
    PutOp,
    Result,
    SearchItem,
    SearchOp,
    get_text_at_path,
    tokenize_path,
    validate_op_namespace,
)

from core.errors import BackendError, ColdStoreError, EmbedderMismatchError, ValidationError, shown
from core.memory.files import check_depth
from core.langgraph_store.filters import matches
from core.langgraph_store.items import ItemTable, namespace_matches, namespace_text, to_item
from core.memory.storage import redact
from core.memory.recall import Filters
from core.memory import MemoryManager, shared_manager

log = logging.getLogger(__name__)

DEFAULT_FIELDS = ("$",)
"""Without an index config the whole value is indexed, as ``InMemoryStore`` does with ``fields=["$"]``."""


class AgentOSStore(BaseStore):
    """A LangGraph store whose items are part of an AgentOS agent's memory."""

    def __init__(self, agent: str, *, index: IndexConfig | None = None,
                 manager: MemoryManager | None = None) -> None:
        """Open the store of ``agent`` (its memory is created on first use, as ``MemoryManager`` does).

        Args:
            agent: the agent whose memory holds the items.
            index: ``{"fields": [...]}``, the JSON paths whose text is indexed for ``search(query=...)``
                (default: the whole value). The embedder is the agent's ``cold.embedder``.
            manager: the agent's MemoryManager (default: the process's, shared with the skills).

        Raises:
            ValidationError: the index config names an embedder or unknown keys.
        """
        self.fields = _fields(index)
        self.manager = manager or shared_manager(agent)
        self.items = ItemTable(self.manager.db)

    # -- BaseStore ----------------------------------------------------------------------

    def batch(self, ops: Iterable[Op]) -> list[Result]:
        """Run ``ops`` in order of reads first, then every write in one transaction (the last put of a key
        wins)."""
        ops = list(ops)
        results: list[Result] = []
        puts: dict[tuple[tuple[str, ...], str], PutOp] = {}
        for op in ops:
            _refuse_a_string_namespace(op)
            validate_op_namespace(op)
            if isinstance(op, PutOp):
                if op.value is not None:
                    check_depth(op.value, "a store item's value")  # before anything walks it
                puts[(tuple(op.namespace), op.key)] = op
        for op in ops:
            if isinstance(op, GetOp):
                row = self.items.get(tuple(op.namespace), op.key)
                results.append(to_item(row) if row is not None else None)
            elif isinstance(op, SearchOp):
                results.append(self._search(op))
            elif isinstance(op, ListNamespacesOp):
                results.append(self._list_namespaces(op))
            elif isinstance(op, PutOp):
                results.append(None)
            else:
                raise ValidationError(f"unknown store operation {type(op).__name__}")
        if puts:
            self._write(puts.values())
        return results

    async def abatch(self, ops: Iterable[Op]) -> list[Result]:
        """:meth:`batch` in a worker thread (SQLite, LanceDB and the embedder are blocking)."""
        return await asyncio.to_thread(self.batch, list(ops))

    # -- writes ---------------------------------------------------------------------------

    def _write(self, puts: Iterable[PutOp]) -> None:
        secrets = self.manager.facts.secret_values()
        # A value is memory like a fact of another category: it keeps no secret (get_fact has it).
        self.items.write((tuple(op.namespace), op.key, redact(op.value, secrets), self._texts(op, secrets))
                         for op in puts)
        cold = self.manager.cold
        try:
            cold.sync()  # searchable by words now; a deleted or replaced passage leaves recall now
        except EmbedderMismatchError:
            raise
        except (BackendError, ColdStoreError) as exc:
            log.warning("store items saved; deleting their old vectors failed and will be retried: %s", exc)
        cold.background.wake()  # vectors are computed in the background

    def _texts(self, op: PutOp, secrets: list[str]) -> list[list[str]]:
        """The ``[path, text]`` passages of a put to index (secrets redacted), as ``InMemoryStore`` picks
        them."""
        if op.value is None or op.index is False:
            return []
        paths = self.fields if op.index is None else tuple(op.index)
        passages = []
        for path in paths:
            texts = get_text_at_path(op.value, path if path == "$" else tokenize_path(path))
            for i, text in enumerate(texts):
                if text.strip():
                    passages.append([f"{path}.{i}" if len(texts) > 1 else path, redact(text, secrets)])
        return passages

    # -- reads ----------------------------------------------------------------------------

    def _search(self, op: SearchOp) -> list[SearchItem]:
        prefix = tuple(op.namespace_prefix)
        if not op.filter and not op.query:
            rows = self.items.under(prefix, op.limit, op.offset)
            return [_search_item(to_item(row)) for row in rows]
        candidates = {row["id"]: to_item(row) for row in self.items.under(prefix)
                      if matches(to_item(row).value, op.filter)}
        query = (op.query or "").strip()
        if not query:
            return [_search_item(item) for item in list(candidates.values())[op.offset: op.offset + op.limit]]
        scores = self._ranked(query, prefix, set(candidates), op.offset + op.limit)
        unscored = [item_id for item_id in candidates if item_id not in scores]
        order = list(scores) + unscored  # items with no indexed text come after the ranked ones
        return [_search_item(candidates[i], scores.get(i)) for i in order[op.offset: op.offset + op.limit]]

    def _ranked(self, query: str, prefix: tuple[str, ...], wanted: set[int], needed: int) -> dict[int, float]:
        """Recall scores of the ``wanted`` items, best first, at least ``needed`` of them when they have
        any."""
        cold = self.manager.cold
        filters = Filters(kinds=("item",),
                          source_prefix=f"store:{namespace_text(prefix)}" if prefix else "store:")
        indexed = cold.docs.count(filters)
        depth = max(cold.tuning.depth, 2 * needed)
        while True:
            scores: dict[int, float] = {}
            # best first: an item's best passage gives its score
            for cand in cold.candidates(query, filters, depth):
                item_id = int(cand.doc.id.split(":")[1])
                if item_id in wanted and item_id not in scores:
                    scores[item_id] = cand.score
            if len(scores) >= needed or depth >= indexed:
                return scores
            depth = min(4 * depth, indexed)

    def _list_namespaces(self, op: ListNamespacesOp) -> list[tuple[str, ...]]:
        namespaces = [ns for ns in self.items.namespaces()
                      if all(namespace_matches(c, ns) for c in op.match_conditions or ())]
        if op.max_depth is not None:
            namespaces = list({ns[: op.max_depth] for ns in namespaces})
        return sorted(namespaces)[op.offset: op.offset + op.limit]


def _search_item(item: Item, score: float | None = None) -> SearchItem:
    return SearchItem(namespace=item.namespace, key=item.key, value=item.value, created_at=item.created_at,
                      updated_at=item.updated_at, score=score)


def _fields(index: IndexConfig | None) -> tuple[str, ...]:
    if index is None:
        return DEFAULT_FIELDS
    unknown = set(index) - {"fields"}
    if unknown & {"embed", "dims"}:
        raise ValidationError("AgentOSStore embeds with the agent's own embedder (cold.embedder in "
                              "config.yaml): pass only index={'fields': [...]}")
    if unknown:
        raise ValidationError(f"unknown index option(s) {sorted(unknown)}; AgentOSStore takes "
                              "index={'fields': [...]}")
    fields = index.get("fields") or list(DEFAULT_FIELDS)
    if not all(isinstance(f, str) and f for f in fields):
        raise ValidationError("index fields must be JSON paths such as 'text' or 'messages[*].content', got "
                              f"{shown(fields)}")
    return tuple(fields)


def _refuse_a_string_namespace(op: Op) -> None:
    """A namespace is a tuple of labels: ``"memories"`` would be taken as the labels of its letters."""
    namespace = getattr(op, "namespace", None) or getattr(op, "namespace_prefix", None)
    if isinstance(namespace, str):
        raise InvalidNamespaceError(f"a namespace is a tuple of labels, such as {(namespace,)!r}, not the "
                                    f"string {namespace!r}")
