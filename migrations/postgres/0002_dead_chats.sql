-- Chats that refused the bot for good (blocked it, were deleted, kicked it out). Messages queued
-- for them are stored as `dead` without a call; a new message from the chat removes its row.
CREATE TABLE dead_chats (
    chat_id BIGINT PRIMARY KEY,
    reason  TEXT    NOT NULL,
    since   BIGINT NOT NULL
);
