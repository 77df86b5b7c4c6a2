"""The cold tier's own tables: stored notes and the queue of items to (re)index.

Facts and notes are the source of truth in memory.db; LanceDB only indexes
them. Triggers queue every fact change in the same transaction as the change,
so a crash can never leave a saved (or deleted) fact out of step with the
cold store for longer than the next sync.
"""

import sqlite3

from core.memory.storage.sqlite import execute_script

_NOW = "strftime('%Y-%m-%dT%H:%M:%fZ', 'now')"
# An upsert, not INSERT OR REPLACE: an outer statement's conflict policy (the facts'
# own upsert) would override "OR REPLACE" inside a trigger body.
_QUEUE = "INSERT INTO cold_pending (item, queued_at) VALUES ({item}, {now}) " \
    "ON CONFLICT (item) DO UPDATE SET queued_at = excluded.queued_at, attempts = 0, last_error = NULL;"


def apply(conn: sqlite3.Connection) -> None:
    execute_script(
        conn,
        f"""
        -- Text stored with MemoryManager.store_memory; LanceDB holds its vector.
        CREATE TABLE cold_notes (
            id TEXT PRIMARY KEY,
            kind TEXT NOT NULL,
            text TEXT NOT NULL,
            metadata TEXT NOT NULL,          -- JSON object
            created_at TEXT NOT NULL
        );

        -- Items whose chunks must be brought in line with their source:
        -- 'fact:<key>' or 'note:<id>'. Archives use compaction_history.indexed_at.
        CREATE TABLE cold_pending (
            item TEXT PRIMARY KEY,
            queued_at TEXT NOT NULL,
            attempts INTEGER NOT NULL DEFAULT 0,
            last_error TEXT
        );

        CREATE TRIGGER user_facts_cold_insert AFTER INSERT ON user_facts BEGIN
            {_QUEUE.format(item="'fact:' || NEW.key", now=_NOW)}
        END;
        CREATE TRIGGER user_facts_cold_update AFTER UPDATE ON user_facts BEGIN
            {_QUEUE.format(item="'fact:' || OLD.key", now=_NOW)}
            {_QUEUE.format(item="'fact:' || NEW.key", now=_NOW)}
        END;
        CREATE TRIGGER user_facts_cold_delete AFTER DELETE ON user_facts BEGIN
            {_QUEUE.format(item="'fact:' || OLD.key", now=_NOW)}
        END;
        CREATE TRIGGER cold_notes_queue AFTER INSERT ON cold_notes BEGIN
            {_QUEUE.format(item="'note:' || NEW.id", now=_NOW)}
        END;
        """,
    )
