use std::sync::Arc;

use actix::prelude::*;
use actix_web::web::Bytes;

use super::Dispatcher;
use super::recording::Outcome;
use crate::domain::ids::{EventId, WebhookId};
use crate::domain::webhook::{Delivery, DeliveryStatus, HISTORY_RETENTION_DAYS, Subscription};
use crate::storage::StorageError;
use crate::webhooks::attempt::{Endpoint, after_attempt, attempt};
use crate::webhooks::schedule::Queued;

/// An attempt finished (or could not be made).
#[derive(Message)]
#[rtype(result = "()")]
pub(super) struct Sent {
    webhook: WebhookId,
    key: (WebhookId, EventId),
    /// Not attempted: the delivery as it was taken, and why.
    result: Result<Outcome, (Queued, StorageError)>,
}

impl Dispatcher {
    /// Starts every due delivery there is room for, and reads the soonest ones
    /// back from storage when memory has run low and storage holds more.
    pub(super) fn dispatch_due(&mut self, ctx: &mut Context<Self>) {
        if self.draining.is_some() {
            self.answer_drained();
            return;
        }
        let now = self.clock.now();
        let free = self.settings.max_in_flight.saturating_sub(self.sending);
        if free > 0 {
            let per_webhook = self.settings.max_per_webhook;
            let busy = &self.busy;
            let due = self.schedule.take_due(now, free, |webhook| {
                per_webhook.saturating_sub(busy.get(webhook).copied().unwrap_or(0))
            });
            for queued in due {
                self.start(ctx, queued);
            }
        }
        if self.schedule.overflowed() && self.schedule.len() < self.schedule.capacity() / 2 {
            self.reload(ctx);
        }
        self.fan_out(ctx);
    }

    pub(super) fn start(&mut self, ctx: &mut Context<Self>, queued: Queued) {
        self.touch(&queued.delivery);
        let delivery = &queued.delivery;
        match self.directory.get(&delivery.webhook_id) {
            // Deleted meanwhile; its deliveries went with it.
            None => {
                self.endpoints.remove(&delivery.webhook_id);
                if !queued.recorded {
                    self.forget_fresh(&queued.delivery.event_id);
                    self.write_outcomes(ctx);
                }
            }
            // A disabled subscription's delivery leaves the schedule until it is enabled again.
            Some(subscription) if !subscription.enabled => {
                let parked = Delivery {
                    next_attempt_at: None,
                    ..delivery.clone()
                };
                self.in_flight
                    .insert((delivery.webhook_id.clone(), delivery.event_id.clone()));
                self.record(
                    ctx,
                    Outcome {
                        previous: queued.delivery.clone(),
                        next: parked,
                        body: queued.body,
                        disable: None,
                        first_record: !queued.recorded,
                    },
                );
            }
            Some(subscription) => self.send(ctx, subscription, queued),
        }
    }

    /// The subscription's endpoint, made once per version of the subscription
    /// (the directory replaces the `Arc` on every change) rather than per send.
    pub(super) fn endpoint(&mut self, subscription: &Arc<Subscription>) -> Arc<Endpoint> {
        if let Some((version, endpoint)) = self.endpoints.get(&subscription.id)
            && Arc::ptr_eq(version, subscription)
        {
            return endpoint.clone();
        }
        let endpoint = Arc::new(Endpoint::new(subscription, self.settings.url_policy));
        self.endpoints.insert(
            subscription.id.clone(),
            (subscription.clone(), endpoint.clone()),
        );
        endpoint
    }

    pub(super) fn send(
        &mut self,
        ctx: &mut Context<Self>,
        subscription: Arc<Subscription>,
        queued: Queued,
    ) {
        let Queued {
            delivery,
            body,
            recorded,
        } = queued;
        let delivery_key = (delivery.webhook_id.clone(), delivery.event_id.clone());
        self.in_flight.insert(delivery_key.clone());
        *self.busy.entry(subscription.id.clone()).or_default() += 1;
        self.sending += 1;
        let (storage, client, clock) = (
            self.storage.clone(),
            self.client.clone(),
            self.clock.clone(),
        );
        let retry = self.retry.clone();
        let endpoint = self.endpoint(&subscription);
        let webhook = subscription.id.clone();
        let key = delivery_key;
        let work = async move {
            let body = match body {
                Some(body) => body,
                None => match storage.get_event(&delivery.event_id).await {
                    Ok(Some(event)) => Bytes::from(event.body()),
                    // Only a delivery parked past the retention period can outlive its
                    // event (history pruning keeps the events of pending deliveries).
                    Ok(None) => return Ok(expired(delivery, recorded)),
                    Err(error) => {
                        let queued = Queued {
                            delivery,
                            body: None,
                            recorded,
                        };
                        return Err((queued, error));
                    }
                },
            };
            let attempt =
                attempt(&client, &clock, &endpoint, &delivery.event_id, body.clone()).await;
            let (next, disable) = after_attempt(&delivery, &attempt, &retry, clock.now());
            Ok(Outcome {
                previous: delivery,
                next,
                body: Some(body),
                disable,
                first_record: !recorded,
            })
        };
        // Each attempt is a task of its own that reports back by message. Spawned
        // into the actor's context instead, every attempt in flight would be polled
        // again whenever any of them woke: O(in flight) work per wake-up.
        let me = ctx.address();
        let report = move |result| {
            me.do_send(Sent {
                webhook,
                key,
                result,
            })
        };
        match &self.sender {
            Some(sender) => {
                sender.spawn(async move { report(work.await) });
            }
            None => {
                actix_rt::spawn(async move { report(work.await) });
            }
        }
    }
}

/// A delivery whose event is no longer stored fails, saying why.
pub(super) fn expired(delivery: Delivery, recorded: bool) -> Outcome {
    let next = Delivery {
        status: DeliveryStatus::Failed,
        next_attempt_at: None,
        last_error: Some(format!(
            "event {} is older than the {HISTORY_RETENTION_DAYS}-day history and was not sent",
            delivery.event_id
        )),
        ..delivery.clone()
    };
    Outcome {
        previous: delivery,
        next,
        body: None,
        disable: None,
        first_record: !recorded,
    }
}

impl Handler<Sent> for Dispatcher {
    type Result = ();

    fn handle(&mut self, sent: Sent, ctx: &mut Self::Context) {
        self.sending -= 1;
        if let Some(busy) = self.busy.get_mut(&sent.webhook) {
            *busy = busy.saturating_sub(1);
            if *busy == 0 {
                self.busy.remove(&sent.webhook);
            }
        }
        match sent.result {
            Ok(outcome) => self.record(ctx, outcome),
            Err((queued, error)) => {
                // Nothing was sent; storage still has it pending, and a reload finds
                // it (a fresh one, which storage has no record of, goes back here).
                tracing::error!(%error, "a webhook delivery could not be sent");
                self.in_flight.remove(&sent.key);
                match queued.recorded {
                    true => self.schedule.mark_overflowed(),
                    false => self.schedule.push(queued),
                }
            }
        }
        self.dispatch_due(ctx);
    }
}
