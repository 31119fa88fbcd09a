-- Operations chosen by a caption, /mode, a button or the bot's default: every operation's name is
-- allowed, and a job keeps the operation's arguments beside its name.
--
-- One document, several results. A ticket is still one chat's one document, and a job is one
-- *run*: one operation with its arguments asked of the document, with its whole state machine
-- (leases, attempts, budget, outbox, retention). A ticket's first run is the row whose id is the
-- ticket number (`ticket_id` NULL), so every existing job is a ticket with one run and keeps its
-- number; every further run names it in `ticket_id`. `jobs_file` keeps one ticket per chat and
-- document (its first runs only), and `jobs_run` one run per ticket and operation with its
-- arguments.
--
-- SQLite cannot change a CHECK constraint in place, so `jobs` is rebuilt (the procedure of
-- https://www.sqlite.org/lang_altertable.html): new tables, the rows copied, the old ones
-- dropped, the new ones renamed. `outbox` refers to `jobs`, and with foreign keys on (they are,
-- and a migration's transaction cannot turn them off) a referenced table cannot be dropped, so
-- `outbox` is rebuilt with it, unchanged: the old outbox goes first, then nothing refers to the
-- old jobs. Each AUTOINCREMENT counter is carried over, so no ticket number or message id is
-- given out twice, even one whose row was pruned. The one-job-per-chat-and-file rule becomes the
-- partial unique index `jobs_file`, on first runs.

CREATE TABLE jobs_new (
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
    operation         TEXT    NOT NULL CHECK (operation IN ('optimize', 'shrink', 'split', 'pages', 'text', 'info',
                                                            'rotate', 'decrypt', 'ocr', 'topdf')),
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
    source_losses     INTEGER NOT NULL DEFAULT 0,
    -- The operation's arguments as written (`180 2,4`), never a password; '' when none.
    arguments         TEXT    NOT NULL DEFAULT '',
    -- A decrypt's password, only while the job is unfinished: every statement that ends a job
    -- (ready, failed, cancelled, expired, forgotten) sets it NULL in the same UPDATE.
    secret            TEXT,
    -- The sender's Telegram language_code (`en`, `ru`), for OCR's default language.
    language_code     TEXT,
    -- The ticket (its first run) this run belongs to; NULL: this row is the ticket's first run.
    ticket_id         INTEGER REFERENCES jobs_new (id)
);

INSERT INTO jobs_new (id, update_id, chat_id, user_id, message_id, file_id, file_unique_id, declared_name,
                      declared_mime, declared_size, operation, status, local_path, real_size, sha256,
                      detected_format, lease_owner, lease_token, lease_until, attempts, not_before, error,
                      error_detail, result_path, result_size, result_file_id, result_expires_at, created_at,
                      updated_at, source_losses)
SELECT id, update_id, chat_id, user_id, message_id, file_id, file_unique_id, declared_name, declared_mime,
       declared_size, operation, status, local_path, real_size, sha256, detected_format, lease_owner,
       lease_token, lease_until, attempts, not_before, error, error_detail, result_path, result_size,
       result_file_id, result_expires_at, created_at, updated_at, source_losses
FROM jobs;

CREATE TABLE outbox_new (
    id                  INTEGER PRIMARY KEY AUTOINCREMENT,
    idempotency_key     TEXT    NOT NULL UNIQUE,
    job_id              INTEGER REFERENCES jobs_new (id),
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
    updated_at          INTEGER NOT NULL,
    state_at            INTEGER,
    button_label        TEXT,
    button_data         TEXT
);
INSERT INTO outbox_new (id, idempotency_key, job_id, chat_id, kind, priority, body, reply_to_message_id, status,
                        attempts, not_before, lease_owner, lease_token, lease_until, telegram_message_id,
                        telegram_file_id, error, created_at, updated_at, state_at, button_label, button_data)
SELECT id, idempotency_key, job_id, chat_id, kind, priority, body, reply_to_message_id, status, attempts, not_before,
       lease_owner, lease_token, lease_until, telegram_message_id, telegram_file_id, error, created_at, updated_at,
       state_at, button_label, button_data
FROM outbox;

-- The counters of the old tables, so that no ticket number or message id is given out again.
DELETE FROM sqlite_sequence WHERE name IN ('jobs_new', 'outbox_new');
INSERT INTO sqlite_sequence (name, seq) SELECT name || '_new', seq FROM sqlite_sequence WHERE name IN ('jobs', 'outbox');

DROP TABLE outbox;
DROP TABLE jobs;
-- Renaming `jobs_new` rewrites `outbox_new`'s reference to name `jobs`.
ALTER TABLE jobs_new RENAME TO jobs;
ALTER TABLE outbox_new RENAME TO outbox;

CREATE UNIQUE INDEX jobs_file ON jobs (chat_id, file_unique_id) WHERE ticket_id IS NULL;
CREATE UNIQUE INDEX jobs_run ON jobs (COALESCE(ticket_id, id), operation, arguments);
CREATE INDEX jobs_ticket ON jobs (ticket_id) WHERE ticket_id IS NOT NULL;
CREATE INDEX jobs_claim ON jobs (status, not_before, id);
CREATE INDEX jobs_chat ON jobs (chat_id, id);
CREATE INDEX jobs_expiry ON jobs (result_expires_at) WHERE status = 'ready';
CREATE INDEX jobs_held ON jobs (chat_id) WHERE lease_owner IS NOT NULL OR status IN ('fetched', 'processing');
CREATE INDEX jobs_user ON jobs (user_id);
CREATE INDEX jobs_ended ON jobs (updated_at) WHERE status IN ('failed', 'expired');
CREATE INDEX outbox_open ON outbox (status, priority, id, not_before);
CREATE INDEX outbox_chat ON outbox (chat_id, id);
CREATE INDEX outbox_job ON outbox (job_id);
CREATE INDEX outbox_open_chat ON outbox (chat_id, id) WHERE status IN ('pending', 'sending');

-- A chat's own default operation (`/mode`): what a document sent without a caption gets.
CREATE TABLE chat_modes (
    chat_id    INTEGER PRIMARY KEY,
    operation  TEXT    NOT NULL CHECK (operation IN ('optimize', 'shrink', 'split', 'text', 'info', 'ocr')),
    updated_at INTEGER NOT NULL
);
