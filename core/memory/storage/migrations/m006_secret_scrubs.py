"""The queue of secrets to scrub from what held them before they were saved as secrets.

A trigger queues a fact's key in the same transaction that makes it a secret (or
changes a secret's value), whichever code path saved it, so a scrub is never
forgotten: :mod:`core.memory.secrets.scrub` deletes the row once the value is gone from
every file and index. Only keys are queued, never values. Secrets already saved
when this migration runs are queued too: the first open after the upgrade scrubs
them.
"""

import sqlite3

from core.memory.storage.sqlite import execute_script

_NOW = "strftime('%Y-%m-%dT%H:%M:%fZ', 'now')"
_QUEUE = (f"INSERT INTO secret_scrubs (key, queued_at) VALUES (NEW.key, {_NOW})"
          " ON CONFLICT (key) DO UPDATE SET queued_at = excluded.queued_at;")


def apply(conn: sqlite3.Connection) -> None:
    execute_script(
        conn,
        f"""
        CREATE TABLE secret_scrubs (
            key TEXT PRIMARY KEY,            -- the secret fact's key (its value is only in user_facts)
            queued_at TEXT NOT NULL
        );
        CREATE TRIGGER user_facts_secret_insert AFTER INSERT ON user_facts WHEN NEW.category = 'secret' BEGIN
            {_QUEUE}
        END;
        CREATE TRIGGER user_facts_secret_update AFTER UPDATE OF value, category ON user_facts
        WHEN NEW.category = 'secret' AND (OLD.category IS NOT 'secret' OR OLD.value IS NOT NEW.value) BEGIN
            {_QUEUE}
        END;
        INSERT INTO secret_scrubs (key, queued_at) SELECT key, {_NOW} FROM user_facts WHERE category = 'secret';
        """,
    )
