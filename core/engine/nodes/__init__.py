"""The engine's graph nodes: load_memory → planner ⇄ tools → finalize.

Each node is a function ``node(state, runtime) -> update`` and is idempotent:
after a kill -9 LangGraph re-runs only the interrupted node, so a node checks
LOG.md for what it already did (by turn id or tool call id) before doing it.
"""
