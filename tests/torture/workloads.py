"""What a torture worker does, in a process forked from the zygote, until it is killed or done.

Every write the library acknowledges (returns from) is recorded at once in the worker's
ack file, one line each, with ``os.write`` on an append-only descriptor: what a SIGKILL
cannot take back. A write that raised is recorded as refused. The campaigns then check
that every acknowledged write survived, exactly once, and that the files are consistent.
"""

from __future__ import annotations

import faulthandler
import json
import os
import random
import signal
import time
from pathlib import Path
from typing import Any, Callable

from core.errors import AgentOSError, StorageError


_write = os.write  # the real one, even where a worker imitates a full disk


class Acks:
    """The worker's record of acknowledged and refused writes."""

    def __init__(self, path: str) -> None:
        self.fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)

    def __call__(self, kind: str, *fields: Any) -> None:
        _write(self.fd, (json.dumps([kind, *fields]) + "\n").encode("utf-8"))


def read_acks(path: Path) -> list[list]:
    """The records of an ack file (a half-written last line, cut by the kill, is ignored)."""
    if not path.exists():
        return []
    records = []
    for line in path.read_text(encoding="utf-8").splitlines():
        try:
            records.append(json.loads(line))
        except json.JSONDecodeError:
            pass
    return records


def manager(home: str):
    from core.memory_manager import MemoryManager

    return MemoryManager("finn", home=Path(home))


def begin(home: str, ack: Acks, args: dict):
    """The worker's random source and its agent, opened (a kill may land in the opening)."""
    rng = random.Random(args["seed"])
    memory = manager(home)
    ack("open")
    return rng, memory


def appends_now(home: str, ack: Acks, args: dict) -> None:
    """LOG.md appends and NOW.md updates, interleaved."""
    rng, memory = begin(home, ack, args)
    for i in range(args.get("count", 10**9)):
        marker = f"{args['seed']}-{i}"
        if rng.random() < 0.3:
            now = memory.update_now("active", [f"step {marker}", "next"], objective=f"objective {marker}")
            ack("now", now["version"], now["log_seq"], marker)
        else:
            seq = memory.append_log("TOOL_USE", f"call {marker} " + "x" * rng.randrange(3000),
                                    {"marker": marker})
            ack("append", seq, marker)


def facts(home: str, ack: Acks, args: dict) -> None:
    """Facts saved and deleted (a few keys, so that updates and deletes race with the kill)."""
    rng, memory = begin(home, ack, args)
    for i in range(args.get("count", 10**9)):
        key = f"key{rng.randrange(6)}"
        if rng.random() < 0.15:
            ack("delete" if memory.delete_fact(key) else "absent", key)
        else:
            value = f"value {args['seed']}-{i}"
            memory.save_fact(key, value, rng.choice(["general", "preference", "personal"]))
            ack("save", key, value)


def notes(home: str, ack: Acks, args: dict) -> None:
    """Notes stored in the cold tier (saved in memory.db, then indexed in LanceDB)."""
    memory = manager(home)
    ack("open")
    for i in range(args.get("count", 10**9)):
        marker = f"note {args['seed']}-{i}"
        note_id = memory.store_memory(f"{marker}: the supplier list was compared with the ledger")
        ack("note", note_id, marker)


def compaction(home: str, ack: Acks, args: dict) -> None:
    """Appends past low thresholds: automatic compaction and its indexing run in the background;
    now and then an explicit compaction in the foreground."""
    rng, memory = begin(home, ack, args)
    for i in range(args.get("count", 10**9)):
        marker = f"{args['seed']}-{i}"
        seq = memory.append_log("THOUGHT", f"thought {marker}: " + "the ledger " * rng.randrange(1, 60))
        ack("append", seq, marker)
        if rng.random() < 0.05:
            memory.compact_log()


def indexing(home: str, ack: Acks, args: dict) -> None:
    """Open an agent whose archives wait to be indexed and index them, vectors included (killed while it
    does)."""
    memory = manager(home)
    ack("open")
    memory.compaction.wait()
    memory.cold.catch_up()
    ack("indexed")


def lcm(home: str, ack: Acks, args: dict) -> None:
    """LCM appends (one turn a transaction) and compactions, incremental and full."""
    from core.config import ProviderConfig
    from core.memory.provider import CompactionMode, Message, Session
    from core.plugins.memory import open_provider
    from core.plugins.memory.lcm import DeterministicSummarizer

    rng = random.Random(args["seed"])
    config = ProviderConfig(fresh_tail=4, leaf_chunk_size=4, leaf_chunk_max_tokens=400, leaf_target_tokens=60,
                            condensed_target_tokens=80)
    provider = open_provider("lcm", Path(home) / "finn" / "memory" / "memory.db",
                             summarizer=DeterministicSummarizer(), config=config)
    session = Session("finn:cli:main", agent_id="finn")
    ack("open")
    for i in range(args.get("count", 10**9)):
        marker = f"{args['seed']}-{i}"
        provider.append(session, [Message("user", f"question {marker}: " + "why " * rng.randrange(1, 30)),
                                  Message("assistant",
                                          f"answer {marker}. " + "because " * rng.randrange(1, 30))])
        ack("turn", marker)
        if rng.random() < 0.3:
            provider.compact(session, rng.choice([CompactionMode.INCREMENTAL, CompactionMode.FULL]))


def writer(home: str, ack: Acks, args: dict) -> None:
    """A fixed number of appends (one of several concurrent writers)."""
    memory = manager(home)
    for i in range(args["count"]):
        marker = f"{args['seed']}-{i}"
        seq = memory.append_log("THOUGHT", f"writer {marker} " + "y" * (i % 500), {"marker": marker})
        ack("append", seq, marker)
    memory.compaction.wait()
    memory.close()


def mixed_writes(memory, rng: random.Random, count: int, ack: Callable[..., None], seed: object) -> None:
    """Appends, NOW updates and facts, each acknowledged or, on a StorageError, recorded as refused."""
    for i in range(count):
        marker = f"{seed}-{i}"
        op = rng.choice(["append", "now", "save"])
        try:
            if op == "append":
                seq = memory.append_log("THOUGHT", f"full {marker} " + "z" * rng.randrange(20_000),
                                        {"m": marker})
                ack("append", seq, marker)
            elif op == "now":
                now = memory.update_now("active", [f"step {marker}"], objective=f"objective {marker}",
                                        blockers=["b" * rng.randrange(1500)])
                ack("now", now["version"], now["log_seq"], marker)
            else:
                key, value = f"key{rng.randrange(5)}", f"value {marker} " + "v" * rng.randrange(8000)
                memory.save_fact(key, value)
                ack("save", key, value)
        except StorageError as exc:
            ack("refused", op, marker, type(exc).__name__, str(exc))


def until_full(home: str, ack: Acks, args: dict) -> None:
    """Write until the disk is full and on: every write either succeeds whole or raises a StorageError."""
    if args.get("simulate_bytes"):
        _simulate_full_disk(args["simulate_bytes"])
    try:
        memory = manager(home)
    except StorageError as exc:  # SQLite cannot even make its shared-memory file
        ack("refused", "open", args["seed"], type(exc).__name__, str(exc))
        return
    mixed_writes(memory, random.Random(args["seed"]), args["count"], ack, args["seed"])
    memory.close()


def _simulate_full_disk(budget: int) -> None:
    """Where no small file system can be mounted: ``os.write`` refuses with ENOSPC once ``budget`` bytes
    went."""
    import errno

    real_write = os.write
    left = [budget]

    def write(fd: int, data) -> int:
        if len(data) > left[0]:
            raise OSError(errno.ENOSPC, "No space left on device")
        left[0] -= len(data)
        return real_write(fd, data)

    os.write = write


def fork_writers(home: str, ack: Acks, args: dict) -> None:
    """One MemoryManager, then forked children writing through it at once."""
    memory = manager(home)
    memory.append_log("THOUGHT", "before the fork")
    children = []
    for child in range(args["children"]):
        pid = os.fork()
        if pid == 0:
            status = 0
            try:
                for i in range(args["count"]):
                    marker = f"{args['seed']}-{child}-{i}"
                    seq = memory.append_log("THOUGHT", f"child {marker}", {"marker": marker})
                    ack("append", seq, marker)
                    if i % 5 == 0:
                        memory.save_fact(f"child{child}", marker)
                        ack("fact", f"child{child}", marker)
            except AgentOSError as exc:
                ack("error", type(exc).__name__, str(exc))
                status = 1
            os._exit(status)
        children.append(pid)
    for pid in children:
        _, status = os.waitpid(pid, 0)
        ack("child", os.waitstatus_to_exitcode(status))
    memory.close()


def space_publish(home: str, ack: Acks, args: dict) -> None:
    """Publish to the memory space ``shared`` as finn, now and then catching its index up (a read does)."""
    from core.memory.spaces import Space

    rng = random.Random(args["seed"])
    space = Space("shared", Path(home))
    ack("open")
    for n in range(args.get("count", 40)):
        text = f"finding {args['seed']}-{n}"
        space.publish("finn", text, {"n": n})
        ack("publish", text)
        if rng.random() < 0.25:
            space.latest("finn", 3)
    space.close()


WORKLOADS: dict[str, Callable[[str, Acks, dict], None]] = {
    f.__name__: f for f in (appends_now, facts, notes, compaction, indexing, lcm, writer, until_full,
                            fork_writers,
                            space_publish)
}


def run(name: str, home: str, acks: str, args: dict) -> None:
    """Run workload ``name`` (in a freshly forked worker)."""
    faulthandler.register(signal.SIGUSR1)  # ``kill -USR1 <pid>`` prints where a stuck worker is
    for key, value in args.get("env", {}).items():
        os.environ[key] = value
    started = time.monotonic()
    WORKLOADS[name](home, Acks(acks), args)
    Acks(acks)("done", round(time.monotonic() - started, 3))
