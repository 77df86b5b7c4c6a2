"""AgentOS: agents whose whole state lives in files.

``core`` holds the library and the applications built on it; each shows its own face. The library:
:mod:`core.memory` (``MemoryManager`` and every tier behind it), :mod:`core.llm` (model backends and
embedders), :mod:`core.errors` (the one exception tree), :mod:`core.paths` and :mod:`core.config`,
:mod:`core.transfer` (export and import) and :mod:`core.langgraph_store`. The applications:
:mod:`core.engine`, :mod:`core.commands` (``agentos``), :mod:`core.mcp_server`, :mod:`core.inspector`.

This module re-exports none of them: ``import core.errors`` would then load the whole memory (1.3 s
against 0.02 s), and the memory's storage reads :data:`__version__` from here.
"""

__version__ = "0.2.0"
"""The package version; pyproject.toml reads it from here."""

__all__ = ["__version__"]
