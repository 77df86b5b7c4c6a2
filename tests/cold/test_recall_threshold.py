"""The default min_score per query: the rest of a query's evidence is kept below it, nonsense still gets
nothing."""

from __future__ import annotations

from core.memory.recall.docs import Doc
from core.memory.recall.search import Candidate, Tuning, select, threshold


def cands(*scores: float) -> list[Candidate]:
    return [Candidate(Doc(id=f"note:{n}", kind="note", tier="cold", source=f"note:{n}",
                          text=f"memory number {n}",
                          occurred_at="2023-05-20T02:21:00.000Z", created_at="2023-05-20T02:21:00.000Z",
                          thread=f"session={n}"), score=s)
            for n, s in enumerate(scores)]


def test_a_query_whose_best_passes_keeps_results_down_to_a_share_of_it():
    ranked = cands(0.8, 0.3, 0.1, 0.05, 0.03)
    tuning = Tuning(relative_floor=0.05)
    assert threshold(ranked, 0.15, tuning) == 0.8 * 0.05
    assert [c.score for c in select(ranked, 10, 0.15, tuning, relative=True)] == [0.8, 0.3, 0.1, 0.05]
    assert [c.score for c in select(ranked, 10, 0.15, tuning)] == [0.8, 0.3]  # min_score given: as given


def test_a_query_whose_best_does_not_pass_gets_nothing_and_a_lower_min_score_stays():
    tuning = Tuning(relative_floor=0.05)
    assert select(cands(0.12, 0.1, 0.09), 10, 0.15, tuning, relative=True) == []
    assert threshold(cands(0.9, 0.5), 0.01, tuning) == 0.01


def test_recall_with_the_default_keeps_the_weaker_evidence_and_forgetting_takes_only_what_says_every_word(
    manager,
):
    """One strong match and weaker ones: recall with the default min_score returns the weaker ones too, a
    forget by the same query only the memory that says every word of it."""
    manager.store_memories(["the blue bicycle from the Lyon market has a bell",
                            "a bicycle", "market", "blue", "the market opens at nine"])
    strong = manager.recall_memory("blue bicycle Lyon market bell", n_results=10, min_score=0)
    scores = [r["score"] for r in strong]
    floor = manager.cold.tuning.relative_floor * scores[0]
    assert scores[0] >= 0.15 and any(floor <= s < 0.15 for s in scores), scores
    default = manager.recall_memory("blue bicycle Lyon market bell", n_results=10)
    assert [r["score"] for r in default] == [s for s in scores if s >= floor]
    planned = manager.forget_memories(query="blue bicycle Lyon market bell", dry_run=True)
    assert [r["content"] for r in strong
            if r["id"] in planned] == ["the blue bicycle from the Lyon market has a bell"]
    assert manager.recall_memory("zzzz qqqq") == []
