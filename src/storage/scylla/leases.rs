//! Leases on a load (its actor acts for it on one instance) and on a role
//! (one instance runs the webhook dispatcher): who holds them, in as few
//! Paxos rounds as can be.
//!
//! - A renewal is the common case (every few seconds per active load), so it
//!   goes first: `UPDATE … IF owner = me`, one round. Only when no lease is
//!   there does a second round insert one (`IF NOT EXISTS`).
//! - An owner is an actor *incarnation* (`<instance>#<n>`): a stopping actor's
//!   release (`DELETE … IF owner = me`) cannot remove the lease of the actor
//!   that replaced it on the same instance. That new actor takes the lease over
//!   from an earlier incarnation of its own instance at once
//!   (`UPDATE … IF owner = <that one>`), rather than waiting for the release;
//!   never from another instance, nor from a later incarnation.

use async_trait::async_trait;

use crate::storage::{StorageResult, lease_supersedes};

/// What a conditional write found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum Claim {
    Applied,
    /// Not applied: the lease is held by this owner (`None`: there is none).
    Held(Option<String>),
}

/// The lease table's conditional writes, `ttl` in seconds.
#[async_trait]
pub(super) trait LeaseStatements: Sync {
    /// `INSERT … IF NOT EXISTS USING TTL`.
    async fn take(&self, name: &str, owner: &str, ttl: i32) -> StorageResult<Claim>;
    /// `UPDATE … USING TTL SET owner = <owner> … IF owner = <holder>`.
    async fn update(&self, name: &str, holder: &str, owner: &str, ttl: i32)
    -> StorageResult<Claim>;
}

/// What [`lease`] did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Lease {
    /// `owner` held it and still does.
    Renewed,
    /// `owner` holds it now and did not before: whatever was written under the
    /// previous holder is unknown to it.
    Taken,
    /// Another owner holds it.
    HeldElsewhere,
}

impl Lease {
    pub(super) fn held(self) -> bool {
        self != Lease::HeldElsewhere
    }
}

/// Renews `owner`'s lease on `name`, or takes it if it is free or held by an
/// earlier incarnation of the same instance.
pub(super) async fn lease<S: LeaseStatements>(
    st: &S,
    name: &str,
    owner: &str,
    ttl: i32,
) -> StorageResult<Lease> {
    let claim = match st.update(name, owner, owner, ttl).await? {
        Claim::Applied => return Ok(Lease::Renewed),
        Claim::Held(None) => st.take(name, owner, ttl).await?,
        claim => claim,
    };
    Ok(match claim {
        Claim::Applied => Lease::Taken,
        Claim::Held(Some(holder)) if lease_supersedes(owner, &holder) => {
            match st.update(name, &holder, owner, ttl).await? {
                Claim::Applied => Lease::Taken,
                Claim::Held(_) => Lease::HeldElsewhere,
            }
        }
        Claim::Held(_) => Lease::HeldElsewhere,
    })
}

#[cfg(test)]
mod tests {
    use std::collections::HashMap;
    use std::sync::Mutex;

    use super::*;
    use crate::storage::lease_owner;
    use crate::storage::scylla::faults::{Failure, Faults};

    /// The lease table as a map (TTLs are not modelled: an expired lease is a
    /// removed row).
    #[derive(Default)]
    struct FakeLeases {
        rows: Mutex<HashMap<String, String>>,
        faults: Faults,
    }

    #[async_trait]
    impl LeaseStatements for FakeLeases {
        async fn take(&self, name: &str, owner: &str, _: i32) -> StorageResult<Claim> {
            self.faults.run("take", || {
                let mut rows = self.rows.lock().unwrap();
                match rows.get(name) {
                    Some(holder) => Claim::Held(Some(holder.clone())),
                    None => {
                        rows.insert(name.to_owned(), owner.to_owned());
                        Claim::Applied
                    }
                }
            })
        }

        async fn update(
            &self,
            name: &str,
            holder: &str,
            owner: &str,
            _: i32,
        ) -> StorageResult<Claim> {
            self.faults.run("update", || {
                let mut rows = self.rows.lock().unwrap();
                match rows.get(name) {
                    Some(current) if current == holder => {
                        rows.insert(name.to_owned(), owner.to_owned());
                        Claim::Applied
                    }
                    current => Claim::Held(current.cloned()),
                }
            })
        }
    }

    #[tokio::test]
    async fn a_renewal_is_one_round_and_a_free_lease_two() {
        let st = FakeLeases::default();
        let me = lease_owner("host-a/x1", 1);
        assert_eq!(lease(&st, "load_1", &me, 15).await.unwrap(), Lease::Taken);
        assert_eq!(st.faults.log(), ["update", "take"]);
        assert_eq!(lease(&st, "load_1", &me, 15).await.unwrap(), Lease::Renewed);
        assert_eq!(
            st.faults.log(),
            ["update", "take", "update"],
            "renewed in one round"
        );
    }

    #[tokio::test]
    async fn another_instances_lease_is_not_taken() {
        let st = FakeLeases::default();
        let theirs = lease_owner("host-b/y2", 7);
        assert!(lease(&st, "load_1", &theirs, 15).await.unwrap().held());
        let mine = lease_owner("host-a/x1", 9);
        let refused = lease(&st, "load_1", &mine, 15).await.unwrap();
        assert_eq!(refused, Lease::HeldElsewhere);
        assert_eq!(st.rows.lock().unwrap()["load_1"], theirs);
    }

    #[tokio::test]
    async fn a_new_incarnation_takes_over_and_the_old_ones_renewal_fails() {
        let st = FakeLeases::default();
        let old = lease_owner("host-a/x1", 3);
        let new = lease_owner("host-a/x1", 4);
        assert!(lease(&st, "load_1", &old, 15).await.unwrap().held());
        let taken = lease(&st, "load_1", &new, 15).await.unwrap();
        assert_eq!(taken, Lease::Taken, "taken over at once");
        // The old actor, still stopping, neither renews nor takes it back.
        let lost = lease(&st, "load_1", &old, 15).await.unwrap();
        assert_eq!(lost, Lease::HeldElsewhere);
        assert_eq!(st.rows.lock().unwrap()["load_1"], new);
    }

    #[tokio::test]
    async fn a_renewal_that_failed_ambiguously_is_still_ours_next_time() {
        let st = FakeLeases::default();
        let me = lease_owner("host-a/x1", 1);
        assert!(lease(&st, "load_1", &me, 15).await.unwrap().held());
        // Applied, but the answer was lost.
        st.faults.fail("update", 2, Failure::After);
        assert!(lease(&st, "load_1", &me, 15).await.is_err());
        assert_eq!(lease(&st, "load_1", &me, 15).await.unwrap(), Lease::Renewed);
    }

    #[test]
    fn only_a_later_incarnation_of_the_same_instance_supersedes() {
        assert!(lease_supersedes("h/a#2", "h/a#1"));
        assert!(!lease_supersedes("h/a#1", "h/a#2"));
        assert!(!lease_supersedes("h/a#2", "h/b#1"));
        assert!(
            !lease_supersedes("h/a#2", "h/a"),
            "an owner from before incarnations"
        );
        assert!(!lease_supersedes("dispatcher-host", "dispatcher-host"));
    }
}
