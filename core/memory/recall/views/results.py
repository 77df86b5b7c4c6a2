"""What the memory API returns beyond plain data: a batch's stored ids with the items it refused, a
recall's results with what its ranking could see, and what a forget took and why (:class:`Forgotten`).

``store_memories`` checks a batch item by item before anything is written: the good items are stored
together (one transaction) and each bad one is named with its reason (:class:`StoredMemories`), so one
empty or unreadable turn among 500 costs that turn only. Storing an item again refreshes the stored
memory, so a batch sent again after a fix stores the items it refused and nothing twice.

Words find a memory as soon as it is stored; its vector follows in the background. A recall waits up
to ``cold.vector_wait_s`` for the vectors still being computed. Memories that have none after it are
ranked without their meaning, which can order the results otherwise than once every vector is done,
so the result says so (:class:`Recalled`): ``vectors_pending`` counts them and ``warning`` says what
it means and what to do (the command line prints it on stderr, the ``recall_memory`` skill and MCP
tool return it beside the results). ``cold.pending_vectors`` chooses the ranking meanwhile: ``flag``
ranks by meaning where a vector exists, ``words`` ranks every memory by words alone.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Iterable, Sequence

from core.errors import ConfigError


@dataclass(frozen=True)
class Refused:
    """An item of a batch that was not stored: its position in the batch and why."""

    index: int
    reason: str

    def __str__(self) -> str:
        return f"item {self.index}: {self.reason}"


class StoredMemories(list):
    """What ``store_memories`` returns: the ids of the stored items, in the batch's order (a list of
    str, as before), with ``refused`` (a :class:`Refused` for each item not stored) and ``by_index``
    (the id of each stored item by its position in the batch)."""

    def __init__(self, by_index: dict[int, str], refused: Sequence[Refused]) -> None:
        super().__init__(by_index[i] for i in sorted(by_index))
        self.by_index = dict(by_index)
        self.refused = list(refused)

    def report(self) -> str:
        """One readable line: how many were stored, and each refused item with its reason."""
        total = len(self.by_index) + len(self.refused)
        line = f"stored {len(self.by_index)} of {total} memories"
        if self.refused:
            line += "; refused " + "; ".join(str(r) for r in self.refused)
        return line

    def __repr__(self) -> str:
        return f"StoredMemories({list(self)!r}, refused={self.refused!r})"


PENDING_MODES = ("flag", "words")
"""The values of ``cold.pending_vectors``."""


def check_mode(mode: str) -> str:
    """``mode`` if it is a value of ``cold.pending_vectors``, else ConfigError naming the valid ones."""
    if mode not in PENDING_MODES:
        raise ConfigError(f"cold.pending_vectors {mode!r} is not known; use one of: "
                          f"{', '.join(PENDING_MODES)}")
    return mode


class Recalled(list):
    """``recall_memory``'s results (a list of dicts, best first) with ``vectors_pending`` (memories the
    ranking saw without a vector: 0 when it saw every one), ``partial`` and ``warning`` (None or a
    sentence for the user)."""

    def __init__(self, hits: Iterable[dict[str, Any]], vectors_pending: int = 0, *, mode: str = "flag",
                 waited_s: float = 0.0, error: str | None = None) -> None:
        super().__init__(hits)
        self.vectors_pending = vectors_pending
        self.mode = mode
        self.waited_s = waited_s
        self.error = error
        """Why the vectors are not computed (the embedder's failure), if known."""

    @property
    def partial(self) -> bool:
        """True when some memories were ranked without their vector."""
        return self.vectors_pending > 0

    @property
    def warning(self) -> str | None:
        """What the user needs to know about a partial ranking, or None."""
        if not self.partial:
            return None
        count = f"{self.vectors_pending} memor{'y' if self.vectors_pending == 1 else 'ies'}"
        why = f" (the embedder failed: {self.error})" if self.error else ""
        how = ("every memory was ranked by words only (cold.pending_vectors: words)" if self.mode == "words"
               else "those were ranked by words only, the others by meaning too")
        return (f"{count} had no vector yet after waiting {self.waited_s:.1f} s{why}: {how}; the results may "
                "change once the vectors are done: recall again later, or raise cold.vector_wait_s to wait "
                "longer")

    def like(self, hits: Iterable[dict[str, Any]]) -> "Recalled":
        """Other ``hits`` with this recall's state (the results merged with memory spaces')."""
        return Recalled(hits, self.vectors_pending, mode=self.mode, waited_s=self.waited_s, error=self.error)


class Forgotten(list):
    """What ``forget_memories`` returns: the ids forgotten (a list of str, as before; with ``dry_run``, those
    that would be), with ``matched`` (why each was taken) and ``more`` (matches left out by the limit).

    Each entry of ``matched`` is one thing, with the other records of it (``also``, forgotten too: a request
    kept in LOG.md and in the conversation is one thing): ``{id, kind, content, occurred_at, why, also}``;
    ``why`` is ``{"words": [...]}`` (the query's words it says, as written), ``{"meaning": similarity}``,
    ``{"id": id}`` (asked by id) or ``{"before": time}``, with ``before`` too when a time bound was given.
    """

    def __init__(self, ids: Iterable[str], matched: Sequence[dict[str, Any]] = (), *, more: int = 0,
                 dry_run: bool = False) -> None:
        super().__init__(ids)
        self.matched = list(matched)
        self.more = more
        self.dry_run = dry_run

    def as_dict(self) -> dict[str, Any]:
        """The JSON shape the command line, the ``forget_memory`` skill and the MCP tool return."""
        found: dict[str, Any] = {"forgotten": [] if self.dry_run else list(self), "count": 0 if self.dry_run
                                 else len(self), "matched": self.matched, "more": self.more}
        if self.dry_run:
            found["dry_run"] = True
        return found

    def __repr__(self) -> str:
        return f"Forgotten({list(self)!r}, more={self.more!r}, dry_run={self.dry_run!r})"
