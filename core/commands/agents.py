"""Subcommands about agents as a whole: run, init, status."""

from __future__ import annotations

import argparse
from typing import Any

from core.engine import cli as engine_cli
from core.commands.base import AGENT, JSON, arg, command, emit, open_memory
from core.memory.files import now_file
from core.memory.agent_folder import initialize_agent_memory, report
from core.memory import MemoryManager
from core.paths import AgentPaths, home_and_source, list_agents
from core.terminal import visible


@command("run", configure=engine_cli.add_arguments)
def run(args: argparse.Namespace) -> int:
    """Run the engine on a task, or talk to the agent interactively (the same as python -m core.engine).

    The agent must exist; --create creates it first. Interactive commands:
    /compact /status /now /log /facts /recall QUERY /exit.
    """
    return engine_cli.execute(args)


@command("init", AGENT, arg("--show", action="store_true", help="print the agent's memory afterwards"))
def init(args: argparse.Namespace) -> int:
    """Create an agent: its folders, AGENT.md and memory (says what it created; a second run creates
    nothing)."""
    created = initialize_agent_memory(args.agent)
    print(report(args.agent, created))
    if args.show:
        with MemoryManager(args.agent) as manager:
            print()
            print(visible(manager.format_context_for_prompt()))
    return 0


@command("status", arg("--agent", metavar="NAME", help="one agent in detail (default: every agent)"), JSON)
def status(args: argparse.Namespace) -> int:
    """Where the agents home is and why, its agents, and (with --agent) one agent's memory in figures."""
    home, source = home_and_source()
    if args.agent is None:
        agents = [_summary(AgentPaths.for_agent(name, home)) for name in list_agents(home)]
        data: dict[str, Any] = {"home": str(home), "home_source": source, "agents": agents}
        lines = [f"agents home: {home} ({source})"]
        lines += [f"  {a['agent']}: {a['status']}" + (f" - {a['current_step']}" if a["current_step"] else "")
                  for a in agents] or ["  no agents yet: create one with agentos init --agent NAME"]
        emit(args, data, "\n".join(lines))
        return 0
    with open_memory(args.agent) as manager:
        data = {"home": str(home), "home_source": source, **_details(manager)}
    emit(args, data, lambda: _details_text(data))
    return 0


def _summary(paths: AgentPaths) -> dict[str, Any]:
    """An agent's NOW status, read without opening (or creating) its memory."""
    if not paths.now_file.is_file():
        return {"agent": paths.name, "status": "not initialised", "current_step": ""}
    now = now_file.read(paths.now_file, paths.name)
    return {"agent": paths.name, "status": now.status, "current_step": now.current_step}


def _details(manager: MemoryManager) -> dict[str, Any]:
    now = manager.now_state()
    conn = manager.db.conn
    facts = dict(conn.execute("SELECT category, count(*) FROM user_facts GROUP BY category").fetchall())
    last = manager.read_log(1)
    return {
        "agent": manager.agent_name,
        "folder": str(manager.paths.root),
        "now": {"status": now.status, "objective": now.objective, "current_step": now.current_step,
                "version": now.version, "updated_at": now.updated_at},
        "log": {"last_seq": last[-1]["seq"] if last else 0, "bytes": manager.paths.log_file.stat().st_size,
                "archives": len(list(manager.paths.archive_dir.glob("LOG-*.md")))},
        "facts": facts,
        "notes": conn.execute("SELECT count(*) FROM cold_notes").fetchone()[0],
        "conversations": conn.execute("SELECT count(*) FROM ctx_conversations").fetchone()[0],
        "messages": conn.execute("SELECT count(*) FROM ctx_messages").fetchone()[0],
        "cold_pending": manager.cold.indexer.pending(),
        "recall": {"memories": manager.cold.docs.count(),
                   "vectors_pending": manager.cold.docs.pending_count()},
        "embedder": manager.config.cold.embedder,
        "interrupted_runs": [run["run_id"] for run in manager.interrupted_runs()],
        **_database(manager),
    }


def _database(manager: MemoryManager) -> dict[str, Any]:
    """Where the memory tables are and how big they are."""
    return {"database": manager.db.location, "memory_db_bytes": manager.db.size_bytes()}


def _details_text(data: dict[str, Any]) -> str:
    now, log = data["now"], data["log"]
    facts = ", ".join(f"{n} {category}" for category, n in sorted(data["facts"].items())) or "none"
    lines = [
        f"agents home: {data['home']} ({data['home_source']})",
        f"agent {data['agent']} in {data['folder']}",
        f"  NOW: {now['status']} - {now['current_step'] or '(no step)'} (version {now['version']}, "
        f"{now['updated_at']})",
        f"  objective: {now['objective'] or '(none)'}",
        f"  LOG.md: last seq {log['last_seq']}, {log['bytes']} bytes, {log['archives']} archive(s)",
        f"  facts: {facts}",
        f"  notes: {data['notes']}; conversations: {data['conversations']} ({data['messages']} messages)",
        f"  recall: {data['recall']['memories']} memories ({data['recall']['vectors_pending']} waiting for "
        f"their vector, {data['cold_pending']} source(s) to index); embedder {data['embedder']}",
        f"  memory tables: {data['memory_db_bytes']} bytes in {data['database']}",
    ]
    if data["interrupted_runs"]:
        lines.append(f"  interrupted runs: {', '.join(data['interrupted_runs'])} (agentos run --resume "
                     "continues)")
    return "\n".join(lines)
