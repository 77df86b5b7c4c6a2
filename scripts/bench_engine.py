"""Measure the engine's start-up and per-turn overhead (offline backend) beside the targets.

    python scripts/bench_engine.py [--turns 20]

Targets: ``import core.engine`` < 2.5 s without torch; opening an agent < 1 s;
engine overhead per offline turn (memory, prompt, checkpoints, logging) < 250 ms;
building a system prompt < 20 ms.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))


def main(argv: list[str] | None = None) -> int:
    cli = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    cli.add_argument("--turns", type=int, default=20, help="offline turns to time (default 20)")
    args = cli.parse_args(argv)
    from tqdm import tqdm

    code = "import time, sys; t=time.perf_counter(); import core.engine; print(time.perf_counter()-t, 'torch' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True).stdout.split()
    rows = [("import core.engine", float(out[0]) * 1000, 2500, f"torch loaded: {out[1]}")]
    with tempfile.TemporaryDirectory() as home:
        os.environ["AGENTOS_HOME"] = home
        from core.engine import Engine
        from core.system_prompt import PromptExtras, build_system_prompt

        started = time.perf_counter()
        engine = Engine("bench", offline=True)
        rows.append(("open agent (Engine)", (time.perf_counter() - started) * 1000, 1000, ""))
        timings = []
        for turn in tqdm(range(args.turns), desc="offline turns", file=sys.stderr):
            task = f"remember that my item {turn} is value {turn}" if turn % 2 == 0 else f"what is my item {turn - 1}"
            started = time.perf_counter()
            engine.run(task)
            timings.append((time.perf_counter() - started) * 1000)
        timings.sort()
        rows.append(("offline turn (median)", timings[len(timings) // 2], 250, f"p90 {timings[int(len(timings) * 0.9)]:.0f} ms"))
        started = time.perf_counter()
        for _ in range(20):
            build_system_prompt(engine.manager, engine.conversation.identity(), PromptExtras(), 2000)
        rows.append(("build system prompt", (time.perf_counter() - started) * 1000 / 20, 20, ""))
        engine.close()
        engine.manager.close()
    print(f"{'measure':28} {'measured':>10} {'target':>10}  note")
    for name, measured, target, note in rows:
        flag = "ok" if measured <= target else "SLOW"
        print(f"{name:28} {measured:8.1f}ms {target:8d}ms  {flag} {note}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
