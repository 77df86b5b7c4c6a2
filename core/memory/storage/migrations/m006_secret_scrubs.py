"""The queue of secrets to scrub from what held them before they were saved as secrets.

A trigger queues a fact's key in the same transaction that makes it a secret (or
changes a secret's value), whichever code path saved it, so a scrub is never
forgotten: :mod:`core.memory.upkeep.scrub` deletes the row once the value is gone from
every file and index. Only keys are queued, never values. Secrets already saved
when this migration runs are queued too: the first open after the upgrade scrubs
them.
"""

_NOW = "strftime('%Y-%m-%dT%H:%M:%fZ', 'now')"
_QUEUE = (f"INSERT INTO secret_scrubs (key, queued_at) VALUES (NEW.key, {_NOW})"
          " ON CONFLICT (key) DO UPDATE SET queued_at = excluded.queued_at;")


SQL = """
CREATE TABLE secret_scrubs (
    key TEXT PRIMARY KEY,            -- the secret fact's key (its value is only in user_facts)
    queued_at TEXT NOT NULL
);
"""
"""Both databases' table."""


SQLITE = f"""
        CREATE TRIGGER user_facts_secret_insert AFTER INSERT ON user_facts WHEN NEW.category = 'secret' BEGIN
            {_QUEUE}
        END;
        CREATE TRIGGER user_facts_secret_update AFTER UPDATE OF value, category ON user_facts
        WHEN NEW.category = 'secret' AND (OLD.category IS NOT 'secret' OR OLD.value IS NOT NEW.value) BEGIN
            {_QUEUE}
        END;
        INSERT INTO secret_scrubs (key, queued_at) SELECT key, {_NOW} FROM user_facts WHERE category = 'secret';
        """
"""SQLite's triggers, and the secrets saved before."""

POSTGRES = """
-- The time of the change itself (clock_timestamp, not the transaction's start), as SQLite's 'now' is:
-- a scrub deletes a queue row only if queued_at is still the one it read.
CREATE FUNCTION user_facts_secret_queue() RETURNS trigger LANGUAGE plpgsql SET search_path FROM CURRENT AS $$
BEGIN
    INSERT INTO secret_scrubs (key, queued_at)
    VALUES (NEW.key, to_char(clock_timestamp() AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"'))
    ON CONFLICT (key) DO UPDATE SET queued_at = excluded.queued_at;
    RETURN NULL;
END $$;
CREATE TRIGGER user_facts_secret_insert AFTER INSERT ON user_facts
    FOR EACH ROW WHEN (NEW.category = 'secret') EXECUTE FUNCTION user_facts_secret_queue();
CREATE TRIGGER user_facts_secret_update AFTER UPDATE OF value, category ON user_facts
    FOR EACH ROW WHEN (NEW.category = 'secret'
                       AND (OLD.category IS DISTINCT FROM 'secret' OR OLD.value IS DISTINCT FROM NEW.value))
    EXECUTE FUNCTION user_facts_secret_queue();

INSERT INTO secret_scrubs (key, queued_at) SELECT key, agentos_now() FROM user_facts WHERE category = 'secret';
"""
"""PostgreSQL's function and triggers, and the secrets saved before."""
