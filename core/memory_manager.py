"""The import path the seeds document: ``from core.memory_manager import MemoryManager``."""

from core.memory import MemoryManager

__all__ = ["MemoryManager"]
