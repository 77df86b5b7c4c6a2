"""Processes: a clean exit while background work runs, fork, a kill between two steps of a write, file
names."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from core.engine.conversation import Conversation
from core.errors import CorruptionError
from core.memory.handoffs import handoff_file
from core.memory.provider import Session
from core.memory_manager import MemoryManager
from core.memory.secrets.redaction import redactor_for
from core.paths import AgentPaths
from core.plugins.memory import open_provider
from core.engine.toolbox.toolbox import build_toolbox
from memory_format_checks import parse_log_file

ROOT = Path(__file__).resolve().parent.parent


def no_secrets():
    """The redactor of an agent with no secrets saved."""
    return redactor_for([])


def run_child(script: str, home: Path, timeout: float = 120) -> subprocess.CompletedProcess:
    env = dict(os.environ, AGENTOS_HOME=str(home), PYTHONPATH=str(ROOT))
    return subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, text=True,
                          timeout=timeout)


EXIT_WHILE_INDEXING = """
import sys, time
from core.memory_manager import MemoryManager

manager = MemoryManager("finn")
i = 0
while not manager.compaction.busy():
    i += 1
    manager.append_log("THOUGHT", f"entry {i} " + "word " * 100)
while manager.log.first_entry().type != "SUMMARY":  # swapped: the thread is indexing the archive now
    time.sleep(0.01)
print("exiting while indexing", flush=True)
sys.exit(0)
"""


@pytest.mark.slow
@pytest.mark.slow
def test_exiting_while_background_indexing_runs_is_clean_and_the_next_open_finishes(
    agents_home: Path,
) -> None:
    """A script that exits during automatic compaction's indexing exits 0 (no SIGABRT); the next open
    indexes."""
    done = run_child(EXIT_WHILE_INDEXING, agents_home)
    assert done.returncode == 0, done.stderr[-2000:]
    assert "terminate called" not in done.stderr and "Traceback" not in done.stderr
    with MemoryManager("finn") as manager:
        assert manager.compaction.wait(timeout=120)
        assert manager.cold.indexer.pending() == 0
        archive = Path(manager.log.first_entry().metadata["archive"]).stem
        assert manager.recall_memory("entry 3 word", 1, kind="log_archive",
                                     min_score=0)[0]["where"]["archive"] == archive


EXIT_WITH_FOUR_AGENTS = """
import subprocess, sys, time
from core.memory_manager import MemoryManager

managers = [MemoryManager(name) for name in ("ada", "bob", "cyd", "dee")]
for n, manager in enumerate(managers):
    # Long notes first: the first vectors computed are the costliest to compute (two model windows each, and
    # the first four past 2,000 characters have chunk vectors too).
    design = [f"design note {k} of agent {n} about retries, backoff and timeouts " * (80 if k < 4 else 30)
              for k in range(64)]
    manager.store_memories(design + [f"note {i} about service {i % 7} on host {i % 3}" for i in range(40)])
    manager.append_log("THOUGHT", f"agent {n}: the billing service timed out again")
    manager.save_fact(f"drink{n}", "tea", "preference")
writer = subprocess.Popen([sys.executable, "-c", "from core.memory_manager import MemoryManager\\n"
                           "m = MemoryManager('ada')\\nwhile True: m.append_log('THOUGHT', 'child writer')"])
ada_log = managers[0].paths.log_file
while b"child writer" not in ada_log.read_bytes():
    time.sleep(0.01)
writer.kill()
writer.wait()
# Return as soon as the embedding model is loaded: every agent's first batch is under way.
from core.llm.embedding import embedders
while not embedders._minilm_models:
    time.sleep(0.01)
print("pending", sum(m.cold.docs.pending_count() for m in managers), flush=True)
"""


@pytest.mark.slow
@pytest.mark.timeout(1800)  # five children of up to 300 s each
def test_a_process_with_four_agents_indexing_exits_cleanly_every_time(agents_home: Path, monkeypatch) -> None:
    """A script that opens four agents, writes to each, kills a child writer and returns while their vectors
    are being computed exits 0 every time (no inference is in flight when the interpreter finalizes); the work
    it left is queued and the next open finishes it."""
    for attempt in range(5):
        home = agents_home.parent / f"home{attempt}"
        done = run_child(EXIT_WITH_FOUR_AGENTS, home, timeout=300)
        assert done.returncode == 0, done.stderr[-2000:]
        assert "terminate called" not in done.stderr and "Traceback" not in done.stderr
        assert int(done.stdout.split()[-1]) > 0  # it did exit with work left
    monkeypatch.setenv("AGENTOS_HOME", str(home))
    with MemoryManager("dee") as manager:
        manager.cold.catch_up()
        assert manager.cold.docs.pending_count() == 0
        assert manager.recall_memory("long design note about retries", 1, min_score=0)


KILLED_BEFORE_THE_REPLACE = """
import os, signal
from core.durable import fsutil
from core.memory_manager import MemoryManager

manager = MemoryManager("finn")
manager.update_now("active", ["one"], objective="first")
install = fsutil.StagedFile.install

def killed_before_the_replace(self):
    if self.path.name == "NOW.md":
        os.kill(os.getpid(), signal.SIGKILL)
    return install(self)

fsutil.StagedFile.install = killed_before_the_replace
manager.update_now("active", ["two"], objective="second")
"""


@pytest.mark.slow
def test_a_kill_between_the_now_update_line_and_the_replace_never_reuses_a_version(agents_home: Path) -> None:
    """NOW.md is brought forward to the NOW_UPDATE a killed writer logged; the next update takes the next
    version."""
    done = run_child(KILLED_BEFORE_THE_REPLACE, agents_home)
    assert done.returncode == -signal.SIGKILL, done.stderr[-2000:]
    with MemoryManager("finn") as manager:
        now = manager.read_now()
        assert (now["version"], now["objective"], now["next_steps"]) == (2, "second", ["two"])
        assert manager.update_now("done")["version"] == 3
        versions = [e["meta"]["version"] for e in parse_log_file(manager.paths.log_file)
                    if e["type"] == "NOW_UPDATE"]
        assert versions == [1, 2, 3]


KILLED_WRITE_FILE = """
import os, signal
from core.paths import AgentPaths
from core.engine.toolbox.workspace import Workspace

def killed(src, dst):
    os.kill(os.getpid(), signal.SIGKILL)

os.replace = killed
Workspace(AgentPaths.for_agent("finn").workspace_dir).write_file("notes/plan.md", "a plan " * 1000)
"""


@pytest.mark.slow
def test_the_temp_file_of_a_killed_write_file_is_removed(agents_home: Path) -> None:
    """write_file killed before its rename leaves a temp file; the next toolbox removes it, not the live
    ones."""
    MemoryManager("finn").close()
    done = run_child(KILLED_WRITE_FILE, agents_home)
    assert done.returncode == -signal.SIGKILL
    notes = agents_home / "finn" / "workspace" / "notes"
    left = [p.name for p in notes.iterdir()]
    assert len(left) == 1 and left[0].startswith(".plan.md.") and left[0].endswith(".tmp")
    mine = notes / f".draft.md.{os.getpid()}.tmp"  # a live writer's temp file stays
    mine.write_text("in progress")
    tools = build_toolbox(AgentPaths.for_agent("finn"))
    assert sorted(p.name for p in notes.iterdir()) == [mine.name]
    assert tools.call("list_files", {"path": "."})["files"] == []


@pytest.mark.slow
def test_a_memory_manager_used_across_fork_serves_eight_children(agents_home: Path) -> None:
    """8 forked children write through the parent's MemoryManager at once: every write lands, none blocks."""
    agents_home.mkdir(parents=True, exist_ok=True)
    (agents_home / "config.yaml").write_text("memory:\n  auto_compact: false\n")
    manager = MemoryManager("finn")
    manager.append_log("THOUGHT", "parent before the fork")
    manager.save_fact("owner", "parent")
    children = []
    for child in range(8):
        pid = os.fork()
        if pid == 0:  # pragma: no cover - runs in the child
            status = 0
            try:
                for i in range(20):
                    manager.append_log("THOUGHT", f"child {child} entry {i}")
                    if i % 10 == 0:
                        manager.save_fact(f"child{child}", str(i))
                        manager.update_now("active", [f"child {child} step {i}"])
            except BaseException as exc:  # noqa: BLE001 - reported through the exit status
                print(f"child {child}: {type(exc).__name__}: {exc}", file=sys.stderr, flush=True)
                status = 1
            os._exit(status)
        children.append(pid)
    statuses = [os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1]) for pid in children]
    assert statuses == [0] * 8
    entries = parse_log_file(manager.paths.log_file)
    assert len(entries) == 2 + 8 * (20 + 2 + 2)
    assert [e["seq"] for e in entries] == list(range(1, len(entries) + 1))
    assert len(manager.list_facts()) == 9 and manager.read_now()["version"] == 16
    manager.close()


def test_per_session_handoff_files_are_distinct_for_ids_that_differ_in_punctuation(agents_home: Path) -> None:
    """finn:a:b and finn:a_b get separate handoff files; each session reads only its own summary."""
    paths = AgentPaths.for_agent("finn")
    MemoryManager("finn").close()
    provider = open_provider("simple", paths.db_file)
    summaries = {}
    for sid in ("finn:a:b", "finn:a_b"):
        conversation = Conversation(provider, Session(sid, agent_id="finn"), paths, fresh_tail=2,
                                    redactor=no_secrets)
        conversation.append_turn("t", [{"role": "user", "content": f"{sid} " + "words " * 200}] * 6)
        conversation.compact(lambda prompt, sid=sid: f"summary of {sid}", keep_tail=2)
        summaries[sid] = conversation
    assert handoff_file(paths, "finn:a:b") != handoff_file(paths, "finn:a_b")
    for sid, conversation in summaries.items():
        assert conversation.handoff().summary == f"summary of {sid}"
    provider.close()


@pytest.mark.parametrize("content", ['[]', '"a summary"', '{"summary": "s"}',
                                     '{"summary": "s", "covered": "x"}', '{"summary": ["s"], "covered": 2}',
                                     '{"summary": "s", "covered": -1}'])
def test_a_handoff_file_of_another_shape_is_a_clear_error_naming_the_fix(agents_home: Path, content) -> None:
    """A handoff file comes back as it was written, or from an archive (restored as is): one that is not an
    object with a text summary and a count is a CorruptionError saying to delete it, never an AttributeError,
    KeyError or ValueError traceback."""
    paths = AgentPaths.for_agent("finn")
    MemoryManager("finn").close()
    handoff_file(paths, "finn:a").parent.mkdir(parents=True, exist_ok=True)
    handoff_file(paths, "finn:a").write_text(content)
    provider = open_provider("simple", paths.db_file)
    conversation = Conversation(provider, Session("finn:a", agent_id="finn"), paths, fresh_tail=2,
                                redactor=no_secrets)
    with pytest.raises(CorruptionError, match="is not a handoff summary.*delete it"):
        conversation.handoff()
    provider.close()


def test_a_handoff_file_under_the_earlier_name_is_taken_over_by_its_own_session(agents_home: Path) -> None:
    """A summary saved as sessions/<id>.handoff.json is renamed for its session, never read by another one."""
    paths = AgentPaths.for_agent("finn")
    folder = paths.memory_dir / "sessions"
    folder.mkdir(parents=True)
    (folder / "finn_a_b.handoff.json").write_text(json.dumps(
        {"summary": "old summary", "covered": 2, "created_at": "", "session": "finn:a:b"}))
    provider = open_provider("simple", paths.db_file)
    other = Conversation(provider, Session("finn:a_b", agent_id="finn"), paths, fresh_tail=2,
                         redactor=no_secrets)
    assert other.handoff() is None
    mine = Conversation(provider, Session("finn:a:b", agent_id="finn"), paths, fresh_tail=2,
                        redactor=no_secrets)
    assert mine.handoff().summary == "old summary"
    assert not (folder / "finn_a_b.handoff.json").exists()
    provider.close()
