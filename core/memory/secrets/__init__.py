"""core.memory.secrets."""
