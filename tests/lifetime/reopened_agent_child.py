"""Child process of the lifetime tests: open and close agent ``ann`` ``COUNT`` times, as a server does, and
report what the process held after the first ``WARM`` opens and at the end, as one JSON line.

    python reopened_agent_child.py COUNT WARM

Each open logs, saves a fact, stores a note, posts to a space, recalls, compacts LOG.md every 25 opens, and
reads and writes agent ``bob`` the ways a server does (a reader, the shared manager). A process of its own:
its descriptors and threads are its own, not a test worker's.
"""

import gc
import json
import sys
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from core.config import load_config  # noqa: E402
from core.memory import (  # noqa: E402
    READ_WRITE, MemoryManager, Space, close_shared, initialize_agent_memory, open_for_reading, shared_manager,
    shared_reader,
)
from core.paths import agents_home  # noqa: E402
from tests.lifetime.held import descriptors, native_threads, rss_kib  # noqa: E402

errors: list[str] = []
threading.excepthook = lambda hook: errors.append(f"{hook.thread.name}: {hook.exc_type.__name__}: "
                                                  f"{hook.exc_value}")


def serve(first: int, last: int) -> None:
    for index in range(first, last):
        with MemoryManager("ann") as manager:
            manager.append_log("THOUGHT", f"step {index} of the deploy")
            manager.save_fact("counter", str(index))
            manager.store_memory(f"note {index} about fly.io")
            manager.publish("team", f"shared {index}")
            assert manager.recall_memory("deploy fly.io", n_results=3)
            if index % 25 == 0:
                manager.compact_log(summary=f"work up to {index}")
        with open_for_reading("bob", recall=True) as reader:
            reader.recall_memory("shared", n_results=3)
        shared_manager("bob").append_log("THOUGHT", f"request {index}")
        shared_reader("bob")
        close_shared("bob")


def settled_native_threads() -> int:
    """The process's native threads once LanceDB's I/O pool has let its idle threads go: it starts one for
    each read of a burst that finds none free and ends it after 10 s without work, so the count after a burst
    depends on how the reads overlapped (on the load), the settled one does not."""
    last, since = native_threads(), time.monotonic()
    deadline = since + IDLE_WAIT_S
    while time.monotonic() < deadline and time.monotonic() - since < POOL_KEEP_ALIVE_S + 5:
        time.sleep(0.5)
        if (now := native_threads()) != last:
            last, since = now, time.monotonic()
    return last


POOL_KEEP_ALIVE_S = 10
"""How long tokio's blocking pool (LanceDB's) keeps an idle thread."""
IDLE_WAIT_S = 120


def held() -> dict:
    import lance

    gc.collect()
    table = agents_home() / "ann" / "memory" / "lancedb" / "memories.lance"
    return {"fds": descriptors(), "native_threads": native_threads(), "threads": threading.active_count(),
            "rss_kib": rss_kib(), "thread_names": sorted(t.name for t in threading.enumerate()),
            "fragments": len(lance.dataset(table).get_fragments()),
            "settled_native_threads": settled_native_threads()}


count, warm = int(sys.argv[1]), int(sys.argv[2])
initialize_agent_memory("ann")
initialize_agent_memory("bob")
Space.create("team", {"ann": READ_WRITE, "bob": READ_WRITE}).close()
serve(0, warm)  # warm-up: imports, LanceDB's and SQLite's own pools, the space kept open for recall
after_warm = held()
serve(warm, count)
print(json.dumps({"warm": after_warm, "end": held(), "thread_errors": errors,
                  "optimize_every": load_config().cold.optimize_every}))
