"""AgentOS: agents whose whole state lives in files."""

__version__ = "0.2.0"
"""The package version; pyproject.toml reads it from here."""
