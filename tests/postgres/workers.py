"""Child processes of the PostgreSQL tests: ``python -m tests.postgres.workers CMD DSN SCHEMA ...``."""

from __future__ import annotations

import sys
import time
from pathlib import Path

from core.memory.storage.postgres.database import PostgresDatabase
from core.memory.provider import CompactionMode, Message, Session
from core.plugins.memory.lcm import LCMProvider
from tests.providers.workers import CONFIG, SlowSummarizer


def question(writer: str, n: int) -> str:
    return f"{writer} question {n}: what is the status of item {n}?"


def next_turn(provider: LCMProvider, session_id: str, writer: str) -> int:
    """The first turn of ``writer`` not stored yet (a restarted writer goes on from there)."""
    stored = [m.content for m in provider.load_history(session_id)]
    done = [int(text.split()[2].rstrip(":")) for text in stored if text.startswith(f"{writer} question ")]
    return max(done) + 1 if done else 0


def append(dsn: str, schema: str, session_id: str, writer: str, turns: int) -> None:
    """Append ``writer``'s turns up to ``turns``, printing each one's number once it is committed."""
    provider = LCMProvider(PostgresDatabase(dsn, schema), config=CONFIG)
    for n in range(next_turn(provider, session_id, writer), turns):
        provider.append(Session(session_id), [
            Message("user", question(writer, n)),
            Message("assistant", f"{writer} answer {n}: item {n} is on track and tested."),
        ])
        print(n, flush=True)
    provider.close()


def compact(dsn: str, schema: str, delay_s: float, *session_ids: str) -> None:
    """Compact the sessions in turn, for ever (until killed), with a summarizer that sleeps ``delay_s``."""
    provider = LCMProvider(PostgresDatabase(dsn, schema), summarizer=SlowSummarizer(delay_s), config=CONFIG)
    while True:
        for session_id in session_ids:
            provider.compact(Session(session_id), CompactionMode.INCREMENTAL)


def migrate(dsn: str, schema: str, go: str) -> None:
    """Once the file ``go`` exists, create and migrate the schema; print the migrations this process
    applied."""
    from core.config import StorageConfig
    from core.memory.storage.postgres import migrate as migrations

    print("ready", flush=True)
    while not Path(go).exists():
        time.sleep(0.001)
    print(",".join(migrations.ensure(dsn, schema, StorageConfig())), flush=True)


if __name__ == "__main__":
    command, *args = sys.argv[1:]
    if command == "append":
        append(args[0], args[1], args[2], args[3], int(args[4]))
    elif command == "compact":
        compact(args[0], args[1], float(args[2]), *args[3:])
    elif command == "migrate":
        migrate(args[0], args[1], args[2])
    else:
        raise SystemExit(f"unknown command {command!r}")
