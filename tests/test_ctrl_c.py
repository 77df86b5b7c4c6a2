"""Ctrl-C reaches the main thread of an interactive session, whichever thread the kernel gave it to."""

from __future__ import annotations

import os
import select
import signal
import threading
import time
from pathlib import Path

import pytest

from core.terminal import ctrl_c


def test_a_ctrl_c_taken_by_another_thread_wakes_the_main_thread_waiting_in_c():
    """SIGINT delivered to a worker thread still interrupts the main thread's wait in C, as at a readline
    prompt (poll(), which works whatever the descriptor's number: select() refuses one above 1023)."""
    before = signal.getsignal(signal.SIGINT)  # Python's default, or SIG_IGN where the test runner set it
    read_end, write_end = os.pipe()
    ready, done = threading.Event(), threading.Event()

    def worker() -> None:  # a thread that does not block SIGINT, like a pool thread of a library's
        ready.set()
        done.wait(60)

    thread = threading.Thread(target=worker, daemon=True)
    thread.start()
    ready.wait(10)
    try:
        with ctrl_c.forwarded():
            poller = select.poll()
            poller.register(read_end, select.POLLIN)
            with pytest.raises(KeyboardInterrupt):
                # Sent from within the block: on a busy machine the signal may be handled before the wait
                # begins (the main thread runs Python then), which must land here too, never outside.
                threading.Timer(0.1, signal.pthread_kill, (thread.ident, signal.SIGINT)).start()
                poller.poll(60_000)  # a hang guard: the test fails if this waits it out
    finally:
        done.set()
        os.close(read_end)
        os.close(write_end)
    assert signal.getsignal(signal.SIGINT) is before


def test_a_ctrl_c_the_main_thread_takes_is_handled_once():
    """A SIGINT the main thread takes itself raises one KeyboardInterrupt, and nothing is forwarded after
    it."""
    with ctrl_c.forwarded():
        with pytest.raises(KeyboardInterrupt):
            signal.raise_signal(signal.SIGINT)
        threading.Event().wait(ctrl_c.GRACE_S * 3)  # a second, forwarded signal would raise here



def _reading(thread_id: int, fd: int) -> bool:
    """True while the thread (its native id) is in a system call on ``fd`` (Linux: /proc/.../syscall)."""
    fields = Path(f"/proc/self/task/{thread_id}/syscall").read_text().split()
    return len(fields) > 1 and fields[1] == hex(fd)


def test_a_ctrl_c_handled_before_the_watcher_wakes_the_main_thread_is_not_a_second_one(monkeypatch):
    """The watcher gives up waiting for the handler and wakes the main thread just as that thread handles the
    SIGINT on its own (a busy machine): one KeyboardInterrupt, never two (two leave the interactive
    session)."""
    main = threading.get_native_id()
    if not Path(f"/proc/self/task/{main}/syscall").is_file():
        pytest.skip("needs /proc/<pid>/task/<tid>/syscall to see the main thread wait")
    read_end, write_end = os.pipe()
    handled, woken = threading.Event(), threading.Event()
    real_kill = signal.pthread_kill

    def late_wake(thread_id: int, signum: int) -> None:  # the watcher waking the main thread
        os.write(write_end, b"x")  # the main thread's read returns: it handles the Ctrl-C itself...
        handled.wait(60)
        real_kill(thread_id, signum)  # ...before the wake lands
        woken.set()

    def ctrl_c_taken_here() -> None:  # a thread that does not block SIGINT, like a pool thread of a library's
        deadline = time.monotonic() + 60
        while not _reading(main, read_end) and time.monotonic() < deadline:
            time.sleep(0.001)
        real_kill(threading.get_ident(), signal.SIGINT)  # the main thread cannot handle it while it reads

    monkeypatch.setattr(signal, "pthread_kill", late_wake)
    guard = threading.Timer(60, os.write, (write_end, b"x"))  # a hang guard: the read ends at the latest then
    guard.start()
    second = False
    try:
        with ctrl_c.forwarded():
            with pytest.raises(KeyboardInterrupt):
                threading.Thread(target=ctrl_c_taken_here, daemon=True).start()
                os.read(read_end, 1)
            try:
                handled.set()
                assert woken.wait(60)
                for _ in range(3):  # Python code runs: a second KeyboardInterrupt would be raised here
                    threading.Event().wait(0.01)
            except KeyboardInterrupt:
                second = True
    finally:
        guard.cancel()
        os.close(read_end)
        os.close(write_end)
    assert not second, "one Ctrl-C raised a second KeyboardInterrupt"


@pytest.fixture
def high_descriptors():
    """Two pipes whose ends are numbered above 1023 (where select() gives up), as in a process that has
    served long or a test worker that has run many tests; closed afterwards."""
    import resource

    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if hard != resource.RLIM_INFINITY and hard < 1100:
        pytest.skip(f"the hard limit of open files is {hard}")
    resource.setrlimit(resource.RLIMIT_NOFILE, (max(soft, 1100), hard))
    numbers = []
    try:
        for number, fd in zip((1040, 1041, 1042, 1043), (*os.pipe(), *os.pipe())):
            os.dup2(fd, number)
            os.close(fd)
            numbers.append(number)
        yield numbers
    finally:
        for number in numbers:
            os.close(number)
        resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))


def test_the_mcp_servers_stdin_reads_and_wakes_on_descriptors_above_1023(high_descriptors):
    from core.mcp_server.stdio import InterruptibleInput

    data_read, data_write, wake_read, wake_write = high_descriptors
    reader = InterruptibleInput(data_read, wake_read)
    os.write(data_write, b"{}\n")
    buffer = bytearray(16)
    assert reader.readinto(memoryview(buffer)) == 3 and bytes(buffer[:3]) == b"{}\n"
    os.write(wake_write, b"\x02")  # a Ctrl-C's wake-up byte: the input ends
    assert reader.readinto(memoryview(buffer)) == 0
