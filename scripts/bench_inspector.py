"""Benchmark the memory inspector on a large agent and print the figures beside the targets.

Builds (or reuses, with --home) an agent through the public memory API: 100,000 LOG.md
entries in runs of about 50 (tool calls, thoughts, steps, some errors and interrupted
runs), compacted automatically at the default thresholds (about 1,000 archives,
deterministic summaries), and one LCM conversation of 10,000 messages compacted as it grew. Then it measures,
server side and over HTTP on 127.0.0.1:

- the first view of the agent (``/api/agents/<name>``: NOW, sizes, facts, runs, newest
  timeline page, notes, conversations, compactions), from a fresh server and warm, and the
  activity chart and NOW.md's versions it loads next;
- timeline pages at random depths, plain and filtered by type, run and archive;
- search, a conversation and a summary expansion;
- the same timeline pages when all 100,000 entries sit in one uncompacted LOG.md.

Building takes a few minutes (100,000 fsynced appends); --home keeps the agent for later runs.
"""

from __future__ import annotations

import argparse
import http.client
import json
import logging
import os
import random
import shutil
import sys
import tempfile
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from tqdm import tqdm  # noqa: E402

from core.errors import AgentOSError  # noqa: E402
from core.inspector.server import InspectorServer  # noqa: E402
from core.memory.provider import CompactionMode, Message, Session  # noqa: E402
from core.memory_manager import MemoryManager  # noqa: E402
from core.plugins.memory import open_provider  # noqa: E402
from core.plugins.memory.lcm import DeterministicSummarizer  # noqa: E402

AGENT = "bench"
# The cold store is not what is measured: with its embedder unreachable (OLLAMA_HOST points nowhere), the
# archives wait to be indexed, as on a machine whose embedding server is down, and no open indexes them.
CONFIG = ("memory: {compact_summarizer: deterministic}\nllm: {backend: offline}\n"
          "cold: {embedder: 'ollama:nomic-embed-text'}\n")
TOOLS = ["read_file", "write_file", "list_files", "recall_memory", "save_fact", "shell"]


def build_log(home: Path, entries: int) -> None:
    """``entries`` LOG.md entries in runs, compacted in the background as the default thresholds say."""
    (home / AGENT / "config").mkdir(parents=True, exist_ok=True)
    (home / AGENT / "config" / "config.yaml").write_text(CONFIG)
    rng = random.Random(7)
    with MemoryManager(AGENT, home) as mm, tqdm(total=entries, desc="LOG.md entries", unit="entry") as bar:
        run_no = 0
        while mm.log.last_seq() < entries:
            run_no += 1
            for entry_type, text, meta in _run(run_no, rng):
                mm.append_system(entry_type, text, meta)
                bar.update(1)
        mm.save_fact("preferred_currency", "USD", category="preference")
        mm.save_fact("deploy_key", "sk-bench-0000-secret", category="secret")
        mm.update_now("Writing the weekly report", objective="Write the weekly report",
                      next_steps=["Collect numbers", "Draft", "Send"])


def _run(run_no: int, rng: random.Random):
    run_id = f"run{run_no:05d}"
    yield (
        "RUN_START",
        f"Task {run_no}: analyse the portfolio data set {run_no % 37} and report",
        {"run_id": run_id},
    )
    for step in range(rng.randint(4, 8)):
        tool = rng.choice(TOOLS)
        yield "STEP_START", f"Step {step}: {tool}", {"run_id": run_id}
        yield (
            "TOOL_USE",
            f"{tool}(path='data/set{run_no % 37}/part{step}.csv') -> {rng.randint(1, 900)} rows read; "
            "columns date, ticker, close, volume",
            {"run_id": run_id, "tool": tool, "args": {"step": step}},
        )
        yield (
            "THOUGHT",
            f"Part {step} of set {run_no % 37} looks consistent; the mean close is {rng.random() * 100:.2f}",
            {"run_id": run_id},
        )
        if rng.random() < 0.03:
            yield (
                "ERROR",
                f"{tool} failed: FileNotFoundError data/set{run_no % 37}/part{step}.csv",
                {"run_id": run_id},
            )
        yield "STEP_END", f"Step {step} done", {"run_id": run_id}
    if run_no % 50 != 0:  # every 50th run is killed: RUN_START without RUN_END
        yield "RUN_END", "done", {"run_id": run_id, "outcome": "error" if rng.random() < 0.05 else "done"}


def build_conversation(home: Path, messages: int) -> None:
    """One LCM conversation of ``messages`` messages, compacted as it grew."""
    provider = open_provider("lcm", home / AGENT / "memory" / "memory.db",
                             summarizer=DeterministicSummarizer())
    try:
        session = Session(f"{AGENT}:cli:main", agent_id=AGENT, user_id="ada", channel="cli")
        provider.bootstrap(session)
        for turn in tqdm(range(messages // 2), desc="messages", unit="turn"):
            provider.append(session, [
                Message("user", f"Turn {turn}: check service s{turn % 97} and tell me what failed."),
                Message("assistant", f"Service s{turn % 97} ran step {turn}; two warnings, no errors.")])
            if turn % 50 == 49:
                provider.compact(session, CompactionMode.INCREMENTAL)
        provider.compact(session, CompactionMode.FULL)
    finally:
        provider.close()


def uncompacted_copy(home: Path, target: Path) -> None:
    """The same entries in one LOG.md with no archives (an agent that never compacted), index rebuilt."""
    shutil.copytree(home / AGENT, target / AGENT)
    memory = target / AGENT / "memory"
    archives = sorted(memory.glob("archive/LOG-*.md"), key=lambda p: int(p.stem.split("-")[1]))
    lines = [line for path in [*archives,
                               memory / "LOG.md"] for line in path.read_bytes().splitlines(keepends=True)
             if line.startswith(b"- ")]
    (memory / "LOG.md").write_bytes(lines_header() + b"".join(lines))
    shutil.rmtree(memory / "archive")
    with MemoryManager(AGENT, target) as mm:
        mm.rebuild_log_index()


def lines_header() -> bytes:
    from core.memory.files.log_format import HEADER

    return HEADER.encode()


class Client:
    """Keep-alive HTTP client of one server; returns (server ms, round trip ms, body)."""

    def __init__(self, url: str) -> None:
        host, port = url.split("//")[1].strip("/").split(":")
        self.conn = http.client.HTTPConnection(host, int(port), timeout=60)

    def get(self, path: str) -> tuple[float, float, dict]:
        started = time.perf_counter()
        self.conn.request("GET", path)
        response = self.conn.getresponse()
        body = response.read()
        elapsed = (time.perf_counter() - started) * 1000
        if response.status != 200:
            raise RuntimeError(f"{path}: {response.status} {body[:200]!r}")
        data = json.loads(body) if response.getheader("Content-Type",
                                                      "").startswith("application/json") else {}
        return data.get("server_ms", 0.0), elapsed, data


def serve(home: Path) -> InspectorServer:
    server = InspectorServer("127.0.0.1", 0, home)
    threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.1}, daemon=True).start()
    return server


def timed(client: Client, paths: list[str]) -> tuple[list[float], list[float]]:
    server, trip = [], []
    for path in paths:
        s, t, _ = client.get(path)
        server.append(s)
        trip.append(t)
    return server, trip


def p(values: list[float], q: float) -> float:
    values = sorted(values)
    return values[min(len(values) - 1, int(q * len(values)))]


def measure(home: Path, label: str, samples: int) -> list[tuple[str, str, str]]:
    rows = []
    server = serve(home)
    client = Client(server.url)
    api = f"/api/agents/{AGENT}"
    first_server, first_trip, overview = client.get(api)
    page_trip = sum(client.get(path)[1] for path in ("/", "/static/app.css", "/static/app.js", "/api/agents"))
    rows.append((f"{label}: first view, fresh server",
                 f"{first_server:.1f} ms server ({first_trip:.1f} ms HTTP;"
                 f" page, assets and agent list +{page_trip:.1f} ms)", "<= 300 ms server"))
    warm_server, warm_trip = timed(client, [api] * 20)
    rows.append((f"{label}: first view, warm p50 / p95",
                 f"{p(warm_server, .5):.1f} / {p(warm_server, .95):.1f} ms"
                 f" server ({p(warm_trip, .5):.1f} ms HTTP)", "<= 300 ms server"))
    newest = overview["timeline"]["newest_seq"]
    rng = random.Random(11)
    cursors = [rng.randint(60, newest) for _ in range(samples)]
    for name, query in (("timeline page (50) at random depth", ""), ("  filtered to ERROR", "&type=ERROR"),
                        ("  filtered to TOOL_USE,THOUGHT", "&type=TOOL_USE,THOUGHT")):
        s, t = timed(client, [f"{api}/log?before={c}{query}" for c in cursors])
        rows.append((f"{label}: {name} p50 / p95", f"{p(s, .5):.1f} / {p(s, .95):.1f} ms server"
                     f" ({p(t, .5):.1f} ms HTTP)", "<= 50 ms"))
    runs = [r["run_id"] for r in overview["runs"]][:samples]
    s, t = timed(client, [f"{api}/log?run={r}" for r in runs])
    rows.append((f"{label}:   one run p50 / p95", f"{p(s, .5):.1f} / {p(s, .95):.1f} ms server", "<= 50 ms"))
    archives = [c["archive_id"] for c in overview["compactions"]["compactions"] if c["archive_exists"]]
    if archives:
        s, t = timed(client, [f"{api}/log?archive={a}" for a in archives])
        rows.append((f"{label}:   one archive p50", f"{p(s, .5):.1f} ms server", "<= 50 ms"))
    s, t = timed(client, [f"{api}/activity"] * 20)
    rows.append((f"{label}: activity chart (entries by type a period, compactions, growth) p50 / p95",
                 f"{p(s, .5):.1f} / {p(s, .95):.1f} ms server ({p(t, .5):.1f} ms HTTP)", "<= 300 ms server"))
    s, t = timed(client, [f"{api}/now/versions"] * 20)
    rows.append((f"{label}: NOW.md's versions (first page) p50", f"{p(s, .5):.1f} ms server", "<= 50 ms"))
    s, t = timed(client, [f"{api}/log?after={newest - 3}"] * samples)
    rows.append((f"{label}: live update (entries after the newest shown) p50", f"{p(s, .5):.1f} ms server",
                 "-"))
    for name, word in (("search, frequent word", "consistent"),
                       ("search, word in one old entry", "Task%201:")):
        s, t = timed(client, [f"{api}/log?q={word}"] * 5)
        rows.append((f"{label}: {name} p50", f"{p(s, .5):.1f} ms server", "-"))
    if overview["conversations"]:
        conv = overview["conversations"][0]
        s, t, detail = client.get(f"{api}/conversations/{conv['id']}")
        rows.append((f"{label}: conversation of {conv['messages']:,} msgs (DAG tops + 50 msgs)",
                     f"{s:.1f} ms server",
                     "-"))
        s, _, _ = client.get(f"{api}/summaries/{detail['roots'][0]['id']}")
        rows.append((f"{label}: expand a summary", f"{s:.1f} ms server", "-"))
    server.shutdown()
    server.stop()
    return rows


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--entries", type=int, default=100_000, help="LOG.md entries (default 100,000)")
    parser.add_argument("--messages", type=int, default=10_000, help="conversation messages (default 10,000)")
    parser.add_argument("--samples", type=int, default=200,
                        help="timeline pages measured per kind (default 200)")
    parser.add_argument("--home", type=Path,
                        help="agents home to build in and reuse (default: a temporary one)")
    args = parser.parse_args()
    logging.basicConfig(level=logging.ERROR)
    os.environ["OLLAMA_HOST"] = "http://127.0.0.1:9"  # nothing listens: see CONFIG
    scratch = tempfile.TemporaryDirectory()
    home = (args.home or Path(scratch.name) / "agents").absolute()
    try:
        if not (home / AGENT / "memory" / "LOG.md").exists():
            build_log(home, args.entries)
            build_conversation(home, args.messages)
        rows = measure(home, "archived", args.samples)
        flat = Path(scratch.name) / "flat"
        uncompacted_copy(home, flat)
        rows += measure(flat, "one LOG.md", args.samples)
    except AgentOSError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    finally:
        scratch.cleanup()
    print_table([("measure", "measured", "target"), *rows])
    return 0


def print_table(rows: list[tuple[str, str, str]]) -> None:
    """Rows in columns as wide as their widest cell."""
    widths = [max(len(row[column]) for row in rows) for column in range(2)]
    for name, measured, target in rows:
        print(f"{name:<{widths[0]}}  {measured:<{widths[1]}}  {target}")


if __name__ == "__main__":
    raise SystemExit(main())
