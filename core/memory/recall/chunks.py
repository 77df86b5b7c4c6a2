"""Long memories in the cold store: one vector for the memory, and one for each chunk of its text.

A memory's own vector is computed from its first two model windows (about 2,000 characters,
see :mod:`core.llm.embedding.token_batches`): a fact said in the middle of a 76 KB chat turn
would be lost in it. A memory longer than ``LONG_CHARS`` therefore also gets a row for each
chunk of about ``CHUNK_CHARS`` characters (cut between words, overlapping by ``OVERLAP_CHARS``
so that a sentence on a cut is whole in one of them), with the memory's kind, source and time,
so that the vector search's filters hold for them. A chunk row is no memory of its own: a hit
on it is a hit on its memory (:func:`folded`), which recall returns once, and its text is the
memory's own.

A chunk row's id is ``chunk:<memory id>#<n>`` with ``#`` and ``%`` of the memory id escaped
(a fact key may hold them), so ``starts_with(id, 'chunk:<escaped id>#')`` selects the chunks of
one memory and no other's. They are written in the same Lance commit as the memory's row, and
that commit deletes the memory's chunk rows it does not rewrite (the text was redacted since, and
is shorter): no stale chunk keeps a secret.
"""

from __future__ import annotations

from typing import Any, Iterable, Sequence

from core.memory.recall.lance_table import VectorRow, sql_string

PREFIX = "chunk:"
LONG_CHARS = 2000
"""A memory longer than this gets chunk rows (its own vector sees about this much of it)."""
CHUNK_CHARS = 400
"""About how long a chunk is: three or four sentences, some 100 tokens. A sentence's meaning is diluted by
what shares its vector: a fact in 1,000 characters of unrelated talk was at cosine 0.16 from a question
about it, in 400 at 0.36 (0.49 alone), which recall's default ``min_score`` lets through."""
OVERLAP_CHARS = 80
"""How much of the end of a chunk the next one repeats (a sentence on a cut is whole in one of them)."""


def _escaped(memory_id: str) -> str:
    return memory_id.replace("%", "%25").replace("#", "%23")


def chunk_id(memory_id: str, number: int) -> str:
    """The id of chunk ``number`` (from 1) of the memory ``memory_id``."""
    return f"{PREFIX}{_escaped(memory_id)}#{number}"


def memory_of(row_id: str) -> str:
    """The memory a row stands for: itself, or a chunk's memory."""
    if not row_id.startswith(PREFIX):
        return row_id
    return row_id[len(PREFIX):].rpartition("#")[0].replace("%23", "#").replace("%25", "%")


def is_chunk(row_id: str) -> bool:
    """True for a chunk row's id."""
    return row_id.startswith(PREFIX)


def pieces(text: str, size: int = CHUNK_CHARS, overlap: int = OVERLAP_CHARS) -> list[str]:
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


def chunk_rows(row: VectorRow, text: str, speaker: str = "") -> list[VectorRow]:
    """The chunk rows of the memory whose own row is ``row`` and whose text is ``text`` (none if it is short)."""
    if len(text) <= LONG_CHARS:
        return []
    said = f"{speaker}: " if speaker else ""
    return [VectorRow(id=chunk_id(row.id, n), kind=row.kind, text=said + piece, source=row.source,
                      occurred_at=row.occurred_at, memory="")
            for n, piece in enumerate(pieces(text), start=1)]


def chunks_filter(memory_ids: Iterable[str]) -> str | None:
    """A Lance filter that selects every chunk row of ``memory_ids`` (None for no id)."""
    ids = list(memory_ids)
    if not ids:
        return None
    either = " OR ".join(f"starts_with(id, {sql_string(PREFIX + _escaped(i) + '#')})" for i in ids)
    return f"starts_with(id, {sql_string(PREFIX)}) AND ({either})"


def may_have_chunks(text: str) -> bool:
    """Whether a memory of ``text`` may have had chunk rows: it is long, or nearly (its text may have
    been longer before a secret in it was redacted)."""
    return len(text) > LONG_CHARS // 2


def folded(rows: Sequence[dict[str, Any]], depth: int) -> list[dict[str, Any]]:
    """Vector hits (best first) with each chunk's hit given to its memory, and each memory once (its best
    hit), at most ``depth`` of them."""
    seen: set[str] = set()
    found = []
    for row in rows:
        memory = memory_of(row["id"])
        if memory in seen:
            continue
        seen.add(memory)
        found.append({**row, "id": memory})
        if len(found) == depth:
            break
    return found
