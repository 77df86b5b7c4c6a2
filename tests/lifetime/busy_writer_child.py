"""Child process of tests/test_reader.py: write agent ``finn``'s memory as fast as it can until told to stop.

    python busy_writer_child.py STOP_FILE

Each step ``i`` (from 1) sets NOW.md's objective to ``step i`` (one NOW version a step), logs a THOUGHT and
saves the fact ``counter`` = i. After its first step it prints
``writing <NOW version before the first step>``; it stops after the step during which ``STOP_FILE`` appeared
(at least 20 steps).
"""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from core.memory_manager import MemoryManager  # noqa: E402

stop = Path(sys.argv[1])
with MemoryManager("finn") as manager:
    base = manager.now_state().version
    step = 0
    while step < 20 or not stop.exists():
        step += 1
        manager.update_now(f"working on step {step}", objective=f"step {step}")
        manager.append_log("THOUGHT", f"thought of step {step}")
        manager.save_fact("counter", str(step))
        if step == 1:
            print(f"writing {base}", flush=True)
