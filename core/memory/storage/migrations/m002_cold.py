"""The cold tier's own tables: stored notes and the queue of items to (re)index.

Facts and notes are the source of truth in memory.db; LanceDB only indexes
them. Triggers queue every fact change in the same transaction as the change,
so a crash can never leave a saved (or deleted) fact out of step with the
cold store for longer than the next sync.
"""

_NOW = "strftime('%Y-%m-%dT%H:%M:%fZ', 'now')"
# An upsert, not INSERT OR REPLACE: an outer statement's conflict policy (the facts'
# own upsert) would override "OR REPLACE" inside a trigger body.
_QUEUE = "INSERT INTO cold_pending (item, queued_at) VALUES ({item}, {now}) " \
    "ON CONFLICT (item) DO UPDATE SET queued_at = excluded.queued_at, attempts = 0, last_error = NULL;"


SQL = """
-- Text stored with MemoryManager.store_memory; LanceDB holds its vector.
CREATE TABLE cold_notes (
    id TEXT PRIMARY KEY,
    kind TEXT NOT NULL,
    text TEXT NOT NULL,
    metadata TEXT NOT NULL,          -- JSON object
    created_at TEXT NOT NULL
);

-- Items whose vectors must be brought in line with their source: 'fact:<key>', 'note:<id>' or
-- 'item:<id>'. Archives use compaction_history.indexed_at.
CREATE TABLE cold_pending (
    item TEXT PRIMARY KEY,
    queued_at TEXT NOT NULL,
    attempts INTEGER NOT NULL DEFAULT 0,
    last_error TEXT
);
"""
"""Both databases' tables."""


SQLITE = f"""
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
        """
"""SQLite's triggers."""

POSTGRES = """
-- The time as memory.db writes it: ISO 8601 UTC with milliseconds and a Z.
CREATE FUNCTION agentos_now() RETURNS TEXT LANGUAGE sql STABLE
AS $$ SELECT to_char(now() AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"') $$;

CREATE FUNCTION agentos_queue(item TEXT) RETURNS void LANGUAGE sql SET search_path FROM CURRENT AS $$
    INSERT INTO cold_pending (item, queued_at) VALUES (item, agentos_now())
    ON CONFLICT (item) DO UPDATE SET queued_at = excluded.queued_at, attempts = 0, last_error = NULL
$$;

CREATE FUNCTION user_facts_cold_queue() RETURNS trigger LANGUAGE plpgsql SET search_path FROM CURRENT AS $$
BEGIN
    IF TG_OP IN ('UPDATE', 'DELETE') THEN PERFORM agentos_queue('fact:' || OLD.key); END IF;
    IF TG_OP IN ('INSERT', 'UPDATE') THEN PERFORM agentos_queue('fact:' || NEW.key); END IF;
    RETURN NULL;
END $$;
CREATE TRIGGER user_facts_cold AFTER INSERT OR UPDATE OR DELETE ON user_facts
    FOR EACH ROW EXECUTE FUNCTION user_facts_cold_queue();

CREATE FUNCTION cold_notes_cold_queue() RETURNS trigger LANGUAGE plpgsql SET search_path FROM CURRENT AS $$
BEGIN
    PERFORM agentos_queue('note:' || NEW.id);
    RETURN NULL;
END $$;
CREATE TRIGGER cold_notes_queue AFTER INSERT ON cold_notes
    FOR EACH ROW EXECUTE FUNCTION cold_notes_cold_queue();
"""
"""PostgreSQL's functions and triggers."""
