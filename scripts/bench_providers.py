"""Benchmark the conversation-memory providers and print the figures beside their targets.

Measures append throughput (one transaction a turn), assemble p50 after full
compaction for sessions of 1k / 10k / 100k messages, and a full compaction
of 10k messages with the deterministic summarizer (no LLM). Use --quick for
a short run (1k and 10k only).
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from tqdm import tqdm  # noqa: E402

from core.config import ProviderConfig  # noqa: E402
from core.errors import AgentOSError  # noqa: E402
from core.memory.provider import CompactionMode, Message, Session  # noqa: E402
from core.plugins.memory.lcm import DeterministicSummarizer, LCMProvider  # noqa: E402

BUDGET = 8000
FRESH_TAIL = 20


def make_turn(n: int) -> list[Message]:
    return [
        Message("user",
                f"Turn {n}: please check the deployment of service s{n % 97} and report the errors you see."),
        Message("assistant", f"Service s{n % 97} deployed at step {n}. Two warnings, no errors. Logs are in "
                             f"/var/log/s{n}."),
    ]


def fill(provider: LCMProvider, session: Session, messages: int, per_call: int, label: str) -> float:
    """Append ``messages`` messages, ``per_call`` turns per append; return messages per second."""
    started = time.perf_counter()
    turns = messages // 2
    for first in tqdm(range(0, turns, per_call), desc=label, unit="append", leave=False):
        batch = [m for n in range(first, min(turns, first + per_call)) for m in make_turn(n)]
        provider.append(session, batch)
    return messages / (time.perf_counter() - started)


def assemble_p50(provider: LCMProvider, session: Session, runs: int) -> tuple[float, int]:
    """Median milliseconds of assemble, and the number of context messages."""
    times = []
    for _ in range(runs):
        started = time.perf_counter()
        context = provider.assemble(session, BUDGET, FRESH_TAIL)
        times.append((time.perf_counter() - started) * 1000)
    return statistics.median(times), len(context)


def run(sizes: list[int], compaction_size: int, folder: Path) -> list[tuple[str, str, str]]:
    rows = []
    provider = LCMProvider(folder / "memory.db", summarizer=DeterministicSummarizer(),
                           config=ProviderConfig())
    rate = fill(provider, Session("append"), 4000, 1, "append (1 turn/transaction)")
    rows.append(("append, 1 turn (2 msgs) per transaction", f"{rate:,.0f} msgs/s", "-"))

    session = Session("compact-10k")
    fill(provider, session, compaction_size, 50, f"fill {compaction_size:,}")
    result = provider.compact(session, CompactionMode.FULL)
    speed = result.messages_compacted / result.duration_s
    rows.append((f"full compaction of {compaction_size:,} msgs (deterministic)",
                 f"{speed:,.0f} msgs/s, {result.summarizer_calls} summarizer calls, {result.rounds} rounds, "
                 f"{result.tokens_before:,} -> {result.tokens_after:,} tokens", ">= 2,000 msgs/s"))

    for size in tqdm(sizes, desc="assemble sessions", leave=False):
        session = Session(f"assemble-{size}")
        fill(provider, session, size, 100, f"fill {size:,}")
        uncompacted, _ = assemble_p50(provider, session, 30)
        provider.compact(session, CompactionMode.FULL)
        p50, count = assemble_p50(provider, session, 200)
        target = "<= 5 ms" if size == 10_000 else "grows with context, not history"
        rows.append((f"assemble p50, {size:,} msgs after compaction", f"{p50:.2f} ms ({count} context msgs;"
                     f" {uncompacted:.2f} ms before compaction)", target))
    provider.close()
    return rows


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="only 1k and 10k sessions")
    args = parser.parse_args()
    sizes = [1_000, 10_000] if args.quick else [1_000, 10_000, 100_000]
    try:
        with tempfile.TemporaryDirectory() as folder:
            rows = run(sizes, 10_000, Path(folder))
    except AgentOSError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    width = max(len(r[0]) for r in rows)
    print(f"{'measure':<{width}}  {'measured':<70}  target")
    for name, measured, target in rows:
        print(f"{name:<{width}}  {measured:<70}  {target}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
