"""The tier tables of seed 003: facts, the LOG.md index and compaction history."""

import sqlite3

from core.memory.storage.sqlite import execute_script


def apply(conn: sqlite3.Connection) -> None:
    execute_script(
        conn,
        """
        CREATE TABLE user_facts (
            id INTEGER PRIMARY KEY,
            key TEXT NOT NULL UNIQUE,
            value TEXT NOT NULL,
            category TEXT NOT NULL DEFAULT 'general'
                CHECK (category IN ('general', 'preference', 'personal', 'config', 'secret')),
            created_at TEXT NOT NULL,
            updated_at TEXT NOT NULL
        );
        CREATE INDEX user_facts_category ON user_facts (category);

        -- An index of LOG.md and its archives; rebuildable from the files at any time.
        CREATE TABLE log_metadata (
            id INTEGER PRIMARY KEY,          -- the entry's seq
            timestamp TEXT NOT NULL,
            entry_type TEXT NOT NULL,
            content_hash TEXT NOT NULL,      -- sha256 of the entry's text
            compacted BOOLEAN NOT NULL DEFAULT 0,
            token_count INTEGER NOT NULL,
            run_id TEXT,                     -- meta.run_id, for RUN_START/RUN_END pairing
            archive_id TEXT                  -- the archive file holding the entry once compacted
        );
        CREATE INDEX log_metadata_run ON log_metadata (run_id, entry_type);

        CREATE TABLE compaction_history (
            id INTEGER PRIMARY KEY,
            compacted_at TEXT NOT NULL,
            entries_count INTEGER NOT NULL,
            summary TEXT NOT NULL,
            archive_id TEXT NOT NULL UNIQUE,
            original_size_kb REAL NOT NULL,
            new_size_kb REAL NOT NULL,
            first_seq INTEGER,
            last_seq INTEGER,
            archive_sha256 TEXT,
            indexed_at TEXT                  -- set once the archive's chunks are in the cold store
        );
        """
    )
