//! The webhook pipeline: outbox events, subscriptions and delivery records.

use async_trait::async_trait;
use chrono::{DateTime, Utc};

use super::{Page, PageRequest, StorageResult};
use crate::domain::event::Event;
use crate::domain::ids::{EventId, LoadId, WebhookId};
use crate::domain::webhook::{Delivery, Subscription};

#[async_trait]
pub trait WebhookStore: Send + Sync {
    /// The highest event sequence number of a load (0 if none).
    async fn last_event_sequence(&self, load: &LoadId) -> StorageResult<u64>;
    /// Outbox events not yet marked fanned out (some delivery of theirs may still
    /// have no record: see `put_deliveries`), oldest first, from after `after` (a pass
    /// over the outbox continues where its previous batch ended). Events commit in
    /// any order (their ids are made before their commits), so a pass may miss one
    /// that commits late behind it: the caller starts a new pass, from before the
    /// oldest event its last pass found and minutes before that pass began,
    /// whenever it may have missed one.
    async fn unfanned_events(
        &self,
        after: Option<&EventId>,
        limit: usize,
    ) -> StorageResult<Vec<Event>>;
    /// An outbox event by id (`None` once history pruning forgot it).
    async fn get_event(&self, id: &EventId) -> StorageResult<Option<Event>>;

    /// Creates or replaces a subscription.
    async fn put_webhook(&self, webhook: &Subscription) -> StorageResult<()>;
    /// Deletes a subscription together with its delivery records and their
    /// places in the schedule of due deliveries.
    async fn delete_webhook(&self, webhook: &Subscription) -> StorageResult<()>;
    /// A subscription by id, whatever its account: callers check ownership.
    async fn get_webhook(&self, id: &WebhookId) -> StorageResult<Option<Subscription>>;
    /// Every subscription, for the in-memory directory the dispatcher matches with.
    async fn all_webhooks(&self) -> StorageResult<Vec<Subscription>>;
    /// Reads every subscription and opens its secret, so that a key that does
    /// not open them fails the start rather than a delivery, and writes again,
    /// sealed, those whose secret is stored plain (written before secrets were
    /// sealed at rest, see `secret_box`). Returns how many it wrote. Meant for
    /// start-up; a store opened without a key only checks.
    async fn reseal_webhook_secrets(&self) -> StorageResult<u64>;

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
    /// The record of one webhook's delivery of one event, if storage has it.
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
}
