//! Leases on jobs: claiming the next one of a stage, and renewing a held lease.

use std::time::Duration;

use super::{ClaimLimits, JobRow, Stage};
use crate::domain::{Job, Lease, NodeName, Ticket, Timestamp};
use crate::store::{Conn, QueryContext, Store, StoreResult};

/// Claims the next job of `stage` with the claim statements of the connection's backend
/// ([`ClaimSql`](crate::store::statements::ClaimSql)), for `owner` with a lease of `lease_len`: the
/// process stage tries a lapsed `processing` job first, then a `fetched` one, of `node` only
/// (`None`: of any node).
async fn claim_job(
    c: &mut Conn<'_>,
    stage: Stage,
    owner: &str,
    node: Option<&NodeName>,
    now: Timestamp,
    lease_len: Duration,
    limits: &ClaimLimits,
) -> StoreResult<Option<Job>> {
    let claims = c.claims();
    let statements: &[&str] = match stage {
        Stage::Download => &[claims.download],
        Stage::Process => &[claims.process_lapsed, claims.process_fetched],
    };
    for &sql in statements {
        let claimed = c
            .fetch_optional::<JobRow>(
                sql,
                &[
                    owner.into(),
                    now.plus(lease_len).into(),
                    now.into(),
                    limits.unknown_size.into(),
                    limits.max_size.into(),
                    limits.per_chat.into(),
                    node.map(NodeName::as_str).into(),
                ],
            )
            .await
            .context("claiming a job")?;
        if let Some(row) = claimed {
            return row.into_job().map(Some);
        }
    }
    Ok(None)
}

/// Extends a held lease: $1 ticket, $2 lease token, $3 until, $4 now.
pub const RENEW_JOB_LEASE: &str = "UPDATE jobs SET lease_until = $3, updated_at = $4
    WHERE id = $1 AND lease_token = $2 AND lease_owner IS NOT NULL";

/// Runs [`RENEW_JOB_LEASE`]; `false` when the lease was lost.
async fn renew_lease(
    c: &mut Conn<'_>,
    ticket: Ticket,
    lease: &Lease,
    until: Timestamp,
    now: Timestamp,
) -> StoreResult<bool> {
    let renewed = c
        .execute(RENEW_JOB_LEASE, &[ticket.0.into(), lease.token.into(), until.into(), now.into()])
        .await
        .context("renewing a job lease")?;
    Ok(renewed == 1)
}

impl Store {
    /// Claims the next job of `stage` for `owner` with a lease of `lease_len`, counting an attempt.
    /// Processing takes only jobs whose source is on this handle's host (or on no host known).
    pub async fn claim_job(
        &self,
        stage: Stage,
        owner: &str,
        now: Timestamp,
        lease_len: Duration,
    ) -> StoreResult<Option<Job>> {
        let node = self.node.as_ref();
        claim_job(&mut self.acquire().await?.conn(), stage, owner, node, now, lease_len, &ClaimLimits::NONE).await
    }

    /// Claims the oldest `accepted` job that fits `limits` (byte budget, per-chat bound).
    pub async fn claim_download(
        &self,
        owner: &str,
        now: Timestamp,
        lease_len: Duration,
        limits: &ClaimLimits,
    ) -> StoreResult<Option<Job>> {
        let node = self.node.as_ref();
        claim_job(&mut self.acquire().await?.conn(), Stage::Download, owner, node, now, lease_len, limits).await
    }

    /// Extends a held lease. `false`: the lease was lost (someone else holds the job now).
    pub async fn renew_job_lease(
        &self,
        ticket: Ticket,
        lease: &Lease,
        until: Timestamp,
        now: Timestamp,
    ) -> StoreResult<bool> {
        renew_lease(&mut self.acquire().await?.conn(), ticket, lease, until, now).await
    }
}
