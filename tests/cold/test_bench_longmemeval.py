"""The LongMemEval benchmark's selection, BM25 baseline and metrics, on a small question in its format."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

SCRIPT = Path(__file__).resolve().parents[2] / "scripts" / "bench_longmemeval.py"


@pytest.fixture(scope="module")
def bench():
    spec = importlib.util.spec_from_file_location("bench_longmemeval", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def question(qid: str = "q1", kind: str = "single-session-user") -> dict:
    return {
        "question_id": qid, "question_type": kind, "question": "Where did I buy my blue bicycle?",
        "question_date": "2023/06/01 (Thu) 10:00", "answer_session_ids": ["s2"],
        "haystack_session_ids": ["s1", "s2"],
        "haystack_dates": ["2023/05/01 (Mon) 09:00", "2023/05/20 (Sat) 02:21"],
        "haystack_sessions": [
            [{"role": "user", "content": "I like green tea in the morning"},
             {"role": "assistant", "content": "Green tea is lovely. Where did you buy your bicycle?"}],
            [{"role": "user", "content": "   "},
             {"role": "user", "content": "I bought my blue bicycle at the market in Lyon",
              "has_answer": True},
             {"role": "user", "content": "the weather was grey"}],
        ],
    }


def test_user_turns_keep_only_user_text_with_session_date_and_evidence(bench):
    turns = bench.user_turns(question())
    assert [(t["key"], t["date"], t["evidence"]) for t in turns] == [
        (("s1", 0), "2023/05/01 (Mon) 09:00", False), (("s2", 1), "2023/05/20 (Sat) 02:21", True),
        (("s2", 2), "2023/05/20 (Sat) 02:21", False)]


def test_bm25_ranks_the_evidence_first_and_the_metrics_score_it(bench):
    q = question()
    turns = bench.user_turns(q)
    ranked = bench.bm25(q, turns)
    assert ranked[0] == ("s2", 1)
    row = bench.scores(q, turns, ranked)
    assert row["turn@5"] == row["session@5"] == row["ndcg@10"] == 100.0
    missed = bench.scores(q, turns, [("s1", 0)])
    assert missed["turn@5"] == missed["session@5"] == missed["ndcg@10"] == 0.0


def test_the_subset_is_stratified_by_type_and_leaves_out_abstention(bench):
    pool = [question(f"{kind[:3]}{n}", kind) for kind in ("multi-session", "temporal-reasoning",
                                                          "knowledge-update")
            for n in range(5)] + [question("x_abs", "multi-session")]
    chosen = bench.choose(pool, None, 6)
    assert sorted(q["question_type"] for q in chosen) == ["knowledge-update"] * 2 + ["multi-session"] * 2 + [
        "temporal-reasoning"] * 2
    assert chosen == bench.choose(pool, None, 6)
    assert all(not q["question_id"].endswith("_abs") for q in bench.choose(pool, None, None))
    assert {q["question_type"] for q in bench.choose(pool, ["knowledge-update"],
                                                     None)} == {"knowledge-update"}


def test_a_smaller_subset_is_the_start_of_a_larger_one_and_the_question_date_is_now(bench):
    """A cache filled for N questions serves every smaller --limit; the recall is asked from the question's
    date."""
    pool = [question(f"{kind[:3]}{n}", kind) for kind in ("multi-session", "temporal-reasoning",
                                                          "knowledge-update")
            for n in range(5)]
    assert bench.choose(pool, None, 7) == bench.choose(pool, None, 14)[:7]
    assert bench.recall_args(question()) == {"now": "2023/06/01 (Thu) 10:00"}
    assert len(bench.store_version()) == 12 and all((bench.ROOT / name).exists() for name in bench.STORE_PATH)


def spread_question() -> dict:
    """Evidence in two turns of two sessions, as an aggregation question's."""
    q = question("m1", "multi-session")
    q["question"] = "How many bicycles did I buy?"
    q["answer_session_ids"] = ["s1", "s2"]
    q["haystack_sessions"][0][0]["has_answer"] = True
    return q


def test_recall_all_needs_every_evidence_turn_and_answer_session_in_the_top_k(bench):
    q = spread_question()
    turns = bench.user_turns(q)
    both = bench.scores(q, turns, [("s2", 2)] * 4 + [("s2", 1), ("s1", 0)])
    assert both["turn@5"] == 50.0 and both["turn_all@5"] == 0.0 and both["session_all@5"] == 0.0
    assert both["turn@10"] == 100.0 and both["turn_all@10"] == both["session_all@10"] == 100.0
    one = bench.scores(q, turns, [("s2", 1)])
    assert one["turn_all@20"] == one["session_all@20"] == 0.0 and one["turn@20"] == 50.0


def test_questions_with_fewer_than_k_results_are_counted_per_type(bench):
    q, other = spread_question(), question()
    rows = [("multi-session", bench.scores(q, bench.user_turns(q), [("s2", 1)] * 7, results=7)),
            ("single-session-user", bench.scores(other, bench.user_turns(other), [("s2", 1)] * 20))]
    figures = bench.table(rows)
    assert (figures["multi-session"]["short@5"], figures["multi-session"]["short@10"],
            figures["multi-session"]["short@20"]) == (0, 1, 1)
    assert figures["single-session-user"]["short@20"] == 0 and figures["overall"]["short@20"] == 1
    assert figures["overall"]["turn_all@5"] == 50.0
