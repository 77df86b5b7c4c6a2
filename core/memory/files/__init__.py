"""core.memory.files."""
