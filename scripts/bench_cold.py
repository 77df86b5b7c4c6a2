"""Benchmark recall's speed at 100,000 memories and the speed of storing, beside the targets.

Everything goes through the public path: memories are stored with
``MemoryManager.store_memories`` / ``store_memory`` and found with
``recall_memory`` (the real all-MiniLM-L6-v2 model on CPU, one thread, as an agent runs it).
The corpus is generated here (seeded, nothing is downloaded): the turns of
long two-person conversations from ``scripts/recall_dialogues.py`` (speaker,
written date and session in the metadata) mixed with varied notes an agent
keeps (people, places, numbers, tools, errors, decisions), so words and
meanings are spread as in a real memory. The queries are the conversations'
questions and questions about the notes, each asked once.

Building the 100k agent (store in batches, then ``cold.catch_up()`` computes
every vector, then the ANN index is built) takes about 10 minutes;
the built agent is kept in a cache folder (``--cache``) and copied for each
run, so later runs take about a minute. Printed:

- recall p50/p95 with its parts (query embedding, word search in memory.db,
  vector search in LanceDB, ranking: reading the candidates, scoring, choosing);
- store throughput with ``store_memories`` in batches (fresh agent, vectors
  computed in the background meanwhile) and one ``store_memory`` call's
  latency in the 100k agent;
- the time from a ``store_memory`` call returning until ``recall_memory``
  finds the memory by meaning (a query sharing none of its words, ``since`` the
  measurement began: at 100k memories many older ones say much the same);
- the time to compact a 50 KB LOG.md with the deterministic summarizer.

    python scripts/bench_cold.py            # the figures of docs/benchmarks.md
    python scripts/bench_cold.py --size 20000 --runs 100
"""

from __future__ import annotations

import argparse
import os
import random
import shutil
import statistics
import sys
import tempfile
import time
from collections import defaultdict
from contextlib import contextmanager
from datetime import datetime, timezone
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(Path(__file__).resolve().parent))

os.environ.setdefault("OMP_NUM_THREADS", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
os.environ.setdefault("HF_HUB_OFFLINE", "1")

import recall_dialogues  # noqa: E402

CORPUS_VERSION = 2
"""Bump when the corpus or the way it is built changes: a cached agent of another version is rebuilt."""
CONFIG = "llm: {backend: offline}\nmemory: {auto_compact: false}\n"

PEOPLE = ["Ada", "Bruno", "Chiara", "Dmitri", "Elena", "Farid", "Grace", "Hiro", "Ines", "Jamal", "Kofi",
          "Lena",
          "Mateo", "Nadia", "Oskar", "Paula", "Quentin", "Rosa", "Sven", "Tamsin", "Umar", "Vera", "Wen",
          "Yusuf"]
PLACES = ["Lisbon", "Osaka", "Nairobi", "Montreal", "Krakow", "Lima", "Hanoi", "Dublin", "Marseille",
          "Tbilisi",
          "Bergen", "Cordoba", "Adelaide", "Zanzibar", "Reykjavik", "Porto", "Seville", "Kyoto", "Accra",
          "Tallinn"]
TOOLS = ["the billing service", "the nightly backup", "the staging cluster", "the search API",
         "the payroll export",
         "the mobile app", "the data warehouse", "the invoice parser", "the CI pipeline",
         "the customer portal",
         "the email digest", "the recommendation model", "the inventory sync", "the auth gateway",
         "the map tiles"]
PROBLEMS = ["timed out after {n} seconds", "returned {n} duplicate rows", "ran out of memory at {n} MB",
            "dropped {n} requests during the deploy", "was {n}% slower than last week",
            "failed {n} health checks",
            "logged {n} permission errors", "skipped {n} records with bad dates"]
DECISIONS = ["moved to a weekly schedule", "switched to the cheaper storage tier",
             "added a retry with backoff",
             "rolled back to the previous release", "split the job into {n} shards",
             "raised the limit to {n}",
             "asked {person} to review it", "paused it until {weekday}"]
TOPICS = ["sourdough baking", "marathon training", "learning Portuguese", "restoring an old bicycle",
          "birdwatching", "growing tomatoes", "chess openings", "jazz piano", "pottery", "rock climbing",
          "astronomy", "knitting socks", "woodworking", "vintage cameras", "salsa dancing", "beekeeping"]
FEELINGS = ["loves", "is tired of", "wants to try", "keeps talking about", "gave up on", "is getting good at"]
ITEMS = ["a flight to {place}", "a table for {n} at the harbour restaurant", "a dentist appointment",
         "concert tickets", "a rental car in {place}", "a hotel near the station in {place}", "a yoga class"]
WEEKDAYS = ["Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday"]
NOTE_TEMPLATES = [
    "{tool} {problem} on {weekday}; {decision}.",
    "{person} said {tool} {problem}, so we {decision}.",
    "{person} {feeling} {topic} and practises every {weekday}.",
    "Booked {item} for {person} on {weekday} the {day}th.",
    "{person} moved from {place} to {place2} for a job at {tool_name}.",
    "Reminder: {person} owes {person2} {n} euros for {item}.",
    "Meeting with {person} and {person2} about {tool}: we {decision}.",
    "{person}'s budget for {topic} this month is {n} dollars.",
    "{person} recommends the bakery on {street} Street in {place}.",
    "The report on {tool} is due {weekday}; {person} owns it.",
]
NOTE_QUESTIONS = [
    "what went wrong with {tool}", "what did we decide about {tool}", "which hobby does {person} enjoy",
    "where did {person} relocate", "how much money does {person} owe", "what was reserved for {person}",
    "who owns the report on {tool}", "bakery recommendation in {place}", "{person} monthly spending",
    "incident with {tool} last week",
]


def note(rng: random.Random) -> dict:
    """One varied note an agent keeps (text and metadata)."""
    values = {"person": rng.choice(PEOPLE), "person2": rng.choice(PEOPLE), "place": rng.choice(PLACES),
              "place2": rng.choice(PLACES), "tool": rng.choice(TOOLS), "topic": rng.choice(TOPICS),
              "feeling": rng.choice(FEELINGS), "weekday": rng.choice(WEEKDAYS), "day": rng.randint(1, 28),
              "n": rng.choice([2, 3, 5, 8, 12, 20, 45, 90, 150, 400, 1200]),
              "street": rng.choice(["Rua Augusta", "Elm", "Harbour", "Mill", "Station", "Orchard", "Canal"]),
              "tool_name": rng.choice(["Acme", "Northwind", "Globex", "Initech", "Umbrella", "Hooli",
                                       "Vandelay"])}
    values["problem"] = rng.choice(PROBLEMS).format(**values)
    values["decision"] = rng.choice(DECISIONS).format(**values)
    values["item"] = rng.choice(ITEMS).format(**values)
    text = rng.choice(NOTE_TEMPLATES).format(**values)
    text = text[0].upper() + text[1:]
    day = f"2024-{rng.randint(1, 12):02d}-{rng.randint(1, 28):02d}T{rng.randint(8, 20):02d}:00:00Z"
    return {"content": text, "metadata": {"date": day, "author": "agent"}}


def corpus(size: int, seed: int = 31) -> tuple[list[dict], list[str]]:
    """``size`` memories (about half conversation turns, half notes) and the questions asked about them."""
    rng = random.Random(seed)
    items: list[dict] = []
    questions: list[str] = []
    conv_rng = random.Random(seed + 1)
    n = 0
    while len(items) < size // 2:
        conv = recall_dialogues.generate_conversation(conv_rng, 24)
        for turn in conv.turns:
            items.append({"content": turn.text, "metadata": {
                "speaker": turn.speaker, "date": turn.date, "session": f"c{n}-s{turn.session}",
                "dia_id": turn.dia_id}})
        questions += [q.text for q in conv.questions]
        n += 1
    items = items[: size // 2]
    notes = [note(rng) for _ in range(size - len(items))]
    # Merged so that a conversation's turns keep their order (a turn's vector includes the one before it).
    mixed = _interleave(items, notes, rng)
    for _ in range(len(questions)):
        values = {"person": rng.choice(PEOPLE), "tool": rng.choice(TOOLS), "place": rng.choice(PLACES)}
        questions.append(rng.choice(NOTE_QUESTIONS).format(**values))
    rng.shuffle(questions)
    return mixed, questions


def _interleave(first: list, second: list, rng: random.Random) -> list:
    """Both lists merged at random, each keeping its own order."""
    merged, i, j = [], 0, 0
    while i < len(first) or j < len(second):
        if j >= len(second) or (i < len(first) and rng.random() < len(first) / (len(first) + len(second))):
            merged.append(first[i])
            i += 1
        else:
            merged.append(second[j])
            j += 1
    return merged


def describe(index: dict | None) -> str:
    """The vector index as the figures depend on it: its type and its segments (each is searched)."""
    if index is None:
        return "none (exact search)"
    return f"{index['type']}, {index['segments']} segment(s), {index['unindexed_rows']} rows outside it"


def percentiles(samples: list[float]) -> tuple[float, float]:
    ordered = sorted(samples)
    return statistics.median(ordered), ordered[int(0.95 * (len(ordered) - 1))]


# -- building the 100k agent ------------------------------------------------------------------------------

def build(home: Path, name: str, size: int) -> dict:
    """Store ``size`` memories in agent ``name`` of ``home`` and compute every vector and the index
    (an interrupted build resumes: the stored memories keep the time they took in ``home/STORED``)."""
    from tqdm import tqdm

    from core.llm.embedding.embedders import load_minilm
    from core.memory_manager import MemoryManager

    figures = {}
    stored = home / "STORED"
    with MemoryManager(name, home=home) as manager:
        manager.cold.background.stop()  # vectors are computed below, in one go
        if not stored.exists():
            items, _ = corpus(size)
            start = time.perf_counter()
            for i in tqdm(range(0, len(items), 1000), desc="storing", unit="x1000"):
                manager.store_memories(items[i : i + 1000])
            stored.write_text(repr(time.perf_counter() - start))
        figures["store_s"] = float(stored.read_text())
        start = time.perf_counter()
        with tqdm(total=manager.cold.docs.pending_count(), desc="embedding", unit="memory") as bar:
            manager.cold.catch_up(bar.update)
        figures["embed_s"] = time.perf_counter() - start
        figures["runtime"] = load_minilm().runtime
        start = time.perf_counter()
        manager.cold.store().optimize()
        figures["optimize_s"] = time.perf_counter() - start
    return figures


def cached_agent(cache: Path, size: int) -> Path:
    """The home of a built agent of ``size`` memories (built into ``cache`` if not there yet)."""
    home = cache / f"v{CORPUS_VERSION}-{size}"
    if not (home / "BUILT").exists():
        home.mkdir(parents=True, exist_ok=True)
        (home / "config.yaml").write_text(CONFIG)
        print(f"building the {size:,}-memory agent in {home} (cached for later runs)")
        figures = build(home, "bench", size)
        (home / "BUILT").write_text(repr(figures))
    return home


# -- timing the parts of a recall --------------------------------------------------------------------------

class PartTimer:
    """Adds up the time spent in named functions during one recall."""

    def __init__(self) -> None:
        self.parts: dict[str, float] = defaultdict(float)

    def wrap(self, owner, attribute: str, part: str) -> None:
        original = getattr(owner, attribute)

        def timed(*args, **kwargs):
            start = time.perf_counter()
            try:
                return original(*args, **kwargs)
            finally:
                self.parts[part] += (time.perf_counter() - start) * 1000

        setattr(owner, attribute, timed)

    @contextmanager
    def one(self):
        self.parts.clear()
        yield self.parts


def bench_recall(manager, queries: list[str],
                 warmup: list[str]) -> tuple[list[float], dict[str, list[float]]]:
    """Each query's ``recall_memory`` time (ms) and the time of its parts."""
    from core.memory.recall import search as recall_search

    store = manager.cold.store()
    timer = PartTimer()
    timer.wrap(store.embedder, "embed", "query embedding")
    timer.wrap(manager.cold.docs, "words", "word search")
    timer.wrap(store, "nearest", "vector search")
    timer.wrap(manager.cold.docs, "get", "reading candidates")
    timer.wrap(recall_search, "rank", "ranking")
    timer.wrap(recall_search, "select", "ranking")
    for query in warmup:
        manager.recall_memory(query, 10)
    totals, parts = [], defaultdict(list)
    for query in queries:
        with timer.one() as spent:
            start = time.perf_counter()
            manager.recall_memory(query, 10)
            totals.append((time.perf_counter() - start) * 1000)
        for part in PARTS:
            parts[part].append(spent.get(part, 0.0))
    return totals, parts


PARTS = ("query embedding", "vector search", "word search", "reading candidates", "ranking")
"""The parts of a recall timed; the first two run in a thread of their own while the word search runs."""


def bench_store_batches(home: Path, size: int) -> float:
    """Memories a second stored with ``store_memories`` in batches of 100 (fresh agent; the background
    thread computes vectors meanwhile, as in use)."""
    from core.memory_manager import MemoryManager

    items, _ = corpus(size, seed=77)
    with MemoryManager("store", home=home) as manager:
        manager.store_memory("warm up: open memory.db")
        start = time.perf_counter()
        for i in range(0, len(items), 100):
            manager.store_memories(items[i : i + 100])
        return len(items) / (time.perf_counter() - start)


MEANING_PAIRS = [
    ("Tobias adopted a grey kitten from the shelter and named it Pebble.", "new pet cat"),
    ("The quarterly tax filing is due at the end of next month.", "government paperwork deadline"),
    ("Our cellar flooded after the storm and the boiler is ruined.", "water damage in the basement"),
    ("Marguerite got promoted to head surgeon at the hospital.", "career advancement in medicine"),
    ("We ordered a walnut dining table with eight chairs.", "furniture purchase"),
]


def bench_single_and_meaning(manager) -> tuple[list[float], list[float]]:
    """One ``store_memory`` call's latency (ms) in the big agent, and the seconds from a store until
    ``recall_memory`` finds the memory by a query that shares none of its words."""
    rng = random.Random(5)
    since = datetime.now(timezone.utc)
    single = []
    for i in range(60):
        item = note(rng)
        start = time.perf_counter()
        manager.store_memory(f"{item['content']} (single {i})", item["metadata"])
        single.append((time.perf_counter() - start) * 1000)
    manager.cold.background.wait_idle(120)
    found_after = []
    for text, query in MEANING_PAIRS:
        start = time.perf_counter()
        note_id = manager.store_memory(text)
        while True:
            hits = manager.recall_memory(query, 10, since=since, min_score=0.0)
            if any(h["id"] == note_id for h in hits):
                found_after.append(time.perf_counter() - start)
                break
            if time.perf_counter() - start > 30:
                found_after.append(float("inf"))
                break
    return single, found_after


def bench_compaction(home: Path) -> tuple[float, float, int]:
    """Seconds to compact a 50 KB LOG.md (deterministic summary, no indexing) and to write its recall docs."""
    from core.memory.compaction.summarizer import LogSummarizer
    from core.memory_manager import MemoryManager

    rng = random.Random(3)
    with MemoryManager("compaction", home=home) as manager:
        i = 0
        while manager.paths.log_file.stat().st_size < 50 * 1024:
            manager.append_log("ERROR" if i % 17 == 0 else "TOOL_USE", note(rng)["content"])
            i += 1
        size = manager.paths.log_file.stat().st_size
        start = time.perf_counter()
        manager.compactor.run(LogSummarizer(None, 500), force=True, index=False)
        compact_s = time.perf_counter() - start
        start = time.perf_counter()
        manager.cold.indexer.sync()
        return compact_s, time.perf_counter() - start, size


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--size", type=int, default=100_000,
                        help="memories in the recall agent (default 100,000)")
    parser.add_argument("--runs", type=int, default=200, help="distinct recall queries timed")
    parser.add_argument("--cache", type=Path, default=Path(tempfile.gettempdir()) / "agentos-bench-cold",
                        help="where the built agent is kept between runs")
    parser.add_argument("--rebuild", action="store_true", help="build the agent again")
    args = parser.parse_args(argv)

    from core.llm.embedding.embedders import load_minilm
    from core.memory_manager import MemoryManager

    print(f"all-MiniLM-L6-v2 runs in {load_minilm().runtime}")
    if args.rebuild:
        shutil.rmtree(args.cache / f"v{CORPUS_VERSION}-{args.size}", ignore_errors=True)
    built = cached_agent(args.cache, args.size)
    build_figures = eval((built / "BUILT").read_text())  # noqa: S307 - our own repr of a dict of floats
    work = Path(tempfile.mkdtemp(prefix="agentos-bench-cold-"))
    try:
        home = work / "agents"
        shutil.copytree(built, home)
        _, questions = corpus(args.size)
        warmup, queries = questions[:20], questions[20 : 20 + args.runs]
        with MemoryManager("bench", home=home) as manager:
            index = manager.cold.store().vector_index()
            totals, parts = bench_recall(manager, queries, warmup)
            single, found_after = bench_single_and_meaning(manager)
        rate = bench_store_batches(home, 5_000)
        compact_s, index_s, log_size = bench_compaction(home)
    finally:
        shutil.rmtree(work, ignore_errors=True)

    p50, p95 = percentiles(totals)
    print(f"\nrecall_memory at {args.size:,} memories ({len(queries)} distinct queries, top 10; "
          f"all-MiniLM-L6-v2 in {load_minilm().runtime} on CPU, 1 thread; vector index: {describe(index)})")
    print(f"  total              p50 {p50:6.1f} ms   p95 {p95:6.1f} ms   (target p50 <= 25 ms at 100,000)")
    print("  its parts (embedding and vector search run beside the word search and the reading of its "
          "matches):")
    for part, samples in parts.items():
        q50, q95 = percentiles(samples)
        print(f"  {part:<18} p50 {q50:6.1f} ms   p95 {q95:6.1f} ms")
    s50, s95 = percentiles(single)
    print(f"store_memories: {rate:,.0f} memories/s in batches of 100 (target >= 500; vectors computed "
          "in the background meanwhile)")
    print(f"store_memory in the {args.size:,}-memory agent: p50 {s50:.2f} ms, p95 {s95:.2f} ms (target <= 10 "
          "ms)")
    print("found by meaning after a store_memory (query sharing none of its words, since the measurement "
          f"began): median {statistics.median(found_after):.2f} s, worst {max(found_after):.2f} s "
          "(target: about a second; by words at once)")
    print(f"compaction of a {log_size / 1024:.1f} KB LOG.md, deterministic summary: {compact_s:.3f} s "
          f"(target <= 2 s); writing its recall docs: {index_s:.2f} s")
    print(f"building the agent: stored in {build_figures['store_s']:.0f} s "
          f"({args.size / build_figures['store_s']:,.0f}/s in batches of 1000), vectors in "
          f"{build_figures['embed_s']:.0f} s ({build_figures['runtime']}, 1 thread), index in "
          f"{build_figures['optimize_s']:.1f} s")
    print("(2-core machine shared with other work: figures are noisy)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
