"""LOG.md compaction into immutable archives and the summarizers (one contract, one escalation:
normal, aggressive, deterministic).

Import the names below from here; the modules of this package import each other directly.
"""

from core.memory.compaction.auto import Compaction
from core.memory.compaction.escalation import SummarizeOptions, Summarizer, Summary, summarize_escalating
from core.memory.compaction.log_compaction import LogCompactor
from core.memory.compaction.plan import CompactionReport
from core.memory.compaction.summarizer import LogSummarizer

__all__ = [
    "Compaction", "CompactionReport", "LogCompactor", "LogSummarizer", "SummarizeOptions", "Summarizer",
    "Summary", "summarize_escalating",
]
