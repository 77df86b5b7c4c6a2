"""LOG.md compaction into immutable archives, the summarizers (one contract, one escalation:
normal, aggressive, deterministic) and fitting text to a model's window.

Import the names below from here; the modules of this package import each other directly.
"""

from core.memory.faces import lazy_face

__all__, __getattr__ = lazy_face(__name__, {
    "CompactionReport": "log_compaction",
    "summarize_escalating": "escalation",
})
