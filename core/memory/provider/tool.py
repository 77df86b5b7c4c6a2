"""The ``memory`` tool, generated from a provider's capabilities.

Its ``action`` enum and JSON schema list exactly what the provider can do.
Session, user and agent come from :mod:`core.memory.provider.context`, never
from the model's arguments, so a model cannot reach another user's memory.
"""

from __future__ import annotations

import dataclasses
import json
from dataclasses import dataclass
from typing import Any, Callable

from core.errors import ToolArgumentError, shown
from core.memory.provider.capabilities import (
    ChangelogReader,
    ConstraintStore,
    Explorer,
    ProfileStore,
    Searcher,
    SessionSnapshotStore,
    VersionedProfileStore,
)
from core.memory.provider import context
from core.memory.provider.types import SearchQuery, SearchScope

TOOL_NAME = "memory"
PARAMETERS: dict[str, dict[str, Any]] = {
    "query": {"type": "string", "description": "Words to search for (search)."},
    "scope": {"type": "string", "enum": [s.value for s in SearchScope],
              "description": "Where to search: messages, summaries or both (search; default both)."},
    "limit": {"type": "integer", "minimum": 1, "maximum": 50,
              "description": "Most results (search, profile_history; default 10)."},
    "id": {"type": "string", "description": "A summary id like sum_0123abcd (describe, expand), "
                                            "a constraint id like con_0123abcd (constraint_remove) "
                                            "or a memory id as recall returns it (forget)."},
    "before": {"type": "string", "description": "A date such as 2023-05-08 or '8 May 2023': forget what "
                                                "happened before it (forget)."},
    "token_cap": {"type": "integer", "minimum": 100,
                  "description": "Most tokens to return (expand; default 4000)."},
    "content": {"type": "string", "description": "The complete new text; it replaces the old one "
                                                 "(profile_update, soul_update)."},
    "text": {"type": "string", "description": "The rule to add (constraint_add)."},
    "target": {"type": "string", "enum": ["profile", "soul", "constraint"],
               "description": "Which memory (profile_history: any; profile_rollback: profile or soul)."},
    "version": {"type": "integer", "minimum": 1,
                "description": "The memory version to go back to (profile_rollback)."},
}
_TYPES = {"string": str, "integer": int}


@dataclass(frozen=True)
class Action:
    """One action of the memory tool."""

    name: str
    description: str
    needs: tuple[type, ...]
    """Capabilities the provider must have."""
    required: tuple[str, ...] = ()
    optional: tuple[str, ...] = ()
    writes: str = ""
    """``profile`` or ``soul`` when the action writes it (for the read-only options)."""
    on_memory: bool = False
    """Runs on the agent's whole memory (``build_tool(..., memory=...)``), not on the provider."""


ACTIONS = (
    Action("status", "session statistics (messages, tokens, summaries)", ()),
    Action("search",
           "full-text search of this conversation's history (each hit's score: 0-1, higher is better)",
           (Searcher,), ("query",), ("scope", "limit")),
    Action("describe", "metadata and lineage of a summary", (Explorer,), ("id",)),
    Action("expand", "the messages or summaries a summary was built from", (Explorer,), ("id",),
           ("token_cap",)),
    Action("profile_get", "read your notes about this user", (ProfileStore,)),
    Action("profile_update", "replace your notes about this user", (ProfileStore,), ("content",),
           writes="profile"),
    Action("soul_get", "read your identity as customised by this user", (ProfileStore,)),
    Action("soul_update", "replace your identity text for this user", (ProfileStore,), ("content",),
           writes="soul"),
    Action("constraint_list", "the hard rules this user set", (ConstraintStore,)),
    Action("constraint_add", "add a hard rule the user asked for", (ConstraintStore,), ("text",)),
    Action("constraint_remove", "remove a hard rule by id", (ConstraintStore,), ("id",)),
    Action("profile_history", "recent changes to profile, soul or constraints", (ChangelogReader,), (),
           ("target", "limit")),
    Action("profile_rollback", "restore the profile or soul as it was at a version",
           (ProfileStore, VersionedProfileStore), ("version",), ("target",), writes="rollback"),
    Action("recall", "search everything you remember (log, notes, facts, conversations) by meaning and words",
           (), ("query",), ("limit",), on_memory=True),
    Action("forget",
           "forget a memory by id, or what says every word of a query and/or happened before a date",
           (), (), ("id", "query", "before"), on_memory=True),
)


@dataclass(frozen=True)
class MemoryTool:
    """The generated tool: give ``name``, ``description`` and ``parameters`` to the model, then ``call``."""

    name: str
    description: str
    parameters: dict[str, Any]
    """JSON schema of the arguments."""
    actions: tuple[str, ...]
    provider: Any
    read_only: frozenset[str]
    memory: Any = None
    """The agent's ``MemoryManager`` for the recall and forget actions (None: not offered)."""

    def schema(self) -> dict[str, Any]:
        """The tool in Ollama's ``tools=[...]`` format."""
        return {"type": "function", "function": {"name": self.name, "description": self.description,
                                                 "parameters": self.parameters}}

    def required(self, action: str) -> tuple[str, ...]:
        """The arguments ``action`` needs."""
        return next(a.required for a in ACTIONS if a.name == action)

    def call(self, arguments: dict[str, Any]) -> str:
        """Run one action for the bound session and return its result as JSON text.

        Raises:
            ToolArgumentError: unknown action, unknown or missing argument, wrong type.
            ProviderError: no session is bound (see ``core.memory.provider.bind``).
        """
        action, args = self._check(arguments)
        result = _HANDLERS[action](self, args)
        return json.dumps(_plain(result), ensure_ascii=False, allow_nan=False)

    def _check(self, arguments: Any) -> tuple[str, dict[str, Any]]:
        if not isinstance(arguments, dict):
            raise ToolArgumentError("memory tool arguments must be an object, got "
                                    f"{type(arguments).__name__}")
        action = arguments.get("action")
        if action not in self.actions:
            raise ToolArgumentError(f"unknown memory action {action!r}; available: {', '.join(self.actions)}")
        spec = next(a for a in ACTIONS if a.name == action)
        allowed = set(spec.required) | set(spec.optional)
        args = {k: v for k, v in arguments.items() if k != "action"}
        for key, value in args.items():
            if key not in allowed:
                raise ToolArgumentError(
                    f"memory action {action!r} takes no argument {key!r}; "
                    f"it takes: {', '.join(sorted(allowed)) or 'none'}"
                )
            _check_type(action, key, value)
        missing = [key for key in spec.required if key not in args]
        if missing:
            raise ToolArgumentError(f"memory action {action!r} needs: {', '.join(missing)}")
        return action, args


def _check_type(action: str, key: str, value: Any) -> None:
    spec = PARAMETERS[key]
    expected = _TYPES[spec["type"]]
    if not isinstance(value, expected) or isinstance(value, bool):
        raise ToolArgumentError(f"memory action {action!r}: {key} must be a {spec['type']}, got "
                                f"{shown(value)}")
    if "enum" in spec and value not in spec["enum"]:
        raise ToolArgumentError(f"memory action {action!r}: {key} must be one of {', '.join(spec['enum'])}")
    if "minimum" in spec and value < spec["minimum"]:
        raise ToolArgumentError(f"memory action {action!r}: {key} must be at least {spec['minimum']}")


def build_tool(provider: Any, actions_only: tuple[str, ...] | list[str] | None = None,
               read_only_profile: bool = False, read_only_soul: bool = False,
               memory: Any = None) -> MemoryTool:
    """Build the ``memory`` tool for ``provider``.

    Args:
        provider: any provider (tracing wrappers included).
        memory: the agent's ``MemoryManager``: adds the ``recall`` and ``forget`` actions.
        actions_only: keep only these actions (those the provider supports).
        read_only_profile: drop ``profile_update`` (and profile rollback).
        read_only_soul: drop ``soul_update`` (and soul rollback).
    """
    read_only = frozenset(n for n, flag in (("profile", read_only_profile), ("soul", read_only_soul)) if flag)
    chosen = [a for a in ACTIONS if (memory is not None if a.on_memory
                                     else all(isinstance(provider, need) for need in a.needs))]
    if actions_only is not None:
        unknown = set(actions_only) - {a.name for a in ACTIONS}
        if unknown:
            raise ToolArgumentError(
                f"unknown memory actions {sorted(unknown)}; known: {', '.join(a.name for a in ACTIONS)}"
            )
        chosen = [a for a in chosen if a.name in actions_only]
    chosen = [a for a in chosen if a.writes not in read_only
              and not (a.writes == "rollback" and len(read_only) == 2)]
    names = tuple(a.name for a in chosen)
    params = {"action": {"type": "string", "enum": list(names), "description": "What to do."}}
    for action in chosen:
        for key in (*action.required, *action.optional):
            params[key] = PARAMETERS[key]
    description = "Your conversation memory for this user and session. Actions: " + "; ".join(
        f"{a.name} ({', '.join(a.required) or 'no arguments'}): {a.description}" for a in chosen
    ) + "."
    schema = {"type": "object", "properties": params, "required": ["action"], "additionalProperties": False}
    return MemoryTool(TOOL_NAME, description, schema, names, provider, read_only, memory)


# -- handlers: each reads who is talking from the context variables ------------------


def _status(tool: MemoryTool, args: dict) -> Any:
    session = context.current_session()
    return {"provider": tool.provider.name, "session": session.id,
            **dataclasses.asdict(tool.provider.stats(session))}


def _search(tool: MemoryTool, args: dict) -> Any:
    query = SearchQuery(args["query"], SearchScope(args.get("scope", "both")), args.get("limit", 10))
    return tool.provider.search(context.current_session(), query)


def _describe(tool: MemoryTool, args: dict) -> Any:
    return tool.provider.describe(args["id"], session=context.current_session())


def _expand(tool: MemoryTool, args: dict) -> Any:
    return tool.provider.expand(args["id"], args.get("token_cap", 4000), session=context.current_session())


def _getter(method: str, key: str) -> Callable[[MemoryTool, dict], Any]:
    def handler(tool: MemoryTool, args: dict) -> Any:
        return {key: getattr(tool.provider, method)(context.user_id(), context.agent_id())}
    return handler


def _setter(method: str, key: str) -> Callable[[MemoryTool, dict], Any]:
    def handler(tool: MemoryTool, args: dict) -> Any:
        getattr(tool.provider, method)(context.user_id(), context.agent_id(), args["content"])
        _advance_snapshot(tool)
        return {"updated": key}
    return handler


def _constraint_add(tool: MemoryTool, args: dict) -> Any:
    result = tool.provider.add_constraint(context.user_id(), context.agent_id(), args["text"])
    _advance_snapshot(tool)
    return {"constraints": result}


def _constraint_remove(tool: MemoryTool, args: dict) -> Any:
    result = tool.provider.remove_constraint(context.user_id(), context.agent_id(), args["id"])
    _advance_snapshot(tool)
    return {"constraints": result}


def _history(tool: MemoryTool, args: dict) -> Any:
    entries = tool.provider.read_changelog(context.user_id(), context.agent_id(), args.get("target", ""),
                                           args.get("limit", 10))
    return {"changes": entries}


def _rollback(tool: MemoryTool, args: dict) -> Any:
    target = args.get("target", "profile")
    if target not in ("profile", "soul"):
        raise ToolArgumentError("profile_rollback: target must be profile or soul")
    if target in tool.read_only:
        raise ToolArgumentError(f"profile_rollback: the {target} is read-only here")
    user, agent = context.user_id(), context.agent_id()
    if target == "profile":
        tool.provider.set_profile(user, agent, tool.provider.get_profile_at(user, agent, args["version"]))
    else:
        tool.provider.set_agent_soul(user, agent,
                                     tool.provider.get_agent_soul_at(user, agent, args["version"]))
    _advance_snapshot(tool)
    return {"restored": target, "version": args["version"]}


def _advance_snapshot(tool: MemoryTool) -> None:
    # The session that wrote should see its own write on its next turn.
    if isinstance(tool.provider, SessionSnapshotStore):
        session = context.current_session()
        tool.provider.advance_session_snapshot(session.id, session.user_id, session.agent_id)


def _recall(tool: MemoryTool, args: dict) -> Any:
    return {"memories": tool.memory.recall_memory(args["query"], n_results=min(args.get("limit", 10), 50),
                                                  spaces=[])}


def _forget(tool: MemoryTool, args: dict) -> Any:
    if "id" in args:
        if set(args) - {"id"}:
            raise ToolArgumentError("memory action 'forget': give an id, or a query and/or before, not both")
        return tool.memory.forget_memories(ids=[args["id"]]).as_dict()
    if "query" not in args and "before" not in args:
        raise ToolArgumentError("memory action 'forget' needs an id, or a query and/or before")
    return tool.memory.forget_memories(query=args.get("query"), before=args.get("before")).as_dict()


_HANDLERS: dict[str, Callable[[MemoryTool, dict], Any]] = {
    "recall": _recall,
    "forget": _forget,
    "status": _status,
    "search": _search,
    "describe": _describe,
    "expand": _expand,
    "profile_get": _getter("get_profile", "profile"),
    "profile_update": _setter("set_profile", "profile"),
    "soul_get": _getter("get_agent_soul", "soul"),
    "soul_update": _setter("set_agent_soul", "soul"),
    "constraint_list": lambda tool, args: {"constraints": tool.provider.get_constraints(context.user_id(),
                                                                                        context.agent_id())},
    "constraint_add": _constraint_add,
    "constraint_remove": _constraint_remove,
    "profile_history": _history,
    "profile_rollback": _rollback,
}


def _plain(value: Any) -> Any:
    """Dataclasses, enums and tuples as JSON-ready values."""
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        if hasattr(value, "to_ollama"):
            return {**value.to_ollama(), "created_at": getattr(value, "created_at", "")}
        return {f.name: _plain(getattr(value, f.name)) for f in dataclasses.fields(value)}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    if hasattr(value, "value") and not isinstance(value, (str, int, float, bool)):
        return value.value
    return value
