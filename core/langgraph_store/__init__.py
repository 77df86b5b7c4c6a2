"""A LangGraph store backed by an AgentOS agent's memory: ``AgentOSStore("finn")``."""

from core.langgraph_store.store import AgentOSStore

__all__ = ["AgentOSStore"]
