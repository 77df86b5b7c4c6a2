"""core.memory.storage."""
