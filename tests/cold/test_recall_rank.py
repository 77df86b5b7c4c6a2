"""The rank of a word match as evidence: BM25's scale moves with the query, its order does not."""

from __future__ import annotations

from core.memory.recall.docs import Doc
from core.memory.recall.search import Tuning, rank


def doc(n: int, text: str) -> Doc:
    return Doc(id=f"note:{n}", kind="note", tier="cold", source=f"note:{n}", text=text,
               occurred_at="2023-05-20T02:21:00.000Z", created_at="2023-05-20T02:21:00.000Z")


TEXTS = ["I bought a blue bicycle at the Lyon market", "the bicycle needs new tyres and a bell soon",
         "the bicycle needs new tyres and a bell soon", "we talked about the weather and the garden"]


def test_the_best_word_match_of_a_long_question_outranks_a_closer_meaning_without_it():
    found = {f"note:{n}": doc(n, t) for n, t in enumerate(TEXTS)}
    # A long question: its best match scores a small share of all its words.
    words = [("note:0", 0.2), ("note:1", 0.1), ("note:2", 0.1)]
    vectors = [("note:3", 0.5), ("note:0", 0.4), ("note:1", 0.3), ("note:2", 0.3)]
    ranked = rank("where did I buy the blue bicycle I ride to the market on Saturdays", found, vectors, words,
                  Tuning())
    assert ranked[0].doc.id == "note:0"
    by_id = {c.doc.id: c for c in ranked}
    assert by_id["note:0"].features["word_rank"] == 1.0
    assert by_id["note:1"].features["word_rank"] == by_id["note:2"].features["word_rank"] == round(10 / 11, 4)
    assert by_id["note:1"].score == by_id["note:2"].score  # equal matches share their rank
    assert by_id["note:3"].features["word_rank"] == 0.0
    without = rank("where did I buy the blue bicycle", found, vectors, words, Tuning(word_rank=0.0))
    assert without[0].doc.id == "note:3"  # by the old weights the closer meaning won


def test_a_query_whose_words_match_nothing_gains_nothing():
    found = {f"note:{n}": doc(n, t) for n, t in enumerate(TEXTS)}
    vectors = [("note:3", 0.12), ("note:0", 0.1)]
    with_rank = rank("zzzz qqqq", found, vectors, [], Tuning())
    without = rank("zzzz qqqq", found, vectors, [], Tuning(word_rank=0.0))
    assert [c.score for c in with_rank] == [c.score for c in without]
