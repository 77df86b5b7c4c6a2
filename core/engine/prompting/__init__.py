"""core.engine.prompting."""
