-- Wake-ups across hosts: a statement that may make a job or a message claimable notifies the
-- other processes on the database (LISTEN docket_jobs / docket_outbox), so an idle worker on any
-- host starts within milliseconds instead of at its next poll. PostgreSQL delivers a
-- notification at commit, and only once per channel and payload per transaction.
CREATE FUNCTION docket_notify_jobs() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    PERFORM pg_notify('docket_jobs', '');
    RETURN NULL;
END;
$$;

CREATE FUNCTION docket_notify_outbox() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    PERFORM pg_notify('docket_outbox', '');
    RETURN NULL;
END;
$$;

-- A job becomes claimable when it is inserted or its state, due time or lease changes; lease
-- renewals (lease_until alone) notify nobody.
CREATE TRIGGER jobs_changed AFTER INSERT OR UPDATE OF status, not_before, lease_owner ON jobs
    FOR EACH STATEMENT EXECUTE FUNCTION docket_notify_jobs();

-- A message becomes claimable when it is queued or goes back to `pending`; a chat's pause ending
-- is found by the senders' own timer.
CREATE TRIGGER outbox_changed AFTER INSERT OR UPDATE OF status, not_before ON outbox
    FOR EACH STATEMENT EXECUTE FUNCTION docket_notify_outbox();
