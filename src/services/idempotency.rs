//! The bookkeeping behind `Idempotency-Key`: one request per key at a time, the
//! first answer kept for 24 hours, a retry told apart from a different request.
//!
//! Keys in progress are held in memory, so two concurrent requests with one key
//! cannot both run on this node; a store shared by several instances (ScyllaDB)
//! also claims the key there, so they cannot run on two nodes either.

use std::sync::Arc;
use std::time::Duration;

use dashmap::DashMap;

use crate::clock::Clock;
use crate::domain::idempotency::{RETENTION_HOURS, StoredResponse};
use crate::domain::ids::AccountId;
use crate::storage::{Storage, StorageError};

type InProgress = DashMap<(AccountId, String), ()>;

pub enum Begin {
    /// The first answer, to be sent again.
    Replay(StoredResponse),
    /// The key was used for a different request.
    Mismatch,
    /// A request with this key is running right now.
    InUse,
    /// A new key: run the request, then `finish` with its answer.
    Proceed(Claim),
}

/// How long a key claimed in a shared store stays claimed if its instance
/// dies before releasing it (far longer than any request runs).
const SHARED_CLAIM_TTL: Duration = Duration::from_secs(120);

/// The right to run the request of a key; released when dropped.
pub struct Claim {
    in_progress: Arc<InProgress>,
    account: AccountId,
    key: String,
    fingerprint: String,
    /// Set when the key is also claimed in a shared store, by this instance.
    shared: Option<(Arc<dyn Storage>, Arc<str>)>,
}

impl Drop for Claim {
    fn drop(&mut self) {
        self.in_progress
            .remove(&(self.account.clone(), self.key.clone()));
        if let Some((storage, instance)) = self.shared.take() {
            let (account, key) = (self.account.clone(), std::mem::take(&mut self.key));
            // A failed release leaves the key claimed until its TTL ends (a
            // retry meanwhile hears 409, then replays the stored answer).
            tokio::spawn(async move {
                if let Err(error) = storage
                    .release_idempotency_key(&account, &key, &instance)
                    .await
                {
                    tracing::warn!(error = %crate::telemetry::error_chain(&error), "could not release an idempotency key claim; it expires on its own");
                }
            });
        }
    }
}

pub struct Idempotency {
    storage: Arc<dyn Storage>,
    clock: Clock,
    in_progress: Arc<InProgress>,
    /// This instance's name, for claims in a shared store.
    instance: Arc<str>,
}

impl Idempotency {
    pub fn new(storage: Arc<dyn Storage>, clock: Clock, instance: Arc<str>) -> Self {
        Idempotency {
            storage,
            clock,
            in_progress: Arc::new(DashMap::new()),
            instance,
        }
    }

    pub async fn begin(
        &self,
        account: &AccountId,
        key: &str,
        fingerprint: String,
    ) -> Result<Begin, StorageError> {
        let slot = (account.clone(), key.to_owned());
        if self.in_progress.insert(slot, ()).is_some() {
            return Ok(Begin::InUse);
        }
        let mut claim = Claim {
            in_progress: self.in_progress.clone(),
            account: account.clone(),
            key: key.to_owned(),
            fingerprint,
            shared: None,
        };
        if self.storage.needs_leases() {
            if !self
                .storage
                .claim_idempotency_key(account, key, &self.instance, SHARED_CLAIM_TTL)
                .await?
            {
                return Ok(Begin::InUse);
            }
            claim.shared = Some((self.storage.clone(), self.instance.clone()));
        }
        match self.storage.get_idempotent(account, key).await? {
            Some(stored) if !stored.expired(self.clock.now()) => {
                if stored.fingerprint == claim.fingerprint {
                    Ok(Begin::Replay(stored))
                } else {
                    Ok(Begin::Mismatch)
                }
            }
            _ => Ok(Begin::Proceed(claim)),
        }
    }

    /// Keeps the answer to a claimed key (durably, before it is sent).
    pub async fn finish(
        &self,
        claim: Claim,
        status: u16,
        content_type: Option<String>,
        body: String,
    ) -> Result<(), StorageError> {
        let stored = StoredResponse {
            account_id: claim.account.clone(),
            key: claim.key.clone(),
            fingerprint: claim.fingerprint.clone(),
            status,
            content_type,
            body,
            created_at: self.clock.now(),
        };
        self.storage.put_idempotent(&stored).await
    }

    /// Forgets answers older than the retention period.
    pub async fn purge(&self) -> Result<u64, StorageError> {
        let before = self.clock.now() - chrono::Duration::hours(RETENTION_HOURS);
        self.storage.purge_idempotent(before).await
    }
}
