-- Progress edits: the status message (the ticket reply) is edited as its job moves, through the
-- outbox like any message, as kind 'progress' (one row per job, coalesced in place). SQLite
-- cannot change a CHECK constraint, so the table is rebuilt with the same columns, data and
-- indexes (the documented ALTER TABLE procedure).
CREATE TABLE outbox_new (
    id                  INTEGER PRIMARY KEY AUTOINCREMENT,
    idempotency_key     TEXT    NOT NULL UNIQUE,
    job_id              INTEGER REFERENCES jobs (id),
    chat_id             INTEGER NOT NULL,
    kind                TEXT    NOT NULL CHECK (kind IN ('ticket_reply', 'reply', 'result', 'failure', 'progress')),
    priority            INTEGER NOT NULL,
    body                TEXT    NOT NULL,
    reply_to_message_id INTEGER,
    status              TEXT    NOT NULL CHECK (status IN ('pending', 'sending', 'sent', 'unknown', 'dead', 'failed')),
    attempts            INTEGER NOT NULL DEFAULT 0,
    not_before          INTEGER NOT NULL DEFAULT 0,
    lease_owner         TEXT,
    lease_token         INTEGER NOT NULL DEFAULT 0,
    lease_until         INTEGER,
    telegram_message_id INTEGER,
    telegram_file_id    TEXT,
    error               TEXT,
    created_at          INTEGER NOT NULL,
    updated_at          INTEGER NOT NULL
);
INSERT INTO outbox_new SELECT * FROM outbox;
DROP TABLE outbox;
ALTER TABLE outbox_new RENAME TO outbox;
CREATE INDEX outbox_open ON outbox (status, not_before, priority, id);
CREATE INDEX outbox_chat ON outbox (chat_id, id);
CREATE INDEX outbox_job ON outbox (job_id);
CREATE INDEX outbox_open_chat ON outbox (chat_id, id) WHERE status IN ('pending', 'sending');
