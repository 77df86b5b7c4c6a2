"""The engine's graph and its runs: one agent on its memory.

Graph: load_memory → planner ⇄ tools → finalize, checkpointed after every node
in ``memory/checkpoints.db`` (LangGraph's SQLite saver, strict durability) or
in the agent's PostgreSQL schema (its Postgres saver), one thread per agent
session. A run killed at any moment is found on the next start (RUN_START
without RUN_END → INTERRUPTED) and its turn goes on from the last checkpoint:
only the interrupted node runs again, and it skips what LOG.md shows it
already did.
"""

from __future__ import annotations

import logging
import traceback
import uuid
from dataclasses import dataclass
from typing import Any

from langgraph.graph import END, START, StateGraph

from core.config import Config, load_config
from core.engine.conversation import CompactionReport, Conversation
from core.engine.prompting.budgets import window_of
from core.engine.prompting.context_builder import ContextBuilder
from core.errors import (AgentOSError, BackendError, ContextWindowTooSmallError, EngineError,
                         SessionNotFoundError)
from core.llm import Backend, PromptCounts, choose_backend, generate_with
from core.memory.provider import ListOptions, Session, Summarizer
from core.engine.toolbox.memory_tool import memory_tools
from core.engine.nodes.finalize import finalize
from core.engine.nodes.load_memory import FINISHED, load_memory
from core.engine.nodes.planner import planner
from core.engine.nodes.runtime import Runtime, cut_warning, is_continue, is_status
from core.engine.task_input import mask_credentials
from core.engine.nodes.tools import tools
from core.paths import AgentPaths
from core.plugins.memory import open_provider
from core.engine.session_compaction import auto_compact, compact_session
from core.engine.task_input import check_task
from core.memory import hold_lease, open_checkpointer, open_database, shared_manager
from core.engine.state import AgentState
from core.engine.toolbox.toolbox import build_toolbox

log = logging.getLogger(__name__)

LOCAL_USER = "local"
"""The user id of the command line (profiles and constraints are per user and agent)."""


@dataclass(frozen=True)
class TurnResult:
    """How a turn ended."""

    response: str
    """The answer for the user (or what went wrong and what to do)."""
    outcome: str
    """``done``, ``error`` or ``step_limit``."""
    run_id: str
    steps: int = 0
    tool_calls: int = 0
    usage: PromptCounts | None = None
    """The prompt tokens of the run's model calls as the server counted them (from its cache, evaluated),
    for a backend of a model server."""
    warnings: tuple[str, ...] = ()
    """What the user should know about the run beside its answer (a reply cut at the token limit, and which
    setting to raise)."""

    @property
    def ok(self) -> bool:
        return self.outcome == "done"


def build_graph(rt: Runtime, checkpointer: Any) -> Any:
    """The compiled graph: load_memory → planner ⇄ tools → finalize."""
    graph = StateGraph(AgentState)
    graph.add_node("load_memory", lambda state: load_memory(state, rt))
    graph.add_node("planner", lambda state: planner(state, rt))
    graph.add_node("tools", lambda state: tools(state, rt))
    graph.add_node("finalize", lambda state: finalize(state, rt))
    graph.add_edge(START, "load_memory")
    graph.add_edge("load_memory", "planner")
    graph.add_conditional_edges("planner", lambda state: after_planner(state, rt),
                                ["tools", "planner", "finalize"])
    graph.add_conditional_edges("tools", lambda state: after_tools(state, rt), ["planner", "finalize"])
    graph.add_edge("finalize", END)
    return graph.compile(checkpointer=checkpointer)


def after_planner(state: AgentState, rt: Runtime) -> str:
    """Run the tools the model asked for, retry a failed call, or finish."""
    if state.get("outcome") or state.get("retries", 0) > rt.config.engine.max_retries:
        return "finalize"
    if state.get("pending_tool_calls"):
        return "tools"
    if state["messages"] and state["messages"][-1]["role"] == "assistant":
        return "finalize"
    return "planner"


def after_tools(state: AgentState, rt: Runtime) -> str:
    """Back to the model with the results, unless errors used up the retries."""
    return "finalize" if state.get("retries", 0) > rt.config.engine.max_retries else "planner"


class Engine:
    """One agent session: memory, backend, tools, conversation and the checkpointed graph."""

    def __init__(
        self,
        agent_name: str,
        *,
        session: str = "main",
        offline: bool = False,
        model: str | None = None,
        host: str | None = None,
        backend: Backend | None = None,
        config: Config | None = None,
        backend_name: str | None = None,
        new_session: bool = True,
    ) -> None:
        """Open the agent (creating its memory on first use) and recover interrupted runs.

        ``backend_name`` (``--backend``: auto, ollama, openai, offline) overrides ``llm.backend``; ``backend``
        is a backend object to use instead of choosing one. ``new_session=False`` opens only a session that
        has a conversation already (``agentos compact-session``: a mistyped name creates none).

        Raises:
            InvalidAgentNameError, ConfigError: bad agent name or config; nothing is created.
            SessionNotFoundError: ``new_session`` is False and the session has no conversation (exit code 4).
            LockTimeoutError: another engine is running this agent (with PostgreSQL: this session) (exit code
                5).
        """
        self.paths = AgentPaths.for_agent(agent_name)
        self.config = config or load_config(self.paths)
        self.manager = shared_manager(agent_name)
        self._lease = hold_lease(self.paths, self.config.storage, f"{self.paths.name}:{session}")
        try:
            self._open(session, offline, model, host, backend, backend_name, new_session)
        except BaseException:
            self._lease.release()
            raise
        self.recovered = self.recover()

    def _open(self, session: str, offline: bool, model: str | None, host: str | None,
              backend: Backend | None, backend_name: str | None, new_session: bool) -> None:
        """Choose the backend, open the provider, the tools and the checkpointed graph."""
        if backend is None:
            choice = choose_backend(self.config.llm, offline=offline, model=model, host=host,
                                    kind=backend_name)
            backend, self.notice = choice.backend, choice.notice
        else:
            self.notice = f"backend: {backend.name}, model {backend.model}"
        self.backend = backend
        if backend.name == "offline":  # the user was told there is no model: compaction looks for none
            self.manager.compaction.without_model = True
        elif self.config.memory.compact_summarizer == "llm":  # LOG.md summaries by the run's model
            self.manager.compaction.summary_llm = generate_with(backend)
        self.provider = open_provider(None, open_database(self.paths, self.config.storage),
                                      summarizer=self._summarizer(), config=self.config.provider)
        name = self.paths.name
        self.session = Session(id=f"{name}:{session}", agent_id=name, user_id=LOCAL_USER, channel="cli")
        if not new_session:
            _existing_session(self.provider, self.session)
        self.conversation = Conversation(self.provider, self.session, self.paths,
                                         self.config.provider.fresh_tail,
                                         redactor=self.manager.facts.redactor)
        toolbox = build_toolbox(self.paths, extra=memory_tools(self.provider, self.session))
        self.runtime = Runtime(self.manager, backend, toolbox, self.conversation, self.config,
                               identity=self.conversation.identity)
        self.runtime.context = ContextBuilder(self.runtime)
        self._check_window()
        self._checkpoints = open_checkpointer(self.paths, self.config.storage)
        self.graph = build_graph(self.runtime, self._checkpoints.saver)
        self.thread = {"configurable": {"thread_id": self.session.id},
                       "recursion_limit": 2 * self.config.engine.max_steps + 10}

    def _check_window(self) -> None:
        """Fail at start-up when the model's window cannot hold the prompt's fixed parts.

        A server that cannot be asked now is not an error here: the first model call reports it.

        Raises:
            ContextWindowTooSmallError: the window is too small (the message says what to set).
        """
        try:
            budgets = self.runtime.context.check()
        except ContextWindowTooSmallError:
            self.provider.close()
            raise
        except BackendError as exc:
            log.info("model window not checked at start-up: %s", exc)
            return
        log.info("budgets of %s: %s", self.backend.model, budgets)
        source = getattr(self.backend, "window_source", "")
        if source:
            self.notice += f"\nwindow: {budgets.num_ctx} tokens ({source})"
        if self.runtime.context.tools_note:
            self.notice += f"\n{self.runtime.context.tools_note}"

    def window_status(self) -> str:
        """The model's window, the last prompt's size and the estimate's error (``/status``)."""
        describe = getattr(self.backend, "describe_window", None)
        if describe is not None:
            return describe()
        window = window_of(self.backend, self.config)
        return (
            f"window {window.num_ctx} tokens, {window.chars_per_token:.2f} chars/token; no prompt measured "
            "yet"
        )

    def _summarizer(self) -> Summarizer:
        from core.plugins.memory.lcm import DeterministicSummarizer, LLMSummarizer

        if self.backend.name == "offline":
            return DeterministicSummarizer()
        return LLMSummarizer(generate_with(self.backend))

    # -- runs -------------------------------------------------------------------

    def recover(self) -> list[str]:
        """Mark runs that never ended (their process died) INTERRUPTED; NOW → interrupted. Return their
        ids."""
        runs = [run["run_id"] for run in self.manager.interrupted_runs()
                if not self._lease.is_live(run["run_id"])]
        for run_id in runs:
            self.manager.mark_interrupted(run_id)
        if runs:
            self.manager.update_now(
                state="interrupted", current_step="Interrupted: the last run stopped before it finished",
                resume_hint=f"Say 'continue' or run: agentos run --agent {self.paths.name} --resume",
                run_id=None,
            )
            log.warning("agent %s: %d interrupted run(s) found: %s", self.paths.name, len(runs),
                        ", ".join(runs))
        return runs

    def pending_turn(self) -> dict[str, Any] | None:
        """The state of a turn that stopped before finishing (from the checkpoint), or None."""
        snapshot = self.graph.get_state(self.thread)
        return dict(snapshot.values) if snapshot.next else None

    def run(self, task: str) -> TurnResult:
        """Run one turn for ``task``; "continue" resumes an unfinished turn from its checkpoint.

        Raises:
            BackendUnavailableError, ModelNotFoundError: the model cannot be reached (NOW and LOG say so).
            ValidationError: ``task`` is empty, not text, or larger than one LOG.md entry; nothing is written.
        """
        task = check_task(task, self.config.memory.max_entry_bytes,
                          self.manager.facts.redactor(forgotten=False))
        pending = self.pending_turn()
        if pending is not None and is_continue(task):
            return self.resume()
        if pending is not None:
            self.manager.append_system("SYSTEM", f"unfinished turn {pending.get('turn_id')} set aside for a "
                                                 "new request",
                                    {"turn_id": pending.get("turn_id"), "kind": "turn_abandoned"})
        self.runtime.notes.clear()
        report = auto_compact(self.conversation, self.backend, self.config.compaction, self.manager)
        if report is not None:
            log.info("session compacted before the turn: %s -> %s tokens", report.tokens_before,
                     report.tokens_after)
        return self._invoke(self._new_turn(task), task)

    def resume(self) -> TurnResult:
        """Continue the unfinished turn from its checkpoint, or the interrupted objective in NOW.md.

        Raises:
            EngineError: there is nothing to resume.
        """
        pending = self.pending_turn()
        if pending is None:
            now = self.manager.now_state()
            if now.objective and now.status in ("interrupted", "error", "active", "blocked"):
                return self._invoke(self._new_turn("Continue"), "Continue")
            raise EngineError("nothing to resume: the last turn finished and NOW.md has no open objective")
        self.runtime.resumed = True
        try:
            task = pending.get("task", "")
            return self._invoke(None, f"resume: {task}", request=task)
        finally:
            self.runtime.resumed = False

    def compact(self) -> CompactionReport:
        """Compact the session now (``/compact``).

        Raises:
            SummarizerError: the summary failed or was empty; the session is untouched.
        """
        return compact_session(self.conversation, self.backend, self.config.compaction, self.manager)

    def _new_turn(self, task: str) -> AgentState:
        return AgentState(
            task=task, turn_id=uuid.uuid4().hex[:12], session_id=self.session.id, agent_name=self.paths.name,
            auto_log_enabled=True, memory_context=None, messages=[], pending_tool_calls=[], steps=0,
            tool_calls_done=0, retries=0, errors=[], final_response="", outcome="",
        )

    def _invoke(self, state: AgentState | None, objective: str, request: str | None = None) -> TurnResult:
        """Run the graph from ``state`` (None: the checkpoint) as the run ``objective``; ``request`` is the
        user's request of a resumed turn (else ``objective``)."""
        run_id = uuid.uuid4().hex[:12]
        try:
            # before RUN_START: another engine never takes it for a dead run
            with self._lease.running(run_id):
                return self._run(state, objective, run_id, objective if request is None else request)
        finally:
            self.manager.reflect_soon(self.backend)  # learns from the run in the background; never waits

    def _run(self, state: AgentState | None, objective: str, run_id: str, request: str) -> TurnResult:
        self.manager.start_run(mask_credentials(objective)[:300], run_id=run_id)
        self.runtime.run_id = run_id
        self.runtime.cut_replies = []
        # What an earlier run was blocked by is checked again by this one: its blockers go once the
        # model answers.
        self.runtime.stale_blockers = list(self.manager.now_state().blockers)
        counts = getattr(self.backend, "counts", None)
        before = counts.copy() if isinstance(counts, PromptCounts) else None
        try:
            final = self.graph.invoke(state, self.thread, durability="sync")
        except BaseException as exc:
            self._fail(run_id, exc, request)
            raise
        usage = counts.since(before) if before is not None else None
        if usage is not None:
            log.info("run %s: %s", run_id, usage.describe())
        outcome = final.get("outcome") or "error"
        response = final.get("final_response") or ""
        detail = response[:500] if outcome == "done" else (final.get("errors") or [""])[-1]
        self.manager.end_run(run_id, outcome, detail)
        # The finished turn is in the provider (secrets redacted): its checkpoints, which hold the
        # raw messages, are no longer needed to resume anything.
        self._checkpoints.forget(self.session.id)
        warning = cut_warning(self.runtime)
        return TurnResult(response, outcome, run_id, final.get("steps", 0), final.get("tool_calls_done", 0),
                          usage, (warning,) if warning else ())

    def _fail(self, run_id: str, exc: BaseException, task: str) -> None:
        """Self-annealing for an error that stops the run: log it, NOW says what to do, RUN_END error."""
        # Ctrl-C, or `| head` stopped reading the reply
        if isinstance(exc, (KeyboardInterrupt, BrokenPipeError)):
            why = (
                "stopped by the user"
                if isinstance(exc, KeyboardInterrupt)
                else "the reader of the reply went away"
            )
            self.manager.end_run(run_id, "interrupted", why)
            self.manager.update_now(state="interrupted", current_step=why[0].upper() + why[1:],
                                    resume_hint=f"Run: agentos run --agent {self.paths.name} --resume")
            return
        line = f"{type(exc).__name__}: {exc}"
        self.manager.append_system("ERROR", line, {"run_id": run_id, "traceback": traceback.format_exc()})
        if is_status(task) or (is_continue(task) and self.manager.now_state().status in FINISHED):
            # The request only read NOW (or found nothing to continue): its failure reopens no objective, or
            # --resume would run a finished request again.
            self.manager.end_run(run_id, "error", line[:500])
            return
        self.manager.update_now(
            state="error", current_step="Error encountered - recovery needed", blockers=[line[:300]],
            next_steps=["Review LOG.md", "Fix the cause (see the error)", "Run again with --resume"],
            resume_hint=f"After fixing the cause run: agentos run --agent {self.paths.name} --resume",
        )
        self.manager.end_run(run_id, "error", line[:500])
        if not isinstance(exc, AgentOSError):
            log.error("run %s failed with an unexpected error", run_id, exc_info=exc)

    def close(self) -> None:
        """Close the checkpoint database and the provider, and let another engine run the agent. Safe
        twice."""
        self._checkpoints.close()
        self.provider.close()
        self._lease.release()

    def __enter__(self) -> "Engine":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _existing_session(provider: Any, session: Session) -> None:
    """Refuse a session that has no conversation, naming those there are (nothing is created)."""
    stored = provider.list_info(ListOptions(agent_id=session.agent_id, include_archived=True))
    if any(info.id == session.id for info in stored):
        return
    prefix = f"{session.agent_id}:"
    names = sorted(info.id.removeprefix(prefix) for info in stored)
    fix = (f"its sessions: {', '.join(names)} (--session NAME)" if names else
           f"it has none yet: agentos run --agent {session.agent_id} starts one")
    missing = session.id.removeprefix(prefix)
    raise SessionNotFoundError(f"agent {session.agent_id} has no session {missing!r}; {fix}")
