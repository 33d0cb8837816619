//! The webhook pipeline on ScyllaDB: outbox events, subscriptions, delivery
//! records and their schedule (tables in `cql/004_webhooks.cql`).
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
//! - `list_deliveries` counts and reads in separate queries, not from one
//!   snapshot: under concurrent writes `total` may differ from the items by
//!   the writes in between. `count_due_deliveries` likewise counts minute by
//!   minute (see there).
//! - `prune_webhook_history` and `delete_webhook` delete in many writes, not
//!   one: a failure half-way leaves part done (an error is returned, and the
//!   next call finishes it; the order of the deletes keeps every remaining
//!   row findable). Within its limit, pruning goes minute by minute (finished
//!   deliveries, then events), where the embedded store takes every
//!   subscription's deliveries first: which records a limited call forgets
//!   differs, not how many nor what is kept.

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
            .entry((webhook.as_str(), event_hour(event)?))
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
    async fn listed_slots(
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
}

impl ScyllaStore {
    /// Adds the outbox writes of `events` to a batch that stores the change
    /// they record: each event's record and its place in the outbox (with the
    /// listings of their minute), and each load's highest sequence.
    pub(super) fn add_events(
        &self,
        batch: &mut LoggedBatch,
        events: &[Event],
    ) -> StorageResult<()> {
        let mut listed = HashSet::new();
        let mut sequences: HashMap<&LoadId, u64> = HashMap::new();
        for event in events {
            let slot = event_slot(&event.id)?;
            let id = event.id.as_str().to_owned();
            let record = encode(event)?;
            batch.add(
                &self.wh.put_event,
                (slot.minute, slot.shard, id.clone(), record),
            );
            batch.add(&self.wh.put_unfanned, (slot.minute, slot.shard, id));
            if listed.insert(slot) {
                batch.add(&self.wh.list_outbox_minute, (slot.shard, slot.minute));
                batch.add(&self.wh.list_unfanned_minute, (slot.shard, slot.minute));
            }
            let highest = sequences.entry(&event.load_id).or_default();
            *highest = (*highest).max(event.sequence);
        }
        for (load, sequence) in sequences {
            let sequence = i64::try_from(sequence)
                .map_err(|_| StorageError::corrupt("an event sequence number beyond 2^63"))?;
            // The sequence is also the write's timestamp: the highest wins.
            batch.add(
                &self.wh.put_sequence,
                (load.as_str().to_owned(), sequence, sequence),
            );
        }
        Ok(())
    }

    /// Deletes a directory row found empty at `seen_at`, timestamped [`SLACK`]
    /// before it so that a listing written since is kept. Best effort: a row
    /// left behind costs one empty read, and is unlisted when next found.
    async fn unlist<A, B>(&self, statement: &PreparedStatement, a: A, b: B, seen_at: DateTime<Utc>)
    where
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

    /// One shard's first `limit` unfanned events from minute `from` on (after
    /// `cursor` in minute `from`), unlisting the minutes found empty.
    async fn unfanned_in_shard(
        &self,
        shard: i32,
        from: i64,
        cursor: &str,
        limit: usize,
    ) -> StorageResult<Vec<(Slot, String)>> {
        let minutes = self
            .rows(
                &self.wh.unfanned_minutes_from,
                (shard, from),
                |(minute,): (i64,)| Ok(minute),
            )
            .await?;
        let mut out = Vec::new();
        for minute in minutes {
            let after = if minute == from { cursor } else { "" };
            let seen_at = Utc::now();
            let slot = Slot { minute, shard };
            let ids = self
                .rows(
                    &self.wh.unfanned_after,
                    (minute, shard, after, cql_limit(limit - out.len())),
                    |(id,): (String,)| Ok(id),
                )
                .await?;
            if ids.is_empty() && after.is_empty() {
                self.unlist(&self.wh.unlist_unfanned_minute, shard, minute, seen_at)
                    .await;
            }
            out.extend(ids.into_iter().map(|id| (slot, id)));
            if out.len() >= limit {
                break;
            }
        }
        Ok(out)
    }

    /// The records of events, by id (those not found are left out).
    async fn event_records(&self, ids: &[(Slot, String)]) -> StorageResult<HashMap<String, Event>> {
        let mut by_slot: BTreeMap<Slot, Vec<String>> = BTreeMap::new();
        for (slot, id) in ids {
            by_slot.entry(*slot).or_default().push(id.clone());
        }
        let reads = by_slot.into_iter().flat_map(|(slot, ids)| {
            ids.chunks(IN_CHUNK)
                .map(|chunk| (slot, chunk.to_vec()))
                .collect::<Vec<_>>()
        });
        let found = each(reads, |(slot, ids)| {
            self.rows(
                &self.wh.events_in,
                (slot.minute, slot.shard, ids),
                |(id, record): (String, String)| Ok((id, record)),
            )
        })
        .await?;
        found
            .into_iter()
            .flatten()
            .map(|(id, record)| Ok((id, decode::<Event>(&record)?)))
            .collect()
    }

    /// One shard's first `limit` schedule entries due by `until` (µs), from
    /// the listed minutes up to `last_minute`, unlisting those found empty.
    async fn due_in_shard(
        &self,
        shard: i32,
        until: i64,
        last_minute: i64,
        limit: usize,
    ) -> StorageResult<Vec<DueRow>> {
        let minutes = self
            .rows(
                &self.wh.due_minutes_until,
                (shard, last_minute),
                |(minute,): (i64,)| Ok(minute),
            )
            .await?;
        let mut out = Vec::new();
        for minute in minutes {
            let seen_at = Utc::now();
            let rows = self
                .rows(
                    &self.wh.due_until,
                    (minute, shard, until, cql_limit(limit - out.len())),
                    |row: DueRow| Ok(row),
                )
                .await?;
            // Only a minute wholly before the bound was read whole.
            if rows.is_empty() && minute < last_minute {
                self.unlist(&self.wh.unlist_due_minute, shard, minute, seen_at)
                    .await;
            }
            out.extend(rows);
            if out.len() >= limit {
                break;
            }
        }
        Ok(out)
    }

    /// The delivery records of `(webhook, event)` keys, by key (those not
    /// found are left out).
    async fn delivery_records<'a>(
        &self,
        keys: impl IntoIterator<Item = (&'a WebhookId, &'a EventId)>,
    ) -> StorageResult<HashMap<(WebhookId, EventId), Delivery>> {
        let reads = by_delivery_partition(keys)?;
        let found = each(reads, |(webhook, hour, events)| {
            self.records::<Delivery>(&self.wh.deliveries_in, (webhook, hour, events))
        })
        .await?;
        Ok(found
            .into_iter()
            .flatten()
            .map(|delivery| {
                let key = (delivery.webhook_id.clone(), delivery.event_id.clone());
                (key, delivery)
            })
            .collect())
    }

    /// The subscriptions among `ids` that exist.
    async fn existing_webhooks(
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

    /// Adds one delivery record and what keeps step with it to a batch: its
    /// subscription's listing of the hour, its row by event (and that minute's
    /// listing), its move in the schedule, and its parking.
    fn add_delivery(
        &self,
        batch: &mut LoggedBatch,
        listed: &mut Listed,
        previous: Option<&Delivery>,
        delivery: &Delivery,
    ) -> StorageResult<()> {
        let webhook = delivery.webhook_id.as_str();
        let event = delivery.event_id.as_str();
        let hour = event_hour(&delivery.event_id)?;
        let slot = event_slot(&delivery.event_id)?;
        batch.add(
            &self.wh.put_delivery,
            (
                webhook.to_owned(),
                hour,
                event.to_owned(),
                encode(delivery)?,
            ),
        );
        if listed.hours.insert((webhook.to_owned(), hour)) {
            batch.add(&self.wh.list_delivery_hour, (webhook.to_owned(), hour));
        }
        // Written with every record, so its `pending` never disagrees with it.
        batch.add(
            &self.wh.put_delivery_by_event,
            (
                slot.minute,
                slot.shard,
                event.to_owned(),
                webhook.to_owned(),
                delivery.status == DeliveryStatus::Pending,
            ),
        );
        if listed.outbox.insert(slot) {
            batch.add(&self.wh.list_outbox_minute, (slot.shard, slot.minute));
        }
        let (old, new) = (previous.and_then(due_of), due_of(delivery));
        if old != new {
            if let Some(old) = old {
                batch.add(
                    &self.wh.delete_due,
                    (
                        old.slot.minute,
                        old.slot.shard,
                        old.at,
                        webhook.to_owned(),
                        event.to_owned(),
                    ),
                );
            }
            if let Some(new) = new {
                batch.add(
                    &self.wh.put_due,
                    (
                        new.slot.minute,
                        new.slot.shard,
                        new.at,
                        webhook.to_owned(),
                        event.to_owned(),
                    ),
                );
                if listed.due.insert(new.slot) {
                    batch.add(&self.wh.list_due_minute, (new.slot.shard, new.slot.minute));
                }
            }
        }
        if is_parked(delivery) {
            batch.add(&self.wh.put_parked, (webhook.to_owned(), event.to_owned()));
        } else if previous.is_some_and(is_parked) {
            batch.add(
                &self.wh.delete_parked,
                (webhook.to_owned(), event.to_owned()),
            );
        }
        Ok(())
    }

    /// Adds the deletes of what refers to a delivery record (its row by event,
    /// its schedule entry, its parking), but not the record itself.
    fn forget_around<'s>(
        &'s self,
        writes: &mut Writes<'s>,
        delivery: &Delivery,
    ) -> StorageResult<()> {
        let webhook = delivery.webhook_id.as_str();
        let event = delivery.event_id.as_str();
        let slot = event_slot(&delivery.event_id)?;
        writes.add(
            &self.wh.delete_delivery_by_event,
            (
                slot.minute,
                slot.shard,
                event.to_owned(),
                webhook.to_owned(),
            ),
        );
        if let Some(due) = due_of(delivery) {
            writes.add(
                &self.wh.delete_due,
                (
                    due.slot.minute,
                    due.slot.shard,
                    due.at,
                    webhook.to_owned(),
                    event.to_owned(),
                ),
            );
        }
        if is_parked(delivery) {
            writes.add(
                &self.wh.delete_parked,
                (webhook.to_owned(), event.to_owned()),
            );
        }
        Ok(())
    }

    /// Deletes a subscription's delivery records and everything referring to
    /// them. While the subscription exists (`gone` false) only rows it read are
    /// deleted (a delivery written meanwhile stays whole), and emptied hours
    /// are unlisted as queues are. Once it is deleted (`gone`), whole
    /// partitions go: a writer racing with this checks the subscription after
    /// its write and deletes its own (see `put_deliveries`).
    async fn purge_deliveries(&self, webhook: &WebhookId, gone: bool) -> StorageResult<()> {
        let id = webhook.as_str();
        let hours = self
            .rows(&self.wh.delivery_hours, (id,), |(hour,): (i64,)| Ok(hour))
            .await?;
        for hour in hours {
            let seen_at = Utc::now();
            let records: Vec<Delivery> = self
                .records(&self.wh.deliveries_of_hour, (id, hour, i32::MAX))
                .await?;
            let mut around = Writes::default();
            for delivery in &records {
                self.forget_around(&mut around, delivery)?;
            }
            around.run(self).await?;
            // The records last: a retry after a failure finds the rows above
            // through them.
            if gone {
                self.exec(&self.wh.delete_deliveries_of_hour, (id, hour))
                    .await?;
            } else {
                let mut rows = Writes::default();
                for delivery in &records {
                    rows.add(
                        &self.wh.delete_delivery,
                        (id.to_owned(), hour, delivery.event_id.as_str().to_owned()),
                    );
                }
                rows.run(self).await?;
                self.unlist(&self.wh.unlist_delivery_hour, id, hour, seen_at)
                    .await;
            }
        }
        if gone {
            self.exec(&self.wh.delete_parked_of, (id,)).await?;
            self.exec(&self.wh.delete_delivery_hours, (id,)).await?;
        }
        Ok(())
    }

    /// Prunes one outbox partition: finished deliveries of its events, then
    /// its events that are fanned out and have no pending delivery, all from
    /// before `floor`, at most `budget` records. `whole`: the minute is wholly
    /// before `floor`, and is unlisted once nothing is left in it.
    async fn prune_slot(
        &self,
        slot: Slot,
        floor: &str,
        whole: bool,
        budget: usize,
    ) -> StorageResult<usize> {
        let seen_at = Utc::now();
        let key = (slot.minute, slot.shard, floor);
        let (events, deliveries, unfanned) = try_join3(
            self.rows(&self.wh.event_ids_before, key, |(id,): (String,)| Ok(id)),
            self.rows(
                &self.wh.deliveries_by_event_before,
                key,
                // A row without the flag is kept, as a pending one.
                |(event, webhook, pending): (String, String, Option<bool>)| {
                    Ok((event, webhook, pending.unwrap_or(true)))
                },
            ),
            self.rows(&self.wh.unfanned_before, key, |(id,): (String,)| Ok(id)),
        )
        .await?;
        let waited_for: HashSet<&str> = deliveries
            .iter()
            .filter(|(_, _, pending)| *pending)
            .map(|(event, _, _)| event.as_str())
            .chain(unfanned.iter().map(String::as_str))
            .collect();
        let mut gone = 0;
        let mut kept = 0;
        let mut records = Writes::default();
        let mut index = Writes::default();
        let mut hours = BTreeSet::new();
        for (event, webhook, pending) in &deliveries {
            if *pending || gone >= budget {
                kept += 1;
                continue;
            }
            let hour = event_hour(&stored_event(event)?)?;
            records.add(
                &self.wh.delete_delivery,
                (webhook.clone(), hour, event.clone()),
            );
            index.add(
                &self.wh.delete_delivery_by_event,
                (slot.minute, slot.shard, event.clone(), webhook.clone()),
            );
            hours.insert((webhook.as_str(), hour));
            gone += 1;
        }
        for event in &events {
            if waited_for.contains(event.as_str()) || gone >= budget {
                kept += 1;
                continue;
            }
            records.add(
                &self.wh.delete_event,
                (slot.minute, slot.shard, event.clone()),
            );
            gone += 1;
        }
        // Records before the rows that find them, so that a failure half-way
        // leaves nothing a later pruning cannot find.
        records.run(self).await?;
        index.run(self).await?;
        if whole && kept == 0 {
            self.unlist(
                &self.wh.unlist_outbox_minute,
                slot.shard,
                slot.minute,
                seen_at,
            )
            .await;
        }
        for (webhook, hour) in hours {
            let seen_at = Utc::now();
            let left = self
                .rows(
                    &self.wh.any_delivery_of_hour,
                    (webhook, hour),
                    |(id,): (String,)| Ok(id),
                )
                .await?;
            if left.is_empty() {
                self.unlist(&self.wh.unlist_delivery_hour, webhook, hour, seen_at)
                    .await;
            }
        }
        Ok(gone)
    }
}

#[async_trait]
impl WebhookStore for ScyllaStore {
    async fn last_event_sequence(&self, load: &LoadId) -> StorageResult<u64> {
        match self
            .first::<(i64,)>(&self.wh.last_sequence, (load.as_str(),))
            .await?
        {
            Some((sequence,)) => u64::try_from(sequence)
                .map_err(|_| StorageError::corrupt("a negative event sequence number")),
            None => Ok(0),
        }
    }

    async fn unfanned_events(
        &self,
        after: Option<&EventId>,
        limit: usize,
    ) -> StorageResult<Vec<Event>> {
        if limit == 0 {
            return Ok(Vec::new());
        }
        // Every id is greater than "", so no cursor reads minutes whole.
        let (from, cursor) = match after {
            Some(id) => (event_slot(id)?.minute, id.as_str()),
            None => (i64::MIN, ""),
        };
        let shards = try_join_all(
            (0..SHARDS).map(|shard| self.unfanned_in_shard(shard, from, cursor, limit)),
        )
        .await?;
        // The first `limit` overall are among the first `limit` of each shard.
        let mut found: Vec<(Slot, String)> = shards.into_iter().flatten().collect();
        found.sort_unstable_by(|a, b| a.1.cmp(&b.1));
        found.truncate(limit);
        let mut records = self.event_records(&found).await?;
        // A marker whose event is not visible yet belongs to a batch still
        // being applied (logged batches are atomic, not isolated): left for
        // a later pass.
        Ok(found
            .iter()
            .filter_map(|(_, id)| records.remove(id))
            .collect())
    }

    async fn get_event(&self, id: &EventId) -> StorageResult<Option<Event>> {
        let slot = event_slot(id)?;
        self.record(&self.wh.get_event, (slot.minute, slot.shard, id.as_str()))
            .await
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
        // Deliveries first, so that a failure leaves the subscription to be
        // deleted again; then the subscription, after which no delivery of it
        // is written (`put_deliveries` checks); then whatever was written in
        // between.
        self.purge_deliveries(&webhook.id, false).await?;
        self.exec(&self.wh.delete_webhook, (webhook.id.as_str(),))
            .await?;
        self.purge_deliveries(&webhook.id, true).await
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
        let stored: Vec<String> = self
            .rows(&self.wh.all_webhooks, (), |(record,): (String,)| Ok(record))
            .await?;
        let mut resealed = 0u64;
        for record in stored {
            let (webhook, plain) = self.secrets.reseal(decode(&record)?)?;
            if !plain {
                continue;
            }
            // Conditional: another instance may have changed the subscription
            // since it was read (then it wrote it sealed already).
            let sealed = encode(&self.secrets.seal(&webhook))?;
            let values = (sealed, webhook.id.as_str(), record.as_str());
            if self.applied(&self.wh.reseal_webhook, values).await? {
                resealed += 1;
            }
        }
        Ok(resealed)
    }

    async fn without_records(&self, deliveries: Vec<Delivery>) -> StorageResult<Vec<Delivery>> {
        let reads = by_delivery_partition(
            deliveries
                .iter()
                .map(|delivery| (&delivery.webhook_id, &delivery.event_id)),
        )?;
        let found = each(reads, |(webhook, hour, events)| async move {
            let recorded = self
                .rows(
                    &self.wh.recorded_in,
                    (webhook.as_str(), hour, events),
                    |(event,): (String,)| Ok(event),
                )
                .await?;
            Ok(recorded
                .into_iter()
                .map(|event| (webhook.clone(), event))
                .collect::<Vec<_>>())
        })
        .await?;
        let recorded: HashSet<(String, String)> = found.into_iter().flatten().collect();
        Ok(deliveries
            .into_iter()
            .filter(|delivery| {
                let key = (
                    delivery.webhook_id.as_str().to_owned(),
                    delivery.event_id.as_str().to_owned(),
                );
                !recorded.contains(&key)
            })
            .collect())
    }

    /// Records, their rows by event, schedule moves, parkings and listings,
    /// each delivery's all or none, in logged batches of bounded size
    /// (`BoundedBatches`), then the fanned-out marks.
    ///
    /// A delivery of a subscription that no longer exists is not written. The
    /// subscriptions are read before the batch (ScyllaDB has no lock to hold
    /// across the read and the write), so `delete_webhook` may delete one
    /// between the read and the batch; they are therefore read again after
    /// it, and the deliveries of one gone meanwhile are deleted again. Either
    /// this batch completed before `delete_webhook` listed the subscription's
    /// deliveries for the last time (which then finds and deletes them: both
    /// at LOCAL_QUORUM), or it completed after that began, hence after the
    /// subscription's row was deleted, and the second read sees it gone.
    /// Left behind only: a batch that failed here (an error is returned) and
    /// is replayed by the batch log after `delete_webhook` finished.
    async fn put_deliveries(
        &self,
        changes: Vec<(Option<Delivery>, Delivery)>,
        fanned_out: Vec<EventId>,
    ) -> StorageResult<()> {
        let existing = self
            .existing_webhooks(
                changes
                    .iter()
                    .map(|(_, delivery)| &delivery.webhook_id)
                    .collect::<HashSet<_>>(),
            )
            .await?;
        // Each delivery's rows are all or none; deliveries need not be
        // written together, so they go in batches of bounded size, in order,
        // and the fanned-out marks after all of them.
        let mut batches = BoundedBatches::default();
        let mut listed = Listed::default();
        let mut written = Vec::with_capacity(changes.len());
        for (previous, delivery) in changes {
            if existing.contains(&delivery.webhook_id) {
                let mut group = LoggedBatch::new();
                self.add_delivery(&mut group, &mut listed, previous.as_ref(), &delivery)?;
                batches.push(group);
                written.push(delivery);
            }
        }
        for id in &fanned_out {
            let slot = event_slot(id)?;
            let mut mark = LoggedBatch::new();
            mark.add(
                &self.wh.delete_unfanned,
                (slot.minute, slot.shard, id.as_str().to_owned()),
            );
            batches.push(mark);
        }
        self.bounded(batches).await?;
        if written.is_empty() {
            return Ok(());
        }
        let still = self
            .existing_webhooks(
                written
                    .iter()
                    .map(|delivery| &delivery.webhook_id)
                    .collect::<HashSet<_>>(),
            )
            .await?;
        let mut undo = Writes::default();
        let mut records = Writes::default();
        for delivery in written.iter().filter(|d| !still.contains(&d.webhook_id)) {
            self.forget_around(&mut undo, delivery)?;
            records.add(
                &self.wh.delete_delivery,
                (
                    delivery.webhook_id.as_str().to_owned(),
                    event_hour(&delivery.event_id)?,
                    delivery.event_id.as_str().to_owned(),
                ),
            );
        }
        undo.run(self).await?;
        records.run(self).await
    }

    async fn count_due_deliveries(&self) -> StorageResult<u64> {
        // COUNT over every listed minute, no counter table (counter updates
        // cannot join the logged batch and are not idempotent, so a counter
        // would drift for good with every failed write). Read once when the
        // dispatcher starts: one small query per listed minute (~1,600 a
        // shard at most) plus the rows, as the embedded store reads every
        // entry. Exact when nothing moves; the minutes are not read at one
        // instant, so an entry moved between two of them while counting may
        // be counted twice or not at all (off by at most the moves during
        // the count, and corrected by the next count).
        let listed = self
            .listed_slots(&self.wh.due_minutes_until, i64::MAX)
            .await?;
        let counts = each(listed.into_iter().flatten(), |slot| async move {
            let seen_at = Utc::now();
            let count = self
                .first::<(i64,)>(&self.wh.count_due, (slot.minute, slot.shard))
                .await?
                .map_or(0, |(count,)| count);
            if count == 0 {
                self.unlist(&self.wh.unlist_due_minute, slot.shard, slot.minute, seen_at)
                    .await;
            }
            u64::try_from(count).map_err(|_| StorageError::corrupt("a negative count"))
        })
        .await?;
        Ok(counts.into_iter().sum())
    }

    async fn get_delivery(
        &self,
        webhook: &WebhookId,
        event: &EventId,
    ) -> StorageResult<Option<Delivery>> {
        self.record(
            &self.wh.get_delivery,
            (webhook.as_str(), event_hour(event)?, event.as_str()),
        )
        .await
    }

    async fn list_deliveries(
        &self,
        webhook: &WebhookId,
        page: PageRequest,
    ) -> StorageResult<Page<Delivery>> {
        let id = webhook.as_str();
        // Newest hour first; `total` counts every hour (as the embedded store
        // counts every record), then the page is read from the hour it starts in.
        let hours = self
            .rows(&self.wh.delivery_hours, (id,), |(hour,): (i64,)| Ok(hour))
            .await?;
        let counts = each(hours.iter().copied(), |hour| async move {
            let count = self
                .first::<(i64,)>(&self.wh.count_deliveries_of_hour, (id, hour))
                .await?
                .map_or(0, |(count,)| count);
            u64::try_from(count).map_err(|_| StorageError::corrupt("a negative count"))
        })
        .await?;
        let total = counts.iter().sum();
        let limit = page.limit as usize;
        let mut skip = page.offset;
        let mut items = Vec::with_capacity(limit.min(1_000));
        for (hour, count) in hours.into_iter().zip(counts) {
            if items.len() >= limit {
                break;
            }
            if skip >= count {
                skip -= count;
                continue;
            }
            let skipped = usize::try_from(skip).unwrap_or(usize::MAX);
            let room = limit - items.len();
            let found: Vec<Delivery> = self
                .records(
                    &self.wh.deliveries_of_hour,
                    (id, hour, cql_limit(skipped.saturating_add(room))),
                )
                .await?;
            items.extend(found.into_iter().skip(skipped).take(room));
            skip = 0;
        }
        Ok(Page { items, total })
    }

    async fn due_deliveries(
        &self,
        until: DateTime<Utc>,
        limit: usize,
    ) -> StorageResult<Vec<Delivery>> {
        if limit == 0 {
            return Ok(Vec::new());
        }
        let until = keys::micros(&until);
        let last_minute = until.div_euclid(MICROS_PER_MINUTE);
        let shards = try_join_all(
            (0..SHARDS).map(|shard| self.due_in_shard(shard, until, last_minute, limit)),
        )
        .await?;
        // The first `limit` overall are among the first `limit` of each shard.
        let mut found: Vec<DueRow> = shards.into_iter().flatten().collect();
        found.sort_unstable();
        found.truncate(limit);
        let entries = found
            .into_iter()
            .map(|(at, webhook, event)| Ok((at, stored_webhook(&webhook)?, stored_event(&event)?)))
            .collect::<StorageResult<Vec<_>>>()?;
        let mut records = self
            .delivery_records(entries.iter().map(|(_, webhook, event)| (webhook, event)))
            .await?;
        // An entry its record does not agree with (a batch still being
        // applied, or a resurrected entry) is skipped; the embedded store's
        // entries always agree.
        Ok(entries
            .into_iter()
            .filter_map(|(at, webhook, event)| {
                let delivery = records.remove(&(webhook, event))?;
                (due_of(&delivery).map(|due| due.at) == Some(at)).then_some(delivery)
            })
            .collect())
    }

    async fn prune_webhook_history(
        &self,
        before: DateTime<Utc>,
        limit: usize,
    ) -> StorageResult<u64> {
        if limit == 0 {
            return Ok(0);
        }
        // Ids sort by creation time, so "before" is an id bound, and the
        // minutes to look at are those listed up to the bound's.
        let floor = EventId::floor_at(before);
        let last = event_slot(&floor)?.minute;
        let listed = self
            .listed_slots(&self.wh.outbox_minutes_until, last)
            .await?;
        let mut slots: Vec<Slot> = listed.into_iter().flatten().collect();
        slots.sort_unstable();
        let mut gone = 0;
        for slot in slots {
            if gone >= limit {
                break;
            }
            gone += self
                .prune_slot(slot, floor.as_str(), slot.minute < last, limit - gone)
                .await?;
        }
        Ok(gone as u64)
    }

    async fn parked_deliveries(&self, webhook: &WebhookId) -> StorageResult<Vec<Delivery>> {
        let events = self
            .rows(
                &self.wh.parked_of,
                (webhook.as_str(),),
                |(event,): (String,)| stored_event(&event),
            )
            .await?;
        let mut records = self
            .delivery_records(events.iter().map(|event| (webhook, event)))
            .await?;
        // The record decides, as in the embedded store (which reads records only).
        Ok(events
            .into_iter()
            .filter_map(|event| records.remove(&(webhook.clone(), event)))
            .filter(is_parked)
            .collect())
    }
}
