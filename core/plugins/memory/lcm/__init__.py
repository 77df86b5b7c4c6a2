"""The LCM provider: lossless context management with a DAG of summaries."""

from core.plugins.memory.lcm.provider import LCMProvider
from core.plugins.memory.lcm.summarizer import DeterministicSummarizer, LLMSummarizer

__all__ = ["DeterministicSummarizer", "LCMProvider", "LLMSummarizer"]
