//! Leases: who holds a job or an outgoing message, until when, and under which token.
//!
//! A claim bumps the row's `lease_token`; every later write by the holder is conditional on that
//! token, so a worker whose lease lapsed and was re-claimed by another can never move the row.

use super::time::Timestamp;

/// A claim on a row, as returned by the store's claim statements.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Lease {
    /// Who holds it (`host:pid:pool-n`), for admins reading the table.
    pub owner: String,
    /// Bumped by every claim; writes by the holder carry it.
    pub token: i64,
    /// When the claim lapses unless renewed.
    pub until: Timestamp,
}

impl Lease {
    /// Whether the lease has run out at `now`.
    pub fn is_expired(&self, now: Timestamp) -> bool {
        self.until <= now
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_lease_expires_at_its_deadline() {
        let l = Lease { owner: "w".into(), token: 1, until: Timestamp::from_millis(100) };
        assert!(!l.is_expired(Timestamp::from_millis(99)));
        assert!(l.is_expired(Timestamp::from_millis(100)));
    }
}
