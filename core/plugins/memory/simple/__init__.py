"""The Simple provider: a sliding window, no summaries."""

from core.plugins.memory.simple.provider import SimpleProvider

__all__ = ["SimpleProvider"]
