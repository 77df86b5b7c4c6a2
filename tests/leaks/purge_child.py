"""Child process of the purge crash test: purge the forgotten values, SIGKILLed at a named fault point.

    python purge_child.py core.memory.upkeep.scrub._install
"""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from faults import kill_at  # noqa: E402
from core.memory_manager import MemoryManager  # noqa: E402

manager = MemoryManager("finn")
kill_at(sys.argv[1])
manager.purge_forgotten()
manager.close()
print("purged", flush=True)
