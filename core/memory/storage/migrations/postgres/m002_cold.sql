-- The cold tier's own tables: stored notes and the queue of items to (re)index (m002_cold.py in PostgreSQL).
-- Triggers queue every fact change in the same transaction as the change.

CREATE TABLE cold_notes (
    id TEXT PRIMARY KEY,
    kind TEXT NOT NULL,
    text TEXT NOT NULL,
    metadata TEXT NOT NULL,          -- JSON object
    created_at TEXT NOT NULL
);

CREATE TABLE cold_pending (
    item TEXT PRIMARY KEY,           -- 'fact:<key>', 'note:<id>' or 'item:<id>'
    queued_at TEXT NOT NULL,
    attempts INTEGER NOT NULL DEFAULT 0,
    last_error TEXT
);

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
