"""Long memories (a 80 KB chat turn) are stored whole and found by what is said anywhere in them."""

from __future__ import annotations

import itertools

import pytest

from core.errors import ValidationError
from core.memory.recall import lance_table as chunks

FILLER = [
    "We spent the morning going over the quarterly budget spreadsheet line by line.",
    "The kitchen renovation is slow because the tiles arrived in the wrong colour.",
    "I tried a new sourdough recipe with more hydration and a longer cold proof.",
    "Traffic on the ring road was terrible again, so I took the train instead.",
    "The football match went to penalties and our side missed the last one.",
    "My manager wants the slides for the client workshop by Thursday afternoon.",
    "It rained all weekend, which was fine because I finally read that novel.",
    "The printer on the third floor jams whenever someone prints double-sided.",
]
FACT = "Oh, and my sister Ingrid keeps a green iguana called Zorblax in her flat."


def long_turn(size: int = 80_000) -> str:
    """About ``size`` characters of chat whose only mention of the iguana is in the middle."""
    half = []
    for sentence in itertools.cycle(FILLER):
        half.append(sentence)
        if sum(len(s) + 1 for s in half) >= size // 2:
            break
    return " ".join([*half, FACT, *half])


def test_a_long_turn_is_stored_whole_and_its_middle_is_found_by_words(manager):
    text = long_turn()
    assert len(text.encode()) > 64 * 1024 and FACT not in text[:30_000] and FACT not in text[-30_000:]
    stored = manager.store_memories([text, *FILLER])
    assert stored.refused == []
    manager.cold.catch_up()
    hits = manager.recall_memory("Zorblax the green iguana", n_results=5, min_score=0)
    assert hits[0]["id"] == stored[0] and hits[0]["content"] == text
    assert [h["id"] for h in hits].count(stored[0]) == 1
    rows = manager.cold.store().chunk_ids()
    assert rows and {chunks.memory_of(i) for i in rows} == {stored[0]}
    assert len(rows) >= len(text) // chunks.CHUNK_CHARS
    assert sorted(manager.cold.store().ids()) == sorted(manager.cold.docs.ids())


def test_a_long_memorys_chunk_rows_go_with_it_when_it_is_forgotten(manager):
    memory_id = manager.store_memory(long_turn(10_000))
    manager.cold.catch_up()
    assert manager.cold.store().chunk_ids()
    assert manager.forget_memory(memory_id)
    manager.cold.sync()
    assert manager.cold.store().chunk_ids() == [] and manager.cold.store().ids() == []


def test_rewriting_a_memory_deletes_the_chunks_it_no_longer_has(manager):
    manager.store_memory("anything, so that the cold store exists")
    manager.cold.catch_up()
    store = manager.cold.store()
    memory = chunks.VectorRow(id="fact:odd#key%", kind="fact", text="x" * 5000, source="facts",
                              occurred_at="2024-01-01")
    other = chunks.VectorRow(id="fact:odd#key%2", kind="fact", text="y" * 5000, source="facts",
                             occurred_at="2024-01-01")
    store.put([memory, *chunks.chunk_rows(memory, memory.text), other, *chunks.chunk_rows(other, other.text)])
    before = store.chunk_ids()
    shorter = chunks.VectorRow(id=memory.id, kind="fact", text="x" * 2500, source="facts",
                               occurred_at="2024-01-01")
    store.put([shorter, *chunks.chunk_rows(shorter, shorter.text)], replace_chunks_of=[memory.id])
    after = store.chunk_ids()
    assert {chunks.memory_of(i) for i in before} == {memory.id, other.id}
    assert sorted(i for i in after if chunks.memory_of(i) == memory.id) == sorted(
        r.id for r in chunks.chunk_rows(shorter, shorter.text))
    assert sorted(i for i in after if chunks.memory_of(i) == other.id) == sorted(
        i for i in before if chunks.memory_of(i) == other.id)


def test_content_over_the_limit_is_refused_with_the_fix(manager):
    limit = manager.config.cold.max_memory_bytes
    assert limit == 1024 * 1024
    stored = manager.store_memories(["short", "x" * (limit + 1)])
    [refused] = stored.refused
    assert (
        refused.index == 1 and "exceeds the limit of 1048576 bytes (cold.max_memory_bytes)" in refused.reason
    )
    with pytest.raises(ValidationError, match="store it as several memories"):
        manager.store_memory("é" * (limit // 2 + 1))


def test_pieces_cover_the_text_between_words_and_overlap():
    text = " ".join(f"word{n}" for n in range(3000))
    found = chunks.chunk_texts(text)
    assert all(len(p) <= chunks.CHUNK_CHARS for p in found)
    assert set(text.split()) == {w for p in found for w in p.split()}
    assert all(p.split()[0] in q for q, p in zip(found, found[1:]))  # each piece starts inside the one before
    assert chunks.chunk_texts("") == [] and chunks.chunk_texts("short text") == ["short text"]


def test_chunk_ids_name_their_memory_whatever_its_id_holds():
    for memory_id in ("note:3f2a", "fact:a#1", "fact:100%#2%23", "log:12"):
        assert chunks.memory_of(chunks.chunk_id(memory_id, 7)) == memory_id
        assert chunks.is_chunk(chunks.chunk_id(memory_id, 1)) and not chunks.is_chunk(memory_id)
    assert chunks.memory_of("note:3f2a") == "note:3f2a"


def test_a_fact_in_the_middle_of_a_long_turn_is_found_by_meaning(finn):
    """No word of the question is in the turn: only the vector of the chunk that holds the fact can find
    it."""
    text = long_turn()
    stored = finn.store_memories([text, *FILLER, "My brother collects vinyl records from the seventies."])
    finn.cold.catch_up()
    hits = finn.recall_memory("which lizard does my sibling own?", n_results=3)
    assert hits and hits[0]["id"] == stored[0]
