"""Child process of the lifetime tests: with every descriptor but ``ROOM`` in use, call each public method
once and report how it ended, as JSON lines ``{"room", "call", "outcome", "type", "message"}``.

    python descriptors_child.py MAX_ROOM

Agent ``finn`` must exist. Before the descriptors run out the child uses every tier once, so LanceDB's and
SQLite's own start-up is behind it (what a server that has served for a while has done).
"""

import json
import os
import sys
import threading
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from core.memory_manager import MemoryManager  # noqa: E402

thread_errors: list[str] = []
threading.excepthook = lambda hook: thread_errors.append(f"{hook.thread.name}: {hook.exc_type.__name__}")

with MemoryManager("finn") as warm:
    warm.store_memory("the harbour crane moved containers")
    warm.recall_memory("harbour crane")

CALLS = {
    "open": lambda m: None,
    "append_log": lambda m: m.append_log("THOUGHT", "a thought"),
    "save_fact": lambda m: m.save_fact("editor", "helix"),
    "store_memory": lambda m: m.store_memory("a note about cranes"),
    "recall_memory": lambda m: m.recall_memory("cranes"),
    "update_now": lambda m: m.update_now("working"),
}


def fill(room: int) -> list[int]:
    """Open /dev/null until the process has no descriptor left, then close ``room`` of them."""
    taken = []
    try:
        while True:
            taken.append(os.open(os.devnull, os.O_RDONLY))
    except OSError:
        pass
    for fd in taken[:room]:
        os.close(fd)
    return taken[room:]


for room in range(int(sys.argv[1]) + 1):
    for name, call in CALLS.items():
        held = fill(room)
        try:
            with MemoryManager("finn") as manager:
                call(manager)
            outcome, kind, message = "done", "", ""
        except Exception as exc:  # noqa: BLE001 - what escapes is what the test looks at
            outcome, kind, message = "raised", f"{type(exc).__module__}.{type(exc).__name__}", str(exc)
            if isinstance(exc, __import__("core.errors").errors.AgentOSError):
                kind = "|".join(c.__name__ for c in type(exc).__mro__)
        finally:
            for fd in held:
                os.close(fd)
        print(json.dumps({"room": room, "call": name, "outcome": outcome, "type": kind, "message": message}),
              flush=True)
print(json.dumps({"thread_errors": thread_errors}), flush=True)
