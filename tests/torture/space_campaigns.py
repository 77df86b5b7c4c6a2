"""The memory spaces' torture campaign: SIGKILL while publishing to a space and catching its index up."""

from __future__ import annotations

import random
from pathlib import Path
from typing import Callable

from core.errors import AgentOSError
from core.memory.files.log_file import scan_bytes
from core.memory.spaces import Space
from core.memory_manager import MemoryManager
from tests.torture.campaigns import prepare, run_to_fault_point
from tests.torture.harness import Clock, Result, Zygote
from tests.torture.workloads import read_acks


def spaces(work: Path, trials: int, seed: int = 9) -> Result:
    result = Result("spaces", "SIGKILL while publishing to a memory space and catching its index.db up")
    clock, rng = Clock(), random.Random(seed)
    home = prepare(work, {})
    MemoryManager("finn", home=home).close()
    Space.create("shared", {"finn": "read-write"}, home).close()
    acks: list[list] = []
    with Zygote() as zygote:
        for trial in range(trials):
            ack_file = work / f"acks-{trial}.jsonl"
            point = f"*@{rng.randint(1, 60)}"
            code = run_to_fault_point(zygote, point, "space_publish", home, ack_file,
                                      seed=seed * 1000 + trial)
            records = read_acks(ack_file)
            if code != -9:
                result.fail(f"trial {trial}: the worker did not die at fault point {point} ({code}): "
                            f"{ack_file.with_suffix('.err').read_text()[-500:]}")
            acks += records
            result.trials += 1
            result.kills += 1
            result.acknowledged += sum(1 for r in records if r[0] == "publish")
            check_space(home, acks, result)
    result.seconds = clock()
    return result


def check_space(home: Path, acks: list[list], result: Result) -> None:
    """Only the journal's tail may be torn; after an open, every acknowledged publish is there once, seqs
    rise, and the index holds exactly the journal's memories."""
    path = home / "spaces" / "shared" / "LOG.md"
    whole = path.read_bytes().rpartition(b"\n")[0] + b"\n"
    if scan_bytes(whole, path).bad_lines:
        result.fail("a line before the journal's tail is damaged")
    try:
        with Space("shared", home) as space:
            scan = scan_bytes(path.read_bytes(), path)
            texts = [e.content for e in scan.entries if e.type == "PUBLISH"]
            seqs = [e.seq for e in scan.entries]
            if scan.bad_lines:
                result.fail(f"the journal has damaged lines after its repair: {scan.bad_lines[:2]}")
            if len(texts) != len(set(texts)):
                result.fail("a publish is in the journal twice")
            missing = {r[1] for r in acks if r[0] == "publish"} - set(texts)
            if missing:
                result.fail(f"acknowledged publishes lost: {sorted(missing)[:3]}")
            if seqs != sorted(set(seqs)):
                result.fail("the journal's seqs do not strictly increase")
            index = space.index()
            index.sync()
            if index.count() != len(texts):
                result.fail(f"index.db holds {index.count()} memories, the journal {len(texts)}")
    except AgentOSError as exc:
        result.fail(f"the space does not open after a kill: {exc}")


CAMPAIGNS: dict[str, Callable[..., Result]] = {"spaces": spaces}
