"""Benchmark memory tables on SQLite and on PostgreSQL side by side, and print the figures beside the targets.

1. Append throughput (one transaction a turn of two messages) with 1, 4 and 8
   processes, each appending to a conversation of its own, of one agent.
2. Growth: the stored messages are raised to 10k, 100k and 1M (bulk-loaded in
   conversations of 1,000 messages: executemany in SQLite, COPY in
   PostgreSQL), and at each size one process's append throughput and the
   assemble p50 of a compacted 1,000-message conversation are measured.

Targets: PostgreSQL with 8 processes appends at least 4x what one SQLite
process does; assemble p50 stays at or under 5 ms at 1M stored messages.

    .venv/bin/python scripts/bench_scale.py              # starts a PostgreSQL server of its own
    .venv/bin/python scripts/bench_scale.py --quick      # 10k and 100k only, shorter runs
    .venv/bin/python scripts/bench_scale.py --dsn postgresql://user@host/db

The server started here is durable like a production one (fsync and
synchronous_commit on); on a small machine it shares the cores with the
benchmark's processes, which the figures then reflect.
"""

from __future__ import annotations

import argparse
import multiprocessing
import statistics
import sys
import tempfile
import time
import uuid
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from tqdm import tqdm  # noqa: E402

from core.config import ProviderConfig, StorageConfig  # noqa: E402
from core.memory.files.log_format import utc_timestamp  # noqa: E402
from core.memory.provider import CompactionMode, Message, Session  # noqa: E402
from core.plugins.memory.lcm import DeterministicSummarizer, LCMProvider  # noqa: E402

BUDGET = 8000
FRESH_TAIL = 20
CONVERSATION = 1000
"""Messages of each bulk-loaded conversation, and of the one assembled."""
APPEND_TARGET = 4.0
ASSEMBLE_TARGET_MS = 5.0


def make_turn(n: int, tag: str = "") -> list[Message]:
    return [
        Message("user",
                f"{tag}Turn {n}: please check the deployment of service s{n % 97} and report the errors."),
        Message("assistant",
                f"Service s{n % 97} deployed at step {n}. Two warnings, no errors. Logs in /var/log/s{n}."),
    ]


# -- databases ------------------------------------------------------------------------


class Target:
    """Where one side of the benchmark keeps its tables."""

    def __init__(self, kind: str, folder: Path, dsn: str = "") -> None:
        self.kind = kind
        self.path = folder / "memory.db"
        self.dsn = dsn
        self.schema = f"bench_{uuid.uuid4().hex[:10]}"

    def database(self):
        if self.kind == "sqlite":
            from core.memory.storage.sqlite import SqliteDatabase as Database

            return Database(self.path)
        from core.memory.storage.postgres.database import PostgresDatabase

        return PostgresDatabase(self.dsn, self.schema, StorageConfig(pool_max=4))

    def provider(self, summarizer=None) -> LCMProvider:
        return LCMProvider(self.database(), summarizer=summarizer, config=ProviderConfig())

    def drop(self) -> None:
        if self.kind == "postgres":
            import psycopg

            from core.memory.storage.postgres.pool import close_pools

            close_pools(self.schema)
            with psycopg.connect(self.dsn, autocommit=True) as conn:
                conn.execute(f'DROP SCHEMA IF EXISTS "{self.schema}" CASCADE')


# -- 1. appends from several processes ---------------------------------------------------


def _appender(target: Target, worker: int, start, seconds: float, results) -> None:
    provider = target.provider()
    session = Session(f"bench:{worker}:{uuid.uuid4().hex[:6]}")
    provider.append(session, make_turn(0))
    start.wait()
    ends = time.perf_counter() + seconds
    turns = 0
    while time.perf_counter() < ends:
        turns += 1
        provider.append(session, make_turn(turns))
    results.put(turns)
    provider.close()


def append_rate(target: Target, processes: int, seconds: float) -> float:
    """Turns appended per second by ``processes`` processes together."""
    target.provider().close()  # the database created and migrated before the processes race to open it
    context = multiprocessing.get_context("spawn")
    start, results = context.Event(), context.Queue()
    workers = [context.Process(target=_appender,
                               args=(target, n, start, seconds, results)) for n in range(processes)]
    for worker in workers:
        worker.start()
    time.sleep(2.0 + 0.5 * processes)  # every worker imported and connected
    start.set()
    total = sum(results.get(timeout=seconds + 120) for _ in workers)
    for worker in workers:
        worker.join()
    return total / seconds


# -- 2. growth ------------------------------------------------------------------------------


def bulk_load(target: Target, first_conv: int, conversations: int) -> None:
    """Store ``conversations`` conversations of CONVERSATION messages each, bypassing the provider (fast)."""
    now = utc_timestamp()
    if target.kind == "sqlite":
        _bulk_sqlite(target, first_conv, conversations, now)
    else:
        _bulk_postgres(target, first_conv, conversations, now)


def _rows(first_conv: int, conversations: int, now: str):
    # Negative ids: the rows the providers add meanwhile take theirs from the positive side, undisturbed.
    for conv in range(first_conv, first_conv + conversations):
        messages = [m for n in range(CONVERSATION // 2) for m in make_turn(n, f"c{conv} ")]
        yield -conv, [(-(conv * CONVERSATION + i), -conv, i + 1, m.role, m.content, m.tokens(), now)
                      for i, m in enumerate(messages)]


def _bulk_sqlite(target: Target, first_conv: int, conversations: int, now: str) -> None:
    db = target.database()
    conn = db.conn
    for conv, messages in tqdm(_rows(first_conv, conversations, now), total=conversations, desc="SQLite load",
                               unit="conv", leave=False):
        with db.transaction():
            conn.execute("INSERT INTO ctx_conversations (id, session_id, created_at, last_active) VALUES (?, "
                         "?, ?, ?)",
                         (conv, f"bulk:{conv}", now, now))
            conn.executemany("INSERT INTO ctx_messages (id, conversation_id, seq, role, content, token_count,"
                             " created_at) VALUES (?, ?, ?, ?, ?, ?, ?)", messages)
            conn.executemany("INSERT INTO ctx_items (conversation_id, position, message_id, token_count)"
                             " VALUES (?, ?, ?, ?)", [(conv, m[2], m[0], m[5]) for m in messages])
    db.close()


def _bulk_postgres(target: Target, first_conv: int, conversations: int, now: str) -> None:
    db = target.database()
    with db.connection() as raw:
        with raw.transaction(), raw.cursor() as cursor:
            with cursor.copy("COPY ctx_conversations (id, session_id, created_at, last_active) FROM "
                             "STDIN") as copy:
                for conv in range(first_conv, first_conv + conversations):
                    copy.write_row((-conv, f"bulk:{conv}", now, now))
        for conv, rows in tqdm(_rows(first_conv, conversations, now), total=conversations,
                               desc="PostgreSQL load", unit="conv", leave=False):
            with raw.transaction(), raw.cursor() as cursor:
                with cursor.copy("COPY ctx_messages (id, conversation_id, seq, role, content, token_count,"
                                 " created_at) FROM STDIN") as copy:
                    for row in rows:
                        copy.write_row(row)
                with cursor.copy("COPY ctx_items (conversation_id, position, message_id, token_count)"
                                 " FROM STDIN") as copy:
                    for row in rows:
                        copy.write_row((conv, row[2], row[0], row[5]))
        raw.execute("ANALYZE")
    db.close()


def assemble_p50(provider: LCMProvider, session: Session, runs: int) -> float:
    """Median milliseconds of one assemble."""
    times = []
    for _ in range(runs):
        started = time.perf_counter()
        provider.assemble(session, BUDGET, FRESH_TAIL)
        times.append((time.perf_counter() - started) * 1000)
    return statistics.median(times)


def measured_conversation(target: Target) -> tuple[LCMProvider, Session]:
    """A 1,000-message conversation appended through the provider and fully compacted, as a long chat is."""
    provider = target.provider(DeterministicSummarizer())
    session = Session(f"measured:{uuid.uuid4().hex[:6]}")
    for n in range(CONVERSATION // 2):
        provider.append(session, make_turn(n))
    provider.compact(session, CompactionMode.FULL)
    return provider, session


def growth(target: Target, sizes: list[int], seconds: float,
           runs: int) -> list[tuple[int, float, float, float]]:
    """At each stored size: (messages, load seconds, one process's turns/s, assemble p50 ms)."""
    provider, session = measured_conversation(target)
    stored, rows = 0, []
    for size in sizes:
        started = time.perf_counter()
        conversations = max(0, size - stored) // CONVERSATION
        bulk_load(target, 1 + stored // CONVERSATION, conversations)
        loaded = time.perf_counter() - started
        stored += conversations * CONVERSATION
        rate = append_rate(target, 1, seconds)
        rows.append((stored, loaded, rate, assemble_p50(provider, session, runs)))
        print(f"  {target.kind:10} {stored:>9,} messages (loaded in {loaded:.0f}s): {rate:,.0f} turns/s, "
              f"assemble p50 {rows[-1][3]:.2f} ms", file=sys.stderr)
    provider.close()
    return rows


# -- report ------------------------------------------------------------------------------------


def postgres_dsn(given: str, durable: bool):
    """``(dsn, server)``: the given DSN, or a server started here (stopped by the caller)."""
    if given:
        return given, None
    from tests.postgres_server import PostgresServer

    settings = {"fsync": "on", "synchronous_commit": "on", "full_page_writes": "on"} if durable else {}
    server = PostgresServer.start({"shared_buffers": "256MB", **settings})
    return server.dsn, server


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--dsn", default="", help="a PostgreSQL server to use (default: start one here)")
    parser.add_argument("--quick", action="store_true", help="10k and 100k messages, 3 s a measurement")
    parser.add_argument("--seconds", type=float, default=0, help="length of each append measurement")
    parser.add_argument("--no-fsync", action="store_true", help="the server started here skips fsync")
    args = parser.parse_args()
    seconds = args.seconds or (3.0 if args.quick else 6.0)
    sizes = [10_000, 100_000] if args.quick else [10_000, 100_000, 1_000_000]
    dsn, server = postgres_dsn(args.dsn, durable=not args.no_fsync)
    try:
        with tempfile.TemporaryDirectory(prefix="bench-scale-") as folder:
            report(Path(folder), dsn, sizes, seconds, runs=50 if args.quick else 200)
    finally:
        if server is not None:
            server.stop()
    return 0


def report(folder: Path, dsn: str, sizes: list[int], seconds: float, runs: int) -> None:
    print(f"append throughput ({seconds:g} s each, turns of 2 messages, one conversation a process)",
          file=sys.stderr)
    rates: dict[tuple[str, int], float] = {}
    for kind in ("sqlite", "postgres"):
        for processes in (1, 4, 8):
            target = Target(kind, folder / f"{kind}-{processes}", dsn)
            target.path.parent.mkdir(parents=True, exist_ok=True)
            try:
                rates[kind, processes] = append_rate(target, processes, seconds)
            finally:
                target.drop()
            print(f"  {kind:10} {processes} process(es): {rates[kind, processes]:,.0f} turns/s",
                  file=sys.stderr)
    print("growth of the stored messages", file=sys.stderr)
    grown = {}
    for kind in ("sqlite", "postgres"):
        target = Target(kind, folder / f"{kind}-growth", dsn)
        target.path.parent.mkdir(parents=True, exist_ok=True)
        try:
            grown[kind] = growth(target, sizes, seconds, runs)
        finally:
            target.drop()
    ratio = rates["postgres", 8] / rates["sqlite", 1]
    largest = grown["postgres"][-1]
    print("\n| processes | SQLite turns/s | PostgreSQL turns/s |\n|---|---|---|")
    for processes in (1, 4, 8):
        print(f"| {processes} | {rates['sqlite', processes]:,.0f} | {rates['postgres', processes]:,.0f} |")
    print("\n| stored messages | SQLite load s | SQLite turns/s | SQLite assemble p50 ms | PostgreSQL load s "
          "| PostgreSQL turns/s | PostgreSQL assemble p50 ms |\n|---|---|---|---|---|---|---|")
    for (size, s_load, s_rate, s_p50), (_, p_load, p_rate, p_p50) in zip(grown["sqlite"], grown["postgres"]):
        print(f"| {size:,} | {s_load:.0f} | {s_rate:,.0f} | {s_p50:.2f} | {p_load:.0f} | {p_rate:,.0f} | "
              f"{p_p50:.2f} |")
    print(f"\nPostgreSQL 8 processes / SQLite 1 process: {ratio:.2f}x (target >= {APPEND_TARGET:g}x) "
          f"{'MET' if ratio >= APPEND_TARGET else 'NOT MET'}")
    print(f"PostgreSQL assemble p50 at {largest[0]:,} messages: {largest[3]:.2f} ms (target <= "
          f"{ASSEMBLE_TARGET_MS:g} ms) {'MET' if largest[3] <= ASSEMBLE_TARGET_MS else 'NOT MET'}")


if __name__ == "__main__":
    sys.exit(main())
