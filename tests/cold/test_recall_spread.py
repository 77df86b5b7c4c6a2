"""Questions whose answer is spread out ("how many", "which first", "the total of"): recognised, and not cut
before their weaker evidence."""

from __future__ import annotations

import pytest

from core.memory.recall.docs import Doc, Filters
from core.memory.recall.query import RecallRequest, check_recall, results, spread_of
from core.memory.recall.search import Candidate, Tuning


def cand(n: int, score: float, session: str) -> Candidate:
    return Candidate(Doc(id=f"note:{n}", kind="note", tier="cold", source=f"note:{n}",
                         text=f"memory number {n}",
                         occurred_at="2023-05-20T02:21:00.000Z", created_at="2023-05-20T02:21:00.000Z",
                         thread=session), score=score)


@pytest.mark.parametrize("question, cue", [
    ("How many weddings have I attended in this year?", "how many"),
    ("What is the total amount I spent on luxury items in the past few months?", "total"),
    ("Which trip did I take first, the one to Europe with family or the solo trip to Thailand?", "first"),
    ("How many days passed between the day I replaced my spark plugs and the race?", "how many"),
    ("Which streaming service did I start using most recently?", "most recently"),
    ("What is the order of the six museums I visited from earliest to latest?", "the order"),
])
def test_questions_that_count_add_up_compare_or_order_are_recognised(question, cue):
    assert spread_of(question).cue == cue


@pytest.mark.parametrize("question", ["Where did I buy my blue bicycle?", "What is my deploy target?",
                                      "zzzz qqqq",
                                      "What did I do with Rachel on the Wednesday two months ago?"])
def test_a_question_about_one_thing_is_not_widened(question):
    assert spread_of(question) is None


def test_a_spread_question_keeps_everything_its_best_result_brings_along():
    """With the default min_score, a question about one thing keeps results down to 5% of its best; a spread
    question keeps the weaker pieces of its answer too (its best still has to pass min_score)."""
    def asked(text: str, *scores: float) -> list[float]:
        ranked = [cand(n, s, f"s{n}") for n, s in enumerate(scores)]
        request = check_recall(text, 10, default_min_score=0.15)
        return [hit["score"] for hit in results(request, ranked, Tuning(), [])]

    assert asked("where is the bicycle", 0.9, 0.3, 0.02) == [0.9, 0.3]
    assert asked("how many bicycles did I buy", 0.9, 0.3, 0.02) == [0.9, 0.3, 0.02]
    assert asked("how many bicycles did I buy", 0.1, 0.02) == []  # nothing passes: nothing is kept
    given = check_recall("how many bicycles did I buy", 10, min_score=0.15, default_min_score=0.15)
    assert [hit["score"]
            for hit in results(given, [cand(0, 0.9, "a"), cand(1, 0.02, "b")], Tuning(), [])] == [0.9]
    assert RecallRequest("x", 1, Filters(), 0.15, None).spread is None


WEDDINGS = [
    ("I attended my cousin Maya's wedding in Lisbon in April, the ceremony was on the beach", "s1"),
    ("We spent the whole morning planning the seating chart for the wedding reception", "s2"),
    ("Can you help me pick a gift for the wedding? Something around fifty dollars", "s2"),
    ("By the way, I went to my college roommate's wedding last weekend, it rained all day", "s3"),
    ("My sister got engaged and the wedding will probably be next spring", "s4"),
    ("I need a playlist for a long drive to the coast", "s5"),
    ("The garden needs more compost before the tomatoes go in", "s6"),
    ("What is a good recipe for lentil soup with smoked paprika", "s7"),
]


def store_sessions(manager, said):
    manager.store_memories([{"content": text, "metadata": {"speaker": "user", "session": session,
                                                           "date": f"2023-0{n % 9 + 1}-12"}}
                            for n, (text, session) in enumerate(said)])
    manager.cold.catch_up()


def test_a_question_that_counts_is_not_cut_before_its_weaker_evidence(finn):
    """With the real model: the default min_score cuts a question about one thing at a share of its best
    result, but a question that counts keeps every result its best one brings along."""
    store_sessions(finn, WEDDINGS)
    question = "How many weddings did I attend this year?"
    everything = finn.recall_memory(question, n_results=8, min_score=0)
    assert everything[0]["score"] >= finn.config.cold.min_score
    assert [hit["id"] for hit in finn.recall_memory(question,
                                                    n_results=8)] == [hit["id"] for hit in everything]
    plain = finn.recall_memory("weddings I attended", n_results=8)
    assert len(plain) < len(finn.recall_memory("weddings I attended", n_results=8, min_score=0))


def test_an_explained_recall_says_how_a_spread_question_was_widened(finn):
    store_sessions(finn, WEDDINGS)
    found = finn.recall_memory("How many weddings did I attend this year?", n_results=5, explain=True)
    assert found["spread"] == {"cue": "how many", "relative_floor": 0.0}
    assert "spread" not in finn.recall_memory("wedding in Lisbon", n_results=5, explain=True)
