"""Child process of the lifetime tests: open and close ``COUNT`` agents one after the other, as a server does,
and report what the process held after the first ``WARM`` and at the end, as one JSON line.

    python many_agents_child.py COUNT WARM

Every tenth agent writes every tier and recalls (its cold store and indexer thread); the others append and
save a fact. A process of its own: its descriptors and threads are its own, not a test worker's.
"""

import gc
import json
import sys
import threading
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from core.memory_manager import MemoryManager  # noqa: E402
from core.paths import agents_home  # noqa: E402
from tests.lifetime.held import descriptors, native_threads, open_under, rss_kib  # noqa: E402

errors: list[str] = []
threading.excepthook = lambda hook: errors.append(f"{hook.thread.name}: {hook.exc_type.__name__}: "
                                                  f"{hook.exc_value}")


def serve(first: int, last: int) -> None:
    for index in range(first, last):
        with MemoryManager(f"a{index}") as manager:
            if index % 10 == 0:  # every tier, the cold store and its indexer thread
                manager.update_now("Serving a request", objective="answer")
                manager.append_log("THOUGHT", "the user wants a summary")
                manager.save_fact("editor", "helix")
                manager.store_memory("the deploy target is fly.io")
                assert manager.recall_memory("deploy target", n_results=3)
            else:
                manager.append_log("THOUGHT", f"request {index}")
                manager.save_fact("seen", str(index))


def held() -> dict:
    gc.collect()
    return {"fds": descriptors(), "native_threads": native_threads(), "threads": threading.active_count(),
            "rss_kib": rss_kib(), "thread_names": sorted(t.name for t in threading.enumerate())}


count, warm = int(sys.argv[1]), int(sys.argv[2])
serve(0, warm)  # warm-up: imports, LanceDB's and SQLite's own pools, the embedder
after_warm = held()
serve(warm, count)
print(json.dumps({"warm": after_warm, "end": held(), "open_under_home": open_under(agents_home()),
                  "thread_errors": errors}))
