"""One agent opened and closed again and again in one process, as a server serving it for weeks does: what
the process holds, and what each search reads, stays what it was once warm.

Each open writes a few memories. The cold store's small Lance fragments must be merged (and its old versions
deleted) every ``cold.optimize_every`` commits whichever open made them: counted by each open's own writes,
they never were, every search read one fragment more each time, and LanceDB's I/O pool grew a native thread
every dozen opens.
"""

from __future__ import annotations

import gc
import json
import os
import subprocess
import sys
import weakref
from pathlib import Path

import pytest

from core.memory_manager import MemoryManager
from tests.conftest import write_home_config

ROOT = Path(__file__).resolve().parents[2]
REOPENED = Path(__file__).with_name("reopened_agent_child.py")
OPTIMIZE_EVERY = 4


def fragments(home: Path, name: str) -> int:
    """How many fragments (data files written by separate commits) the agent's cold store has."""
    import lance

    return len(lance.dataset(home / name / "memory" / "lancedb" / "memories.lance").get_fragments())


def test_an_agent_reopened_for_each_write_has_its_cold_store_compacted(agents_home: Path) -> None:
    """Every open writes one memory (one commit to the table) and searches: the fragments are merged every
    ``optimize_every`` commits, so a search reads a few files, not one per open ever made."""
    write_home_config(agents_home, {"cold": {"embedder": "fake", "optimize_every": OPTIMIZE_EVERY}})
    opens = 6 * OPTIMIZE_EVERY
    for index in range(opens):
        with MemoryManager("ann") as manager:
            manager.store_memory(f"note {index} about the fly.io deploy")
            assert manager.recall_memory("fly.io deploy", n_results=3)
    # Merged into one at the last optimize, and at most OPTIMIZE_EVERY commits' fragments since.
    assert fragments(agents_home, "ann") <= OPTIMIZE_EVERY + 1
    with MemoryManager("ann") as manager:
        assert len(manager.recall_memory("fly.io deploy", n_results=opens)) == opens


def test_nothing_of_a_closed_agent_outlives_it(agents_home: Path) -> None:
    """The manager, its cold tier, its cold store and the store's Lance handle are all let go at close()."""
    def served() -> list[weakref.ref]:
        with MemoryManager("ann") as manager:
            manager.store_memory("the deploy target is fly.io")
            assert manager.recall_memory("deploy target", n_results=3)
            store = manager.cold.store()
            return [weakref.ref(manager), weakref.ref(manager.cold), weakref.ref(store),
                    weakref.ref(store.table)]

    held = [served() for _ in range(3)]
    gc.collect()
    assert [[ref() is None for ref in refs] for refs in held] == [[True] * 4] * 3


@pytest.mark.slow
@pytest.mark.timeout(3300)  # the child's own bound (3,000 s) comes first
def test_a_process_reopening_one_agent_holds_no_more_after_hundreds_of_opens(agents_home: Path) -> None:
    """The cycle of a server (log, fact, note, a space's post, recall, a compaction every 25 opens, another
    agent read and written through the shared manager) run 240 times in a process of its own: after the last
    open its descriptors and Python threads are those after the first 60, its cold store has been compacted,
    and once LanceDB's I/O pool has let its idle threads go its native threads are those after the first 60
    (the pool grows with the reads a search makes at once, which grew with the fragments)."""
    served = subprocess.run([sys.executable, str(REOPENED), "240", "60"], cwd=ROOT, capture_output=True,
                            text=True, timeout=3000, env=dict(os.environ, PYTHONPATH=str(ROOT)))
    assert served.returncode == 0, served.stderr[-4000:]
    report = json.loads(served.stdout.strip().splitlines()[-1])
    warm, end = report["warm"], report["end"]
    assert report["thread_errors"] == []
    assert end["fds"] <= warm["fds"] + 2, "descriptors grew with the opens"
    assert end["threads"] == warm["threads"], end["thread_names"]
    assert end["fragments"] <= report["optimize_every"] + 1, "the cold store was never compacted"
    assert end["settled_native_threads"] <= warm["settled_native_threads"] + 2, (warm, end)
