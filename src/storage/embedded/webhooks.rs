//! The webhook pipeline: the outbox of events (written with the loads and points
//! they record), subscriptions, and delivery records with their schedule.

use std::collections::HashMap;

use async_trait::async_trait;
use chrono::{DateTime, Utc};
use fjall::Readable;

use super::{EmbeddedStore, Inner, codec, decode, encode, keys, unavailable};
use crate::domain::event::Event;
use crate::domain::ids::{EventId, LoadId, WebhookId};
use crate::domain::webhook::{Delivery, DeliveryStatus, Subscription};
use crate::storage::{Page, PageRequest, StorageError, StorageResult, WebhookStore};

/// An outbox event encoded ahead of the write that stores it.
pub(super) struct EncodedEvent {
    id: Vec<u8>,
    sequence_key: Vec<u8>,
    value: Vec<u8>,
}

/// Encodes events before taking the store, for [`Inner::add_events`].
pub(super) fn encode_events(events: &[Event]) -> StorageResult<Vec<EncodedEvent>> {
    events
        .iter()
        .map(|event| {
            Ok(EncodedEvent {
                id: event.id.as_str().as_bytes().to_vec(),
                sequence_key: keys::load_event(&event.load_id, event.sequence),
                value: codec::encode_event(event),
            })
        })
        .collect()
}

impl Inner {
    /// Adds encoded events to a batch: the outbox entry and the load's sequence index.
    pub(super) fn add_events(&self, batch: &mut fjall::OwnedWriteBatch, events: Vec<EncodedEvent>) {
        for event in events {
            batch.insert(&self.load_events, event.sequence_key, event.id.clone());
            batch.insert(&self.unfanned, event.id.clone(), Vec::<u8>::new());
            batch.insert(&self.events, event.id, event.value);
        }
    }
}

#[async_trait]
impl WebhookStore for EmbeddedStore {
    async fn last_event_sequence(&self, load: &LoadId) -> StorageResult<u64> {
        let prefix = load.as_str().as_bytes().to_vec();
        self.run(move |s| match s.load_events.prefix(&prefix).next_back() {
            Some(guard) => {
                let key = guard.key().map_err(unavailable)?;
                keys::sequence_of(&key).ok_or_else(|| StorageError::corrupt("bad load event key"))
            }
            None => Ok(0),
        })
        .await
    }

    async fn unfanned_events(
        &self,
        after: Option<&EventId>,
        limit: usize,
    ) -> StorageResult<Vec<Event>> {
        use std::ops::Bound;
        let start = match after {
            Some(id) => Bound::Excluded(id.as_str().as_bytes().to_vec()),
            None => Bound::Unbounded,
        };
        self.run(move |s| {
            let mut out = Vec::new();
            for guard in s.unfanned.range((start, Bound::Unbounded)).take(limit) {
                let id = guard.key().map_err(unavailable)?;
                match s.get_decoded(&s.events, &id, codec::decode_event)? {
                    Some(event) => out.push(event),
                    None => {
                        return Err(StorageError::corrupt(
                            "an unfanned marker without its event",
                        ));
                    }
                }
            }
            Ok(out)
        })
        .await
    }

    async fn get_event(&self, id: &EventId) -> StorageResult<Option<Event>> {
        let key = id.as_str().as_bytes().to_vec();
        self.run(move |s| s.get_decoded(&s.events, &key, codec::decode_event))
            .await
    }

    async fn put_webhook(&self, webhook: &Subscription) -> StorageResult<()> {
        let value = encode(&self.secrets.seal(webhook))?;
        let key = webhook.id.as_str().as_bytes().to_vec();
        self.put_one(|s| &s.webhooks, key, value).await
    }

    async fn delete_webhook(&self, webhook: &Subscription) -> StorageResult<()> {
        let key = webhook.id.as_str().as_bytes().to_vec();
        let prefix = key.clone();
        self.run(move |s| {
            let mut batch = s.durable_batch();
            batch.remove(&s.webhooks, key);
            // Its deliveries go with it, and so do their places in the schedule.
            for guard in s.deliveries.prefix(&prefix) {
                let (key, value) = guard.into_inner().map_err(unavailable)?;
                let delivery = codec::decode_delivery(&value)?;
                if let Some(due) = keys::due(&delivery) {
                    batch.remove(&s.due, due);
                }
                batch.remove(&s.deliveries, key.to_vec());
            }
            s.commit_durably(batch)
        })
        .await
    }

    async fn get_webhook(&self, id: &WebhookId) -> StorageResult<Option<Subscription>> {
        let key = id.as_str().as_bytes().to_vec();
        let stored: Option<Subscription> = self.run(move |s| s.get_json(&s.webhooks, &key)).await?;
        stored.map(|webhook| self.secrets.open(webhook)).transpose()
    }

    async fn all_webhooks(&self) -> StorageResult<Vec<Subscription>> {
        let stored: Vec<Subscription> = self.all_of(|s| &s.webhooks).await?;
        stored
            .into_iter()
            .map(|webhook| self.secrets.open(webhook))
            .collect()
    }

    async fn reseal_webhook_secrets(&self) -> StorageResult<u64> {
        let secrets = self.secrets.clone();
        self.run(move |s| {
            let mut batch = s.durable_batch();
            let mut resealed = 0u64;
            for guard in s.webhooks.iter() {
                let (key, value) = guard.into_inner().map_err(unavailable)?;
                let (webhook, plain) = secrets.reseal(decode(&value)?)?;
                if plain {
                    batch.insert(&s.webhooks, key.to_vec(), encode(&secrets.seal(&webhook))?);
                    resealed += 1;
                }
            }
            if resealed > 0 {
                s.commit_durably(batch)?;
            }
            Ok(resealed)
        })
        .await
    }

    async fn without_records(&self, deliveries: Vec<Delivery>) -> StorageResult<Vec<Delivery>> {
        self.run(move |s| {
            let mut out = Vec::with_capacity(deliveries.len());
            for delivery in deliveries {
                let key = keys::delivery(&delivery.webhook_id, &delivery.event_id);
                if !s.deliveries.contains_key(&key).map_err(unavailable)? {
                    out.push(delivery);
                }
            }
            Ok(out)
        })
        .await
    }

    async fn put_deliveries(
        &self,
        changes: Vec<(Option<Delivery>, Delivery)>,
        fanned_out: Vec<EventId>,
    ) -> StorageResult<()> {
        self.run(move |s| {
            let mut batch = s.durable_batch();
            let mut webhooks: HashMap<WebhookId, bool> = HashMap::new();
            for (previous, delivery) in changes {
                let exists = match webhooks.get(&delivery.webhook_id) {
                    Some(exists) => *exists,
                    None => {
                        let key = delivery.webhook_id.as_str().as_bytes();
                        let exists = s.webhooks.contains_key(key).map_err(unavailable)?;
                        webhooks.insert(delivery.webhook_id.clone(), exists);
                        exists
                    }
                };
                if !exists {
                    continue;
                }
                let (old_due, new_due) =
                    (previous.as_ref().and_then(keys::due), keys::due(&delivery));
                batch.insert(
                    &s.deliveries,
                    keys::delivery(&delivery.webhook_id, &delivery.event_id),
                    codec::encode_delivery(&delivery),
                );
                if old_due != new_due {
                    if let Some(old) = old_due {
                        batch.remove(&s.due, old);
                    }
                    if let Some(new) = new_due {
                        batch.insert(&s.due, new, Vec::<u8>::new());
                    }
                }
            }
            for id in fanned_out {
                batch.remove(&s.unfanned, id.as_str().as_bytes().to_vec());
            }
            s.commit_durably(batch)
        })
        .await
    }

    async fn count_due_deliveries(&self) -> StorageResult<u64> {
        self.run(|s| {
            let mut count = 0u64;
            for guard in s.due.iter() {
                guard.key().map_err(unavailable)?;
                count += 1;
            }
            Ok(count)
        })
        .await
    }

    async fn get_delivery(
        &self,
        webhook: &WebhookId,
        event: &EventId,
    ) -> StorageResult<Option<Delivery>> {
        let key = keys::delivery(webhook, event);
        self.run(move |s| s.get_decoded(&s.deliveries, &key, codec::decode_delivery))
            .await
    }

    async fn list_deliveries(
        &self,
        webhook: &WebhookId,
        page: PageRequest,
    ) -> StorageResult<Page<Delivery>> {
        let prefix = webhook.as_str().as_bytes().to_vec();
        self.run(move |s| {
            let snapshot = s.db.snapshot();
            let total = snapshot.prefix(&s.deliveries, &prefix).count() as u64;
            let mut items = Vec::with_capacity(page.limit as usize);
            for guard in snapshot
                .prefix(&s.deliveries, &prefix)
                .rev()
                .skip(page.offset as usize)
                .take(page.limit as usize)
            {
                let (_, value) = guard.into_inner().map_err(unavailable)?;
                items.push(codec::decode_delivery(&value)?);
            }
            Ok(Page { items, total })
        })
        .await
    }

    async fn due_deliveries(
        &self,
        until: DateTime<Utc>,
        limit: usize,
    ) -> StorageResult<Vec<Delivery>> {
        // Keys continue past the time, so the bound is the next microsecond,
        // exclusive; there is none past the end of time (no bound at all).
        let end = until
            .checked_add_signed(chrono::Duration::microseconds(1))
            .map(|end| keys::due_time(&end).to_vec());
        self.run(move |s| {
            let mut out = Vec::new();
            let range = match end {
                Some(end) => s.due.range(..end),
                None => s.due.range::<Vec<u8>, _>(..),
            };
            for guard in range.take(limit) {
                let due = guard.key().map_err(unavailable)?;
                let Some(key) = due.get(8..) else {
                    return Err(StorageError::corrupt("short due key"));
                };
                if let Some(delivery) = s.get_decoded(&s.deliveries, key, codec::decode_delivery)? {
                    out.push(delivery);
                }
            }
            Ok(out)
        })
        .await
    }

    async fn prune_webhook_history(
        &self,
        before: DateTime<Utc>,
        limit: usize,
    ) -> StorageResult<u64> {
        // Ids sort by creation time, so "before" is a key bound.
        let floor = EventId::floor_at(before).as_str().as_bytes().to_vec();
        self.run(move |s| {
            let mut batch = s.durable_batch();
            let mut gone = 0u64;
            let mut still_pending = std::collections::HashSet::new();
            for webhook in s.webhooks.iter() {
                let webhook = webhook.key().map_err(unavailable)?.to_vec();
                let mut end = webhook.clone();
                end.extend_from_slice(&floor);
                for guard in s.deliveries.range(webhook..end) {
                    let (key, value) = guard.into_inner().map_err(unavailable)?;
                    let delivery = codec::decode_delivery(&value)?;
                    if delivery.status == DeliveryStatus::Pending {
                        still_pending.insert(delivery.event_id.as_str().as_bytes().to_vec());
                    } else if (gone as usize) < limit {
                        batch.remove(&s.deliveries, key.to_vec());
                        gone += 1;
                    }
                }
            }
            for guard in s.events.range(..floor) {
                if gone as usize >= limit {
                    break;
                }
                let id = guard.key().map_err(unavailable)?.to_vec();
                if still_pending.contains(&id)
                    || s.unfanned.contains_key(&id).map_err(unavailable)?
                {
                    continue;
                }
                batch.remove(&s.events, id);
                gone += 1;
            }
            if gone > 0 {
                s.commit_durably(batch)?;
            }
            Ok(gone)
        })
        .await
    }

    async fn parked_deliveries(&self, webhook: &WebhookId) -> StorageResult<Vec<Delivery>> {
        let prefix = webhook.as_str().as_bytes().to_vec();
        self.run(move |s| {
            let mut out = Vec::new();
            for guard in s.deliveries.prefix(&prefix) {
                let (_, value) = guard.into_inner().map_err(unavailable)?;
                let delivery = codec::decode_delivery(&value)?;
                if delivery.status == DeliveryStatus::Pending && delivery.next_attempt_at.is_none()
                {
                    out.push(delivery);
                }
            }
            Ok(out)
        })
        .await
    }
}
