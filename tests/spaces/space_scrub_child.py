"""Child process of the space scrub crash test: the researcher saves as a secret a key it published, and the
process SIGKILLs itself at the N-th fault point its main thread reaches from the start of the space's scrub
on.

    python space_scrub_child.py N VALUE

The points are the product's (:mod:`core.durable.fault_points`: every file replace, LOG.md append and
commit), counted from the space scrub's first step to the end of the save (the owner's own bookkeeping after
it
included: its queue and its LOG.md record), not in the agent's close. N past the last one lets the save
    finish; the
number of points reached is printed then.
"""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

import core.memory.spaces.scrub as space_scrub  # noqa: E402
from core.durable import fault_points  # noqa: E402
from core.memory_manager import MemoryManager  # noqa: E402

kill_at, value = int(sys.argv[1]), sys.argv[2]
scrub = space_scrub.scrub


def armed(*args, **kwargs):
    fault_points.arm("*", kill_at, thread="main")  # counting from here
    return scrub(*args, **kwargs)


space_scrub.scrub = armed
with MemoryManager("researcher") as manager:
    manager.save_fact("deploy_key", value, "secret")
    reached = fault_points.reached().get("*", 0)
    fault_points.arm(None)  # what close() does depends on the background indexer's timing: not counted
print(reached, flush=True)
