//! Changes to the schedule asked for through the API: a redelivery, and the
//! parked deliveries of a subscription enabled again.

use std::sync::Arc;

use actix::prelude::*;
use actix_web::web::Bytes;
use chrono::{DateTime, Utc};

use super::{Dispatcher, Forget, Key, Redeliver, Requeue, key_of};
use crate::domain::ids::WebhookId;
use crate::domain::webhook::{Delivery, DeliveryStatus};
use crate::storage::{Storage, StorageError};
use crate::webhooks::FastSet;
use crate::webhooks::schedule::Queued;

/// A delivery as storage had it, and as it is now.
type Change = (Delivery, Delivery);

impl Handler<Redeliver> for Dispatcher {
    type Result = ResponseActFuture<Self, Result<Option<Delivery>, StorageError>>;

    fn handle(&mut self, msg: Redeliver, _: &mut Self::Context) -> Self::Result {
        let key = (msg.webhook, msg.event);
        let storage = self.storage.clone();
        if !self.role.active() {
            // Another instance dispatches: storage alone changes, and that
            // instance reads it back (see `role`).
            let due = self.due_now_if_enabled(&key.0);
            let work = async move {
                let change = make_pending(storage, key, due).await?;
                Ok(change.map(|(_, again)| again))
            };
            return Box::pin(work.into_actor(self));
        }
        if self.in_flight.holds(&key) {
            // Being attempted right now: that attempt is the redelivery.
            return Box::pin(
                async move { storage.get_delivery(&key.0, &key.1).await }.into_actor(self),
            );
        }
        // A fresh delivery (not recorded yet) is due already: that is its redelivery.
        if let Some(fresh) = self
            .schedule
            .get(&key.0, &key.1)
            .filter(|queued| !queued.recorded)
        {
            let delivery = fresh.delivery.clone();
            return Box::pin(async move { Ok(Some(delivery)) }.into_actor(self));
        }
        // Held here until the write is durable, so nothing else sends or changes it.
        let body = self.schedule.remove(&key.0, &key.1).and_then(|q| q.body);
        self.in_flight.hold(key.clone());
        let due = self.due_now_if_enabled(&key.0);
        Box::pin(
            make_pending(storage, key.clone(), due)
                .into_actor(self)
                .map(move |result, actor, ctx| actor.redelivered(ctx, &key, body, result)),
        )
    }
}

impl Dispatcher {
    /// When a redelivery is due: now, or never while its subscription is
    /// disabled (made pending, it stays parked).
    fn due_now_if_enabled(&self, webhook: &WebhookId) -> Option<DateTime<Utc>> {
        let enabled = self
            .directory
            .get(webhook)
            .is_some_and(|subscription| subscription.enabled);
        enabled.then_some(self.clock.now())
    }

    fn redelivered(
        &mut self,
        ctx: &mut Context<Self>,
        key: &Key,
        body: Option<Bytes>,
        result: Result<Option<Change>, StorageError>,
    ) -> Result<Option<Delivery>, StorageError> {
        self.in_flight.release(key);
        match result {
            Ok(Some((current, again))) => {
                self.touch(&again);
                if current.next_attempt_at.is_none() && again.next_attempt_at.is_some() {
                    self.backlog.add(1);
                }
                self.schedule.push(Queued {
                    delivery: again.clone(),
                    body,
                    recorded: true,
                });
                self.dispatch_due(ctx);
                Ok(Some(again))
            }
            Ok(None) => Ok(None),
            Err(error) => {
                // Unchanged in storage; a reload puts it back if it was scheduled.
                if body.is_some() {
                    self.schedule.mark_overflowed();
                }
                Err(error)
            }
        }
    }
}

/// Makes a stored delivery pending again, due at `due`; `None` if there is none.
async fn make_pending(
    storage: Arc<dyn Storage>,
    (webhook, event): Key,
    due: Option<DateTime<Utc>>,
) -> Result<Option<Change>, StorageError> {
    let Some(current) = storage.get_delivery(&webhook, &event).await? else {
        return Ok(None);
    };
    let again = Delivery {
        status: DeliveryStatus::Pending,
        next_attempt_at: due,
        ..current.clone()
    };
    storage.put_delivery(&current, &again).await?;
    Ok(Some((current, again)))
}

impl Handler<Forget> for Dispatcher {
    type Result = ();

    fn handle(&mut self, msg: Forget, _: &mut Self::Context) {
        let removed = self.schedule.remove_webhook(&msg.0);
        self.endpoints.forget(&msg.0);
        let counted = removed
            .iter()
            .filter(|queued| queued.recorded && queued.delivery.next_attempt_at.is_some())
            .count() as u64;
        for queued in removed.iter().filter(|queued| !queued.recorded) {
            self.forget_fresh(&queued.delivery.event_id);
        }
        // Storage may hold more of them than memory did: count it again.
        match self.schedule.overflowed() {
            true => self.backlog.recount(),
            false => self.backlog.set(self.backlog.get().saturating_sub(counted)),
        }
    }
}

impl Handler<Requeue> for Dispatcher {
    type Result = ResponseActFuture<Self, Result<(), StorageError>>;

    fn handle(&mut self, msg: Requeue, _: &mut Self::Context) -> Self::Result {
        let work = make_due(
            self.storage.clone(),
            msg.0,
            self.clock.now(),
            self.in_flight.snapshot(),
        );
        Box::pin(work.into_actor(self).map(|result, actor, ctx| {
            let changes = result?;
            if !actor.role.active() {
                // Stored; the instance that dispatches reads them back.
                return Ok(());
            }
            actor.backlog.add(changes.len() as u64);
            for (_, due) in changes {
                actor.touch(&due);
                actor.schedule.push(Queued {
                    delivery: due,
                    body: None,
                    recorded: true,
                });
            }
            actor.dispatch_due(ctx);
            Ok(())
        }))
    }
}

/// Makes a subscription's parked deliveries due at `now`, but for those in
/// `busy`: one being parked right now is requeued when its parking is recorded.
async fn make_due(
    storage: Arc<dyn Storage>,
    webhook: WebhookId,
    now: DateTime<Utc>,
    busy: FastSet<Key>,
) -> Result<Vec<Change>, StorageError> {
    let changes: Vec<Change> = storage
        .parked_deliveries(&webhook)
        .await?
        .into_iter()
        .filter(|d| !busy.contains(&key_of(d)))
        .map(|parked| {
            let due = Delivery {
                next_attempt_at: Some(now),
                ..parked.clone()
            };
            (parked, due)
        })
        .collect();
    let writes = changes
        .iter()
        .map(|(parked, due)| (Some(parked.clone()), due.clone()));
    storage.put_deliveries(writes.collect(), Vec::new()).await?;
    Ok(changes)
}
