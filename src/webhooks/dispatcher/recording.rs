//! Writing outcomes in batches, and what follows once they are durable: retries
//! back on the schedule, the backlog and outcome counters, subscriptions disabled.

use actix::prelude::*;
use actix_web::web::Bytes;
use chrono::{DateTime, Utc};

use super::{DELIVERIES_METRIC, Dispatcher, key_of};
use crate::domain::ids::{EventId, WebhookId};
use crate::domain::webhook::{Delivery, DeliveryStatus, Subscription};
use crate::storage::{Storage, StorageError};
use crate::telemetry::error_chain;
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

/// While outcomes keep coming, a write begins at most this often: each write
/// ends in an fdatasync (ext4 allocates the new blocks then, and the kernel's
/// writeback and the sync cost more than the write itself), so under a steady
/// stream one write per few milliseconds carries a hundred outcomes instead of
/// thirty. A write after a quiet spell begins at once. The wait adds nothing to
/// sending: a request's slot frees when its answer arrives, not when its outcome
/// is durable; a crash in the window re-sends those deliveries (at least once,
/// under the same webhook id, as after any crash).
pub(super) const WRITE_SPACING: std::time::Duration = std::time::Duration::from_millis(5);

/// Outcomes in one write at most: the embedded store makes it one synced
/// write (an fdatasync per 512 outcomes under a backlog); ScyllaDB writes it
/// as logged batches of at most 96 KiB each (`BoundedBatches`), under its
/// 128 KiB warning, one delivery's rows never split.
const MAX_WRITE_OUTCOMES: usize = 512;

/// What the next write carries, and whether one is running. Writes go one at a
/// time, each taking whatever finished since the one before (up to
/// `MAX_WRITE_OUTCOMES`), spaced by `DispatchSettings::write_spacing`: one synced
/// write per batch rather than one per attempt.
#[derive(Default)]
pub(super) struct WriteQueue {
    outcomes: std::collections::VecDeque<Outcome>,
    /// Events with every delivery recorded (or none at all), to be marked fanned
    /// out by a write, each with how many outcomes had been pushed when it was
    /// marked: it goes with the write that takes the last of those.
    fanned_out: std::collections::VecDeque<(EventId, u64)>,
    /// Outcomes pushed, and taken by writes, since the start.
    pushed: u64,
    taken: u64,
    writing: bool,
    /// When the last write began (see `WRITE_SPACING`).
    last_begun: Option<tokio::time::Instant>,
    /// A timer will begin the next write: no other needs arming.
    paced: bool,
}

impl WriteQueue {
    pub(super) fn push(&mut self, outcome: Outcome) {
        self.outcomes.push_back(outcome);
        self.pushed += 1;
    }

    pub(super) fn mark_fanned_out(&mut self, event: EventId) {
        self.fanned_out.push_back((event, self.pushed));
    }

    /// No outcome waits or is being written. Markers may still wait: the outbox
    /// keeps those events, so nothing is lost if they are never written.
    pub(super) fn is_idle(&self) -> bool {
        self.outcomes.is_empty() && !self.writing
    }

    /// How long the next write should wait, at `now`, to begin `spacing` after
    /// the last one began; `None`: it may begin now (the last began long
    /// enough ago, or a full write's worth waits already), or nothing waits.
    fn wait_before_next(
        &self,
        now: tokio::time::Instant,
        spacing: std::time::Duration,
    ) -> Option<std::time::Duration> {
        let nothing_waits = self.outcomes.is_empty() && self.fanned_out.is_empty();
        if nothing_waits || self.outcomes.len() >= MAX_WRITE_OUTCOMES {
            return None;
        }
        let next = self.last_begun? + spacing;
        (next > now).then(|| next - now)
    }

    /// What waits (up to `MAX_WRITE_OUTCOMES` outcomes, and the markers whose
    /// outcomes are all in this write or before), for a write to begin; `None`
    /// while one runs or when nothing waits.
    fn begin(&mut self) -> Option<(Vec<Outcome>, Vec<EventId>)> {
        if self.writing || (self.outcomes.is_empty() && self.fanned_out.is_empty()) {
            return None;
        }
        self.writing = true;
        self.last_begun = Some(tokio::time::Instant::now());
        let take = self.outcomes.len().min(MAX_WRITE_OUTCOMES);
        let outcomes: Vec<Outcome> = self.outcomes.drain(..take).collect();
        self.taken += take as u64;
        let mut marks = Vec::new();
        while let Some((_, pushed)) = self.fanned_out.front()
            && *pushed <= self.taken
        {
            marks.extend(self.fanned_out.pop_front().map(|(event, _)| event));
        }
        Some((outcomes, marks))
    }

    fn end(&mut self) {
        self.writing = false;
    }

    /// Markers whose write failed go out with the next one.
    fn retry_marks(&mut self, events: Vec<EventId>) {
        let taken = self.taken;
        for event in events.into_iter().rev() {
            self.fanned_out.push_front((event, taken));
        }
    }
}

impl Dispatcher {
    /// Records as pending the fresh deliveries that have waited too long for
    /// their first attempt (a slow receiver), so that the delivery log shows them.
    pub(super) fn record_waiting_fresh(&mut self, ctx: &mut Context<Self>) {
        let cutoff = self.clock.now() - FRESH_RECORD_AFTER;
        for queued in self.schedule.take_waiting_unrecorded(cutoff) {
            self.in_flight.hold(key_of(&queued.delivery));
            self.writes.push(Outcome {
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
        self.writes.push(outcome);
        self.write_outcomes(ctx);
    }

    /// Writes the outcomes waiting, and marks fanned out the events whose last
    /// fresh delivery is among them (or that are waiting for it), in one write;
    /// or, within `write_spacing` of the last write's start, arms a timer that
    /// does (draining for shutdown writes at once).
    pub(super) fn write_outcomes(&mut self, ctx: &mut Context<Self>) {
        if self.writes.writing || self.writes.paced {
            return;
        }
        let draining = matches!(self.mode, super::Mode::Draining(_));
        if !draining
            && let Some(wait) = self
                .writes
                .wait_before_next(tokio::time::Instant::now(), self.settings.write_spacing)
        {
            self.writes.paced = true;
            ctx.run_later(wait, |actor, ctx| {
                actor.writes.paced = false;
                actor.write_outcomes(ctx);
            });
            return;
        }
        let Some((outcomes, waiting)) = self.writes.begin() else {
            return;
        };
        let mut fanned_out = waiting.clone();
        for outcome in outcomes.iter().filter(|o| o.first_record) {
            let event = &outcome.previous.event_id;
            if self.ledger.one_less_unrecorded(event) {
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
            actor.writes.end();
            match written {
                Ok(()) => {
                    for event in fanned_out {
                        actor.ledger.marked(&event);
                        actor.fanning_out.settled(event);
                    }
                    actor.recorded(ctx, outcomes);
                }
                Err(error) => actor.write_failed(error, outcomes, waiting),
            }
            actor.write_outcomes(ctx);
            actor.dispatch_due(ctx);
        }));
    }

    /// Storage still has each delivery as it was before the attempt (or, for a
    /// fresh one, nothing: its event's marker stands for it still), so each goes
    /// back on the schedule as it was, and the write is tried again.
    fn write_failed(&mut self, error: StorageError, outcomes: Vec<Outcome>, waiting: Vec<EventId>) {
        tracing::error!(error = %error_chain(&error), "recording webhook attempts failed; they will be retried");
        self.writes.retry_marks(waiting);
        for outcome in outcomes {
            let previous = outcome.previous;
            if outcome.first_record {
                self.ledger.one_more_unrecorded(&previous.event_id);
            }
            self.touch(&previous);
            self.in_flight.release(&key_of(&previous));
            self.schedule.push(Queued {
                delivery: previous,
                body: outcome.body,
                recorded: !outcome.first_record,
            });
        }
    }

    /// Outcomes are durable: retries go back on the schedule, finished deliveries
    /// leave the backlog, and subscriptions that must be disabled are.
    fn recorded(&mut self, ctx: &mut Context<Self>, outcomes: Vec<Outcome>) {
        let mut backlog = self.backlog.get();
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
            // Enabled again while it was being parked: the requeue missed it.
            if parked
                && self
                    .directory
                    .get(&next.webhook_id)
                    .is_some_and(|s| s.enabled)
            {
                let due = Delivery {
                    next_attempt_at: Some(self.clock.now()),
                    ..next.clone()
                };
                self.writes.push(Outcome {
                    previous: next,
                    next: due,
                    body: outcome.body,
                    disable: None,
                    first_record: false,
                });
                continue;
            }
            self.in_flight.release(&key);
            if let Some(reason) = outcome.disable {
                self.disable(ctx, key.0, reason);
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
        self.backlog.set(backlog);
    }

    /// Disables a subscription beside the dispatcher's work; its deliveries are
    /// parked as they come due.
    fn disable(&mut self, ctx: &mut Context<Self>, webhook: WebhookId, reason: String) {
        let (storage, directory, now) = (
            self.storage.clone(),
            self.directory.clone(),
            self.clock.now(),
        );
        ctx.spawn(
            async move {
                if let Err(error) =
                    disable_subscription(&*storage, &directory, &webhook, reason, now).await
                {
                    tracing::error!(error = %error_chain(&error), "disabling a webhook subscription failed");
                }
            }
            .into_actor(self),
        );
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::domain::event::EventType;

    fn outcome() -> Outcome {
        let delivery = Delivery::new(
            WebhookId::generate(),
            EventId::generate(),
            EventType::LoadCreated,
            Utc::now(),
        );
        Outcome {
            previous: delivery.clone(),
            next: delivery,
            body: None,
            disable: None,
            first_record: true,
        }
    }

    #[test]
    fn a_write_takes_at_most_its_share_and_markers_wait_for_their_outcomes() {
        let mut queue = WriteQueue::default();
        let early = EventId::generate();
        queue.mark_fanned_out(early.clone());
        for _ in 0..MAX_WRITE_OUTCOMES {
            queue.push(outcome());
        }
        let middle = EventId::generate();
        queue.mark_fanned_out(middle.clone());
        for _ in 0..10 {
            queue.push(outcome());
        }
        let late = EventId::generate();
        queue.mark_fanned_out(late.clone());

        let (outcomes, marks) = queue.begin().unwrap();
        assert_eq!(outcomes.len(), MAX_WRITE_OUTCOMES);
        // `middle` was marked after exactly these outcomes: it may go with them.
        assert_eq!(marks, [early, middle]);
        assert!(queue.begin().is_none(), "one write at a time");
        queue.end();

        let (outcomes, marks) = queue.begin().unwrap();
        assert_eq!(outcomes.len(), 10);
        assert_eq!(marks, std::slice::from_ref(&late));
        // A failed write's markers go with the next one.
        queue.end();
        queue.retry_marks(marks);
        let (outcomes, marks) = queue.begin().unwrap();
        assert!(outcomes.is_empty());
        assert_eq!(marks, [late]);
        queue.end();
        assert!(queue.begin().is_none());
    }

    #[tokio::test(start_paused = true)]
    async fn writes_begin_at_once_after_a_quiet_spell_and_then_keep_their_spacing() {
        let mut queue = WriteQueue::default();
        let now = tokio::time::Instant::now();
        queue.push(outcome());
        let first = queue.wait_before_next(now, WRITE_SPACING);
        assert_eq!(first, None, "nothing written yet: at once");
        assert!(queue.begin().is_some());
        queue.end();
        let idle = queue.wait_before_next(now, WRITE_SPACING);
        assert_eq!(idle, None, "nothing waits: nothing to time");
        queue.push(outcome());
        let soon = now + std::time::Duration::from_millis(2);
        assert_eq!(
            queue.wait_before_next(soon, WRITE_SPACING),
            Some(WRITE_SPACING - std::time::Duration::from_millis(2))
        );
        assert_eq!(
            queue.wait_before_next(now + WRITE_SPACING, WRITE_SPACING),
            None
        );
        // A full write's worth does not wait.
        for _ in 1..MAX_WRITE_OUTCOMES {
            queue.push(outcome());
        }
        assert_eq!(queue.wait_before_next(soon, WRITE_SPACING), None);
    }
}
