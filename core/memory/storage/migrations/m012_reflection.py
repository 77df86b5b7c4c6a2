"""Reflection: what the model learned from an agent's memory, traced to its sources, and the state of the reading.

What was learned (:mod:`core.memory.storage.extracted`): ``extracted`` marks a memory (``fact:<key>``,
``event:<id>``, ``contradiction:<id>``) as learned by a model and says which model, prompt version and
when; ``extracted_sources`` links it to each entry it came from (``log:<seq>``, ``msg:<id>``,
``note:<hex>``); ``extracted_events`` and ``fact_contradictions`` hold the events and the statements that
contradict a fact; ``fact_versions.sources`` keeps the provenance of a learned value once a newer one
replaces it. A fact with no ``extracted`` row was saved explicitly. No text column is indexed, so the
secret scrub, which leaves identifiers alone, reaches every one of them.

The reading (:mod:`core.memory.reflection`): ``reflect_marks`` holds LOG.md's high-water mark (the last
seq read); messages and notes are queued in ``reflect_pending`` by triggers in the transaction that
writes them (a database id can be reused after a delete, or commit out of order on PostgreSQL: a queue
never skips a row), and those written before this migration are queued here; ``reflect_quarantine``
holds what failed alone, with the reason and when to try again; ``reflect_stats`` counts calls and
failures per model. An event is queued for recall (``cold_pending``) by triggers, like a note.
"""

from core.memory.storage.migrations.m002_cold import _QUEUE as _RECALL

_NOW = "strftime('%Y-%m-%dT%H:%M:%fZ', 'now')"
_QUEUE = "INSERT INTO reflect_pending (item, queued_at) VALUES ({item}, {now}) ON CONFLICT (item) DO NOTHING;"

SQL = """
CREATE TABLE extracted (
    memory_id TEXT PRIMARY KEY,      -- fact:<key>, event:<id> or contradiction:<id>
    model TEXT NOT NULL,             -- the model that extracted it (or the offline reader)
    prompt TEXT NOT NULL,            -- the version of the prompt that asked for it
    extracted_at TEXT NOT NULL
);
CREATE TABLE extracted_sources (
    memory_id TEXT NOT NULL,
    source_id TEXT NOT NULL,         -- log:<seq>, msg:<id> or note:<hex>: an entry it was read in
    PRIMARY KEY (memory_id, source_id)
);
CREATE INDEX extracted_sources_source ON extracted_sources (source_id);
CREATE TABLE reflect_marks (
    source TEXT PRIMARY KEY,         -- 'log': the last LOG.md seq read
    mark BIGINT NOT NULL,
    updated_at TEXT NOT NULL
);
CREATE TABLE reflect_pending (
    item TEXT PRIMARY KEY,           -- msg:<id> or note:<hex>, not read yet
    queued_at TEXT NOT NULL
);
CREATE TABLE reflect_quarantine (
    item TEXT PRIMARY KEY,           -- an entry that failed alone: log:<seq>, msg:<id> or note:<hex>
    reason TEXT NOT NULL,
    attempts INTEGER NOT NULL,
    model TEXT NOT NULL,
    first_failed_at TEXT NOT NULL,
    last_failed_at TEXT NOT NULL,
    next_try TEXT NOT NULL           -- tried again from then on (the wait doubles with each attempt)
);
CREATE TABLE reflect_stats (
    model TEXT PRIMARY KEY,
    calls INTEGER NOT NULL DEFAULT 0,           -- model calls made
    failed INTEGER NOT NULL DEFAULT 0,          -- replies that could not be used (asked again, split, quarantined)
    repaired INTEGER NOT NULL DEFAULT 0,        -- replies used after a safe repair (prose, fence, think, types)
    split INTEGER NOT NULL DEFAULT 0,           -- batches split in two after a retry failed
    quarantined INTEGER NOT NULL DEFAULT 0,     -- entries set aside
    rejected INTEGER NOT NULL DEFAULT 0,        -- values rejected: not in the entries they cite
    entries INTEGER NOT NULL DEFAULT 0,         -- entries read
    learned INTEGER NOT NULL DEFAULT 0,         -- facts, events and contradictions kept
    last_at TEXT,
    last_error TEXT
);
ALTER TABLE fact_versions ADD COLUMN sources TEXT;  -- JSON provenance of a learned value (NULL: saved explicitly)
"""
"""Both databases' tables."""

SQLITE = f"""
CREATE TABLE extracted_events (
    id INTEGER PRIMARY KEY AUTOINCREMENT,   -- never reused: event:<id> names it in recall and FORGET entries
    what TEXT NOT NULL,
    occurred_at TEXT NOT NULL,              -- the day it happened (UTC ISO-8601)
    basis TEXT NOT NULL                     -- stated (the entry says when), model, or entry (the entry's own date)
);
CREATE TABLE fact_contradictions (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    key TEXT NOT NULL,                      -- the fact it contradicts
    statement TEXT NOT NULL
);
CREATE INDEX fact_contradictions_key ON fact_contradictions (key);
CREATE TRIGGER ctx_messages_reflect AFTER INSERT ON ctx_messages WHEN NEW.role IN ('user', 'assistant') BEGIN
    {_QUEUE.format(item="'msg:' || NEW.id", now=_NOW)}
END;
CREATE TRIGGER cold_notes_reflect AFTER INSERT ON cold_notes WHEN NEW.kind = 'note' BEGIN
    {_QUEUE.format(item="'note:' || NEW.id", now=_NOW)}
END;
CREATE TRIGGER extracted_events_recall_insert AFTER INSERT ON extracted_events BEGIN
    {_RECALL.format(item="'event:' || NEW.id", now=_NOW)}
END;
CREATE TRIGGER extracted_events_recall_delete AFTER DELETE ON extracted_events BEGIN
    {_RECALL.format(item="'event:' || OLD.id", now=_NOW)}
END;
INSERT OR IGNORE INTO reflect_pending (item, queued_at)
    SELECT 'msg:' || id, {_NOW} FROM ctx_messages WHERE role IN ('user', 'assistant');
INSERT OR IGNORE INTO reflect_pending (item, queued_at)
    SELECT 'note:' || id, {_NOW} FROM cold_notes WHERE kind = 'note';
"""
"""SQLite's form."""

POSTGRES = """
CREATE TABLE extracted_events (
    id BIGINT GENERATED BY DEFAULT AS IDENTITY PRIMARY KEY,  -- never reused: event:<id> names it
    what TEXT NOT NULL,
    occurred_at TEXT NOT NULL,              -- the day it happened (UTC ISO-8601)
    basis TEXT NOT NULL                     -- stated (the entry says when), model, or entry (the entry's own date)
);
CREATE TABLE fact_contradictions (
    id BIGINT GENERATED BY DEFAULT AS IDENTITY PRIMARY KEY,
    key TEXT NOT NULL,                      -- the fact it contradicts
    statement TEXT NOT NULL
);
CREATE INDEX fact_contradictions_key ON fact_contradictions (key);
CREATE FUNCTION reflect_queue_row() RETURNS trigger LANGUAGE plpgsql SET search_path FROM CURRENT AS $$
BEGIN
    INSERT INTO reflect_pending (item, queued_at) VALUES (TG_ARGV[0] || NEW.id, agentos_now())
    ON CONFLICT (item) DO NOTHING;
    RETURN NULL;
END $$;
CREATE TRIGGER ctx_messages_reflect AFTER INSERT ON ctx_messages
    FOR EACH ROW WHEN (NEW.role IN ('user', 'assistant')) EXECUTE FUNCTION reflect_queue_row('msg:');
CREATE TRIGGER cold_notes_reflect AFTER INSERT ON cold_notes
    FOR EACH ROW WHEN (NEW.kind = 'note') EXECUTE FUNCTION reflect_queue_row('note:');
CREATE TRIGGER extracted_events_recall AFTER INSERT OR DELETE ON extracted_events
    FOR EACH ROW EXECUTE FUNCTION recall_queue_row('event:');
INSERT INTO reflect_pending (item, queued_at)
    SELECT 'msg:' || id, agentos_now() FROM ctx_messages WHERE role IN ('user', 'assistant') ON CONFLICT DO NOTHING;
INSERT INTO reflect_pending (item, queued_at)
    SELECT 'note:' || id, agentos_now() FROM cold_notes WHERE kind = 'note' ON CONFLICT DO NOTHING;
"""
"""PostgreSQL's form."""
