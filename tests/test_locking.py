"""The agent's lock: one holder at a time across threads, processes, forks and filelock users."""

from __future__ import annotations

import gc
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
from filelock import FileLock

from core.errors import LockTimeoutError
from core.durable.locking import AgentLock
from tests.lifetime.held import open_under

HOLDER = """
import sys, time
from pathlib import Path
from filelock import FileLock
lock = FileLock(sys.argv[1], thread_local=False)
lock.acquire()
Path(sys.argv[2]).touch()
time.sleep(60)
"""


def start_holder(tmp_path: Path, lock_file: Path) -> subprocess.Popen:
    """A process that takes ``filelock.FileLock(lock_file)`` and keeps it until killed."""
    ready = tmp_path / "ready"
    proc = subprocess.Popen([sys.executable, "-c", HOLDER, str(lock_file), str(ready)])
    deadline = time.monotonic() + 30
    while not ready.exists():
        assert proc.poll() is None and time.monotonic() < deadline, "the holder did not start"
        time.sleep(0.01)
    return proc


@pytest.mark.slow
def test_a_filelock_holder_excludes_the_agent_until_it_is_killed(tmp_path: Path) -> None:
    lock_file = tmp_path / "memory" / ".lock"
    lock_file.parent.mkdir()
    holder = start_holder(tmp_path, lock_file)
    try:
        with pytest.raises(LockTimeoutError, match="another process"):
            with AgentLock(lock_file, timeout=0.2).hold():
                pass
    finally:
        holder.send_signal(signal.SIGKILL)
        holder.wait()
    entered = False
    with AgentLock(lock_file, timeout=5).hold():  # the OS released the dead holder's lock
        entered = True
    assert entered


def test_the_agent_lock_excludes_filelock_users(tmp_path: Path) -> None:
    lock_file = tmp_path / ".lock"
    with AgentLock(lock_file).hold():
        other = FileLock(str(lock_file), thread_local=False)
        assert not _acquired(other)
    assert _acquired(other)
    other.release()


def _acquired(lock: FileLock) -> bool:
    try:
        lock.acquire(timeout=0.05)
    except TimeoutError:
        return False
    return True


def test_reentry_holds_until_the_outermost_block_ends(tmp_path: Path) -> None:
    lock_file = tmp_path / ".lock"
    lock = AgentLock(lock_file)
    other = FileLock(str(lock_file), thread_local=False)
    with lock.hold():
        with AgentLock(lock_file).hold():  # another AgentLock on the same file shares the holder
            pass
        assert not _acquired(other)
    assert _acquired(other)
    other.release()


def test_threads_take_turns(tmp_path: Path) -> None:
    lock = AgentLock(tmp_path / ".lock")
    inside = []
    overlaps = []

    def work() -> None:
        for _ in range(200):
            with lock.hold():
                inside.append(1)
                if len(inside) > 1:
                    overlaps.append(len(inside))
                inside.pop()

    threads = [threading.Thread(target=work) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)
    assert not overlaps


@pytest.mark.slow
@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs os.fork")
def test_a_forked_child_does_not_share_its_parents_hold(tmp_path: Path) -> None:
    """The child inherits the open lock file; it must open its own, or flock would let it in."""
    lock = AgentLock(tmp_path / ".lock", timeout=0.2)
    with lock.hold():
        pid = os.fork()
        if pid == 0:  # the child: the parent holds the lock, so this must time out
            try:
                with lock.hold():
                    os._exit(1)
            except LockTimeoutError:
                os._exit(0)
            os._exit(2)
        _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0


def test_a_deleted_lock_file_is_recreated_and_locked(tmp_path: Path) -> None:
    """Someone deleting memory/.lock must not leave the agent locking a file nobody else can see."""
    lock_file = tmp_path / ".lock"
    lock = AgentLock(lock_file)
    with lock.hold():
        pass
    lock_file.unlink()
    with lock.hold():
        assert lock_file.exists()
        assert not _acquired(FileLock(str(lock_file), thread_local=False))


@pytest.mark.slow
@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs os.fork")
def test_a_forked_child_leaving_an_inherited_block_keeps_its_parents_lock(tmp_path: Path) -> None:
    lock_file = tmp_path / ".lock"
    with AgentLock(lock_file).hold():
        pid = os.fork()
        if pid:
            os.waitpid(pid, 0)  # the child has left the block and exited
            assert not _acquired(FileLock(str(lock_file), thread_local=False))
    if pid == 0:
        os._exit(0)


def test_a_lock_that_does_not_keep_its_file_open_closes_it_after_each_hold(tmp_path: Path) -> None:
    """Per-conversation locks must not hold a descriptor each for the life of the process."""
    locks = [AgentLock(tmp_path / f"conversation-{i}.lock", keep_open=False) for i in range(50)]
    for lock in locks:
        with lock.hold():
            assert open_under(tmp_path) == [str(lock.lock_file)]
    assert open_under(tmp_path) == []
    with locks[0].hold():  # and it still excludes others while held
        assert not _acquired(FileLock(str(locks[0].lock_file), thread_local=False))


FORKING_HOLDER = """
import os, sys, time
from pathlib import Path
from core.durable.locking import AgentLock

lock = AgentLock(Path(sys.argv[1]))
with lock.hold():  # the lock file is open from here on
    pass
child = os.fork()
if child == 0:  # a worker that never touches the lock, and outlives its parent
    time.sleep(60)
    os._exit(0)
held = lock.hold()
held.__enter__()
print(child, flush=True)
time.sleep(60)
"""


@pytest.mark.slow
@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs os.fork")
def test_a_forked_worker_does_not_keep_a_killed_holders_lock(tmp_path: Path) -> None:
    """A child inherits the open lock file; it must close it, or the flock would outlive its parent."""
    lock_file = tmp_path / ".lock"
    env = dict(os.environ, PYTHONPATH=str(Path(__file__).resolve().parent.parent))
    holder = subprocess.Popen([sys.executable, "-c", FORKING_HOLDER, str(lock_file)], env=env,
                              stdout=subprocess.PIPE, text=True)
    worker = int(holder.stdout.readline())
    try:
        with pytest.raises(LockTimeoutError):
            with AgentLock(lock_file, timeout=0.2).hold():
                pass
        holder.send_signal(signal.SIGKILL)
        holder.wait()
        holder.stdout.close()
        os.kill(worker, 0)  # the worker still runs
        entered = False
        with AgentLock(lock_file, timeout=5).hold():
            entered = True
        assert entered
    finally:
        os.kill(worker, signal.SIGKILL)


def test_a_lock_that_does_not_keep_its_file_open_closes_it_when_it_times_out(tmp_path: Path) -> None:
    lock_file = tmp_path / "conversation-1.lock"
    holder = FileLock(str(lock_file), thread_local=False)
    holder.acquire()
    try:
        with pytest.raises(LockTimeoutError):
            with AgentLock(lock_file, timeout=0.05, keep_open=False).hold():
                pass
        assert open_under(tmp_path) == [str(lock_file)]  # filelock's own descriptor, not the agent lock's
    finally:
        holder.release()
    assert open_under(tmp_path) == []


def test_a_lock_that_keeps_its_file_open_closes_it_once_its_last_user_is_closed(tmp_path: Path) -> None:
    """Two AgentLocks on one file share its descriptor; it stays open while one of them is open."""
    first, second = AgentLock(tmp_path / ".lock"), AgentLock(tmp_path / ".lock")
    with first.hold(), second.hold():  # one process, one holder: re-entry
        pass
    assert open_under(tmp_path) == [str(tmp_path / ".lock")]
    first.close()
    assert open_under(tmp_path) == [str(tmp_path / ".lock")]
    second.close()
    second.close()
    assert open_under(tmp_path) == []
    with first.hold():  # a closed lock still locks, for the hold only
        assert not _acquired(FileLock(str(tmp_path / ".lock"), thread_local=False))
    assert open_under(tmp_path) == []


def test_a_lock_dropped_without_close_closes_its_file(tmp_path: Path) -> None:
    lock = AgentLock(tmp_path / ".lock")
    with lock.hold():
        pass
    del lock
    gc.collect()
    assert open_under(tmp_path) == []


def test_a_lock_closed_while_its_thread_holds_it_closes_the_file_when_the_hold_ends(tmp_path: Path) -> None:
    lock = AgentLock(tmp_path / ".lock")
    with lock.hold():
        lock.close()
        assert not _acquired(FileLock(str(tmp_path / ".lock"), thread_local=False))  # still held
    assert open_under(tmp_path) == []
    assert _acquired(FileLock(str(tmp_path / ".lock"), thread_local=False))


TAKING_TURNS = """
import sys, time
from pathlib import Path
from core.durable.locking import AgentLock

lock = AgentLock(Path(sys.argv[1]))
with lock.hold():
    print("holding", flush=True)
    time.sleep(0.05)
for _ in range(int(sys.argv[2])):  # released and taken again at once: a waiter polling for it rarely wins
    with lock.hold():
        time.sleep(0.05)
"""


def test_a_waiter_waits_while_other_processes_take_their_turns(tmp_path: Path) -> None:
    """A process holding the lock 60 times for 50 ms keeps it 3 s; a waiter whose timeout is 1 s waits it out:
    the timeout bounds one holder's hold, not the wait behind a queue (which grows with the machine's
    load)."""
    lock_file = tmp_path / ".lock"
    env = dict(os.environ, PYTHONPATH=str(Path(__file__).resolve().parent.parent))
    turns = subprocess.Popen([sys.executable, "-c", TAKING_TURNS, str(lock_file), "60"], env=env,
                             stdout=subprocess.PIPE, text=True)
    try:
        assert turns.stdout.readline().strip() == "holding"
        with AgentLock(lock_file, timeout=1.0).hold():
            pass
    finally:
        turns.kill()
        turns.wait()
        turns.stdout.close()


def test_a_thread_waits_while_other_threads_take_their_turns(tmp_path: Path) -> None:
    """The same within one process: threads queue on the lock as long as each holder lets go in time."""
    lock = AgentLock(tmp_path / ".lock")
    holding, done = threading.Event(), threading.Event()

    def take_turns() -> None:
        for turn in range(60):
            with lock.hold():
                holding.set()
                time.sleep(0.05)
        done.set()

    worker = threading.Thread(target=take_turns)
    worker.start()
    try:
        assert holding.wait(30)
        with AgentLock(tmp_path / ".lock", timeout=1.0).hold():
            pass
    finally:
        worker.join(60)
    assert done.is_set()


def test_one_holder_that_keeps_the_lock_times_the_waiter_out(tmp_path: Path) -> None:
    """A hold longer than the timeout is what fails a waiter, with a message that says so."""
    lock = AgentLock(tmp_path / ".lock")
    holding, release = threading.Event(), threading.Event()

    def hold() -> None:
        with lock.hold():
            holding.set()
            release.wait(60)

    holder = threading.Thread(target=hold)
    holder.start()
    try:
        assert holding.wait(30)
        with pytest.raises(LockTimeoutError, match="another thread of this process has held it for 0.2s"):
            with AgentLock(tmp_path / ".lock", timeout=0.2).hold():
                pass
    finally:
        release.set()
        holder.join(60)


def test_a_thread_waits_while_the_thread_before_it_queues_behind_other_processes(tmp_path: Path) -> None:
    """A thread waiting for one that itself waits for the flock (other processes taking their turns) sees
    those turns as progress too, and does not time out while the queue moves."""
    lock_file = tmp_path / ".lock"
    env = dict(os.environ, PYTHONPATH=str(Path(__file__).resolve().parent.parent))
    turns = subprocess.Popen([sys.executable, "-c", TAKING_TURNS, str(lock_file), "60"], env=env,
                             stdout=subprocess.PIPE, text=True)
    entered: list[str] = []

    def first() -> None:
        with AgentLock(lock_file, timeout=1.0).hold():
            entered.append("first")

    try:
        assert turns.stdout.readline().strip() == "holding"
        before = threading.Thread(target=first)
        before.start()
        # the first thread holds the thread lock, waiting for the flock
        while not _queued_in_this_process(lock_file):
            assert before.is_alive(), "the first thread did not wait for the other process"
            time.sleep(0.01)
        with AgentLock(lock_file, timeout=1.0).hold():
            entered.append("second")
        before.join(60)
    finally:
        turns.kill()
        turns.wait()
        turns.stdout.close()
    assert entered == ["first", "second"]


def _queued_in_this_process(lock_file: Path) -> bool:
    try:
        with AgentLock(lock_file, timeout=0).hold():
            return False
    except LockTimeoutError as exc:
        return "another thread of this process" in str(exc)
