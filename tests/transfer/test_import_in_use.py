"""``import --force`` and the processes that have the agent open: refused while one has, never acknowledged
and lost; and an import killed at any step leaves the old agent or the new one whole."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from core.commands import main
from core.errors import AgentInUseError
from core.durable.in_use import IN_USE, replacing
from core.memory_manager import MemoryManager
from core.transfer import import_agent
from core.transfer.importer import _exchange
from tests.inprocess import run_main
from tests.transfer.craft import exported, tree

ROOT = Path(__file__).resolve().parents[2]

HOLDER = """
import sys
from core.memory_manager import MemoryManager

manager = MemoryManager("finn")
manager.cold.catch_up()  # the background indexer's work at open is done before the files are compared
assert manager.cold.background.wait_idle(60)
manager.db.checkpoint()
print("open", flush=True)
sys.stdin.readline()
manager.save_fact("api_key", "sk-live-4411-abcd", category="secret")
print("saved", flush=True)
sys.stdin.readline()
manager.close()
"""

IMPORTER = """
import sys
from core.transfer import import_agent
from core.transfer.importer import _exchange

import_agent(sys.argv[1], force=True)
print("imported", flush=True)
"""


def _child(code: str, home: Path, *args: str, point: str = "") -> subprocess.Popen:
    env = dict(os.environ, AGENTOS_HOME=str(home), PYTHONPATH=str(ROOT), AGENTOS_FAULT_POINT=point)
    return subprocess.Popen([sys.executable, "-c", code, *args], env=env, stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def test_force_over_an_agent_open_in_another_process_is_refused(agents_home, tmp_path):
    """While a process has the agent open, import --force changes nothing and names the process; that
    process's later writes are kept. Once it has closed, the import replaces the agent."""
    archive = exported(agents_home, tmp_path)
    holder = _child(HOLDER, agents_home)
    try:
        assert holder.stdout.readline() == "open\n", holder.stderr.read()
        before = tree(agents_home)
        done = run_main(main, ["import", str(archive), "--force"])
        assert done.returncode == 5 and done.stderr.count("\n") == 1, done.stderr
        assert f"process {holder.pid}" in done.stderr and "nothing was changed" in done.stderr
        assert tree(agents_home) == before
        holder.stdin.write("save\n")
        holder.stdin.flush()
        assert holder.stdout.readline() == "saved\n", holder.stderr.read()
        holder.stdin.write("close\n")
        holder.stdin.flush()
        assert holder.wait(timeout=120) == 0
    finally:
        holder.kill()
    with MemoryManager("finn") as finn:
        assert finn.get_fact("api_key") == "sk-live-4411-abcd"  # acknowledged, and kept
    import_agent(archive, force=True)
    with MemoryManager("finn") as finn:
        assert finn.get_fact("api_key") is None and finn.get_fact("city") == "Porto"


def test_force_over_an_agent_open_in_this_process_is_refused(agents_home, tmp_path):
    """A MemoryManager of this process left open counts too: the import says to close it."""
    archive = exported(agents_home, tmp_path)
    finn = MemoryManager("finn")
    try:
        with pytest.raises(AgentInUseError, match="open in this process"):
            import_agent(archive, force=True)
        finn.save_fact("later", "kept")
    finally:
        finn.close()
    with MemoryManager("finn") as again:
        assert again.get_fact("later") == "kept"


def test_an_agent_opened_while_it_is_replaced_opens_the_new_one(agents_home, tmp_path):
    """An opener that arrives while the folder is being replaced waits, then opens the folder now in place
    (the lock file it waited on went away with the old folder)."""
    archive = exported(agents_home, tmp_path)
    old, new = agents_home / "finn", agents_home / ".new-finn"
    import_agent(archive, as_name="finn2")
    (agents_home / "finn2").rename(new)
    with MemoryManager("finn") as finn:
        finn.save_fact("city", "Lisbon")
    opened: list[MemoryManager] = []
    with replacing(old / "memory" / IN_USE, "agent 'finn'"):
        opener = threading.Thread(target=lambda: opened.append(MemoryManager("finn")))
        opener.start()
        assert _exchange(new, old)  # as the import swaps them: in one step
    opener.join(timeout=120)
    (manager,) = opened
    try:
        assert manager.get_fact("city") == "Porto"
        held = os.fstat(manager.tiers.in_use._fd)
        assert (held.st_dev, held.st_ino) == (os.stat(old / "memory" / IN_USE).st_dev,
                                              os.stat(old / "memory" / IN_USE).st_ino)
    finally:
        manager.close()


@pytest.mark.parametrize("point, replaced", [("import.swap", False), ("import.swapped", True),
                                             ("db.commit@3", False)])
def test_an_import_killed_at_any_step_leaves_one_agent_whole(agents_home, tmp_path, point, replaced):
    """SIGKILL before the swap leaves the old agent, after it the new one; either opens whole, and the next
    import works and deletes what the killed one left (its staging folder, which may hold the agent it
    replaced)."""
    archive = exported(agents_home, tmp_path)
    with MemoryManager("finn") as finn:
        finn.save_fact("city", "Lisbon")
    killed = _child(IMPORTER, agents_home, str(archive), point=point)
    out, err = killed.communicate(timeout=300)
    assert killed.returncode == -signal.SIGKILL, err[-2000:]
    with MemoryManager("finn") as finn:
        assert finn.get_fact("city") == ("Porto" if replaced else "Lisbon")
        assert finn.get_fact("favourite_colour") == "teal"
        assert finn.recall_memory("who gets the quarterly report", 1)
    assert list(agents_home.glob(".import-*"))
    import_agent(archive, force=True)
    with MemoryManager("finn") as finn:
        assert finn.get_fact("city") == "Porto"
    assert not list(agents_home.glob(".import*"))
