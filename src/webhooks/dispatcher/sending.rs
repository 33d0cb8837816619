//! Starting due deliveries and sending them: each request runs as a task of its
//! own and reports back with a `Sent` message, whose outcome goes to `recording`.

use std::sync::Arc;

use actix::prelude::*;
use actix_web::web::Bytes;

use super::recording::Outcome;
use super::{Dispatcher, Key, Mode, key_of};
use crate::clock::Clock;
use crate::domain::ids::{EventId, WebhookId};
use crate::domain::webhook::{
    Delivery, DeliveryStatus, HISTORY_RETENTION_DAYS, Subscription, UrlPolicy,
};
use crate::storage::{Storage, StorageError};
use crate::telemetry::error_chain;
use crate::webhooks::FastMap;
use crate::webhooks::attempt::{Endpoint, after_attempt, attempt};
use crate::webhooks::retry::RetryPolicy;
use crate::webhooks::schedule::Queued;

/// An attempt finished (or could not be made).
#[derive(Message)]
#[rtype(result = "()")]
pub(super) struct Sent {
    key: Key,
    /// Not attempted: the delivery as it was taken, and why.
    result: Result<Outcome, (Queued, StorageError)>,
}

/// Each subscription's endpoint, made once per version of the subscription (the
/// directory replaces the `Arc` on every change) rather than once per send.
#[derive(Default)]
pub(super) struct Endpoints(FastMap<WebhookId, (Arc<Subscription>, Arc<Endpoint>)>);

impl Endpoints {
    fn get(&mut self, subscription: &Arc<Subscription>, policy: UrlPolicy) -> Arc<Endpoint> {
        if let Some((version, endpoint)) = self.0.get(&subscription.id)
            && Arc::ptr_eq(version, subscription)
        {
            return endpoint.clone();
        }
        let endpoint = Arc::new(Endpoint::new(subscription, policy));
        self.0.insert(
            subscription.id.clone(),
            (subscription.clone(), endpoint.clone()),
        );
        endpoint
    }

    pub(super) fn forget(&mut self, webhook: &WebhookId) {
        self.0.remove(webhook);
    }
}

impl Dispatcher {
    /// Starts every due delivery there is room for, and reads the soonest ones
    /// back from storage when memory has run low and storage holds more.
    pub(super) fn dispatch_due(&mut self, ctx: &mut Context<Self>) {
        if let Mode::Draining(_) = self.mode {
            self.answer_drained();
            return;
        }
        if !self.role.active() {
            return;
        }
        let now = self.clock.now();
        let free = self.in_flight.free(self.settings.max_in_flight);
        if free > 0 {
            let per_webhook = self.settings.max_per_webhook;
            let in_flight = &self.in_flight;
            let due = self.schedule.take_due(now, free, |webhook| {
                in_flight.free_for(webhook, per_webhook)
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

    fn start(&mut self, ctx: &mut Context<Self>, queued: Queued) {
        self.touch(&queued.delivery);
        let delivery = &queued.delivery;
        match self.directory.get(&delivery.webhook_id) {
            // Deleted meanwhile; its deliveries went with it.
            None => {
                self.endpoints.forget(&delivery.webhook_id);
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
                self.in_flight.hold(key_of(delivery));
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

    /// A fresh delivery left memory without a record (its webhook was deleted):
    /// it no longer holds its event's marker.
    pub(super) fn forget_fresh(&mut self, event: &EventId) {
        if self.ledger.one_less_unrecorded(event) {
            self.writes.mark_fanned_out(event.clone());
        }
    }

    fn send(&mut self, ctx: &mut Context<Self>, subscription: Arc<Subscription>, queued: Queued) {
        let key = key_of(&queued.delivery);
        self.in_flight.open_request(key.clone());
        let endpoint = self.endpoints.get(&subscription, self.settings.url_policy);
        let work = deliver(
            self.storage.clone(),
            self.client.clone(),
            self.clock.clone(),
            self.retry.clone(),
            endpoint,
            queued,
        );
        // Each attempt is a task of its own that reports back by message. Spawned
        // into the actor's context instead, every attempt in flight would be polled
        // again whenever any of them woke: O(in flight) work per wake-up.
        let me = ctx.address();
        let report = move |result| me.do_send(Sent { key, result });
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

/// One attempt, off the actor: the body (read from the event when the schedule
/// had none), the signed request, and the delivery's state after its answer.
async fn deliver(
    storage: Arc<dyn Storage>,
    client: reqwest::Client,
    clock: Clock,
    retry: Arc<RetryPolicy>,
    endpoint: Arc<Endpoint>,
    queued: Queued,
) -> Result<Outcome, (Queued, StorageError)> {
    let Queued {
        delivery,
        body,
        recorded,
    } = queued;
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
    let attempt = attempt(&client, &clock, &endpoint, &delivery.event_id, body.clone()).await;
    let (next, disable) = after_attempt(&delivery, &attempt, &retry, clock.now());
    Ok(Outcome {
        previous: delivery,
        next,
        body: Some(body),
        disable,
        first_record: !recorded,
    })
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
        self.in_flight.close_request(&sent.key.0);
        match sent.result {
            Ok(outcome) => self.record(ctx, outcome),
            Err((queued, error)) => {
                // Nothing was sent; storage still has it pending, and a reload finds
                // it (a fresh one, which storage has no record of, goes back here).
                tracing::error!(error = %error_chain(&error), "a webhook delivery could not be sent");
                self.in_flight.release(&sent.key);
                match queued.recorded {
                    true => self.schedule.mark_overflowed(),
                    false => self.schedule.push(queued),
                }
            }
        }
        self.dispatch_due(ctx);
    }
}
