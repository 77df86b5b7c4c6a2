"""core.memory.upkeep."""
