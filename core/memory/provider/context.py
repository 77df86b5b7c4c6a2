"""Who is talking: session, user, agent and change source, carried in context variables.

The memory tool reads these, never its arguments, so a model cannot reach
another user's memory by naming it. Bind them around a turn::

    with bind(session=Session("finn:cli", agent_id="finn", user_id="ada")):
        tool.call({"action": "profile_get"})
"""

from __future__ import annotations

from contextlib import contextmanager
from contextvars import ContextVar
from typing import Iterator

from core.errors import ProviderError
from core.memory.provider.types import ChangeSource, Session

_session: ContextVar[Session | None] = ContextVar("agentos_memory_session", default=None)
_change_source: ContextVar[ChangeSource] = ContextVar("agentos_memory_change_source",
                                                      default=ChangeSource.AGENT)


@contextmanager
def bind(session: Session | None = None, change_source: ChangeSource | None = None) -> Iterator[None]:
    """Bind the session (with its user and agent) and/or the change source for the block."""
    tokens = []
    if session is not None:
        tokens.append((_session, _session.set(session)))
    if change_source is not None:
        tokens.append((_change_source, _change_source.set(ChangeSource(change_source))))
    try:
        yield
    finally:
        for var, token in reversed(tokens):
            var.reset(token)


def bound_session() -> Session | None:
    """The bound session, or None."""
    return _session.get()


def current_session() -> Session:
    """The bound session.

    Raises:
        ProviderError: no session is bound.
    """
    session = _session.get()
    if session is None:
        raise ProviderError("no memory session is bound: wrap the call in "
                            "core.memory.provider.bind(session=...)")
    return session


def user_id() -> str:
    """The bound session's user."""
    return current_session().user_id


def agent_id() -> str:
    """The bound session's agent."""
    return current_session().agent_id


def change_source() -> ChangeSource:
    """Who is writing: ``agent`` unless bound otherwise."""
    return _change_source.get()
