"""Store throughput on real chat turns: one LongMemEval-S haystack stored through the public API.

The user turns of one question's haystack (the first question with at least ``--turns`` of them, cut
to that many) are stored with ``store_memories`` in batches of 100, each with its session date,
speaker and session, in a fresh agents home (offline embedder all-MiniLM-L6-v2), and the clock runs
until every turn has its vector (words find a turn at once; recall by meaning needs the vector).
Prints ms a turn for the store calls, for the vectors, and in all, beside the target, with the CPU
time it took (how many cores were busy) and the machine's load (other work on the cores slows it);
then the same store as a command a person runs: a fresh process that starts the interpreter, imports
AgentOS, loads the model, stores, waits for the vectors and exits, timed from outside.

    python scripts/bench_store.py                       # 240 turns, the target is <= 15 ms a turn
    python scripts/bench_store.py --profile store.prof  # under cProfile, the vectors computed in the main
    thread

In the first figure the model is loaded (and the machine warmed) before the clock starts; the data is
read from ``../shared/data/longmemeval_s_dev.json.xz`` beside the repository, never copied into it.
"""

from __future__ import annotations

import argparse
import cProfile
import json
import lzma
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

DATA = Path(__file__).resolve().parents[2] / "shared" / "data" / "longmemeval_s_dev.json.xz"
TARGET_MS = 15.0


def haystack(path: Path, count: int) -> list[dict]:
    """``count`` user turns of the first haystack that has as many, as ``store_memories`` items."""
    with lzma.open(path) as f:
        questions = json.loads(f.read())
    for question in questions:
        items = [{"content": turn["content"],
                  "metadata": {"speaker": "user", "date": date, "session": session}}
                 for session, date, turns in zip(question["haystack_session_ids"], question["haystack_dates"],
                                                  question["haystack_sessions"])
                 for turn in turns if turn["role"] == "user" and turn["content"].strip()]
        if len(items) >= count:
            return items[:count]
    raise SystemExit(f"no haystack in {path} has {count} user turns")


def store(items: list[dict], profiler: cProfile.Profile | None = None, warm: bool = True) -> dict[str, float]:
    """Store ``items`` in a fresh agent and wait for their vectors; the ms a turn of each part.

    With ``profiler`` the vectors are computed in this thread (cProfile sees one thread only), the
    background indexer held back meanwhile. ``warm``: the model is loaded before the clock starts."""
    from core.llm.embedding.embedders import load_minilm
    from core.memory.recall import vector_indexer
    from core.memory_manager import MemoryManager

    if warm:
        load_minilm().embed(["warm up"])
    with tempfile.TemporaryDirectory() as home:
        os.environ["AGENTOS_HOME"] = home
        Path(home, "config.yaml").write_text("llm: {backend: offline}\nmemory: {auto_compact: false}\n")
        with MemoryManager("bench-store") as manager:
            manager.cold.store().may_have_rows()  # the table exists before the clock starts
            if profiler:
                vector_indexer.START_DELAY_S = 3600.0
                profiler.enable()
            began, cpu = time.perf_counter(), time.process_time()
            for i in range(0, len(items), 100):
                manager.store_memories(items[i:i + 100])
            stored = time.perf_counter()
            if profiler:
                manager.cold.catch_up()
                profiler.disable()
            elif not manager.cold.background.wait_idle(3600):
                raise SystemExit(f"the vectors were not computed: {manager.cold.background.last_error}")
            done, cpu = time.perf_counter(), time.process_time() - cpu
    per = 1000 / len(items)
    return {"store_ms": (stored - began) * per, "vectors_ms": (done - stored) * per,
            "total_ms": (done - began) * per,
            "cpu_ms": cpu * per}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", type=Path, default=DATA, help=f"the LongMemEval JSON (.xz), default {DATA}")
    parser.add_argument("--turns", type=int, default=240, help="user turns to store (default 240)")
    parser.add_argument("--profile", type=Path, metavar="FILE",
                        help="write a cProfile to FILE (the vectors computed in the main thread)")
    parser.add_argument("--items", type=Path, help=argparse.SUPPRESS)  # the fresh process's part: store these
    args = parser.parse_args(argv)
    if args.items:
        store(json.loads(args.items.read_text(encoding="utf-8")), warm=False)
        return 0
    if not args.data.exists():
        parser.error(f"no data at {args.data}; pass --data PATH")
    items = haystack(args.data, args.turns)
    profiler = cProfile.Profile() if args.profile else None
    figures = store(items, profiler)
    if profiler:
        profiler.dump_stats(args.profile)
    print(f"{len(items)} turns ({sum(len(i['content']) for i in items) / len(items):.0f} characters on "
          f"average), {os.cpu_count()} cores: store calls {figures['store_ms']:.1f} ms/turn, vectors "
          f"{figures['vectors_ms']:.1f} ms/turn, in all {figures['total_ms']:.1f} ms/turn (target <= "
          f"{TARGET_MS:g}); CPU {figures['cpu_ms']:.1f} ms/turn "
          f"({figures['cpu_ms'] / figures['total_ms']:.1f} cores busy); load average "
          f"{os.getloadavg()[0]:.1f}")
    if not profiler:
        fresh = as_a_command(items)
        print("as a command: a fresh process that imports AgentOS, loads the model, stores, waits for every "
              f"vector and exits: {fresh:.1f} ms/turn ({fresh * len(items) / 1000:.1f} s)")
    return 0


def as_a_command(items: list[dict]) -> float:
    """ms a turn of a fresh process that stores ``items`` (read from a JSON file) and exits, timed from
    outside."""
    with tempfile.TemporaryDirectory() as scratch:
        path = Path(scratch, "items.json")
        path.write_text(json.dumps(items), encoding="utf-8")
        began = time.perf_counter()
        subprocess.run([sys.executable, __file__, "--items", str(path)], check=True)
        return (time.perf_counter() - began) * 1000 / len(items)


if __name__ == "__main__":
    sys.exit(main())
