"""Measure the tail latency of ``append_log`` and ``update_now`` while background work runs in the same
process.

Creates an agent in a temporary AGENTOS_HOME and appends ``--appends`` THOUGHT entries of
``--chars`` characters, timing each call, then calls ``update_now`` ``--updates`` times back
to back. With the default config LOG.md crosses the compaction threshold every 100 entries, so
automatic compaction (a background thread) and recall indexing (a background thread: docs into
memory.db, vectors by the embedder into LanceDB) run during the measurement, as they do in an
agent's life: the appends leave them a backlog that the updates meet. Prints p50/p99/max of
each beside its target and the machine's load. Each run is a fresh process (``--runs``); the
switches below turn each kind of background work off to measure its share.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

APPEND_P99_MS = 3.0
"""This project's target for an append's p99 while background work runs (ms)."""
UPDATE_P99_MS = 5.0
"""The original design's bound for an update of NOW.md, held as this project's p99 target (ms)."""


def percentile(values: list[float], pct: float) -> float:
    """The ``pct`` percentile (nearest rank) of ``values``."""
    ordered = sorted(values)
    rank = max(0, min(len(ordered) - 1, round(pct / 100 * len(ordered)) - 1))
    return ordered[rank]


def measure(home: Path, appends: int, chars: int, *, compact: bool, index: bool,
            switch_interval: float | None, warm: bool = False, interval: float = 0.0,
            updates: int = 0) -> tuple[list[float], list[float], bool]:
    """Append ``appends`` entries to a fresh agent under ``home``, then update NOW.md ``updates`` times;
    return each call's time in ms (appends, updates) and whether background work was running at the end."""
    os.environ["AGENTOS_HOME"] = str(home)
    os.environ.setdefault("OLLAMA_HOST", "http://127.0.0.1:9")
    from core.config import Config, merge
    from core.memory_manager import MemoryManager

    config = merge(Config(), {"memory": {"auto_compact": compact}})
    if switch_interval is not None:
        sys.setswitchinterval(switch_interval)
    text = ("a thought about the portfolio and what to check next " * 8)[:chars]
    appended, updated = [], []
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
        manager.update_now("warming up", ["the first step"])
        for i in range(appends):
            if interval:
                time.sleep(interval)  # an agent's pace: a few entries, then a model call
            start = time.perf_counter()
            manager.append_log("THOUGHT", text)
            appended.append((time.perf_counter() - start) * 1000)
        for i in range(updates):
            start = time.perf_counter()
            manager.update_now(f"checking holding {i}", [f"holding {i + 1}", "write the report"])
            updated.append((time.perf_counter() - start) * 1000)
        busy = manager.compaction.busy() or manager.cold.docs.pending_count() > 0
        manager.compaction.wait()
    return appended, updated, busy


def _loadavg() -> list[str]:
    """The machine's load averages (1, 5, 15 min): the figures mean little on a busy machine."""
    path = Path("/proc/loadavg")
    return path.read_text().split()[:3] if path.exists() else ["?"]


def _figures(times: list[float]) -> dict[str, float]:
    if not times:
        return {}
    return {"p50": statistics.median(times), "p99": percentile(times, 99), "max": max(times)}


def one_run(args: argparse.Namespace) -> dict:
    """One measurement in this process: the figures of the appends and of the updates."""
    load = _loadavg()
    with tempfile.TemporaryDirectory(prefix="agentos-tail-") as tmp:
        appended, updated, busy = measure(
            Path(tmp), args.appends, args.chars, compact=not args.no_compact, index=not args.no_index,
            switch_interval=args.switch_interval, warm=args.warm, interval=args.interval,
            updates=args.updates)
    result = {"append": _figures(appended), "update_now": _figures(updated), "background_at_end": busy,
              "load_before": load, "load_after": _loadavg()}
    if args.slowest:
        worst = sorted(range(len(updated)), key=updated.__getitem__, reverse=True)[: args.slowest]
        result["slowest_updates"] = [(i, round(updated[i], 1)) for i in sorted(worst)]
    return result


def _line(name: str, figures: dict[str, float], target: float) -> str:
    if not figures:
        return f"{name}: not measured"
    verdict = "meets" if figures["p99"] <= target else "MISSES"
    return (f"{name}: p50 {figures['p50']:.3f} ms, p99 {figures['p99']:.3f} ms, max {figures['max']:.3f} ms "
            f"(target p99 <= {target:g} ms: {verdict})")


def _argv_without_runs(argv: list[str]) -> list[str]:
    out, skip = [], False
    for arg in argv:
        if skip:
            skip = False
        elif arg == "--runs":
            skip = True
        elif not arg.startswith("--runs="):
            out.append(arg)
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--appends", type=int, default=2000)
    parser.add_argument("--updates", type=int, default=300, help="update_now calls after the appends")
    parser.add_argument("--chars", type=int, default=200)
    parser.add_argument("--runs", type=int, default=1, help="runs, each in a fresh process (default 1)")
    parser.add_argument("--no-compact", action="store_true", help="turn automatic compaction off")
    parser.add_argument("--no-index", action="store_true", help="turn the background recall indexer off")
    parser.add_argument("--warm", action="store_true",
                        help="load LanceDB, the embedding model and the LLM client before measuring")
    parser.add_argument("--interval", type=float, default=0.0,
                        help="sleep this long (s) before each append (default: back to back)")
    parser.add_argument("--switch-interval", type=float, help="sys.setswitchinterval for the run (s)")
    parser.add_argument("--slowest", type=int, default=0,
                        help="also print the indexes of the N slowest updates")
    parser.add_argument("--json", action="store_true", help="print one JSON object a run")
    args = parser.parse_args(argv)
    argv = sys.argv[1:] if argv is None else argv
    if args.runs > 1:
        child = [sys.executable, str(Path(__file__).resolve()), *_argv_without_runs(argv)]
        if "--json" not in child:
            child.append("--json")
        results = [json.loads(subprocess.run(child, check=True, capture_output=True,
                                             text=True).stdout.splitlines()[-1])
                   for _ in range(args.runs)]
    else:
        results = [one_run(args)]
    if args.json:
        print(json.dumps(results[0] if len(results) == 1 else results))
        return 0
    print(f"{args.appends} appends of {args.chars} chars, then {args.updates} update_now, back to back "
          f"(compact={not args.no_compact}, index={not args.no_index}, warm={args.warm}, "
          f"interval={args.interval}, switchinterval={args.switch_interval or sys.getswitchinterval()}); "
          f"{len(results)} run(s)"
          + (", each in a fresh process" if len(results) > 1 else ""))
    for number, result in enumerate(results, 1):
        print(
            f"run {number}: load {' '.join(result['load_before'])} -> {' '.join(result['load_after'])}; "
            "background work still running after the updates: "
            f"{'yes' if result['background_at_end'] else 'no'}"
        )
        print("  " + _line("append_log", result["append"], APPEND_P99_MS))
        print("  " + _line("update_now", result["update_now"], UPDATE_P99_MS))
        if result.get("slowest_updates"):
            print("  slowest updates:", ", ".join(f"#{i} {t}" for i, t in result["slowest_updates"]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
