"""Run the torture campaigns longer than the test suite does; print their table (docs/reliability.md).

    python scripts/torture.py                      # every campaign, 3x the test suite's trials
    python scripts/torture.py --scale 10           # longer
    python scripts/torture.py --trials 100 --campaign appends --campaign facts
    python scripts/torture.py --markdown torture.md

Each campaign SIGKILLs a worker at random moments (or fills the disk, makes files read-only,
damages them, breaks the summarizer) and checks every promise after every trial; the table
gives trials, kills, acknowledged and refused writes, and failures (broken promises, which
must be 0). The disk-full campaign mounts a tmpfs when run as root, else imitates ENOSPC.
Cold-store indexing embeds with a loopback Ollama-compatible server (no model download).
"""

from __future__ import annotations

import argparse
import logging
import os
import platform
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT), str(ROOT / "tests")]

from tests.ollama_server import ScriptedOllama  # noqa: E402 - after the path set-up
from tests.torture.harness import Result, table  # noqa: E402
from tests.torture.suite import CAMPAIGNS, TRIALS  # noqa: E402


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--campaign", action="append", choices=sorted(CAMPAIGNS),
                        help="run only this campaign (repeatable; default: all)")
    parser.add_argument("--scale", type=float, default=3.0,
                        help="multiply the test suite's trials (default 3)")
    parser.add_argument("--trials", type=int, help="the same number of trials for every campaign")
    parser.add_argument("--seed", type=int, default=20260131, help="seed of the random kill times")
    parser.add_argument("--markdown", type=Path, help="also write the table to this file")
    parser.add_argument("--work", type=Path, help="keep the campaigns' files here (default: a temp folder)")
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.CRITICAL)  # the agents' repair warnings are expected here
    names = args.campaign or list(TRIALS)
    work = args.work or Path(tempfile.mkdtemp(prefix="agentos-torture-"))
    results: list[Result] = []
    started = time.monotonic()
    with ScriptedOllama(models=("fake-embed",)) as server:
        server.forget_requests()
        os.environ["OLLAMA_HOST"] = server.host
        for number, name in enumerate(names):
            trials = args.trials or max(1, round(TRIALS[name] * args.scale))
            print(f"[{number + 1}/{len(names)}] {name}: {trials} trials ...", file=sys.stderr, flush=True)
            folder = work / name
            folder.mkdir(parents=True, exist_ok=True)
            result = CAMPAIGNS[name](folder, trials, seed=args.seed + number)
            results.append(result)
            server.forget_requests()
            print(f"    {result.row()}", file=sys.stderr, flush=True)
    minutes = (time.monotonic() - started) / 60
    report = (f"Torture run of {time.strftime('%Y-%m-%d')}: {minutes:.0f} minutes on {os.cpu_count()} cores, "
              f"Python {platform.python_version()}, {platform.system()} (files in {work})\n\n"
              + table(results))
    print(report)
    if args.markdown:
        args.markdown.write_text(report + "\n", encoding="utf-8")
    return 1 if any(r.failures for r in results) else 0


if __name__ == "__main__":
    sys.exit(main())
