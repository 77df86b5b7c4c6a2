"""The fault campaigns: a full disk, read-only files, damaged files and faulty summarizers.

Each trial puts the agent in front of one fault, lets it work, removes the fault and checks
every promise (``tests.torture.checks``): whatever was acknowledged is there, whatever was
refused left nothing, every error was an AgentOSError naming the fix, and the agent opens.
"""

from __future__ import annotations

import os
import random
import subprocess
import threading
import time
from pathlib import Path
from typing import Callable

from core.errors import AgentOSError, StorageError
from core.memory_manager import MemoryManager
from faults import flip_byte, read_only, read_only_possible
from tests.torture.campaigns import prepare
from tests.torture.checks import check_agent, memory_dir, open_agent
from tests.torture.harness import Clock, Result, Zygote
from tests.torture.workloads import mixed_writes, read_acks


def _tmpfs(folder: Path, size: str) -> bool:
    folder.mkdir(parents=True, exist_ok=True)
    if os.geteuid() != 0:
        return False
    done = subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(folder)],
                          capture_output=True)
    return done.returncode == 0


def disk_full(work: Path, trials: int, seed: int = 9) -> Result:
    disk = work / "disk"
    real = _tmpfs(disk, "16m")
    result = Result("disk full",
                    ("a 16 MB tmpfs filled to 4-400 KB free before each trial, then 40 mixed writes"
                                  if real else "ENOSPC imitated: os.write refuses once a byte budget is "
                                               "spent (this machine cannot mount a tmpfs)"))
    clock, rng = Clock(), random.Random(seed)
    home = prepare(disk, {"compact_log_entries": 40})
    MemoryManager("finn", home=home).close()
    acks: list[list] = []
    try:
        with Zygote() as zygote:
            for trial in range(trials):
                ballast = disk / "ballast"
                free = rng.randrange(4_000, 400_000)
                if real:
                    _fill(disk, ballast, free)
                ack_file = work / f"acks-{trial}.jsonl"
                pid = zygote.spawn("until_full", home, ack_file, seed=trial, count=40,
                                   simulate_bytes=None if real else free)
                code = zygote.wait(pid)
                ballast.unlink(missing_ok=True)
                records = read_acks(ack_file)
                if code != 0:
                    result.fail(f"trial {trial}: a write raised outside StorageError: "
                                f"{ack_file.with_suffix('.err').read_text()[-400:]}")
                acks += records
                result.trials += 1
                result.acknowledged += sum(1 for r in records if r[0] in ("append", "now", "save"))
                result.refused += sum(1 for r in records if r[0] == "refused")
                check_agent(home, acks, result)
    finally:
        if real:
            subprocess.run(["umount", "-l", str(disk)], capture_output=True)
    result.seconds = clock()
    return result


def _fill(disk: Path, ballast: Path, free: int) -> None:
    """Leave about ``free`` bytes free on the file system of ``disk``."""
    stat = os.statvfs(disk)
    size = max(0, stat.f_bavail * stat.f_frsize - free)
    with open(ballast, "wb") as handle:
        handle.truncate(0)
        handle.write(b"\0" * size)


def read_only_files(work: Path, trials: int, seed: int = 10) -> Result:
    result = Result("read-only files", "memory.db, LOG.md or the whole memory folder read-only (a read-only "
                    "bind mount for root), 20 mixed writes, then writable again")
    result.skipped = read_only_possible()
    if result.skipped:
        return result
    clock, rng = Clock(), random.Random(seed)
    home = prepare(work, {"auto_compact": False})
    MemoryManager("finn", home=home).close()
    folder = memory_dir(home)
    acks: list[list] = []
    for trial in range(trials):
        target = rng.choice([folder / "memory.db", folder / "LOG.md", folder])
        records: list[list] = []
        try:
            with read_only(target):
                try:
                    manager = MemoryManager("finn", home=home)
                except StorageError as exc:
                    records.append(["refused", "open", str(trial), type(exc).__name__, str(exc)])
                else:
                    with manager:
                        mixed_writes(manager, rng, 20, lambda *r: records.append(list(r)), f"ro{trial}")
        except AgentOSError as exc:
            result.fail(f"trial {trial} ({target.name}): {type(exc).__name__} outside a write: {exc}")
        except Exception as exc:  # noqa: BLE001 - a raw exception is the finding
            result.fail(f"trial {trial} ({target.name}): raw {type(exc).__name__}: {exc}")
        acks += [r for r in records if r[1] != "open"]
        result.trials += 1
        result.acknowledged += sum(1 for r in records if r[0] in ("append", "now", "save"))
        result.refused += sum(1 for r in records if r[0] == "refused")
        check_agent(home, acks, result)
    result.seconds = clock()
    return result


DAMAGES = ("crlf", "strip_newline", "crlf_and_strip", "truncate_db", "garbage_db", "delete_db",
           "now_version", "now_log_seq", "now_garbage", "now_truncated", "archive")


def damaged_files(work: Path, trials: int, seed: int = 11) -> Result:
    result = Result("damaged files",
                    "each trial one of: " + ", ".join(DAMAGES) + "; then the agent is opened, "
                    "used and checked")
    clock, rng = Clock(), random.Random(seed)
    home = prepare(work, {"auto_compact": False})
    acks: list[list] = []
    for trial in range(trials):
        damage = DAMAGES[trial % len(DAMAGES)] if trial < len(DAMAGES) else rng.choice(DAMAGES)
        manager = open_agent(home, result)
        if manager is None:
            break
        with manager:
            mixed_writes(manager, rng, 12, lambda *r: acks.append(list(r)), f"d{trial}")
            if damage == "archive":
                manager.compactor.run(manager.compaction.summarizer(), f"summary {trial}", force=True,
                                      index=False)
        _damage(memory_dir(home), damage, rng)
        manager = open_agent(home, result)
        if manager is None:
            continue
        with manager:
            try:
                manager.recall_memory("the objective", n_results=3)
                manager.append_log("THOUGHT", f"after {damage}")
            except Exception as exc:  # noqa: BLE001 - any exception here is the finding
                result.fail(f"trial {trial} ({damage}): using the agent raised {type(exc).__name__}: {exc}")
            before = len(result.failures)
            check_agent(home, acks, result, manager)
            result.failures[before:] = [f"trial {trial} ({damage}): {f}" for f in result.failures[before:]]
        result.trials += 1
        result.acknowledged = sum(1 for r in acks if r[0] in ("append", "now", "save"))
    result.seconds = clock()
    return result


def _damage(folder: Path, damage: str, rng: random.Random) -> None:
    log, db, now = folder / "LOG.md", folder / "memory.db", folder / "NOW.md"
    if damage.startswith("crlf") or damage == "strip_newline":
        data = log.read_bytes()
        data = data.replace(b"\n", b"\r\n") if damage.startswith("crlf") else data
        log.write_bytes(data.rstrip(b"\r\n") if "strip" in damage else data)
    elif damage.endswith("_db"):
        for suffix in ("-wal", "-shm"):
            db.with_name(db.name + suffix).unlink(missing_ok=True)
        {"truncate_db": lambda: db.write_bytes(b""), "garbage_db": lambda: db.write_bytes(os.urandom(8192)),
         "delete_db": db.unlink}[damage]()
    elif damage.startswith("now_"):
        text = now.read_text()
        replace = {"now_version": ("version: ", "version: one #"),
                   "now_log_seq": ("log_seq: ", "log_seq: [1, 2] #")}
        if damage in replace:
            text = "\n".join(replace[damage][1] + line if line.startswith(replace[damage][0]) else line
                             for line in text.splitlines())
            now.write_text(text.replace("#", "# ", 1))
        else:
            now.write_bytes(os.urandom(300) if damage == "now_garbage"
                            else now.read_bytes()[: len(text) // 3])
    else:
        archive = max(folder.glob("archive/LOG-*.md"), key=lambda p: int(p.stem.split("-")[1]))
        flip_byte(archive, rng.randrange(archive.stat().st_size))


class Hang:
    """A model call that returns only when the campaign lets it (or after a minute): a compaction that waited
    for it finds ``returned`` set when it ends; one that abandoned it in time does not, however slow the
    machine."""

    def __init__(self) -> None:
        self.release, self.returned = threading.Event(), threading.Event()

    def __call__(self, prompt: str) -> str:
        self.release.wait(60)
        self.returned.set()
        return "late"


HANG = Hang()
FAULTS: dict[str, Callable[[str], object]] = {
    "hangs": HANG,
    "raises": lambda prompt: (_ for _ in ()).throw(RuntimeError("CUDA out of memory")),
    "thinks only": lambda prompt: "<think>I will summarise this later.</think>",
    "longer than its input": lambda prompt: prompt * 2,
    "not text": lambda prompt: 42,
    "huge": lambda prompt: "word " * 40_000,
    "slow but fine": lambda prompt: time.sleep(0.05) or "The agent compared the ledger with the list.",
}


def faulty_summarizers(work: Path, trials: int, seed: int = 12) -> Result:
    result = Result("faulty summarizers", "each trial one summarizer fault (" + ", ".join(FAULTS) + "): two "
                    "automatic compactions (20 entries) and an explicit one, 0.3 s a model call")
    clock = Clock()
    home = prepare(work, {"compact_log_entries": 20, "compact_timeout_s": 0.3})
    acks: list[list] = []
    names = list(FAULTS)
    with MemoryManager("finn", home=home) as manager:
        for trial in range(trials):
            name = names[trial % len(names)]
            calls: list[int] = []

            def summarizer(prompt: str, fault=FAULTS[name]) -> object:
                calls.append(1)
                return fault(prompt)

            manager.compaction.summary_llm = summarizer
            manager.compaction._llm_failed_at = -1e9  # each trial starts with a model not yet seen to fail
            HANG.release.clear()
            try:
                automatic = []
                for compaction in range(2):
                    before = len(calls)
                    for i in range(25):
                        marker = f"s{trial}-{compaction}-{i}"
                        acks.append(["append",
                                     manager.append_log("THOUGHT", f"thought {marker} " + "ledger " * 20),
                                     marker])
                    manager.compaction.wait(30)
                    automatic.append(len(calls) - before)
                HANG.returned.clear()  # the automatic compactions' calls still hang: none has returned
                before = len(calls)
                manager.append_log("THOUGHT", f"one more after trial {trial}")
                report = manager.compact_log()
            except Exception as exc:  # noqa: BLE001 - any exception is the finding
                result.fail(f"trial {trial} ({name}): raised {type(exc).__name__}: {exc}")
                continue
            waited_for_the_hang = HANG.returned.is_set()
            HANG.release.set()  # the abandoned calls end now
            explicit = len(calls) - before
            summary = manager.scan_log().entries[0]
            if waited_for_the_hang:
                result.fail(f"trial {trial} ({name}): the explicit compaction waited for a hanging model "
                            "call")
            if not report.done or len(summary.content) > 4000 or "<think>" in summary.content:
                result.fail(f"trial {trial} ({name}): the summary is unusable ({len(summary.content)} "
                            f"characters, {report.reason or 'done'})")
            if max(automatic + [explicit]) > 2 or (name != "slow but fine" and automatic[1] > 0):
                result.fail(f"trial {trial} ({name}): model calls {automatic} automatic, {explicit} "
                            "explicit: at most 2 a compaction, none while a failed model rests")
            result.trials += 1
            result.acknowledged += 51
        check_agent(home, acks, result, manager)
    result.seconds = clock()
    return result


CAMPAIGNS: dict[str, Callable[..., Result]] = {
    "disk-full": disk_full, "read-only": read_only_files, "damaged": damaged_files,
    "summarizers": faulty_summarizers,
}
