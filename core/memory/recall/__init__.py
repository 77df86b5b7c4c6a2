"""core.memory.recall."""
