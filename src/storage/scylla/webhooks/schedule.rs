//! Delivery records and their schedule: recording attempts' outcomes, the
//! due deliveries by minute (`due_deliveries`) and the parked ones.

use super::*;

pub(super) async fn without_records(
    store: &ScyllaStore,
    deliveries: Vec<Delivery>,
) -> StorageResult<Vec<Delivery>> {
    let reads = by_delivery_partition(
        deliveries
            .iter()
            .map(|delivery| (&delivery.webhook_id, &delivery.event_id)),
    )?;
    let found = each(reads, |(webhook, hour, events)| async move {
        let recorded = store
            .rows(
                &store.wh.recorded_in,
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
pub(super) async fn put_deliveries(
    store: &ScyllaStore,
    changes: Vec<(Option<Delivery>, Delivery)>,
    fanned_out: Vec<EventId>,
) -> StorageResult<()> {
    let existing = store
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
    let mut batches = BoundedBatches::new(store.engine.max_batch_bytes());
    let mut listed = Listed::default();
    let mut written = Vec::with_capacity(changes.len());
    for (previous, delivery) in changes {
        if existing.contains(&delivery.webhook_id) {
            let mut group = LoggedBatch::new();
            store.add_delivery(&mut group, &mut listed, previous.as_ref(), &delivery)?;
            batches.push(group);
            written.push((previous.is_none(), delivery));
        }
    }
    for id in &fanned_out {
        let slot = event_slot(id);
        let mut mark = LoggedBatch::new();
        mark.add(
            &store.wh.delete_unfanned,
            (slot.minute, slot.shard, id.as_str().to_owned()),
        );
        batches.push(mark);
    }
    store.bounded(batches).await?;
    if written.is_empty() {
        return Ok(());
    }
    let still = store
        .existing_webhooks(
            written
                .iter()
                .map(|(_, delivery)| &delivery.webhook_id)
                .collect::<HashSet<_>>(),
        )
        .await?;
    // First records join their subscriptions' totals (see `delivery_log`).
    let mut new: BTreeMap<&str, i64> = BTreeMap::new();
    for (first, delivery) in &written {
        if *first && still.contains(&delivery.webhook_id) {
            *new.entry(delivery.webhook_id.as_str()).or_default() += 1;
        }
    }
    for (webhook, count) in new {
        delivery_log::count_deliveries(store, webhook, count).await;
    }
    let mut undo = Writes::default();
    let mut records = Writes::default();
    let gone = written.iter().map(|(_, delivery)| delivery);
    for delivery in gone.filter(|d| !still.contains(&d.webhook_id)) {
        store.forget_around(&mut undo, delivery)?;
        records.add(
            &store.wh.delete_delivery,
            (
                delivery.webhook_id.as_str().to_owned(),
                event_hour(&delivery.event_id),
                delivery.event_id.as_str().to_owned(),
            ),
        );
    }
    undo.run(store).await?;
    records.run(store).await
}

pub(super) async fn count_due_deliveries(store: &ScyllaStore) -> StorageResult<u64> {
    // COUNT over every listed minute, no counter table (counter updates
    // cannot join the logged batch and are not idempotent, so a counter
    // would drift for good with every failed write). Read once when the
    // dispatcher starts: one small query per listed minute (~1,600 a
    // shard at most) plus the rows, as the embedded store reads every
    // entry. Exact when nothing moves; the minutes are not read at one
    // instant, so an entry moved between two of them while counting may
    // be counted twice or not at all (off by at most the moves during
    // the count, and corrected by the next count).
    let listed = store
        .listed_slots(&store.wh.due_minutes_until, i64::MAX)
        .await?;
    let counts = each(listed.into_iter().flatten(), |slot| async move {
        let seen_at = Utc::now();
        let count = store
            .first::<(i64,)>(&store.wh.count_due, (slot.minute, slot.shard))
            .await?
            .map_or(0, |(count,)| count);
        if count == 0 {
            store
                .unlist(
                    &store.wh.unlist_due_minute,
                    slot.shard,
                    slot.minute,
                    seen_at,
                )
                .await;
        }
        u64::try_from(count).map_err(|_| StorageError::corrupt("a negative count"))
    })
    .await?;
    Ok(counts.into_iter().sum())
}

pub(super) async fn due_deliveries(
    store: &ScyllaStore,
    until: DateTime<Utc>,
    limit: usize,
) -> StorageResult<Vec<Delivery>> {
    if limit == 0 {
        return Ok(Vec::new());
    }
    let until = keys::micros(&until);
    let last_minute = until.div_euclid(MICROS_PER_MINUTE);
    let shards =
        try_join_all((0..SHARDS).map(|shard| store.due_in_shard(shard, until, last_minute, limit)))
            .await?;
    // The first `limit` overall are among the first `limit` of each shard.
    let mut found: Vec<DueRow> = shards.into_iter().flatten().collect();
    found.sort_unstable();
    found.truncate(limit);
    let entries = found
        .into_iter()
        .map(|(at, webhook, event)| Ok((at, stored_webhook(&webhook)?, stored_event(&event)?)))
        .collect::<StorageResult<Vec<_>>>()?;
    let mut records = store
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

pub(super) async fn parked_deliveries(
    store: &ScyllaStore,
    webhook: &WebhookId,
) -> StorageResult<Vec<Delivery>> {
    let events = store
        .rows(
            &store.wh.parked_of,
            (webhook.as_str(),),
            |(event,): (String,)| stored_event(&event),
        )
        .await?;
    let mut records = store
        .delivery_records(events.iter().map(|event| (webhook, event)))
        .await?;
    // The record decides, as in the embedded store (which reads records only).
    Ok(events
        .into_iter()
        .filter_map(|event| records.remove(&(webhook.clone(), event)))
        .filter(is_parked)
        .collect())
}

impl ScyllaStore {
    /// One shard's first `limit` schedule entries due by `until` (µs), from
    /// the listed minutes up to `last_minute`, unlisting those found empty.
    pub(super) async fn due_in_shard(
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
    pub(super) async fn delivery_records<'a>(
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

    /// Adds one delivery record and what keeps step with it to a batch: its
    /// subscription's listing of the hour, its row by event (and that minute's
    /// listing), its move in the schedule, and its parking.
    pub(super) fn add_delivery(
        &self,
        batch: &mut LoggedBatch,
        listed: &mut Listed,
        previous: Option<&Delivery>,
        delivery: &Delivery,
    ) -> StorageResult<()> {
        let webhook = delivery.webhook_id.as_str();
        let event = delivery.event_id.as_str();
        let hour = event_hour(&delivery.event_id);
        let slot = event_slot(&delivery.event_id);
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
    pub(super) fn forget_around<'s>(
        &'s self,
        writes: &mut Writes<'s>,
        delivery: &Delivery,
    ) -> StorageResult<()> {
        let webhook = delivery.webhook_id.as_str();
        let event = delivery.event_id.as_str();
        let slot = event_slot(&delivery.event_id);
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
}
