use actix::prelude::*;
use actix_web::web::Bytes;
use chrono::{DateTime, Utc};

use super::{DELIVERIES_METRIC, Dispatcher, key_of};
use crate::domain::ids::WebhookId;
use crate::domain::webhook::{Delivery, DeliveryStatus, Subscription};
use crate::storage::{Storage, StorageError};
use crate::webhooks::directory::Directory;
use crate::webhooks::schedule::Queued;

/// A fresh delivery waiting this long for its first attempt is recorded as pending.
const FRESH_RECORD_AFTER: chrono::TimeDelta = chrono::TimeDelta::seconds(2);

/// One attempt's result (or a delivery's new state), waiting to be written.
pub(super) struct Outcome {
    pub(super) previous: Delivery,
    pub(super) next: Delivery,
    pub(super) body: Option<Bytes>,
    pub(super) disable: Option<String>,
    /// Storage has no record of `previous`: this write is the delivery's first.
    pub(super) first_record: bool,
}

impl Dispatcher {
    /// Records as pending the fresh deliveries that have waited too long for
    /// their first attempt (a slow receiver), so that the delivery log shows them.
    pub(super) fn record_waiting_fresh(&mut self, ctx: &mut Context<Self>) {
        let cutoff = self.clock.now() - FRESH_RECORD_AFTER;
        for queued in self.schedule.take_waiting_unrecorded(cutoff) {
            self.in_flight.hold(key_of(&queued.delivery));
            self.outcomes.push(Outcome {
                previous: queued.delivery.clone(),
                next: queued.delivery,
                body: queued.body,
                disable: None,
                first_record: true,
            });
        }
        self.write_outcomes(ctx);
    }

    /// Queues an outcome for the next batched write.
    pub(super) fn record(&mut self, ctx: &mut Context<Self>, outcome: Outcome) {
        self.outcomes.push(outcome);
        self.write_outcomes(ctx);
    }

    /// Writes the outcomes waiting, and marks fanned out the events whose last
    /// fresh delivery is among them (or that are waiting for it), in one write.
    pub(super) fn write_outcomes(&mut self, ctx: &mut Context<Self>) {
        if self.recording || (self.outcomes.is_empty() && self.fanned_out.is_empty()) {
            return;
        }
        self.recording = true;
        let outcomes = std::mem::take(&mut self.outcomes);
        let waiting = std::mem::take(&mut self.fanned_out);
        let mut fanned_out = waiting.clone();
        for outcome in outcomes.iter().filter(|o| o.first_record) {
            let event = &outcome.previous.event_id;
            if self.one_less_unrecorded(event) {
                fanned_out.push(event.clone());
            }
        }
        let changes: Vec<(Option<Delivery>, Delivery)> = outcomes
            .iter()
            .map(|o| {
                (
                    (!o.first_record).then(|| o.previous.clone()),
                    o.next.clone(),
                )
            })
            .collect();
        let storage = self.storage.clone();
        let marked = fanned_out.clone();
        let work = async move { storage.put_deliveries(changes, marked).await };
        ctx.spawn(work.into_actor(self).map(move |written, actor, ctx| {
            actor.recording = false;
            match written {
                Ok(()) => {
                    for event in fanned_out {
                        actor.unrecorded.remove(&event);
                        if let Some(settled) = &mut actor.settled_during_scan {
                            settled.insert(event);
                        }
                    }
                    actor.recorded(ctx, outcomes);
                }
                Err(error) => {
                    tracing::error!(%error, "recording webhook attempts failed; they will be retried");
                    actor.fanned_out.extend(waiting);
                    // Storage still has each as it was before the attempt (or, for a
                    // fresh one, nothing: its event's marker stands for it still).
                    for outcome in outcomes {
                        let previous = outcome.previous;
                        if outcome.first_record
                            && let Some(count) = actor.unrecorded.get_mut(&previous.event_id)
                        {
                            *count += 1;
                        }
                        actor.touch(&previous);
                        actor.in_flight.release(&key_of(&previous));
                        actor.schedule.push(Queued {
                            delivery: previous,
                            body: outcome.body,
                            recorded: !outcome.first_record,
                        });
                    }
                }
            }
            actor.write_outcomes(ctx);
            actor.dispatch_due(ctx);
        }));
    }

    /// Outcomes are durable: retries go back on the schedule, finished deliveries
    /// leave the backlog, and subscriptions that must be disabled are.
    pub(super) fn recorded(&mut self, ctx: &mut Context<Self>, outcomes: Vec<Outcome>) {
        let mut backlog = self.backlog;
        for outcome in outcomes {
            let next = outcome.next;
            self.touch(&next);
            let key = key_of(&next);
            let parked = next.status == DeliveryStatus::Pending && next.next_attempt_at.is_none();
            if outcome.previous.next_attempt_at.is_some() && next.next_attempt_at.is_none() {
                backlog = backlog.saturating_sub(1);
            }
            // Counted once per attempt (or failure); not a parking, nor a fresh
            // delivery recorded as still pending.
            let attempted =
                next.attempts > outcome.previous.attempts || next.status != DeliveryStatus::Pending;
            if outcome.previous.status == DeliveryStatus::Pending && !parked && attempted {
                self.outcome_counters.count(&next);
            }
            if parked {
                // Enabled again while it was being parked: the requeue missed it.
                if self
                    .directory
                    .get(&next.webhook_id)
                    .is_some_and(|s| s.enabled)
                {
                    let due = Delivery {
                        next_attempt_at: Some(self.clock.now()),
                        ..next.clone()
                    };
                    self.outcomes.push(Outcome {
                        previous: next,
                        next: due,
                        body: outcome.body,
                        disable: None,
                        first_record: false,
                    });
                    continue;
                }
            }
            self.in_flight.release(&key);
            if let Some(reason) = outcome.disable {
                let (storage, directory, now) = (
                    self.storage.clone(),
                    self.directory.clone(),
                    self.clock.now(),
                );
                ctx.spawn(
                    async move {
                        if let Err(error) =
                            disable_subscription(&*storage, &directory, &key.0, reason, now).await
                        {
                            tracing::error!(%error, "disabling a webhook subscription failed");
                        }
                    }
                    .into_actor(self),
                );
            }
            if next.next_attempt_at.is_some() {
                if outcome.previous.next_attempt_at.is_none() {
                    backlog += 1;
                }
                self.schedule.push(Queued {
                    delivery: next,
                    body: outcome.body,
                    recorded: true,
                });
            }
        }
        self.set_backlog(backlog);
    }
}

/// `DELIVERIES_METRIC` by outcome, looked up once rather than per attempt.
pub(super) struct OutcomeCounters {
    delivered: metrics::Counter,
    retrying: metrics::Counter,
    failed: metrics::Counter,
}

impl OutcomeCounters {
    pub(super) fn new() -> Self {
        let counter =
            |outcome: &'static str| metrics::counter!(DELIVERIES_METRIC, "outcome" => outcome);
        OutcomeCounters {
            delivered: counter("delivered"),
            retrying: counter("retrying"),
            failed: counter("failed"),
        }
    }

    pub(super) fn count(&self, delivery: &Delivery) {
        match delivery.status {
            DeliveryStatus::Delivered => &self.delivered,
            DeliveryStatus::Pending => &self.retrying,
            DeliveryStatus::Failed => &self.failed,
        }
        .increment(1);
    }
}

async fn disable_subscription(
    storage: &dyn Storage,
    directory: &Directory,
    id: &WebhookId,
    reason: String,
    now: DateTime<Utc>,
) -> Result<(), StorageError> {
    let Some(current) = storage.get_webhook(id).await? else {
        return Ok(());
    };
    if !current.enabled {
        return Ok(());
    }
    tracing::warn!(webhook = %id, %reason, "disabling webhook subscription");
    let disabled = Subscription {
        enabled: false,
        disabled_reason: Some(reason),
        updated_at: now,
        ..current
    };
    storage.put_webhook(&disabled).await?;
    directory.upsert(disabled);
    Ok(())
}
