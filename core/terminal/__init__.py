"""core.terminal."""
