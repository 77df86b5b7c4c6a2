"""The torture harness: workers forked from a zygote, SIGKILLed at fault points drawn at random, and the
results table.

Starting a Python interpreter for each kill would cost most of a second; the zygote imports
the library once and forks a worker per trial, so a campaign spends its time killing and
checking. A worker is a real process (its own memory, file descriptors and locks), and
``SIGKILL`` is the real signal. The zygote itself opens no agent and starts no thread, so a
fork copies nothing that would not survive one.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

_ZYGOTE = """
import json, os, sys, traceback
sys.path.insert(0, {root!r})
from tests.torture import workloads
print("ready", flush=True)
for line in sys.stdin:
    command = json.loads(line)
    if command["op"] == "fork":
        pid = os.fork()
        if pid == 0:
            os.setsid()
            err = os.open(command["stderr"], os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
            os.dup2(err, 2)
            os.dup2(os.open(os.devnull, os.O_WRONLY), 1)
            code = 0
            try:
                workloads.run(command["workload"], command["home"], command["acks"], command["args"])
            except BaseException:
                traceback.print_exc()
                code = 1
            sys.stderr.flush()
            os._exit(code)
        print(json.dumps({{"pid": pid}}), flush=True)
    elif command["op"] == "wait":
        _, status = os.waitpid(command["pid"], 0)
        print(json.dumps({{"code": os.waitstatus_to_exitcode(status)}}), flush=True)
"""


class Zygote:
    """A process that forks torture workers on request."""

    def __init__(self, env: dict[str, str] | None = None) -> None:
        environment = dict(os.environ, PYTHONPATH=str(ROOT), **(env or {}))
        self.proc = subprocess.Popen([sys.executable, "-c", _ZYGOTE.format(root=str(ROOT))], env=environment,
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        ready = self.proc.stdout.readline()
        if ready != "ready\n":
            raise RuntimeError(f"the torture zygote did not start: {ready!r}")

    def _ask(self, command: dict) -> dict:
        self.proc.stdin.write(json.dumps(command) + "\n")
        self.proc.stdin.flush()
        return json.loads(self.proc.stdout.readline())

    def spawn(self, workload: str, home: Path, acks: Path, **args) -> int:
        """Fork a worker running ``workload`` on the agents home ``home``; return its pid."""
        return self._ask({"op": "fork", "workload": workload, "home": str(home), "acks": str(acks),
                          "stderr": str(acks.with_suffix(".err")), "args": args})["pid"]

    def wait(self, pid: int) -> int:
        """Wait for a worker; return its exit code (negative: killed by that signal)."""
        return self._ask({"op": "wait", "pid": pid})["code"]

    def close(self) -> None:
        self.proc.stdin.close()
        self.proc.wait(timeout=30)
        self.proc.stdout.close()

    def __enter__(self) -> "Zygote":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


@dataclass
class Result:
    """What one campaign did and found."""

    campaign: str
    what: str
    trials: int = 0
    kills: int = 0
    acknowledged: int = 0
    """Writes the library returned from (each then checked to be there, exactly once)."""
    refused: int = 0
    """Writes that raised an error (each then checked to have left nothing behind)."""
    failures: list[str] = field(default_factory=list)
    """Broken promises: an acknowledged write lost or doubled, a torn file, a raw exception, a hang."""
    seconds: float = 0.0
    skipped: str = ""
    """Why the campaign could not run on this machine ("" when it ran)."""

    def fail(self, message: str) -> None:
        if len(self.failures) < 50:
            self.failures.append(message)
        else:
            self.failures[-1] = f"... and more ({message})"

    def row(self) -> str:
        if self.skipped:
            return f"| {self.campaign} | skipped: {self.skipped} | | | | | |"
        return (f"| {self.campaign} | {self.trials} | {self.kills} | {self.acknowledged} | {self.refused} | "
                f"{len(self.failures)} | {self.seconds:.0f} |")


RESULTS: list["Result"] = []
"""The results of the campaigns run in this process (the test run's summary prints them)."""

HEADER = ("| campaign | trials | SIGKILLs | acknowledged writes | refused writes | failures | seconds |\n"
          "|---|---:|---:|---:|---:|---:|---:|")


def table(results: list[Result]) -> str:
    """The results as a Markdown table, with each campaign's description and any failure below it."""
    lines = [HEADER, *(r.row() for r in results)]
    for result in results:
        lines.append(f"\n- **{result.campaign}**: {result.what}")
        lines += [f"  - FAILURE: {f}" for f in result.failures]
    return "\n".join(lines)


class Clock:
    """Seconds since it was made."""

    def __init__(self) -> None:
        self.start = time.monotonic()

    def __call__(self) -> float:
        return time.monotonic() - self.start
