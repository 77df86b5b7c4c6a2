"""Benchmark recall at scale and the cold tier's writes, and print the figures beside the targets.

Measures, in a temporary agents home with the real all-MiniLM-L6-v2 model:
``recall_memory`` p50/p95 (the query's embedding, the word search in memory.db
and the vector search in LanceDB, ranked) at 10k and 100k memories, store
throughput (``store_memories`` in batches of 100 and single ``store_memory``
calls), and the time to compact a 50 KB LOG.md with the deterministic
summarizer. The 10k memories are distinct log-like sentences, each embedded by
the model. The 100k agent holds those 10k real vectors plus 90k variants: each
variant's text is a base sentence with a distinct suffix and its vector the base
vector plus small Gaussian noise, re-normalised (embedding 100k sentences would
take ~8 minutes on 2 cores). The memories are written as recall docs with their
vectors in one go, as a finished background indexer leaves them.

Each table is then optimized exactly as production does it
(``ColdStore.optimize``, which the writer runs in the background): with the
default ``cold.ann_min_rows`` (5000) that builds the IVF_FLAT vector index,
whose build time is printed, together with how many of the exact top-10
vector neighbours the index returns. Every timed query is a distinct text, so
nothing can be answered from a cache. ``--quick`` uses 2k memories (below the
index threshold: exact search) and skips 100k.
"""

from __future__ import annotations

import argparse
import os
import random
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from tqdm import tqdm  # noqa: E402

SUBJECTS = ["the user", "the agent", "the planner", "the report job", "the portfolio tool", "the scheduler"]
VERBS = ["asked about", "downloaded", "failed to parse", "summarised", "compared", "saved a fact about",
         "decided to drop", "retried", "plotted", "flagged an error in"]
OBJECTS = ["AAPL quarterly earnings", "the EUR/USD exchange rate", "a CSV of daily returns", "Nvidia stock",
           "the staging deploy", "the monthly budget", "Tesla delivery numbers", "the API rate limit",
           "bond yields", "the weekly newsletter", "a timeout from the quotes service", "Maria's feedback"]
QUERIES = ["Which stocks did the user ask about?", "deploy error on staging", "exchange rate euro dollar",
           "what did the agent decide to drop", "timeout from quotes service", "user feedback about the report",
           "monthly budget summary", "bond yields plotted", "rate limit of the API", "newsletter"]
LEADS = ["what happened with", "did we fix", "any news on", "remind me about", "the user's question on",
         "errors related to", "the decision about", "a summary of", "who mentioned", "latest status of"]


def distinct_queries(n: int) -> list[str]:
    """``n`` different query texts (none of them is QUERIES, used to warm up)."""
    base = [f"{lead} {topic}" for lead in LEADS for topic in OBJECTS]
    return [base[i % len(base)] + ("" if i < len(base) else f" (take {i // len(base)})") for i in range(n)]


def sentences(n: int, seed: int = 7) -> list[str]:
    rng = random.Random(seed)
    return [f"{rng.choice(SUBJECTS)} {rng.choice(VERBS)} {rng.choice(OBJECTS)} (run {i}, step {rng.randint(1, 99)})"
            for i in range(n)]


def percentiles(samples: list[float]) -> tuple[float, float]:
    ordered = sorted(samples)
    return statistics.median(ordered), ordered[int(0.95 * (len(ordered) - 1))]


def fill_agent(home: Path, name: str, texts: list[str], vectors, copies: int) -> float:
    """Write ``len(texts) * copies`` memories into agent ``name``: recall docs (the real vectors, then noisy
    re-normalised variants) with their LanceDB rows; optimize as production does and return its seconds."""
    import numpy as np
    import pyarrow as pa

    from core.memory.recall_docs import Doc
    from core.memory_manager import MemoryManager

    rng = np.random.default_rng(0)
    with MemoryManager(name, home=home) as manager:
        store = manager.cold.store()
        for copy in tqdm(range(copies), desc=f"filling {name}", unit="x10k" if len(texts) == 10_000 else "batch"):
            batch = vectors if copy == 0 else vectors + rng.normal(0, 0.02, vectors.shape).astype("float32")
            batch = batch / np.linalg.norm(batch, axis=1, keepdims=True)
            ids = [f"note:{copy}-{i}" for i in range(len(texts))]
            words = texts if copy == 0 else [f"{t} [variant {copy}]" for t in texts]
            day = f"2026-01-{1 + copy % 28:02d}T00:00:00.000Z"
            with manager.db.transaction() as conn:
                manager.cold.docs.upsert(conn, [Doc(id=i, kind="note", tier="cold", source=i, text=t, occurred_at=day,
                                                    created_at=day) for i, t in zip(ids, words)])
                conn.execute("UPDATE recall_docs SET vector_state = 1")
            store.table.add(pa.table({
                "id": ids, "kind": ["note"] * len(ids), "text": words, "source": ids,
                "occurred_at": [day] * len(ids),
                "vector": pa.FixedSizeListArray.from_arrays(pa.array(batch.ravel()), vectors.shape[1]),
            }))
        start = time.perf_counter()
        store.optimize()
        return time.perf_counter() - start


def bench_recall(manager, queries: list[str]) -> tuple[float, float]:
    for query in QUERIES:  # warm caches
        manager.recall_memory(query, 5)
    samples = []
    for query in queries:
        start = time.perf_counter()
        manager.recall_memory(query, 5)
        samples.append((time.perf_counter() - start) * 1000)
    return percentiles(samples)


def index_agreement(store, query_vectors) -> float:
    """Mean share of the exact top-10 vector neighbours that the indexed search returns."""
    shares = []
    for vector in query_vectors:
        exact = {r["id"] for r in store.nearest(vector, 10, exact=True)}
        shares.append(len(exact & {r["id"] for r in store.nearest(vector, 10)}) / 10)
    return statistics.fmean(shares)


def bench_embedding(embedder, queries: list[str]) -> tuple[float, float]:
    samples = []
    for query in queries:
        start = time.perf_counter()
        embedder.embed([query])
        samples.append((time.perf_counter() - start) * 1000)
    return percentiles(samples)


def bench_compaction(home: Path) -> tuple[float, float, int]:
    """Seconds to compact a 50 KB LOG.md (deterministic summary, no indexing) and to write its recall docs."""
    from core.memory.summarizer import LogSummarizer
    from core.memory_manager import MemoryManager

    config_dir = home / "bench" / "config"
    config_dir.mkdir(parents=True)
    (config_dir / "config.yaml").write_text("llm: {backend: offline}\nmemory: {auto_compact: false}\n")
    with MemoryManager("bench", home=home) as manager:
        texts = sentences(400, seed=3)
        i = 0
        while manager.paths.log_file.stat().st_size < 50 * 1024:
            kind = "ERROR" if i % 17 == 0 else "TOOL_USE"
            manager.append_log(kind, texts[i % len(texts)] + " " + "detail " * 12)
            i += 1
        size = manager.paths.log_file.stat().st_size
        start = time.perf_counter()
        manager.cold.compactor.run(LogSummarizer(None, 500), force=True, index=False)
        compact_s = time.perf_counter() - start
        start = time.perf_counter()
        manager.cold.indexer.sync()
        return compact_s, time.perf_counter() - start, size


def bench_store(home: Path) -> tuple[float, float]:
    """Memories stored per second with ``store_memories`` in batches of 100, and one ``store_memory``'s p50 (ms)."""
    from core.memory_manager import MemoryManager

    texts = sentences(1000, seed=11)
    with MemoryManager("store", home=home) as manager:
        start = time.perf_counter()
        for i in range(0, len(texts), 100):
            manager.store_memories(texts[i : i + 100])
        rate = len(texts) / (time.perf_counter() - start)
        single = []
        for text in texts[:100]:
            t0 = time.perf_counter()
            manager.store_memory(text + " (again, alone)")
            single.append((time.perf_counter() - t0) * 1000)
    return rate, statistics.median(single)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="2k memories, no 100k agent (about a minute)")
    parser.add_argument("--runs", type=int, default=100, help="recall queries timed per size")
    args = parser.parse_args(argv)
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    from core.config import ColdConfig
    from core.llm.embedders import MiniLMEmbedder, load_minilm
    from core.memory_manager import MemoryManager

    load_minilm()
    base = 2_000 if args.quick else 10_000
    home = Path(tempfile.mkdtemp(prefix="agentos-bench-")) / "agents"
    home.mkdir(parents=True)
    (home / "config.yaml").write_text("llm: {backend: offline}\nmemory: {auto_compact: false}\n")
    embedder = MiniLMEmbedder()
    texts = sentences(base)
    start = time.perf_counter()
    vectors = embedder.embed(texts)
    embed_rate = base / (time.perf_counter() - start)

    queries = distinct_queries(args.runs)
    embed_p50, embed_p95 = bench_embedding(embedder, distinct_queries(args.runs + 50)[args.runs:])
    query_vectors = embedder.embed(queries[:50])
    results = []
    sizes = [(base, 1)] + ([] if args.quick else [(100_000, 10)])
    for total, copies in sizes:
        name = f"recall{total}"
        optimize_s = fill_agent(home, name, texts, vectors, copies)
        with MemoryManager(name, home=home) as manager:
            p50, p95 = bench_recall(manager, queries)
            store = manager.cold.store()
            index = store.vector_index()
            agreement = index_agreement(store, query_vectors) if index else 1.0
        results.append((total, p50, p95, optimize_s, index, agreement))

    store_rate, single_ms = bench_store(home)
    compact_s, index_s, log_size = bench_compaction(home)

    print(f"\nembedding model: all-MiniLM-L6-v2, CPU, 1 torch thread; {embed_rate:.0f} sentences/s in batches; "
          f"one query: p50 {embed_p50:.1f} ms, p95 {embed_p95:.1f} ms")
    print(f"recall = recall_memory (query embedding + words in memory.db + vectors in LanceDB, ranked), "
          f"{len(queries)} distinct queries, top 5; vector index from cold.ann_min_rows = "
          f"{ColdConfig.ann_min_rows} memories")
    for total, p50, p95, optimize_s, index, agreement in results:
        target = "  (target p50 <= 25 ms)" if total == 100_000 else ""
        print(f"recall @ {total:>7,} memories: p50 {p50:6.1f} ms   p95 {p95:6.1f} ms{target}")
        if index:
            print(f"    {index['type']} index built by optimize in {optimize_s:.1f} s; returns "
                  f"{agreement:.1%} of the exact top-10 vector neighbours")
        else:
            print(f"    no vector index (below cold.ann_min_rows): exact vector search; optimize {optimize_s:.1f} s")
    print(f"store: {store_rate:.0f} memories/s with store_memories in batches of 100 (target >= 500); one "
          f"store_memory p50 {single_ms:.2f} ms (target <= 10 ms); vectors follow in the background")
    print(f"compaction of a {log_size / 1024:.1f} KB LOG.md, deterministic summary: {compact_s:.3f} s "
          f"(target <= 2 s); writing its recall docs: {index_s:.2f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
