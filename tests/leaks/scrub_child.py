"""Child process of the scrub crash test: save a secret, SIGKILLing itself at the N-th durable step of the
scrub.

    python scrub_child.py N VALUE

The steps counted are every ``os.replace``, ``os.fsync`` and memory.db commit of the main thread (the scrub's)
after the agent is open;
N past the last one lets the scrub finish. The number of steps taken is printed at the end, then the
number of writes to the cold store's Lance table that the fault point in ``AGENTOS_FAULT_POINT`` counted
(its thread's; unset, none are counted; a point it reaches kills the child there).
"""

import os
import signal
import sys
import threading
from contextlib import contextmanager
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

import core.memory.storage.sqlite as db_module  # noqa: E402
from core.durable import fault_points  # noqa: E402
import core.memory.upkeep.scrub_tables as scrub_tables  # noqa: E402
from core.memory_manager import MemoryManager  # noqa: E402

kill_at, value = int(sys.argv[1]), sys.argv[2]
steps = 0


def step() -> None:
    global steps
    if threading.current_thread() is not threading.main_thread():
        return  # the scrub's steps: background indexing's own writes come and go with timing
    steps += 1
    if steps == kill_at:
        os.kill(os.getpid(), signal.SIGKILL)


def counted(function):
    def wrapper(*args, **kwargs):
        step()
        return function(*args, **kwargs)
    return wrapper


original_transaction = db_module.transaction


@contextmanager
def killed_before_commit(conn, *args, **kwargs):
    with original_transaction(conn, *args, **kwargs) as inside:
        yield inside
        step()


manager = MemoryManager("finn")
os.replace, os.fsync = counted(os.replace), counted(os.fsync)
db_module.transaction = scrub_tables.transaction = killed_before_commit
manager.save_fact("card_number", value, "secret")
manager.close()
print(steps, fault_points.reached().get("cold.written", 0), flush=True)
