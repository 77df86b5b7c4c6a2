"""Plugins: conversation-memory providers under ``core.plugins.memory``."""
