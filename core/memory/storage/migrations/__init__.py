"""Numbered migrations of memory.db: one module ``mNNN_name.py`` each, with ``apply(conn)``."""
