"""Child processes for the concurrency and crash tests: ``python -m tests.providers.workers CMD ...``."""

from __future__ import annotations

import sys
import time

from core.config import ProviderConfig
from core.memory.provider import CompactionMode, Message, Session
from core.plugins.memory.lcm import DeterministicSummarizer, LCMProvider

CONFIG = ProviderConfig(fresh_tail=4, leaf_chunk_size=4, leaf_chunk_max_tokens=200,
                        leaf_target_tokens=40, condensed_target_tokens=60)


class SlowSummarizer(DeterministicSummarizer):
    """The deterministic summarizer, slowed down so a kill lands mid-compaction."""

    def __init__(self, delay_s: float) -> None:
        self.delay_s = delay_s

    def summarize(self, text, options):
        time.sleep(self.delay_s)
        return super().summarize(text, options)


def append(db: str, session_id: str, prefix: str, turns: int) -> None:
    """Append ``turns`` two-message turns tagged ``prefix``."""
    provider = LCMProvider(db, summarizer=DeterministicSummarizer(), config=CONFIG)
    for n in range(turns):
        provider.append(Session(session_id), [
            Message("user", f"{prefix} question {n}: what is the status of item {n}?"),
            Message("assistant", f"{prefix} answer {n}: item {n} is on track and tested."),
        ])
    provider.close()


def compact(db: str, session_id: str, rounds: int, delay_s: float) -> None:
    """Run ``rounds`` full compactions with a summarizer that sleeps ``delay_s`` a call."""
    provider = LCMProvider(db, summarizer=SlowSummarizer(delay_s), config=CONFIG)
    for _ in range(rounds):
        provider.compact(Session(session_id), CompactionMode.FULL)
    print("compacted", flush=True)
    provider.close()


if __name__ == "__main__":
    command, *args = sys.argv[1:]
    if command == "append":
        append(args[0], args[1], args[2], int(args[3]))
    elif command == "compact":
        compact(args[0], args[1], int(args[2]), float(args[3]))
    else:
        raise SystemExit(f"unknown command {command!r}")
