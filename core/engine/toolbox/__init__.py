"""core.engine.toolbox."""
