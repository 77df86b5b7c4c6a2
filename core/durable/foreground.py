"""Foreground writes, which this process's background work gives way to.

An append takes a fraction of a millisecond when nothing else in the process competes
with it. While automatic compaction or recall indexing runs in another thread, the
append also waits for what that thread holds: the GIL (CPython hands it back to a thread
returning from a system call only after the switch interval, 5 ms, and an append makes
several such calls), a CPU (computing vectors keeps one busy, loading LanceDB or the
embedding model takes seconds of Python), memory.db's write lock and the disk's flushes.

So background threads start each step of their work once the writers of this process
have paused for :data:`PAUSE_S`, or after :data:`MAX_WAIT_S`, so that they keep up
under writes that never pause. An agent writes in bursts (a turn's entries) between
model calls that take seconds: its background work runs in those gaps.

And one background step runs at a time in a process (:func:`step`): a compaction step
holds the agent lock or memory.db's write lock, which appends wait for, and it would
hold them for as long as another background thread kept the GIL from it (loading
LanceDB kept a compaction's swap under the agent lock for 250 ms).

A write that meets a background step anyway (one that started after ``MAX_WAIT_S``, or runs
between two bursts) runs inside :func:`writing`: it gets the GIL back within
:data:`WRITE_SWITCH_INTERVAL_S` of each of its system calls instead of the interpreter's 5 ms. An
update of NOW.md makes some thirty such calls (opens, writes, three flushes, a rename, memory.db's
statements), and each one that blocks a while (a flush above all) hands the GIL to a background
thread running Python, which keeps it until the writer has waited a switch interval: at 5 ms a
handover, one update met by a background step took tens of milliseconds instead of about one.

Within a step, the long stretches of Python (parsing LOG.md, summarising it, building recall's docs)
call :func:`give_way` between items (:func:`paced` does it for a loop): while a foreground write runs,
and until the writers have been quiet for :data:`RESUME_AFTER_S`, the background thread sleeps there
instead of taking the GIL at each of the write's system calls, which under a busy background cost an
update of NOW.md a handover for nearly every one. It looks again every :data:`RESUME_AFTER_S` rather
than being woken at the end of each write: between writes that follow each other closely, each wake
would cost the next write a handover. A thread that holds what writers take (the agent's lock,
memory.db's write transaction: :func:`holding`) never waits there, and no wait lasts more than
:data:`GIVE_WAY_MAX_S`, so that background work still advances under writes that never pause.

The background's native work (a model computing vectors, two cores' worth on this machine) runs in
threads of a lower CPU priority (:func:`lower_priority`, unless someone waits for it: :func:`behind`):
a writer woken from its flush then gets a core at once instead of after the model's time slice.

Background threads are started with :func:`background_thread`, which keeps Ctrl-C for the main
thread (see :func:`leave_ctrl_c_to_the_main_thread`) and marks them as background threads.
"""

from __future__ import annotations

import os
import signal
import sys
import threading
import time
from contextlib import contextmanager
from typing import Callable, Iterable, Iterator, TypeVar

T = TypeVar("T")

PAUSE_S = 0.05
"""How long the writers must have been quiet for a background step to start (s)."""
MAX_WAIT_S = 1.0
"""The longest a background step waits for that pause (s)."""

WRITE_SWITCH_INTERVAL_S = 0.0001
"""The interpreter's switch interval (see :func:`sys.setswitchinterval`) while a foreground write runs (s):
how long a thread waiting for the GIL lets the holder keep it before asking for it back."""

GIVE_WAY_MAX_S = 0.1
"""The longest a background thread waits in :func:`give_way` at one item (s): under writes that never
pause, background work still advances an item at a time."""
RESUME_AFTER_S = 0.005
"""How long the writers must have been quiet for a background thread waiting in :func:`give_way` to go on (s);
also how often it looks."""

BACKGROUND_NICE = 10
"""How much lower the CPU priority (nice) of the background's native work is than its process's."""

_POLL_S = 0.01
"""How often a waiting step looks at its ``cancel`` events."""

_thread = threading.local()
"""Per thread: ``background`` (started by :func:`background_thread`), ``holding`` (locks that writers take,
see :func:`holding`), ``writing`` (foreground writes in progress in this thread) and ``hurried`` (in a
step that someone waits for)."""
_quiet_since = float("-inf")
"""When the last foreground write of this process ended (``time.monotonic()``; what :func:`give_way` waits
for)."""
_nap = time.sleep
"""How a thread waiting in :func:`give_way` sleeps."""

_last_write = float("-inf")
_turn = threading.Lock()
_fork_hook_registered = False
_writers = 0
"""How many foreground writes of this process are in progress."""
_saved_interval: float | None = None
"""The switch interval the first of them found, given back when the last one ends."""
_writers_guard = threading.Lock()


def wrote() -> None:
    """Record that a foreground write (a LOG.md entry, with NOW.md or a fact) just ended."""
    global _last_write
    _last_write = time.monotonic()  # one store under the GIL: no lock needed


@contextmanager
def writing() -> Iterator[None]:
    """Run the block as a foreground write: while it runs (and any other of this process), the switch
    interval is :data:`WRITE_SWITCH_INTERVAL_S`, so that a background thread running Python hands the GIL
    back soon after each of the write's system calls; the interval it found is given back after it.

    The interval is the interpreter's: for the write's millisecond, other threads also switch more often.
    An interval someone changed meanwhile is left as they set it.
    """
    global _writers, _saved_interval, _quiet_since
    _register_fork_hook()
    with _writers_guard:
        if _writers == 0:
            _saved_interval = sys.getswitchinterval()
            if _saved_interval > WRITE_SWITCH_INTERVAL_S:
                sys.setswitchinterval(WRITE_SWITCH_INTERVAL_S)
        _writers += 1
    _thread.writing = getattr(_thread, "writing", 0) + 1
    try:
        yield
    finally:
        _thread.writing -= 1
        with _writers_guard:
            _writers -= 1
            if _writers == 0:
                _quiet_since = time.monotonic()
                _give_back_interval()


def give_way() -> None:
    """In a background thread's long Python work, between two items: while a foreground write of this
    process runs, and until the writers have been quiet for :data:`RESUME_AFTER_S`, sleep (at most
    :data:`GIVE_WAY_MAX_S` in all). Returns at once in any other thread, in one that holds what writers
    take (:func:`holding`) or writes itself, and when the writers are quiet.
    """
    if not getattr(_thread, "background", False) or getattr(_thread, "holding", 0) or getattr(_thread,
                                                                                              "writing", 0) \
            or not _writing_lately():
        return
    deadline = time.monotonic() + GIVE_WAY_MAX_S
    while _writing_lately():
        left = deadline - time.monotonic()
        if left <= 0:
            return
        _nap(min(RESUME_AFTER_S, left))


def _writing_lately() -> bool:
    """True while a foreground write of this process runs, or ended less than RESUME_AFTER_S ago."""
    return bool(_writers) or time.monotonic() - _quiet_since < RESUME_AFTER_S


def paced(items: Iterable[T]) -> Iterator[T]:
    """``items``, with :func:`give_way` before each: a loop of background work that leaves the GIL to the
    writers while they write (in a foreground thread, ``items`` as they are)."""
    if not getattr(_thread, "background", False):
        yield from items
        return
    for item in items:
        give_way()
        yield item


@contextmanager
def holding() -> Iterator[None]:
    """Mark the block as holding a lock that foreground writes take (the agent's lock, memory.db's write
    transaction): the thread does not :func:`give_way` meanwhile, since the writer would be waiting for it."""
    _thread.holding = getattr(_thread, "holding", 0) + 1
    try:
        yield
    finally:
        _thread.holding -= 1


def _give_back_interval() -> None:
    """Set the switch interval the first writer found again, unless someone changed it meanwhile."""
    global _saved_interval
    saved, _saved_interval = _saved_interval, None
    if saved is not None and abs(sys.getswitchinterval() - min(saved, WRITE_SWITCH_INTERVAL_S)) < 1e-7:
        sys.setswitchinterval(saved)


def wait_for_pause(*cancel: threading.Event) -> bool:
    """Wait until the writers have been quiet for ``PAUSE_S``, at most ``MAX_WAIT_S``; False (at once)
    when one of the ``cancel`` events is set: the caller is stopping, or someone waits for its result."""
    deadline = time.monotonic() + MAX_WAIT_S
    while True:
        if any(event.is_set() for event in cancel):
            return False
        now = time.monotonic()
        left = min(PAUSE_S - (now - _last_write), deadline - now)
        if left <= 0:
            return True
        time.sleep(min(left, _POLL_S))


@contextmanager
def step(stop: threading.Event, hurry: threading.Event | None = None) -> Iterator[None]:
    """Run the block as a background step: once the writers have paused (at once while ``hurry`` is set:
    someone waits for the result), and as the only background step of the process (without waiting for
    the others once ``stop`` is set)."""
    _register_fork_hook()
    wait_for_pause(stop, *([hurry] if hurry is not None else []))
    turn = _turn
    taken = turn.acquire(timeout=_POLL_S)
    while not taken and not stop.is_set():
        taken = turn.acquire(timeout=_POLL_S)
    hurried, _thread.hurried = getattr(_thread, "hurried", False), hurry is not None and hurry.is_set()
    try:
        yield
    finally:
        _thread.hurried = hurried
        if taken:
            turn.release()


def behind() -> bool:
    """True in a background thread whose result nobody waits for (not in a step someone hurries): its
    native work may run at a lower CPU priority (see :func:`lower_priority`)."""
    return getattr(_thread, "background", False) and not getattr(_thread, "hurried", False)


def lower_priority() -> None:
    """Lower the calling thread's CPU priority by :data:`BACKGROUND_NICE` (Linux, where a nice value is
    a thread's; elsewhere nothing), so that a foreground thread woken from a flush or a lock gets a core at
    once instead of waiting for the background's slice to end. Only for a thread that runs native code (a
    model's): one running Python would keep the GIL from the foreground while it waited for a core."""
    if not sys.platform.startswith("linux"):
        return
    thread = threading.get_native_id()
    try:
        os.setpriority(os.PRIO_PROCESS, thread,
                       min(19, os.getpriority(os.PRIO_PROCESS, thread) + BACKGROUND_NICE))
    except OSError:  # a hint to the scheduler: refused (a sandbox), the work runs at the priority it has
        pass


def _register_fork_hook() -> None:
    global _fork_hook_registered
    if not _fork_hook_registered:
        os.register_at_fork(after_in_child=_forget_turn_after_fork)
        _fork_hook_registered = True


def _forget_turn_after_fork() -> None:
    """In a forked child: the threads that held the turn, or wrote, in the parent are not the child's."""
    global _turn, _writers, _writers_guard
    _turn = threading.Lock()
    _writers_guard = threading.Lock()
    if _writers:
        _writers = 0
        _give_back_interval()


def leave_ctrl_c_to_the_main_thread() -> None:
    """Block SIGINT in the calling thread (and in the native threads it starts later).

    The kernel gives a process's SIGINT to any one of its threads that does not block it. A main thread
    waiting in readline for a line sees a Ctrl-C only when the signal interrupts its own wait: taken by
    a background thread (computing vectors, say), it would leave the prompt deaf until the next key.
    """
    if hasattr(signal, "pthread_sigmask"):
        signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT})


def background_thread(target: Callable[[], object], *, name: str | None = None,
                      daemon: bool = True) -> threading.Thread:
    """A thread (not started) that runs ``target`` as background work: with Ctrl-C left to the main thread,
    and giving way to the writers in :func:`give_way`."""

    def run() -> None:
        leave_ctrl_c_to_the_main_thread()
        _thread.background = True
        target()

    return threading.Thread(target=run, name=name, daemon=daemon)
