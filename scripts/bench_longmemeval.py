"""Recall on real long conversations (LongMemEval-S), beside plain BM25 and plain MiniLM cosine.

Each question's haystack (about 50 sessions) is stored through the public API in a fresh agents
home: one memory per user turn (the paper's retrieval setting indexes user turns), with its
session's date (``haystack_dates``) and speaker in the metadata and the session id as ``session``,
batched with ``store_memories``. The question is then asked with ``recall_memory`` and the defaults a
user gets, from its ``question_date`` given as ``now`` (what "last month" in the question means). No date
filter: the paper's retrieval applies none and neither do the baselines (some haystacks hold sessions dated
later on the question's own day).

Metrics, per question type and overall (abstention questions, ids ending ``_abs``, are left out):

- turn recall@5/10/20: the share of the question's evidence turns (user turns with ``has_answer``)
  among the top k; questions whose evidence is only in assistant turns have none and are left out here;
- session recall@5/10: the share of ``answer_session_ids`` among the sessions of the top k hits;
- NDCG@10 over the evidence turns (binary relevance);
- recall_all@5/10/20, turn and session level: the share of questions whose *every* evidence turn (every
  answer session) is in the top k, the LongMemEval paper's Recall: what a question whose answer is spread
  over several turns ("how many weddings did I attend") needs;
- short@5/10/20: how many questions got fewer than k results (``min_score`` stopped the list early).

The baselines rank the same user turns: plain Okapi BM25 (k1 1.2, b 0.75, lower-cased alphanumeric
words) and plain cosine of all-MiniLM-L6-v2 embeddings of the bare turn texts. Every turn is stored whole
(a turn of several sentences gets a vector for each sentence too, a long one for each chunk: see
docs/recall.md).

    python scripts/bench_longmemeval.py --limit 12            # a stratified subset, to check it runs
    python scripts/bench_longmemeval.py --json out.json       # the whole dev half: the decision set
    python scripts/bench_longmemeval.py --types temporal-reasoning,multi-session --data other.json.xz
    python scripts/bench_longmemeval.py --limit 72 --cache-dir /tmp/lme --build-only --shard 0/2 &  # and 1/2
    python scripts/bench_longmemeval.py --limit 72 --cache-dir /tmp/lme    # then each ranking change: recalls
    only python scripts/bench_longmemeval.py --backend ollama --host http://127.0.0.1:11434 --model qwen2.5:7b

With ``--backend/--host/--model`` each haystack is also reflected on (docs/memory.md, "Memory that learns")
before its question is asked: a learned fact or event that recall returns stands for the turns it was
learned from. That needs a real model server; without one the figures are those of the stored turns alone.

The data is read from ``../shared/data/longmemeval_s_dev.json.xz`` beside the repository; it is
never copied into it.
"""

from __future__ import annotations

import argparse
import functools
import hashlib
import json
import lzma
import math
import os
import random
import re
import shutil
import statistics
import sys
import tempfile
import time
from collections import Counter, defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

os.environ.setdefault("OMP_NUM_THREADS", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

DATA = next((p / "shared" / "data" / "longmemeval_s_dev.json.xz"
             for p in Path(__file__).resolve().parents[2:4]
             if (p / "shared" / "data" / "longmemeval_s_dev.json.xz").exists()),
            Path(__file__).resolve().parents[2] / "shared" / "data" / "longmemeval_s_dev.json.xz")
TURN_KS = (5, 10, 20)
SESSION_KS = (5, 10)
DEPTH = 20
SEED = 26
_WORD = re.compile(r"[a-z0-9]+")


# -- data ------------------------------------------------------------------------------------------------

def load(path: Path) -> list[dict]:
    with lzma.open(path) as f:
        return json.loads(f.read())


def choose(questions: list[dict], types: list[str] | None, limit: int | None) -> list[dict]:
    """The questions to run: no abstention ones, only ``types``, and ``limit`` of them round-robin over
    the types (each type shuffled with a fixed seed), so a small subset still covers every type."""
    chosen = [q for q in questions if not q["question_id"].endswith("_abs")
              and (not types or q["question_type"] in types)]
    if limit is None or limit >= len(chosen):
        return chosen
    by_type: dict[str, list[dict]] = defaultdict(list)
    for q in chosen:
        by_type[q["question_type"]].append(q)
    rng = random.Random(SEED)
    pools = [rng.sample(by_type[t], len(by_type[t])) for t in sorted(by_type)]
    picked: list[dict] = []
    while len(picked) < limit:
        for pool in pools:
            if pool and len(picked) < limit:
                picked.append(pool.pop())
    return picked


def user_turns(question: dict) -> list[dict]:
    """The haystack's user turns: ``{key, text, session, date, evidence}`` (key: session id and turn
    index)."""
    turns = []
    for session, date, turns_of in zip(question["haystack_session_ids"], question["haystack_dates"],
                                       question["haystack_sessions"]):
        for n, turn in enumerate(turns_of):
            text = turn["content"].strip()
            if turn["role"] != "user" or not text:
                continue
            turns.append({"key": (session, n), "text": text, "session": session, "date": date,
                          "evidence": bool(turn.get("has_answer"))})
    return turns


# -- the three systems -----------------------------------------------------------------------------------

STORE_PATH = ("core/memory/recall/sources.py", "core/memory/recall/docs.py", "core/memory/recall/index.py",
              "core/memory/recall/store.py", "core/memory/recall/vector_indexer.py",
              "core/memory/recall/when.py",
              "core/memory/recall/lance_table.py", "core/llm/embedding/embedders.py",
              "core/llm/embedding/minilm_onnx.py", "core/llm/embedding/minilm_graph.py",
              "core/llm/embedding/token_batches.py")
"""The files whose code decides what a stored haystack holds: a cached home is kept while they are unchanged
(the ranking, in search.py and query.py, is not among them: changing it re-runs only the recalls)."""


@functools.cache
def store_version() -> str:
    """A digest of the store path's code (``STORE_PATH``, and ``REFLECT_PATH`` when reflecting), naming the
    cached homes built by it."""
    digest = hashlib.sha256()
    for name in STORE_PATH + (REFLECT_PATH if REFLECT else ()):
        path = ROOT / name
        digest.update(name.encode() + b"\0" + (path.read_bytes() if path.exists() else b""))
    return digest.hexdigest()[:12]


REFLECT_PATH = ("core/memory/reflection/inputs.py", "core/memory/reflection/check.py",
                "core/memory/reflection/extract.py", "core/memory/reflection/commit.py",
                "core/memory/reflection/prompts/REFLECT.md", "core/memory/storage/extracted.py")
"""With a model to reflect with, the files whose code also decides what a stored haystack holds."""
REFLECT: dict = {}
"""``{"backend": ..., "model": ...}`` when the haystacks are reflected on (``--backend/--host/--model``)."""


def build(question: dict, turns: list[dict], home: Path) -> dict:
    """Store the turns in a fresh agents home at ``home`` (vectors done; with ``REFLECT``, reflected on, so
    that what the model learns is recalled too); return its ids and timings."""
    from core.memory_manager import MemoryManager

    done = home / "haystack.json"
    if done.exists():
        return json.loads(done.read_text())
    work = home.with_name(home.name + f".building-{os.getpid()}")
    shutil.rmtree(work, ignore_errors=True)
    work.mkdir(parents=True)
    os.environ["AGENTOS_HOME"] = str(work)
    (work / "config.yaml").write_text("llm: {backend: offline}\nmemory: {auto_compact: false}\n")
    with MemoryManager("longmemeval") as manager:
        items = [{"content": t["text"], "metadata": {"speaker": "user", "date": t["date"],
                                                     "session": t["session"]}} for t in turns]
        began = time.perf_counter()
        ids = []
        for i in range(0, len(items), 100):
            ids += manager.store_memories(items[i:i + 100])
        store_ms = (time.perf_counter() - began) * 1000 / max(1, len(items))
        began = time.perf_counter()
        manager.cold.background.wait_idle(900)  # the vectors, so that recall is not by words only
        vectors_ms = (time.perf_counter() - began) * 1000 / max(1, len(items))
        reflected: dict = {}
        if REFLECT:
            began = time.perf_counter()
            report = manager.reflection.run(REFLECT["backend"])
            manager.cold.background.wait_idle(900)  # the learned events' vectors
            reflected = {"reflect_ms": (time.perf_counter() - began) * 1000 / max(1, len(items)),
                         "calls": report.calls, "failed": report.failed, "quarantined": report.quarantined,
                         "facts": report.facts, "events": report.events}
    built = {"ids": ids, "store_ms": store_ms, "vectors_ms": vectors_ms, **reflected}
    (work / "haystack.json").write_text(json.dumps(built))
    shutil.rmtree(home, ignore_errors=True)
    os.replace(work, home)
    return built


def ours(question: dict, turns: list[dict], timing: dict, cache: Path | None) -> tuple[list[tuple], int]:
    """Store the turns in an agents home (kept in ``cache`` if given, keyed by question and store code) and
    recall the question; the keys of the hits, best first, and how many results the recall returned."""
    from core.memory_manager import MemoryManager

    with tempfile.TemporaryDirectory() as scratch:
        home = (cache / store_version() if cache else Path(scratch)) / question["question_id"]
        if REFLECT:
            home = home.with_name(
                f"{home.name}.reflect-{re.sub(r'[^a-z0-9.]+', '-', REFLECT['model'].lower())}"
            )
        built = build(question, turns, home)
        timing["store_ms"].append(built["store_ms"])
        timing["vectors_ms"].append(built["vectors_ms"])
        os.environ["AGENTOS_HOME"] = str(home)
        with MemoryManager("longmemeval") as manager:
            began = time.perf_counter()
            hits = manager.recall_memory(question["question"], n_results=DEPTH, **recall_args(question))
            timing["recall_ms"].append((time.perf_counter() - began) * 1000)
    keys = defaultdict(list)  # the same text said twice in a session is one memory
    for memory_id, turn in zip(built["ids"], turns):
        keys[memory_id].append(turn["key"])
    ranked: list[tuple] = []
    for hit in hits:  # a learned fact or event stands for the turns it was learned from
        sources = (hit["metadata"].get("extracted")
                   or {}).get("sources") if hit["kind"] in ("fact", "event") else None
        found = [k for s in sources for k in keys.get(s, [])] if sources else keys.get(hit["id"], [])
        ranked += [k for k in found if k not in ranked] or [("other", hit["id"])]
    return ranked[:DEPTH], len(hits)


def recall_args(question: dict) -> dict:
    """The arguments of the question's recall besides the query and the depth."""
    return {"now": question["question_date"]}


def bm25(question: dict, turns: list[dict], k1: float = 1.2, b: float = 0.75) -> list[tuple]:
    docs = [Counter(_WORD.findall(t["text"].lower())) for t in turns]
    lengths = [sum(d.values()) for d in docs]
    avg = sum(lengths) / max(1, len(docs))
    df = Counter(w for d in docs for w in d)
    n = len(docs)
    terms = _WORD.findall(question["question"].lower())
    scores = []
    for doc, length in zip(docs, lengths):
        scores.append(sum(math.log(1 + (n - df[t] + 0.5) / (df[t] + 0.5)) * doc[t] * (k1 + 1)
                          / (doc[t] + k1 * (1 - b + b * length / avg)) for t in terms if t in doc))
    order = sorted(range(n), key=lambda i: -scores[i])[:DEPTH]
    return [turns[i]["key"] for i in order if scores[i] > 0]


def minilm(question: dict, turns: list[dict], embedder, cache: Path | None) -> list[tuple]:
    import numpy as np

    saved = cache / "minilm" / f"{question['question_id']}.npy" if cache else None
    if saved and saved.exists():
        vectors = np.load(saved)
    else:
        vectors = embedder.embed([t["text"] for t in turns])
        if saved:
            saved.parent.mkdir(parents=True, exist_ok=True)
            np.save(saved.with_suffix(".tmp.npy"), vectors)
            os.replace(saved.with_suffix(".tmp.npy"), saved)
    query = embedder.embed([question["question"]])[0]
    order = (vectors @ query).argsort()[::-1][:DEPTH]
    return [turns[i]["key"] for i in order]


# -- metrics ---------------------------------------------------------------------------------------------

def scores(question: dict, turns: list[dict], ranked: list[tuple], results: int | None = None,
           ) -> dict[str, float | None]:
    """One question's metrics for one ranking (turn metrics None when no user turn is evidence); ``results``:
    how many results the recall returned (default: as many as ``ranked`` holds)."""
    evidence = {t["key"] for t in turns if t["evidence"]}
    answer_sessions = set(question["answer_session_ids"])
    returned = len(ranked) if results is None else results
    row: dict[str, float | None] = {}
    for k in TURN_KS:
        top = set(ranked[:k])
        row[f"turn@{k}"] = 100 * len(evidence & top) / len(evidence) if evidence else None
        row[f"turn_all@{k}"] = (100.0 if evidence <= top else 0.0) if evidence else None
        sessions = {key[0] for key in ranked[:k]}
        row[f"session_all@{k}"] = 100.0 if answer_sessions <= sessions else 0.0
        row[f"short@{k}"] = float(returned < k)
    for k in SESSION_KS:
        sessions = {key[0] for key in ranked[:k]}
        row[f"session@{k}"] = 100 * len(answer_sessions & sessions) / len(answer_sessions)
    if evidence:
        dcg = sum(1 / math.log2(i + 2) for i, key in enumerate(ranked[:10]) if key in evidence)
        ideal = sum(1 / math.log2(i + 2) for i in range(min(10, len(evidence))))
        row["ndcg@10"] = 100 * dcg / ideal
    else:
        row["ndcg@10"] = None
    return row


COLUMNS = [*(f"turn@{k}" for k in TURN_KS), *(f"session@{k}" for k in SESSION_KS), "ndcg@10"]
ALL_COLUMNS = [*(f"turn_all@{k}" for k in TURN_KS), *(f"session_all@{k}" for k in TURN_KS)]
SHORT_COLUMNS = [f"short@{k}" for k in TURN_KS]
"""Counted, not averaged: the questions that got fewer than k results."""


def table(rows: list[tuple[str, dict]]) -> dict[str, dict[str, float]]:
    """Mean of each metric per question type and overall (``n``: questions, ``n_turn``: with user evidence;
    ``short@k``: how many questions got fewer than k results)."""
    out = {}
    for kind in sorted({t for t, _ in rows}) + ["overall"]:
        chosen = [r for t, r in rows if kind in ("overall", t)]
        means = {c: statistics.mean(v) if (v := [r[c] for r in chosen if r[c] is not None]) else None
                 for c in COLUMNS + ALL_COLUMNS}  # None: no question of the type has user evidence turns
        counts = {c: int(sum(r[c] for r in chosen)) for c in SHORT_COLUMNS}
        out[kind] = {"n": len(chosen), "n_turn": sum(r["turn@5"] is not None for r in chosen), **means,
                     **counts}
    return out


def print_table(name: str, figures: dict) -> None:
    for title, columns in ((name, COLUMNS),
                           (f"{name}: recall_all (every evidence turn or answer session in the top k) and "
                            "questions with fewer than k results",
                                             ALL_COLUMNS + SHORT_COLUMNS)):
        print(f"\n{title}")
        print(f"{'type':<27} {'n':>3} {'n_t':>3} " + " ".join(f"{c:>14}" for c in columns))
        for kind, row in figures.items():
            print(f"{kind:<27} {row['n']:>3} {row['n_turn']:>3} " + " ".join(
                f"{row[c]:>14}" if c in SHORT_COLUMNS else f"{row[c]:>14.1f}" if row[c] is not None
                else f"{'-':>14}" for c in columns))


# -- run -------------------------------------------------------------------------------------------------

def run(questions: list[dict], cache: Path | None = None, build_only: bool = False) -> dict:
    from tqdm import tqdm

    from core.llm.embedding.embedders import MiniLMEmbedder

    embedder = MiniLMEmbedder(int8=False)  # plain MiniLM: exactly sentence-transformers' vectors
    rows: dict[str, list] = {"agentos": [], "bm25": [], "minilm": []}
    timing: dict[str, list[float]] = {"store_ms": [], "vectors_ms": [], "recall_ms": []}
    turns_total = 0
    per_question = []
    for question in tqdm(questions, desc="questions", unit="q"):
        turns = user_turns(question)
        turns_total += len(turns)
        kind = question["question_type"]
        if build_only:
            build(question, turns, cache / store_version() / question["question_id"])
            minilm(question, turns, embedder, cache)
            continue
        row = {"id": question["question_id"], "type": kind}
        for name, (ranked, returned) in (("agentos", ours(question, turns, timing, cache)),
                                         ("bm25", (found := bm25(question, turns), len(found))),
                                         ("minilm",
                                          (found := minilm(question, turns, embedder, cache), len(found)))):
            row[name] = scores(question, turns, ranked, returned)
            rows[name].append((kind, row[name]))
        per_question.append(row)
    if build_only:
        return {}
    return {"questions": len(questions), "turns": turns_total, "per_question": per_question,
            "figures": {name: table(r) for name, r in rows.items()},
            "timing": {"store_ms_per_turn": statistics.mean(timing["store_ms"]),
                       "vectors_ms_per_turn": statistics.mean(timing["vectors_ms"]),
                       "recall_ms_median": statistics.median(timing["recall_ms"]),
                       "recall_ms_max": max(timing["recall_ms"])}}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", type=Path, default=DATA, help=f"the LongMemEval JSON (.xz), default {DATA}")
    parser.add_argument("--limit", type=int, help="run N questions, stratified by type (fixed seed)")
    parser.add_argument("--types", help="comma-separated question types to run")
    parser.add_argument("--json", type=Path, help="also write the figures to this file")
    parser.add_argument("--cache-dir", type=Path,
                        help="keep each question's stored haystack (and the MiniLM baseline's vectors) here, "
                             "keyed by question and by the store path's code, so a ranking change re-runs "
                             "only the recalls")
    parser.add_argument("--build-only", action="store_true", help="fill --cache-dir and stop")
    parser.add_argument("--shard", help="I/N: run every Nth of the chosen questions from the Ith (0-based)")
    parser.add_argument("--backend",
                        help="reflect on each haystack with this backend (e.g. ollama), so that what the "
                             "model learns is recalled too (needs a model server)")
    parser.add_argument("--host", help="the model server's address (with --backend)")
    parser.add_argument("--model", help="the model to reflect with (with --backend)")
    args = parser.parse_args(argv)
    if args.backend:
        from core.config import LLMConfig
        from core.llm.select import choose_backend

        config = LLMConfig(backend=args.backend, model=args.model or LLMConfig.model, host=args.host or "")
        os.environ["AGENTOS_HOME"] = tempfile.mkdtemp(prefix="lme-")  # where the backend keeps what it learns
        backend = choose_backend(config).backend
        if backend.name == "offline":
            parser.error("--backend offline: reflection needs a model server (the offline rules read only "
                         "explicit statements)")
        REFLECT.update(backend=backend, model=backend.model)
    if args.build_only and not args.cache_dir:
        parser.error("--build-only needs --cache-dir")
    if not args.data.exists():
        parser.error(f"no data at {args.data}; pass --data PATH")
    questions = choose(load(args.data), args.types.split(",") if args.types else None, args.limit)
    if not questions:
        parser.error("no question matches --types")
    if args.shard:
        index, count = (int(n) for n in args.shard.split("/"))
        questions = questions[index::count]
    report = run(questions, args.cache_dir, args.build_only)
    if args.build_only:
        return 0
    print(f"\n{report['questions']} questions, {report['turns']} user turns "
          f"({report['turns'] / report['questions']:.0f} per question)")
    for name, figures in report["figures"].items():
        print_table(name, figures)
    t = report["timing"]
    print(f"\nstore {t['store_ms_per_turn']:.2f} ms/turn (store_memories, batches of 100); vectors caught up "
          f"{t['vectors_ms_per_turn']:.2f} ms/turn; recall median {t['recall_ms_median']:.0f} ms, "
          f"max {t['recall_ms_max']:.0f} ms")
    if args.json:
        args.json.write_text(json.dumps(report, indent=2, allow_nan=False))
    return 0


if __name__ == "__main__":
    sys.exit(main())
