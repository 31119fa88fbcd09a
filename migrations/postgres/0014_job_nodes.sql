-- Which host holds a job's files: the `[node] name` of the host that downloaded it, set when the
-- download is kept and cleared whenever the job goes back to be downloaded again. Each host has
-- its own data folder, so a job's processing, and the upload of its result, are claimed only by
-- that host; a host found dead hands its jobs back (`accepted`, downloaded again by file_id by
-- any host). NULL: no host holds files of the job (jobs kept before this column, too, which any
-- host may claim, as before).
ALTER TABLE jobs ADD COLUMN node TEXT;

-- The dead-host takeover looks up a host's unfinished jobs and undelivered results.
CREATE INDEX jobs_node ON jobs (node) WHERE node IS NOT NULL;
