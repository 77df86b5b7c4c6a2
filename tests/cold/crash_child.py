"""Child process of the crash test: append and compact LOG.md in a loop until it dies at a fault point.

    python crash_child.py POINT N

Once the agent is open the child arms the fault point ``POINT`` for its ``N``-th time (see
:mod:`core.durable.fault_points`), says "ready", and appends and compacts until it is reached.
"""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from core.durable import fault_points  # noqa: E402
from core.memory_manager import MemoryManager  # noqa: E402

manager = MemoryManager("finn")
manager.cold.store().table  # open LanceDB before arming, so kills land in the protocol, not in the opening
fault_points.arm(sys.argv[1], int(sys.argv[2]))
print("ready", flush=True)
step = 0
while True:
    for _ in range(5):
        step += 1
        manager.append_log("TOOL_USE", f"crash loop step {step}: fetched quotes for ticker T{step % 7}")
    manager.compact_log()
