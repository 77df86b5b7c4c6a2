"""Benchmark what searching a memory space adds to an agent's recall.

Builds a ``writer`` agent with --own memories of its own and a ``research`` space of --published
memories, then times ``recall_memory`` (p50 of --repeat calls, after one warm-up) with ``spaces=[]`` (its own
memory only) and with the default ``spaces=None`` (its own memory and the space), and prints both and what
the space added. Embeds with the real model unless --fake-embedder. Runs in a temporary AGENTOS_HOME.
Imports the ``core`` of the working folder, so the same script measures any checkout: run it from each.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--own", type=int, default=200, help="memories of the agent's own (default 200)")
    parser.add_argument("--published", type=int, default=500, help="memories in the space (default 500)")
    parser.add_argument("--repeat", type=int, default=50, help="recalls timed in each mode (default 50)")
    parser.add_argument("--fake-embedder", action="store_true", help="the hashed test embedder, not MiniLM")
    args = parser.parse_args()
    home = Path(tempfile.mkdtemp(prefix="agentos-bench-spaces-")) / "agents"
    home.mkdir()
    if args.fake_embedder:
        (home / "config.yaml").write_text("cold:\n  embedder: fake\n", encoding="utf-8")
    os.environ["AGENTOS_HOME"] = str(home)
    sys.path.insert(0, os.getcwd())
    from core.memory.spaces import Space
    from core.memory_manager import MemoryManager

    with MemoryManager("researcher") as researcher, MemoryManager("writer") as writer:
        Space.create("research", {"researcher": "read-write", "writer": "read-only"})
        for n in range(args.published):
            researcher.publish("research",
                               f"finding {n}: kelp forest {n % 37} shelters otters and urchins {n % 11}")
        writer.store_memories([f"draft note {n}: the article's section {n % 13} on kelp"
                               for n in range(args.own)])
        figures = timed(writer, args.repeat)
    for clock, (own, both) in figures.items():
        print(
            f"{clock}: recall of its own memory p50 {statistics.median(own):.1f} ms, with the space "
            f"{statistics.median(both):.1f} ms; "
            f"the space added {statistics.median(b - o for o, b in zip(own, both)):.1f} ms"
        )
    return 0


def timed(writer, repeat: int) -> dict[str, tuple[list[float], list[float]]]:
    """Milliseconds of each recall, own memory only and with the space, taken in turns (a load that comes and
    goes touches both); by the wall clock and by this process's CPU time (which another process's load
    does not lengthen)."""
    for spaces in ([], None):  # warm-up: the model, the indexes, the space's vectors
        writer.recall_memory("which kelp forest shelters otters", spaces=spaces)
    figures: dict[str, tuple[list[float], list[float]]] = {"wall": ([], []), "cpu": ([], [])}
    for n in range(repeat):
        for column, spaces in enumerate(([], None)):
            wall, cpu = time.perf_counter(), time.process_time()
            writer.recall_memory(f"which kelp forest {n % 37} shelters otters", spaces=spaces)
            figures["wall"][column].append((time.perf_counter() - wall) * 1000)
            figures["cpu"][column].append((time.process_time() - cpu) * 1000)
    return figures


if __name__ == "__main__":
    sys.exit(main())
