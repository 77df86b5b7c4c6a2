"""Measure the tail latency of ``append_log`` while background work runs in the same process.

Creates an agent in a temporary AGENTOS_HOME and appends ``--appends`` THOUGHT entries of
``--chars`` characters, timing each call. With the default config LOG.md crosses the
compaction threshold every 100 entries, so automatic compaction (a background thread) and
recall indexing (a background thread: docs into memory.db, vectors by the embedder into
LanceDB) run during the measurement, as they do in an agent's life. Prints p50/p99/max and the
machine's load. The switches below turn each kind of background work off to measure its share.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))


def percentile(values: list[float], pct: float) -> float:
    """The ``pct`` percentile (nearest rank) of ``values``."""
    ordered = sorted(values)
    rank = max(0, min(len(ordered) - 1, round(pct / 100 * len(ordered)) - 1))
    return ordered[rank]


def measure(home: Path, appends: int, chars: int, *, compact: bool, index: bool,
            switch_interval: float | None, warm: bool = False, interval: float = 0.0) -> list[float]:
    """Append ``appends`` entries to a fresh agent under ``home``; return each call's time in ms."""
    os.environ["AGENTOS_HOME"] = str(home)
    os.environ.setdefault("OLLAMA_HOST", "http://127.0.0.1:9")
    from core.config import Config, merge
    from core.memory_manager import MemoryManager

    config = merge(Config(), {"memory": {"auto_compact": compact}})
    if switch_interval is not None:
        sys.setswitchinterval(switch_interval)
    text = ("a thought about the portfolio and what to check next " * 8)[:chars]
    times = []
    with MemoryManager("bench", config=config) as manager:
        if not index:
            manager.cold.background.stop()  # the recall thread never starts: docs stay pending
        if warm:  # the one-time loads (LanceDB, the embedding model, the LLM client) done before measuring
            from core.llm.embedding.embedders import load_minilm

            load_minilm()
            manager.cold.store().table
            manager.compaction.summarizer(automatic=True)
        for i in range(20):  # warm-up: imports, the first open of LOG.md, the lock file
            manager.append_log("THOUGHT", text)
        for i in range(appends):
            if interval:
                time.sleep(interval)  # an agent's pace: a few entries, then a model call
            start = time.perf_counter()
            manager.append_log("THOUGHT", text)
            times.append((time.perf_counter() - start) * 1000)
        manager.compaction.wait()
    return times


def _loadavg() -> list[str]:
    """The machine's load averages (1, 5, 15 min): the figures mean little on a busy machine."""
    path = Path("/proc/loadavg")
    return path.read_text().split()[:3] if path.exists() else ["?"]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--appends", type=int, default=2000)
    parser.add_argument("--chars", type=int, default=200)
    parser.add_argument("--no-compact", action="store_true", help="turn automatic compaction off")
    parser.add_argument("--no-index", action="store_true", help="turn the background recall indexer off")
    parser.add_argument("--warm", action="store_true",
                        help="load LanceDB, the embedding model and the LLM client before measuring")
    parser.add_argument("--interval", type=float, default=0.0,
                        help="sleep this long (s) before each append (default: back to back)")
    parser.add_argument("--switch-interval", type=float, help="sys.setswitchinterval for the run (s)")
    parser.add_argument("--slowest", type=int, default=0, help="also print the indexes of the N slowest calls")
    args = parser.parse_args(argv)
    load = _loadavg()
    with tempfile.TemporaryDirectory(prefix="agentos-tail-") as tmp:
        times = measure(Path(tmp), args.appends, args.chars, compact=not args.no_compact,
                        index=not args.no_index, switch_interval=args.switch_interval, warm=args.warm,
                        interval=args.interval)
    print(f"{args.appends} appends of {args.chars} chars (compact={not args.no_compact}, "
          f"index={not args.no_index}, warm={args.warm}, interval={args.interval}, switchinterval={sys.getswitchinterval()}): "
          f"p50 {statistics.median(times):.3f} ms, p99 {percentile(times, 99):.3f} ms, "
          f"max {max(times):.3f} ms; loadavg before {' '.join(load)}, after {' '.join(_loadavg())}")
    if args.slowest:
        worst = sorted(range(len(times)), key=times.__getitem__, reverse=True)[: args.slowest]
        print("slowest:", ", ".join(f"#{i} {times[i]:.1f}" for i in sorted(worst)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
