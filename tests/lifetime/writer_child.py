"""Child process of the lifetime tests: store memories into agent ``finn`` until told to stop, then wait for
the background indexer and report what became of it as one JSON line.

    python writer_child.py STOP_FILE

It says "writing" once its first memories are stored; it stores one memory every 200 ms while
``STOP_FILE`` does not exist, then five more (so that its indexer works after whatever happened
meanwhile), waits for every vector and prints ``{"stored", "pending", "idle", "thread_errors", "missing"}``:
``thread_errors`` are the exceptions that ended one of its threads, ``missing`` the ids of stored memories
that the cold store has no row of.
"""

import json
import sys
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from core.memory_manager import MemoryManager  # noqa: E402

errors: list[str] = []
threading.excepthook = lambda hook: errors.append(f"{hook.thread.name}: {hook.exc_type.__name__}: "
                                                  f"{hook.exc_value}")
stop = Path(sys.argv[1])
manager = MemoryManager("finn")
ids = []


def store(count: int) -> None:
    for _ in range(count):
        ids.append(manager.store_memory(f"note {len(ids)}: the harbour crane moved {len(ids)} containers"))
        time.sleep(0.2)


store(5)
print("writing", flush=True)
while not stop.exists():
    store(1)
store(5)
idle = manager.cold.background.wait_idle(300)
held = set(manager.cold.store().ids())
print(json.dumps({"stored": len(ids), "pending": manager.cold.docs.pending_count(), "idle": idle,
                  "thread_errors": errors, "missing": [i for i in ids if i not in held]}), flush=True)
manager.close()
