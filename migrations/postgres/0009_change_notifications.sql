-- Wake-ups across hosts: a row that becomes claimable notifies the other processes on the
-- database (LISTEN docket_jobs / docket_outbox), so an idle worker on any host starts within
-- milliseconds instead of at its next poll. PostgreSQL delivers a notification at commit, and
-- only once per channel and payload per transaction, so a statement that frees many rows sends
-- one. Claims and lease renewals leave a row leased, or taken, so they notify nobody: an idle
-- worker is woken only when there is something for it.
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

-- A job is claimable when it waits, unleased, for a download or for processing: a new job, a
-- release, a finished download, a resubmission.
CREATE TRIGGER jobs_claimable AFTER INSERT OR UPDATE OF status, not_before, lease_owner ON jobs
    FOR EACH ROW WHEN (NEW.lease_owner IS NULL AND NEW.status IN ('accepted', 'fetched'))
    EXECUTE FUNCTION docket_notify_jobs();

-- A message is claimable when it is queued or goes back to `pending`; a chat's pause ending is
-- found by the senders' own timer.
CREATE TRIGGER outbox_claimable AFTER INSERT OR UPDATE OF status, not_before ON outbox
    FOR EACH ROW WHEN (NEW.status = 'pending')
    EXECUTE FUNCTION docket_notify_outbox();
