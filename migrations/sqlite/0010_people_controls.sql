-- People's own controls and the admins' tools.

-- One inline button under a message (the /forget confirmation): its label and the callback data
-- Telegram sends back when it is pressed. NULL: no button.
ALTER TABLE outbox ADD COLUMN button_label TEXT;
ALTER TABLE outbox ADD COLUMN button_data TEXT;

-- People let in with an invite token (`/start <token>`, `[access] invite_tokens_env`), beside
-- `[access] allowed_users`.
CREATE TABLE invited_users (
    user_id    INTEGER PRIMARY KEY,
    invited_at INTEGER NOT NULL
);

-- Every 429 Telegram answered a send with, for /stats ("429s in the last hour"); rows older than
-- a day are removed when a new one is written.
CREATE TABLE flood_waits (
    at             INTEGER NOT NULL,
    chat_id        INTEGER NOT NULL,
    retry_after_ms INTEGER NOT NULL
);
CREATE INDEX flood_waits_at ON flood_waits (at);

-- /forget: a person's jobs, found by sender.
CREATE INDEX jobs_user ON jobs (user_id);

-- The reaper: the jobs that ended since its last look.
CREATE INDEX jobs_ended ON jobs (updated_at) WHERE status IN ('failed', 'expired');
