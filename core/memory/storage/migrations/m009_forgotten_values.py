"""What a forgotten fact said, so that nothing derived after the forget shows it again, and the purge queue.

A FORGET entry names ids, never text; the value a forgotten fact held is kept
here, in memory.db only (like a secret's value in ``user_facts``), so that
summaries, NOW.md, prompts and recall written after the forget can hide it
(:mod:`core.memory.secrets.forgotten`). Rebuilt from LOG.md, it comes back: replaying the
FACT and FORGET entries in seq order forgets the same values again. The scrubs
leave this table alone: it is what they search for.
"""

SQLITE = """
        CREATE TABLE forgotten_values (
            memory_id TEXT NOT NULL,         -- the forgotten memory, e.g. fact:favourite_colour
            forget_seq INTEGER NOT NULL,     -- the FORGET entry that forgot it
            value TEXT NOT NULL,             -- what it held then: hidden from everything derived later
            forgotten_at TEXT NOT NULL,
            PRIMARY KEY (memory_id, forget_seq)
        );
        -- A purge of forgotten values from LOG.md, the archives and the indexes that has not finished:
        -- the next open runs it again.
        CREATE TABLE forget_purges (
            queued_at TEXT PRIMARY KEY
        );
        """
"""SQLite's form."""

POSTGRES = """
CREATE TABLE forgotten_values (
    memory_id TEXT NOT NULL,         -- the forgotten memory, e.g. fact:favourite_colour
    forget_seq BIGINT NOT NULL,      -- the FORGET entry that forgot it
    value TEXT NOT NULL,             -- what it held then: hidden from everything derived later
    forgotten_at TEXT NOT NULL,
    PRIMARY KEY (memory_id, forget_seq)
);

-- A purge of forgotten values from LOG.md, the archives and the indexes that has not finished:
-- the next open runs it again.
CREATE TABLE forget_purges (
    queued_at TEXT PRIMARY KEY
);
"""
"""PostgreSQL's form."""
