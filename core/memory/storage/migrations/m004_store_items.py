"""Items of the LangGraph store (``AgentOSStore``): JSON values by namespace and key.

``texts`` holds the passages of each value chosen for recall (secrets already
redacted); the cold store indexes them. Triggers queue every change in the same
transaction, as for facts and notes.
"""

import sqlite3

from core.memory.storage.sqlite import execute_script
from core.memory.storage.migrations.m002_cold import _NOW, _QUEUE


def apply(conn: sqlite3.Connection) -> None:
    execute_script(
        conn,
        f"""
        CREATE TABLE store_items (
            id INTEGER PRIMARY KEY,
            namespace TEXT NOT NULL,          -- labels joined by '.' (a label never holds one)
            key TEXT NOT NULL,
            value TEXT NOT NULL,              -- JSON object
            texts TEXT NOT NULL DEFAULT '[]', -- JSON [[path, text], ...] to index in the cold store
            created_at TEXT NOT NULL,
            updated_at TEXT NOT NULL,
            UNIQUE (namespace, key)
        );

        CREATE TRIGGER store_items_cold_insert AFTER INSERT ON store_items BEGIN
            {_QUEUE.format(item="'item:' || NEW.id", now=_NOW)}
        END;
        CREATE TRIGGER store_items_cold_update AFTER UPDATE ON store_items BEGIN
            {_QUEUE.format(item="'item:' || NEW.id", now=_NOW)}
        END;
        CREATE TRIGGER store_items_cold_delete AFTER DELETE ON store_items BEGIN
            {_QUEUE.format(item="'item:' || OLD.id", now=_NOW)}
        END;
        """,
    )
