//! Delivery history: reading a subscription's deliveries, and pruning and
//! deleting them (with the subscription).

use super::*;

pub(super) async fn delete_webhook(
    store: &ScyllaStore,
    webhook: &Subscription,
) -> StorageResult<()> {
    // Deliveries first, so that a failure leaves the subscription to be
    // deleted again; then the subscription, after which no delivery of it
    // is written (`put_deliveries` checks); then whatever was written in
    // between.
    store.purge_deliveries(&webhook.id, false).await?;
    store
        .exec(&store.wh.delete_webhook, (webhook.id.as_str(),))
        .await?;
    store.purge_deliveries(&webhook.id, true).await?;
    // Last: a total is only read through its subscription.
    store
        .exec(&store.wh.delete_delivery_total, (webhook.id.as_str(),))
        .await
        .map(|_| ())
}

pub(super) async fn get_delivery(
    store: &ScyllaStore,
    webhook: &WebhookId,
    event: &EventId,
) -> StorageResult<Option<Delivery>> {
    store
        .record(
            &store.wh.get_delivery,
            (webhook.as_str(), event_hour(event), event.as_str()),
        )
        .await
}

pub(super) async fn list_deliveries(
    store: &ScyllaStore,
    webhook: &WebhookId,
    page: PageRequest,
) -> StorageResult<Page<Delivery>> {
    delivery_log::page(store, webhook.as_str(), page).await
}

pub(super) async fn prune_webhook_history(
    store: &ScyllaStore,
    before: DateTime<Utc>,
    limit: usize,
) -> StorageResult<u64> {
    if limit == 0 {
        return Ok(0);
    }
    // Ids sort by creation time, so "before" is an id bound, and the
    // minutes to look at are those listed up to the bound's.
    let floor = EventId::floor_at(before);
    let last = event_slot(&floor).minute;
    let listed = store
        .listed_slots(&store.wh.outbox_minutes_until, last)
        .await?;
    let mut slots: Vec<Slot> = listed.into_iter().flatten().collect();
    slots.sort_unstable();
    let mut gone = 0;
    for slot in slots {
        if gone >= limit {
            break;
        }
        gone += store
            .prune_slot(slot, floor.as_str(), slot.minute < last, limit - gone)
            .await?;
    }
    Ok(gone as u64)
}

impl ScyllaStore {
    /// Deletes a subscription's delivery records and everything referring to
    /// them. While the subscription exists (`gone` false) only rows it read are
    /// deleted (a delivery written meanwhile stays whole), and emptied hours
    /// are unlisted as queues are. Once it is deleted (`gone`), whole
    /// partitions go: a writer racing with this checks the subscription after
    /// its write and deletes its own (see `put_deliveries`).
    pub(super) async fn purge_deliveries(
        &self,
        webhook: &WebhookId,
        gone: bool,
    ) -> StorageResult<()> {
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
    pub(super) async fn prune_slot(
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
        let mut index = Vec::new();
        let mut hours = BTreeSet::new();
        for (event, webhook, pending) in &deliveries {
            if *pending || gone >= budget {
                kept += 1;
                continue;
            }
            let hour = event_hour(&stored_event(event)?);
            records.add(
                &self.wh.delete_delivery,
                (webhook.clone(), hour, event.clone()),
            );
            index.push((slot.minute, slot.shard, event.clone(), webhook.clone()));
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
        // leaves nothing a later pruning cannot find; the subscriptions'
        // totals move as those rows go (see `delivery_log`).
        records.run(self).await?;
        delivery_log::forget_by_event(self, index).await?;
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
