"""core.memory.compaction."""
