"""Recall's word search on PostgreSQL: the same memories are found and scored as on SQLite."""

from __future__ import annotations

import pytest

from core.memory.storage.sqlite import SqliteDatabase as Database
from core.memory.recall.docs import Doc, DocIndex, Filters

WHEN = "2024-05-01T10:00:00.000Z"
MEMORIES = {
    "note:boat": ("Finn keeps a sailing boat in Porto's marina and sails it every summer.", "speaker: Finn"),
    "note:bike": ("Finn rides a red bicycle to work along the river.", "speaker: Finn"),
    "note:dog": ("The dog is called Biscuit; Finn walks the dog every morning.", "speaker: Ana"),
    "note:work": ("Finn works as a marine biologist studying dolphins near Porto.", "speaker: Finn"),
    "note:food": ("Ana cooks grilled sardines when friends visit in June.", "speaker: Ana, June 2024"),
    "note:trip": ("Next spring they plan a trip to Lisbon by train.", "speaker: Ana, sailing club"),
    **{f"note:filler{n}": (f"An ordinary day number {n} with tea and a walk in the park.", "speaker: Finn")
       for n in range(30)},
}
QUERIES = ("Where does Finn keep the sailing boat?", "what is the dog called", "dolphins Porto biologist",
           "sardines in June", "the dog walks every morning in the park")


def _index(db) -> DocIndex:
    docs = DocIndex(db)
    with db.transaction() as conn:
        docs.upsert(conn, [Doc(id=key, kind="note", tier="cold", source=key, text=text, context=context,
                               occurred_at=WHEN, created_at=WHEN) for key,
                               (text, context) in MEMORIES.items()])
    return docs


@pytest.fixture
def both(tmp_path, postgres_db):
    sqlite = Database(tmp_path / "memory.db")
    yield _index(sqlite), _index(postgres_db)
    sqlite.close()


def test_a_query_is_stemmed_as_the_index_stores_its_words(both):
    """Query words are stemmed and stop words left out on both databases: 'sailing boats' finds 'sail'
    'boat'."""
    sqlite, postgres = both
    assert postgres.terms("The sailing boats of Finn") == sqlite.terms("The sailing boats of Finn") == [
        "boat", "finn", "sail"]


@pytest.mark.parametrize("query", QUERIES)
def test_word_matches_rank_and_score_as_on_sqlite(both, query):
    """Each query's best word match is the same memory on PostgreSQL as on SQLite, every strength is in
    [0, 1], and the strengths of the memories both find differ by less than 0.01."""
    sqlite, postgres = both
    on_sqlite = dict(sqlite.words(query, 10, Filters()))
    on_postgres = dict(postgres.words(query, 10, Filters()))
    assert next(iter(on_postgres)) == next(iter(on_sqlite))
    assert all(0.0 <= strength <= 1.0 for strength in on_postgres.values())
    shared = on_sqlite.keys() & on_postgres.keys()
    assert len(shared) >= min(len(on_sqlite), 3)
    assert max(abs(on_sqlite[key] - on_postgres[key]) for key in shared) < 0.01


def test_filters_and_common_words_apply_on_postgresql(both):
    """Filters narrow PostgreSQL's word matches, and a word found in most memories is not searched for alone
    when a rarer one is asked for too."""
    _, postgres = both
    assert postgres.words("Finn dog", 10, Filters(kinds=("fact",))) == []
    found = [key for key, _ in postgres.words("Finn Biscuit", 10, Filters())]
    assert found == ["note:dog"]
