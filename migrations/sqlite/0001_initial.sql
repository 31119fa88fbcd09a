-- docket's initial schema (SQLite). Times are integer UTC milliseconds; states are text with CHECK.
-- The PostgreSQL migration of the same number creates the same tables and indexes.

-- Every update Telegram delivered, keyed by (bot, update_id): a repeated update is dropped.
CREATE TABLE updates (
    bot_id      INTEGER NOT NULL,
    update_id   INTEGER NOT NULL,
    outcome     TEXT    NOT NULL CHECK (outcome IN ('recorded', 'rejected')),
    reason      TEXT,
    received_at INTEGER NOT NULL,
    PRIMARY KEY (bot_id, update_id)
);
CREATE INDEX updates_received_at ON updates (received_at);

-- Where long polling continues after a restart: the next getUpdates offset per bot.
CREATE TABLE poll_offsets (
    bot_id      INTEGER PRIMARY KEY,
    next_offset INTEGER NOT NULL,
    updated_at  INTEGER NOT NULL
);

-- One row per document a chat sent; its id is the ticket.
CREATE TABLE jobs (
    id                INTEGER PRIMARY KEY AUTOINCREMENT,
    update_id         INTEGER NOT NULL,
    chat_id           INTEGER NOT NULL,
    user_id           INTEGER,
    message_id        INTEGER NOT NULL,
    file_id           TEXT    NOT NULL,
    file_unique_id    TEXT    NOT NULL,
    declared_name     TEXT,
    declared_mime     TEXT,
    declared_size     INTEGER,
    operation         TEXT    NOT NULL CHECK (operation IN ('optimize')),
    status            TEXT    NOT NULL CHECK (status IN ('accepted', 'fetched', 'processing', 'ready', 'failed', 'expired')),
    local_path        TEXT,
    real_size         INTEGER,
    sha256            TEXT,
    detected_format   TEXT,
    lease_owner       TEXT,
    lease_token       INTEGER NOT NULL DEFAULT 0,
    lease_until       INTEGER,
    attempts          INTEGER NOT NULL DEFAULT 0,
    not_before        INTEGER NOT NULL DEFAULT 0,
    error             TEXT,
    error_detail      TEXT,
    result_path       TEXT,
    result_size       INTEGER,
    result_file_id    TEXT,
    result_expires_at INTEGER,
    created_at        INTEGER NOT NULL,
    updated_at        INTEGER NOT NULL,
    UNIQUE (chat_id, file_unique_id)
);
-- Claims: the oldest claimable job of a state.
CREATE INDEX jobs_claim ON jobs (status, not_before, id);
-- /jobs: a chat's latest tickets.
CREATE INDEX jobs_chat ON jobs (chat_id, id);
-- Retention: ready jobs by expiry.
CREATE INDEX jobs_expiry ON jobs (result_expires_at) WHERE status = 'ready';

-- Every message to a person, sent by the outbox sender. One row per idempotency key.
CREATE TABLE outbox (
    id                  INTEGER PRIMARY KEY AUTOINCREMENT,
    idempotency_key     TEXT    NOT NULL UNIQUE,
    job_id              INTEGER REFERENCES jobs (id),
    chat_id             INTEGER NOT NULL,
    kind                TEXT    NOT NULL CHECK (kind IN ('ticket_reply', 'reply', 'result', 'failure')),
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
-- The sender's claim: open rows in order; and per-chat order checks.
CREATE INDEX outbox_open ON outbox (status, not_before, priority, id);
CREATE INDEX outbox_chat ON outbox (chat_id, id);
CREATE INDEX outbox_job ON outbox (job_id);
