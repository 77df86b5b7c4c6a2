"""Child process of the crash test: append and compact LOG.md in a loop until SIGKILLed."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from core.memory_manager import MemoryManager  # noqa: E402

manager = MemoryManager("finn")
manager.cold.store().table  # open LanceDB before "ready", so kills land in the protocol, not in imports
print("ready", flush=True)
step = 0
while True:
    for _ in range(5):
        step += 1
        manager.append_log("TOOL_USE", f"crash loop step {step}: fetched quotes for ticker T{step % 7}")
    manager.compact_log()
