-- When the next call to a chat may go out: the outbox's per-chat rate limit and Telegram's 429
-- pauses, stored so that they hold across restarts and across senders. chat_id 0 (no Telegram
-- chat has it) stands for the bot as a whole.
CREATE TABLE chat_pacing (
    chat_id    INTEGER PRIMARY KEY,
    not_before INTEGER NOT NULL,
    reason     TEXT    NOT NULL
);
