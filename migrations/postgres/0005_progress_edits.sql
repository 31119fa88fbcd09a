-- Progress edits: the status message (the ticket reply) is edited as its job moves, through the
-- outbox like any message, as kind 'progress' (one row per job, coalesced in place).
ALTER TABLE outbox DROP CONSTRAINT outbox_kind_check;
ALTER TABLE outbox ADD CONSTRAINT outbox_kind_check
    CHECK (kind IN ('ticket_reply', 'reply', 'result', 'failure', 'progress'));
