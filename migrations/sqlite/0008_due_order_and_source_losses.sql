-- The queue is ordered by when a job became due. `not_before` now holds that moment for every
-- claimable job: its arrival, the end of its delay, or its resubmission (before, a fresh job had
-- 0 and sorted ahead of every job that had ever been delayed). Jobs waiting today get the time
-- they were last changed, which is when they arrived, were resubmitted or were downloaded.
UPDATE jobs SET not_before = updated_at WHERE not_before = 0;

-- How often a job's verified source went missing or changed before it was processed. Bounded, so
-- a disk that keeps losing files fails the job with a reason instead of downloading forever.
ALTER TABLE jobs ADD COLUMN source_losses INTEGER NOT NULL DEFAULT 0;
