//! The webhook pipeline on ScyllaDB: outbox events, subscriptions, delivery
//! records and their schedule (tables in `cql/004_webhooks.cql`).
//!
//! This file holds the subscriptions and what the parts share; the outbox is
//! `outbox.rs`, delivery records and their schedule `schedule.rs`, reading
//! and pruning history `history.rs`; the partition arithmetic (minutes,
//! hours, shards, due times) is in `../keys.rs` and the statements in
//! `../statements.rs`.
//!
//! # Layout
//!
//! The outbox (`unfanned_events`: oldest first after a cursor) and the
//! schedule (`due_deliveries`: soonest first until a time, and counted) are
//! global ordered queues. Neither is one partition (every write of the cluster
//! would go to one replica set) nor read by a scan of a whole table:
//!
//! - they are bucketed by time, one partition per minute and shard: the minute
//!   of the event id's time for the outbox (ids are ULIDs: their first ten
//!   characters are the millisecond they were made, [`id_millis`]), the minute
//!   of the due time for the schedule; the shard is a stable hash of the row's
//!   id modulo [`SHARDS`], so a busy minute's writes go to eight partitions and
//!   each partition holds one eighth of a minute;
//! - a directory per queue and shard lists the minutes that may hold rows
//!   (`unfanned_minutes`, `due_minutes`), upserted in the same logged batch as
//!   the row. A read takes, per shard, the listed minutes in order (a clustering
//!   range from the cursor's minute, or up to the due bound) and reads each
//!   until it has `limit` rows; the shards are read concurrently and merged, so
//!   the global order (event id; due time, webhook, event) is kept exactly.
//!
//! Minutes, not hours: a read of a minute that is still listed walks the
//! tombstones of that minute's drained rows, so the smaller the bucket, the
//! fewer. A directory holds a row per non-empty minute, which is few for the
//! outbox (it drains within seconds) and at most about 1,600 per shard for the
//! schedule (retries reach a day ahead).
//!
//! # Tombstones
//!
//! Rows leave the queues one by one (an event when it is fanned out, an entry
//! when its delivery is attempted). A pass that continues after a cursor
//! starts its slice at the cursor, so it never reads the tombstones behind it;
//! a pass from the beginning and a schedule read start at the first listed
//! minute, and a reader that finds a listed minute empty unlists it, so reads
//! never walk back through drained history: only through the drained rows of
//! minutes that still hold something or were written in the last [`SLACK`].
//! The queue tables and directories keep tombstones for 3 hours
//! (`gc_grace_seconds`, see the schema for why that is safe), so the
//! directories, which are read whole, stay small.
//!
//! Unlisting races with a writer adding a row to the minute that was just
//! found empty. The delete is written with a timestamp [`SLACK`] in the past,
//! so it cannot remove a listing written (by its own timestamp) after that: a
//! write that was not visible to the read but was sent within [`SLACK`] of it
//! stays listed. Only a write that becomes visible more than [`SLACK`] after it
//! was sent (a batch replayed from the batch log long after a node failure)
//! can land in a minute already unlisted; see "Differences" below.
//!
//! # History
//!
//! Outbox events (`outbox_events`) are bucketed like the outbox, so the
//! partition of an event follows from its id, and `outbox_minutes` lists the
//! minutes holding events for pruning. Delivery records are per subscription
//! and hour of their event (`deliveries`, newest first; `delivery_hours` lists
//! a subscription's hours), and again per event minute and shard, with whether
//! they are pending (`deliveries_by_event`): pruning reads one minute's events,
//! their deliveries and their outbox markers from three partitions with the
//! same key, without visiting subscriptions. `parked_deliveries` lists a
//! subscription's pending deliveries without a next attempt. Queue and
//! listing rows are keys only: records are written once, in `outbox_events`
//! and `deliveries`, and read from there by partition (`IN`, at most
//! [`IN_CHUNK`] keys a query).
//!
//! A load's last event sequence is one row per load (`load_event_sequences`),
//! written with `USING TIMESTAMP <sequence>`: the highest sequence wins
//! whichever write lands last, with no read and no per-event row (a tracked
//! load has an event per fix).
//!
//! # Differences from the embedded store
//!
//! - `put_deliveries` reads the subscriptions before its batch, not under a
//!   lock, and checks them again after it: a delivery whose subscription was
//!   deleted meanwhile is deleted again (see `put_deliveries`). A batch that
//!   fails (an error is returned) but is replayed later by the batch log after
//!   `delete_webhook` finished can leave that delivery behind.
//! - Logged batches are atomic but not isolated: a read may see part of a
//!   batch being applied. `unfanned_events` skips a marker whose event is not
//!   visible yet (the embedded store reports corruption), and `due_deliveries`
//!   skips an entry its delivery record does not agree with; both are found by
//!   a later read.
//! - A write that becomes visible more than [`SLACK`] after it was sent, into a
//!   minute a reader had found empty and unlisted, is not found by outbox
//!   passes or schedule reads (it is still found by id).
//! - `list_deliveries` answers a maintained total (`delivery_log`), which a
//!   failed or ambiguous write can leave off until recounted, and reads it
//!   apart from the records: under concurrent writes `total` may differ from
//!   the items by the writes in between. `count_due_deliveries` counts minute
//!   by minute (see there).
//! - `prune_webhook_history` and `delete_webhook` delete in many writes, not
//!   one: a failure half-way leaves part done (an error is returned, and the
//!   next call finishes it; the order of the deletes keeps every remaining
//!   row findable). Within its limit, pruning goes minute by minute (finished
//!   deliveries, then events), where the embedded store takes every
//!   subscription's deliveries first: which records a limited call forgets
//!   differs, not how many nor what is kept.

mod delivery_log;
mod history;
mod outbox;
mod schedule;

use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet};
use std::future::Future;

use async_trait::async_trait;
use chrono::{DateTime, TimeDelta, Utc};
use futures_util::future::{try_join_all, try_join3};
use scylla::serialize::row::SerializeRow;
use scylla::serialize::value::SerializeValue;
use scylla::statement::prepared::PreparedStatement;

use super::keys::{MICROS_PER_MINUTE, SHARDS, Slot, due_of, event_hour, event_slot, is_parked};
use super::statements::{BoundedBatches, LoggedBatch};
use super::{ScyllaStore, decode, encode, keys};
use crate::domain::event::Event;
use crate::domain::ids::{EventId, LoadId, WebhookId};
use crate::domain::webhook::{Delivery, DeliveryStatus, Subscription};
use crate::storage::{Page, PageRequest, StorageError, StorageResult, WebhookStore};

/// How far in the past an unlisting is timestamped: a listing written after
/// `seen empty - SLACK` survives it. Covers the time a write can take to become
/// visible after it was sent (timeouts, a coordinator's retries, the batch
/// log's replay, which runs about once a minute) and clock differences between
/// this service and the cluster. A minute is only unlisted once no write has
/// touched its listing for this long, so readers walk the tombstones of at most
/// this much recent history.
const SLACK: TimeDelta = TimeDelta::minutes(5);

/// Keys in one `IN` restriction: ScyllaDB refuses more than 100 by default
/// (`max_clustering_key_restrictions_per_query`).
const IN_CHUNK: usize = 100;

/// Queries one call keeps in flight at most.
const CONCURRENCY: usize = 32;

/// A row count as CQL's `LIMIT` takes it (at least 1).
fn cql_limit(rows: usize) -> i32 {
    i32::try_from(rows.max(1)).unwrap_or(i32::MAX)
}

fn stored_event(raw: &str) -> StorageResult<EventId> {
    EventId::from_stored(raw)
        .ok_or_else(|| StorageError::corrupt(format!("a stored event id {raw:?}")))
}

fn stored_webhook(raw: &str) -> StorageResult<WebhookId> {
    WebhookId::from_stored(raw)
        .ok_or_else(|| StorageError::corrupt(format!("a stored webhook id {raw:?}")))
}

/// Event ids grouped by their partition in `deliveries`, in chunks of at most
/// [`IN_CHUNK`]: `(webhook id, hour, event ids)`.
fn by_delivery_partition<'a>(
    keys: impl IntoIterator<Item = (&'a WebhookId, &'a EventId)>,
) -> StorageResult<Vec<(String, i64, Vec<String>)>> {
    let mut groups: BTreeMap<(&str, i64), Vec<String>> = BTreeMap::new();
    for (webhook, event) in keys {
        groups
            .entry((webhook.as_str(), event_hour(event)))
            .or_default()
            .push(event.as_str().to_owned());
    }
    Ok(groups
        .into_iter()
        .flat_map(|((webhook, hour), events)| {
            events
                .chunks(IN_CHUNK)
                .map(|chunk| (webhook.to_owned(), hour, chunk.to_vec()))
                .collect::<Vec<_>>()
        })
        .collect())
}

/// Runs `read` on every item, at most [`CONCURRENCY`] at a time; the answers
/// in the order of the items.
async fn each<T, U, Fut>(
    items: impl IntoIterator<Item = T>,
    read: impl FnMut(T) -> Fut,
) -> StorageResult<Vec<U>>
where
    Fut: Future<Output = StorageResult<U>>,
{
    let mut reads = items.into_iter().map(read);
    let mut out = Vec::new();
    loop {
        let chunk: Vec<Fut> = reads.by_ref().take(CONCURRENCY).collect();
        if chunk.is_empty() {
            return Ok(out);
        }
        out.extend(try_join_all(chunk).await?);
    }
}

/// Idempotent writes that need no atomicity between them (deletes of pruned
/// or deleted history), run as single statements, each routed to its own
/// replicas, at most [`CONCURRENCY`] at a time.
#[derive(Default)]
struct Writes<'s> {
    items: Vec<(&'s PreparedStatement, Box<dyn SerializeRow + Send + Sync>)>,
}

impl<'s> Writes<'s> {
    fn add(
        &mut self,
        statement: &'s PreparedStatement,
        values: impl SerializeRow + Send + Sync + 'static,
    ) {
        self.items.push((statement, Box::new(values)));
    }

    async fn run(self, store: &ScyllaStore) -> StorageResult<()> {
        each(&self.items, |(statement, values)| {
            store.exec(statement, values)
        })
        .await
        .map(|_| ())
    }
}

/// Listings already added to a batch (each is upserted once a batch).
#[derive(Default)]
struct Listed {
    outbox: HashSet<Slot>,
    due: HashSet<Slot>,
    hours: HashSet<(String, i64)>,
}

/// A schedule entry as read: due time, webhook id, event id.
type DueRow = (i64, String, String);

impl ScyllaStore {
    /// Every shard's listed minutes up to `last` (a `*_minutes_until` statement
    /// of a directory), read concurrently, per shard in minute order.
    pub(super) async fn listed_slots(
        &self,
        until: &PreparedStatement,
        last: i64,
    ) -> StorageResult<Vec<Vec<Slot>>> {
        try_join_all((0..SHARDS).map(|shard| async move {
            let minutes = self
                .rows(until, (shard, last), |(minute,): (i64,)| Ok(minute))
                .await?;
            Ok::<_, StorageError>(
                minutes
                    .into_iter()
                    .map(|minute| Slot { minute, shard })
                    .collect::<Vec<_>>(),
            )
        }))
        .await
    }

    /// Deletes a directory row found empty at `seen_at`, timestamped [`SLACK`]
    /// before it so that a listing written since is kept. Best effort: a row
    /// left behind costs one empty read, and is unlisted when next found.
    pub(super) async fn unlist<A, B>(
        &self,
        statement: &PreparedStatement,
        a: A,
        b: B,
        seen_at: DateTime<Utc>,
    ) where
        A: SerializeValue + Send,
        B: SerializeValue + Send,
    {
        let timestamp = keys::micros(&(seen_at - SLACK));
        if let Err(error) = self.exec(statement, (timestamp, a, b)).await {
            tracing::warn!(
                error = %crate::telemetry::error_chain(&error),
                "unlisting an empty webhook queue bucket failed; it is tried again when next found empty"
            );
        }
    }

    /// The subscriptions among `ids` that exist.
    pub(super) async fn existing_webhooks(
        &self,
        ids: impl IntoIterator<Item = &WebhookId>,
    ) -> StorageResult<HashSet<WebhookId>> {
        let found = each(ids, |id| async move {
            let row = self
                .first::<(String,)>(&self.wh.webhook_exists, (id.as_str(),))
                .await?;
            Ok(row.map(|_| id.clone()))
        })
        .await?;
        Ok(found.into_iter().flatten().collect())
    }
}

#[async_trait]
impl WebhookStore for ScyllaStore {
    async fn last_event_sequence(&self, load: &LoadId) -> StorageResult<u64> {
        outbox::last_event_sequence(self, load).await
    }

    async fn unfanned_events(
        &self,
        after: Option<&EventId>,
        limit: usize,
    ) -> StorageResult<Vec<Event>> {
        outbox::unfanned_events(self, after, limit).await
    }

    async fn get_event(&self, id: &EventId) -> StorageResult<Option<Event>> {
        outbox::get_event(self, id).await
    }

    async fn put_webhook(&self, webhook: &Subscription) -> StorageResult<()> {
        self.exec(
            &self.wh.put_webhook,
            (webhook.id.as_str(), encode(&self.secrets.seal(webhook))?),
        )
        .await
        .map(|_| ())
    }

    async fn delete_webhook(&self, webhook: &Subscription) -> StorageResult<()> {
        history::delete_webhook(self, webhook).await
    }

    async fn get_webhook(&self, id: &WebhookId) -> StorageResult<Option<Subscription>> {
        let stored: Option<Subscription> =
            self.record(&self.wh.get_webhook, (id.as_str(),)).await?;
        stored.map(|webhook| self.secrets.open(webhook)).transpose()
    }

    async fn all_webhooks(&self) -> StorageResult<Vec<Subscription>> {
        let stored: Vec<Subscription> = self.records(&self.wh.all_webhooks, ()).await?;
        stored
            .into_iter()
            .map(|webhook| self.secrets.open(webhook))
            .collect()
    }

    async fn reseal_webhook_secrets(&self) -> StorageResult<u64> {
        let stored: Vec<(String, i64)> = self
            .rows(
                &self.wh.all_webhooks_written,
                (),
                |(record, written): (String, Option<i64>)| Ok((record, written.unwrap_or(0))),
            )
            .await?;
        let mut resealed = 0u64;
        for (record, written) in stored {
            let (webhook, plain) = self.secrets.reseal(decode(&record)?)?;
            if !plain {
                continue;
            }
            // Just after the write read: a change another instance made
            // since (which wrote it sealed already) has a later timestamp.
            let sealed = encode(&self.secrets.seal(&webhook))?;
            let values = (written.saturating_add(1), sealed, webhook.id.as_str());
            self.exec(&self.wh.reseal_webhook, values).await?;
            resealed += 1;
        }
        Ok(resealed)
    }

    async fn without_records(&self, deliveries: Vec<Delivery>) -> StorageResult<Vec<Delivery>> {
        schedule::without_records(self, deliveries).await
    }

    async fn put_deliveries(
        &self,
        changes: Vec<(Option<Delivery>, Delivery)>,
        fanned_out: Vec<EventId>,
    ) -> StorageResult<()> {
        schedule::put_deliveries(self, changes, fanned_out).await
    }

    async fn count_due_deliveries(&self) -> StorageResult<u64> {
        schedule::count_due_deliveries(self).await
    }

    async fn get_delivery(
        &self,
        webhook: &WebhookId,
        event: &EventId,
    ) -> StorageResult<Option<Delivery>> {
        history::get_delivery(self, webhook, event).await
    }

    async fn list_deliveries(
        &self,
        webhook: &WebhookId,
        page: PageRequest,
    ) -> StorageResult<Page<Delivery>> {
        history::list_deliveries(self, webhook, page).await
    }

    async fn due_deliveries(
        &self,
        until: DateTime<Utc>,
        limit: usize,
    ) -> StorageResult<Vec<Delivery>> {
        schedule::due_deliveries(self, until, limit).await
    }

    async fn prune_webhook_history(
        &self,
        before: DateTime<Utc>,
        limit: usize,
    ) -> StorageResult<u64> {
        history::prune_webhook_history(self, before, limit).await
    }

    async fn parked_deliveries(&self, webhook: &WebhookId) -> StorageResult<Vec<Delivery>> {
        schedule::parked_deliveries(self, webhook).await
    }
}
