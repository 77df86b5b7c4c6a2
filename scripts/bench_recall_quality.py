"""Recall quality on long multi-session conversations, beside plain BM25 and plain vector search.

The data comes from ``scripts/recall_dialogues.py`` (seeded, generated here:
nothing is downloaded). Every turn is stored with ``store_memory`` (its text;
speaker, date, session and dialog id in the metadata), every question is asked
with ``recall_memory``, and a question's recall@k is the share of its evidence
turns among the first k results (mapped back through the metadata's
``dia_id``). Each conversation is one agent. The baselines rank the same turns:
plain BM25 (Okapi, k1 1.2, b 0.75, over the turn's words) and plain vector
search (cosine of all-MiniLM-L6-v2 embeddings of the turn's text).

    python scripts/bench_recall_quality.py                 # the figures of docs/recall.md
    python scripts/bench_recall_quality.py --ideas         # also each idea switched off in turn
    python scripts/bench_recall_quality.py --fit           # fit the ranking's weights on this data
    python scripts/bench_recall_quality.py --dsn postgresql://user@host/db   # the agents on PostgreSQL

Store throughput is measured with ``store_memories`` (batches of 100) and with
single ``store_memory`` calls; recall latency is per question, query embedding
included (the ``vector_wait_s`` catch-up after the stores is not counted: the
vectors are waited for before the questions).
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import math
import os
import re
import statistics
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(Path(__file__).resolve().parent))

os.environ.setdefault("OMP_NUM_THREADS", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

import recall_dialogues  # noqa: E402

KINDS = ("single-hop", "multi-hop", "temporal", "open-domain")
KS = (5, 10, 20)
TARGET_GAIN = 15.0


def turn_metadata(turn) -> dict:
    return {"speaker": turn.speaker, "date": turn.date, "dia_id": turn.dia_id, "session": turn.session}


# -- our recall ---------------------------------------------------------------------------------------

DSN = ""
"""The PostgreSQL server the agents' tables are kept on (``--dsn``); empty: memory.db."""


def run_system(conversations, tuning=None, min_score: float = 0.0, collect=None, batch: bool = True):
    """Store and ask through MemoryManager; return (ranked dia_ids per question, timings)."""
    from core.memory_manager import MemoryManager

    ranked, latencies, store_rates, single_ms = [], [], [], []
    with tempfile.TemporaryDirectory() as home, _storage() as storage:
        os.environ["AGENTOS_HOME"] = home
        Path(home, "config.yaml").write_text(
            f"llm: {{backend: offline}}\nmemory: {{auto_compact: false}}\n{storage}"
        )
        for n, conv in enumerate(conversations):
            manager = MemoryManager(f"conv{n}")
            if tuning is not None:
                manager.cold.tuning = tuning
            items = [{"content": t.text, "metadata": turn_metadata(t)} for t in conv.turns]
            start = time.perf_counter()
            if batch:
                for i in range(0, len(items), 100):
                    manager.store_memories(items[i : i + 100])
            else:
                for item in items:
                    began = time.perf_counter()
                    manager.store_memory(item["content"], item["metadata"])
                    single_ms.append((time.perf_counter() - began) * 1000)
            store_rates.append(len(items) / (time.perf_counter() - start))
            manager.cold.background.wait_idle(600)
            for question in conv.questions:
                began = time.perf_counter()
                if collect is not None:
                    collect(manager, question)
                hits = manager.recall_memory(question.text, n_results=20, min_score=min_score)
                latencies.append((time.perf_counter() - began) * 1000)
                ranked.append([h["metadata"].get("dia_id") for h in hits])
            manager.close()
    return ranked, {"latency": latencies, "store_rate": store_rates, "single_ms": single_ms}


@contextlib.contextmanager
def _storage():
    """The config.yaml line that keeps the agents on ``DSN`` (in schemas of their own, dropped afterwards)."""
    if not DSN:
        yield ""
        return
    import psycopg

    from core.memory.storage.postgres.pool import close_pools

    prefix = f"bench_{os.getpid()}_{time.monotonic_ns() % 10**6}_"
    try:
        yield f"storage: {{backend: postgres, dsn: '{DSN}', schema_prefix: {prefix}}}\n"
    finally:
        close_pools()
        with psycopg.connect(DSN, autocommit=True) as conn:
            for (schema,) in conn.execute("SELECT nspname FROM pg_namespace WHERE starts_with(nspname, %s)",
                                          (prefix,)).fetchall():
                conn.execute(f'DROP SCHEMA "{schema}" CASCADE')


# -- baselines ------------------------------------------------------------------------------------------

_WORD = re.compile(r"[a-z0-9]+")


def bm25_rank(conversations, k1: float = 1.2, b: float = 0.75):
    ranked = []
    for conv in conversations:
        docs = [_WORD.findall(t.text.lower()) for t in conv.turns]
        df = Counter(w for d in docs for w in set(d))
        avg = sum(map(len, docs)) / len(docs)
        n = len(docs)
        for question in conv.questions:
            terms = _WORD.findall(question.text.lower())
            scores = []
            for d in docs:
                tf = Counter(d)
                s = sum(math.log(1 + (n - df[t] + 0.5) / (df[t] + 0.5)) * tf[t] * (k1 + 1)
                        / (tf[t] + k1 * (1 - b + b * len(d) / avg)) for t in terms if t in tf)
                scores.append(s)
            order = sorted(range(n), key=lambda i: -scores[i])[:20]
            ranked.append([conv.turns[i].dia_id for i in order if scores[i] > 0])
    return ranked


def vector_rank(conversations):
    from core.llm.embedding.embedders import MiniLMEmbedder

    embedder = MiniLMEmbedder()
    ranked = []
    for conv in conversations:
        vectors = embedder.embed([t.text for t in conv.turns])
        queries = embedder.embed([q.text for q in conv.questions])
        for q in queries:
            sims = vectors @ q
            order = sims.argsort()[::-1][:20]
            ranked.append([conv.turns[i].dia_id for i in order])
    return ranked


# -- metrics -------------------------------------------------------------------------------------------

def metrics(conversations, ranked):
    questions = [q for c in conversations for q in c.questions]
    table = {}
    for kind in (*KINDS, "overall"):
        chosen = [(q, r) for q, r in zip(questions, ranked) if kind in ("overall", q.kind)]
        row = {}
        for k in KS:
            row[f"R@{k}"] = 100 * statistics.mean(len(set(q.evidence) & set(r[:k])) / len(q.evidence)
                                                  for q, r in chosen)
        row["MRR"] = statistics.mean(next((1 / (i + 1) for i, d in enumerate(r) if d in q.evidence), 0.0)
                                     for q, r in chosen)
        row["n"] = len(chosen)
        table[kind] = row
    return table


def print_table(name, table):
    print(f"\n{name}")
    print(f"{'kind':<12} {'n':>4} {'R@5':>6} {'R@10':>6} {'R@20':>6} {'MRR':>6}")
    for kind, row in table.items():
        print(f"{kind:<12} {row['n']:>4} {row['R@5']:>6.1f} {row['R@10']:>6.1f} {row['R@20']:>6.1f} "
              f"{row['MRR']:>6.3f}")


# -- fitting the ranking's weights -------------------------------------------------------------------------

FEATURES = ("vector", "words", "speaker", "informative")


def fit(conversations):
    """Fit a logistic model of the candidates' features (labels: evidence or not) and print its weights."""
    import numpy as np
    from sklearn.linear_model import LogisticRegression

    from core.memory.recall.docs import Filters
    rows, labels = [], []

    def collect(manager, question):
        for cand in manager.cold.candidates(question.text, Filters()):
            rows.append([cand.features[name] for name in FEATURES])
            labels.append(1 if cand.doc.metadata.get("dia_id") in question.evidence else 0)

    run_system(conversations, collect=collect)
    model = LogisticRegression(C=10.0, max_iter=1000).fit(np.array(rows), np.array(labels))
    print(f"weights ({', '.join(FEATURES)}):", model.coef_.round(2), "bias", model.intercept_.round(2))


def _no_speaker(doc):
    return doc.text


# -- main -------------------------------------------------------------------------------------------------

IDEAS = {  # name: (ranking change, another vector text or None)
    "words (BM25) left out of the score": ({"words": 0.0}, None),
    "speaker feature left out": ({"speaker": 0.0}, None),
    "vectors of the text without its speaker": ({}, _no_speaker),
}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seed", type=int, default=12)
    parser.add_argument("--conversations", type=int, default=6)
    parser.add_argument("--sessions", type=int, default=24)
    parser.add_argument("--ideas", action="store_true", help="also measure each idea switched off")
    parser.add_argument("--fit", action="store_true", help="fit the ranking weights on this data and stop")
    parser.add_argument("--dsn", default="", help="keep the agents' tables on this PostgreSQL server")
    args = parser.parse_args()
    global DSN
    DSN = args.dsn
    conversations = recall_dialogues.generate(args.seed, args.conversations, args.sessions)
    turns = sum(len(c.turns) for c in conversations)
    questions = sum(len(c.questions) for c in conversations)
    print(f"{args.conversations} conversations, {turns} turns, {questions} questions (seed {args.seed})")
    if args.fit:
        fit(conversations)
        return
    bm25 = metrics(conversations, bm25_rank(conversations))
    vector = metrics(conversations, vector_rank(conversations))
    ranked, timing = run_system(conversations)
    ours = metrics(conversations, ranked)
    ranked_default, _ = run_system(conversations, min_score=None)
    with_default = metrics(conversations, ranked_default)
    _, single = run_system(conversations[:1], batch=False)
    print_table("plain BM25", bm25)
    print_table("plain vector (all-MiniLM-L6-v2)", vector)
    print_table("AgentOS recall_memory (min_score 0)", ours)
    print_table("AgentOS recall_memory (default min_score)", with_default)
    if args.ideas:
        from core.memory.recall import vector_indexer
        from core.memory.recall.search import Tuning
        for name, (change, text) in IDEAS.items():
            original = vector_indexer.embedding_text
            vector_indexer.embedding_text = text or original
            try:
                tuned, _ = run_system(conversations, tuning=dataclasses.replace(Tuning(), **change))
            finally:
                vector_indexer.embedding_text = original
            print_table(f"idea off: {name}", metrics(conversations, tuned))
    gain = ours["overall"]["R@10"] - bm25["overall"]["R@10"]
    lat = sorted(timing["latency"])
    print(f"\nrecall@10 overall {ours['overall']['R@10']:.1f} vs plain BM25 {bm25['overall']['R@10']:.1f}: "
          f"+{gain:.1f} points (target +{TARGET_GAIN:.0f})")
    print(f"recall latency p50 {statistics.median(lat):.1f} ms, p95 {lat[int(0.95 * (len(lat) - 1))]:.1f} ms "
          f"({len(lat)} questions over ~{turns // len(conversations)} memories, query embedding included)")
    print(f"store_memories throughput {statistics.median(timing['store_rate']):.0f} items/s (target >= 500); "
          f"single store_memory p50 {statistics.median(single['single_ms']):.2f} ms (target <= 10)")


if __name__ == "__main__":
    main()
