//! Persistence: one trait, two backends (embedded fjall by default, ScyllaDB for
//! clusters), one conformance suite that both must pass.
//!
//! Every method is a complete, atomic unit of durability: when it returns `Ok`, the
//! change survives a crash. Handlers answer 2xx only after that.

use std::path::PathBuf;
use std::sync::Arc;

use async_trait::async_trait;
use chrono::{DateTime, Utc};

use crate::domain::account::Account;
use crate::domain::api_key::ApiKey;
use crate::domain::carrier::Carrier;
use crate::domain::event::Event;
use crate::domain::idempotency::StoredResponse;
use crate::domain::ids::{AccountId, CarrierId, KeyId, LoadId};
use crate::domain::ids::{EventId, WebhookId};
use crate::domain::load::{Load, LoadStatus};
use crate::domain::location::UsState;
use crate::domain::tracking::{Appended, GpsFix, TrackingPoint};
use crate::domain::webhook::{Delivery, Subscription};

pub mod conformance;
pub mod embedded;

#[derive(Debug, Clone, thiserror::Error)]
pub enum StorageError {
    /// The store could not read or write (disk full, I/O error, node down).
    #[error("storage is unavailable: {0}")]
    Unavailable(String),
    /// A stored record could not be decoded: a bug or on-disk damage, never client input.
    #[error("stored record is unreadable: {0}")]
    Corrupt(String),
}

pub type StorageResult<T> = Result<T, StorageError>;

/// Filters of `GET /v1/loads`; any combination is served by one index scan.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct LoadFilter {
    pub status: Option<LoadStatus>,
    pub origin_state: Option<UsState>,
    pub destination_state: Option<UsState>,
}

/// Which slice of a newest-first list to return.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PageRequest {
    pub offset: u64,
    pub limit: u32,
}

#[derive(Debug, Clone, PartialEq)]
pub struct Page<T> {
    pub items: Vec<T>,
    /// Matching items in all pages.
    pub total: u64,
}

/// Which of a load's points to read, newest first.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PointRange {
    pub from: DateTime<Utc>,
    pub to: DateTime<Utc>,
    pub before: Option<DateTime<Utc>>,
    pub limit: usize,
}

impl PointRange {
    /// The latest `limit` points, whatever their time.
    pub fn latest(limit: usize) -> Self {
        PointRange {
            from: DateTime::<Utc>::MIN_UTC,
            to: DateTime::<Utc>::MAX_UTC,
            before: None,
            limit,
        }
    }
}

/// Outcome of inserting a carrier: MC numbers are unique within an account.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CarrierInsert {
    Inserted,
    DuplicateMcNumber(CarrierId),
}

#[async_trait]
pub trait Storage: Send + Sync + 'static {
    /// Creates or replaces an account.
    async fn put_account(&self, account: &Account) -> StorageResult<()>;
    async fn get_account(&self, id: &AccountId) -> StorageResult<Option<Account>>;
    /// All accounts, oldest first. Operator use only: accounts are few.
    async fn list_accounts(&self) -> StorageResult<Vec<Account>>;

    /// Creates or replaces an API key record (revocation is a replace).
    async fn put_api_key(&self, key: &ApiKey) -> StorageResult<()>;
    async fn get_api_key(&self, id: &KeyId) -> StorageResult<Option<ApiKey>>;
    /// An account's keys, oldest first.
    async fn list_api_keys(&self, account: &AccountId) -> StorageResult<Vec<ApiKey>>;

    /// Inserts a new load together with its events (the outbox), atomically.
    async fn insert_load(&self, load: &Load, events: &[Event]) -> StorageResult<()>;
    /// Replaces `previous` with `updated` (same id), moving its index entries.
    /// The caller serialises changes to one load; `previous` is what it last read.
    async fn update_load(
        &self,
        previous: &Load,
        updated: &Load,
        events: &[Event],
    ) -> StorageResult<()>;
    /// A load by id, whatever its account: callers check ownership.
    async fn get_load(&self, id: &LoadId) -> StorageResult<Option<Load>>;
    /// Newest first.
    async fn list_loads(
        &self,
        account: &AccountId,
        filter: &LoadFilter,
        page: PageRequest,
    ) -> StorageResult<Page<Load>>;

    async fn insert_carrier(&self, carrier: &Carrier) -> StorageResult<CarrierInsert>;
    async fn get_carrier(
        &self,
        account: &AccountId,
        id: &CarrierId,
    ) -> StorageResult<Option<Carrier>>;
    /// Newest first.
    async fn list_carriers(
        &self,
        account: &AccountId,
        page: PageRequest,
    ) -> StorageResult<Page<Carrier>>;

    /// Stores GPS points in one durable batch (the group commit). A point whose
    /// (load, timestamp) is already stored, or repeats an earlier one in the same
    /// batch, is a duplicate and is not written again, nor is its event. Outcomes
    /// are in input order.
    async fn append_points(&self, points: Vec<TrackingPoint>) -> StorageResult<Vec<Appended>>;
    /// A load's points newest first: at most `limit` with `from <= timestamp <= to`
    /// and, if given, `timestamp < before` (the cursor of the previous page).
    async fn load_points(&self, load: &LoadId, range: PointRange) -> StorageResult<Vec<GpsFix>>;
    /// How many points a load has with `from <= timestamp <= to`.
    async fn count_points(
        &self,
        load: &LoadId,
        from: DateTime<Utc>,
        to: DateTime<Utc>,
    ) -> StorageResult<u64>;

    /// The highest event sequence number of a load (0 if none).
    async fn last_event_sequence(&self, load: &LoadId) -> StorageResult<u64>;
    /// Outbox events not yet marked fanned out (some delivery of theirs may still
    /// have no record: see `put_deliveries`), oldest first, from after `after` (a pass
    /// over the outbox continues where its previous batch ended). Events commit in
    /// any order (their ids are made before their commits), so a pass may miss one
    /// that commits late behind it: the caller starts a new pass from the beginning
    /// whenever it may have missed one.
    async fn unfanned_events(
        &self,
        after: Option<&EventId>,
        limit: usize,
    ) -> StorageResult<Vec<Event>>;
    async fn get_event(&self, id: &EventId) -> StorageResult<Option<Event>>;

    async fn put_webhook(&self, webhook: &Subscription) -> StorageResult<()>;
    async fn delete_webhook(&self, webhook: &Subscription) -> StorageResult<()>;
    async fn get_webhook(&self, id: &WebhookId) -> StorageResult<Option<Subscription>>;
    /// Every subscription, for the in-memory directory the dispatcher matches with.
    async fn all_webhooks(&self) -> StorageResult<Vec<Subscription>>;

    /// The deliveries among `deliveries` that storage has no record of. A
    /// dispatcher that finds an event still marked unfanned (after a restart)
    /// sends only these: the others were attempted before it stopped.
    async fn without_records(&self, deliveries: Vec<Delivery>) -> StorageResult<Vec<Delivery>>;
    /// Writes delivery records, each `(previous, updated)` where `previous` is the
    /// record as storage holds it (`None`: this is the delivery's first record),
    /// keeping the schedule of due deliveries in step, and marks the `fanned_out`
    /// events as fanned out (every delivery of theirs is now recorded), in one
    /// atomic write. A delivery of a webhook that no longer exists is not written
    /// (it went with its webhook). Takes its arguments by value so that encoding
    /// them happens with the write, off the (single) dispatcher thread.
    async fn put_deliveries(
        &self,
        changes: Vec<(Option<Delivery>, Delivery)>,
        fanned_out: Vec<EventId>,
    ) -> StorageResult<()>;
    /// Replaces one delivery record (see `put_deliveries`).
    async fn put_delivery(&self, previous: &Delivery, delivery: &Delivery) -> StorageResult<()> {
        self.put_deliveries(vec![(Some(previous.clone()), delivery.clone())], Vec::new())
            .await
    }
    /// How many pending deliveries have a next attempt scheduled (the backlog).
    async fn count_due_deliveries(&self) -> StorageResult<u64>;
    async fn get_delivery(
        &self,
        webhook: &WebhookId,
        event: &EventId,
    ) -> StorageResult<Option<Delivery>>;
    /// A webhook's deliveries, newest event first.
    async fn list_deliveries(
        &self,
        webhook: &WebhookId,
        page: PageRequest,
    ) -> StorageResult<Page<Delivery>>;
    /// Pending deliveries whose next attempt is due at `until` or before, soonest first.
    async fn due_deliveries(
        &self,
        until: DateTime<Utc>,
        limit: usize,
    ) -> StorageResult<Vec<Delivery>>;
    /// Forgets webhook history from before `before`, at most `limit` records per
    /// call: delivered and failed deliveries, and outbox events that are fanned out
    /// and have no pending delivery. A load's event sequence is kept (numbering
    /// never restarts). Returns how many records went.
    async fn prune_webhook_history(
        &self,
        before: DateTime<Utc>,
        limit: usize,
    ) -> StorageResult<u64>;
    /// Pending deliveries waiting for their webhook to be enabled again.
    async fn parked_deliveries(&self, webhook: &WebhookId) -> StorageResult<Vec<Delivery>>;

    /// The answer kept for an idempotency key of an account, if any (expired or not).
    async fn get_idempotent(
        &self,
        account: &AccountId,
        key: &str,
    ) -> StorageResult<Option<StoredResponse>>;
    /// Keeps (or replaces) the answer for an idempotency key.
    async fn put_idempotent(&self, response: &StoredResponse) -> StorageResult<()>;
    /// Forgets answers created before `before`; returns how many.
    async fn purge_idempotent(&self, before: DateTime<Utc>) -> StorageResult<u64>;

    /// A cheap round trip that proves the store answers (for `/ready`).
    async fn ping(&self) -> StorageResult<()>;
}

/// Which backend to open, from configuration.
#[derive(Debug, Clone)]
pub enum StorageConfig {
    Embedded { data_dir: PathBuf },
}

/// The one place that turns configuration into a backend.
pub async fn open(config: &StorageConfig) -> anyhow::Result<Arc<dyn Storage>> {
    match config {
        StorageConfig::Embedded { data_dir } => {
            let store = embedded::EmbeddedStore::open(&data_dir.join("store")).await?;
            Ok(Arc::new(store))
        }
    }
}
