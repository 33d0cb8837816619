use actix::prelude::*;

use super::{Dispatcher, Redeliver, Requeue, key_of};
use crate::domain::webhook::{Delivery, DeliveryStatus};
use crate::storage::StorageError;
use crate::webhooks::schedule::Queued;

impl Handler<Redeliver> for Dispatcher {
    type Result = ResponseActFuture<Self, Result<Option<Delivery>, StorageError>>;

    fn handle(&mut self, msg: Redeliver, _: &mut Self::Context) -> Self::Result {
        let key = (msg.webhook.clone(), msg.event.clone());
        let storage = self.storage.clone();
        if self.in_flight.holds(&key) {
            // Being attempted right now: that attempt is the redelivery.
            return Box::pin(
                async move { storage.get_delivery(&msg.webhook, &msg.event).await }
                    .into_actor(self),
            );
        }
        // A fresh delivery (not recorded yet) is due already: that is its redelivery.
        if let Some(fresh) = self
            .schedule
            .get(&msg.webhook, &msg.event)
            .filter(|queued| !queued.recorded)
        {
            let delivery = fresh.delivery.clone();
            return Box::pin(async move { Ok(Some(delivery)) }.into_actor(self));
        }
        // Held here until the write is durable, so nothing else sends or changes it.
        let queued = self.schedule.remove(&msg.webhook, &msg.event);
        self.in_flight.hold(key.clone());
        let enabled = self
            .directory
            .get(&msg.webhook)
            .is_some_and(|subscription| subscription.enabled);
        let now = self.clock.now();
        Box::pin(
            async move {
                let Some(current) = storage.get_delivery(&msg.webhook, &msg.event).await? else {
                    return Ok(None);
                };
                let again = Delivery {
                    status: DeliveryStatus::Pending,
                    next_attempt_at: enabled.then_some(now),
                    ..current.clone()
                };
                storage.put_delivery(&current, &again).await?;
                Ok(Some((current, again)))
            }
            .into_actor(self)
            .map(move |result, actor, ctx| {
                actor.in_flight.release(&key);
                let body = queued.and_then(|q| q.body);
                match result {
                    Ok(Some((current, again))) => {
                        actor.touch(&again);
                        if current.next_attempt_at.is_none() && again.next_attempt_at.is_some() {
                            actor.backlog.add(1);
                        }
                        actor.schedule.push(Queued {
                            delivery: again.clone(),
                            body,
                            recorded: true,
                        });
                        actor.dispatch_due(ctx);
                        Ok(Some(again))
                    }
                    Ok(None) => Ok(None),
                    Err(error) => {
                        // Unchanged in storage; a reload puts it back if it was scheduled.
                        if body.is_some() {
                            actor.schedule.mark_overflowed();
                        }
                        Err(error)
                    }
                }
            }),
        )
    }
}

impl Handler<Requeue> for Dispatcher {
    type Result = ResponseActFuture<Self, Result<(), StorageError>>;

    fn handle(&mut self, msg: Requeue, _: &mut Self::Context) -> Self::Result {
        let storage = self.storage.clone();
        let now = self.clock.now();
        let busy = self.in_flight.snapshot();
        Box::pin(
            async move {
                let changes: Vec<(Delivery, Delivery)> = storage
                    .parked_deliveries(&msg.0)
                    .await?
                    .into_iter()
                    // One being parked right now is requeued when its parking is recorded.
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
            .into_actor(self)
            .map(|result, actor, ctx| {
                let changes = result?;
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
            }),
        )
    }
}
