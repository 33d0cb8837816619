//! The webhook dispatch actor: fans committed events out to the subscriptions
//! that want them, sends due deliveries, signed, and records each attempt.
//!
//! A fresh delivery is written once, with its first attempt's outcome: until
//! then the event's outbox marker stands for it (a restart fans the event out
//! again, and sends only the deliveries storage has no record of), and the write
//! that records an event's last fresh delivery also marks the event fanned out.
//! One write per delivery that succeeds at once, instead of one to create it and
//! one to record it. A fresh delivery still waiting after `FRESH_RECORD_AFTER`
//! (a slow receiver) is recorded as pending, so the delivery log shows it.
//!
//! Storage holds the backlog (recorded deliveries, and outbox markers for fresh
//! ones); memory holds a bounded window of it (`Schedule`): the soonest pending
//! deliveries, with their bodies when fan-out had them. When the window
//! overflows, recorded deliveries stay in storage and are read back, soonest
//! first, as the window drains; fresh ones always stay in memory (fan-out pauses
//! while the window is half full, which bounds them). Attempt outcomes are written in batches (one
//! atomic write for whatever finished while the previous write was syncing), and
//! a delivery counts as in flight until its outcome is durable, so a reload never
//! sends it twice at once. A slow or dead receiver holds at most
//! `max_per_webhook` requests and never slows GPS ingest or other receivers.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use actix::prelude::*;
use actix_web::web::Bytes;
use chrono::{DateTime, Utc};

use super::attempt::{Endpoint, after_attempt, attempt};
use super::directory::Directory;
use super::retry::RetryPolicy;
use super::schedule::{Queued, Schedule};
use super::{FastMap, FastSet};
use crate::clock::Clock;
use crate::domain::event::Event;
use crate::domain::ids::{EventId, WebhookId};
use crate::domain::webhook::{
    Delivery, DeliveryStatus, HISTORY_RETENTION_DAYS, Subscription, UrlPolicy,
};
use crate::storage::{Storage, StorageError};

pub const BACKLOG_METRIC: &str = "freight_webhook_backlog";
pub const DELIVERIES_METRIC: &str = "freight_webhook_deliveries_total";

/// Events fanned out per storage round trip.
const FAN_OUT_BATCH: usize = 512;
/// Events held in memory awaiting fan-out; beyond it they are read from the outbox.
const MAX_NOTICED: usize = 16_384;
/// Every this many ticks the outbox is scanned even without a missed notice: a
/// safety net that costs one short scan.
const OUTBOX_SCAN_TICKS: u64 = 30;
/// A fresh delivery waiting this long for its first attempt is recorded as pending.
const FRESH_RECORD_AFTER: chrono::TimeDelta = chrono::TimeDelta::seconds(2);

#[derive(Debug, Clone)]
pub struct DispatchSettings {
    pub url_policy: UrlPolicy,
    pub retry: RetryPolicy,
    /// How often the schedule and the outbox are looked at without a nudge.
    pub tick: Duration,
    pub max_in_flight: usize,
    /// Concurrent requests to one subscription: a slow receiver holds only these.
    pub max_per_webhook: usize,
    /// Pending deliveries held in memory; the rest wait in storage.
    pub max_scheduled: usize,
    /// Threads that send requests (and sign them); 0 sends from the dispatcher's
    /// own thread.
    pub send_threads: usize,
}

impl Default for DispatchSettings {
    fn default() -> Self {
        DispatchSettings {
            url_policy: UrlPolicy::default(),
            retry: RetryPolicy::default(),
            tick: Duration::from_secs(1),
            max_in_flight: 256,
            max_per_webhook: 16,
            max_scheduled: 16_384,
            // Measured on 2 cores: separate sender threads cost more in cross-thread
            // wake-ups than they gained (22% of a bare loop at 128 in flight, against
            // 40% from the dispatcher's own thread). Worth trying on larger machines.
            send_threads: 0,
        }
    }
}

/// Events were committed to the outbox (these ones, when the sender had them).
#[derive(Message)]
#[rtype(result = "()")]
pub struct EventsCommitted(pub Vec<Event>);

/// Make a delivery due now (again), under the same event id. Answers the delivery
/// as it stands once that is durable, or `None` if there is no such delivery.
#[derive(Message)]
#[rtype(result = "Result<Option<Delivery>, StorageError>")]
pub struct Redeliver {
    pub webhook: WebhookId,
    pub event: EventId,
}

/// Shutting down: start nothing new, and answer once every attempt in flight
/// has been sent and its outcome written (what is pending stays in storage).
#[derive(Message)]
#[rtype(result = "()")]
pub struct Drain;

/// A subscription was enabled again: its parked deliveries become due now.
#[derive(Message)]
#[rtype(result = "Result<(), StorageError>")]
pub struct Requeue(pub WebhookId);

/// An attempt finished (or could not be made).
#[derive(Message)]
#[rtype(result = "()")]
struct Sent {
    webhook: WebhookId,
    key: (WebhookId, EventId),
    /// Not attempted: the delivery as it was taken, and why.
    result: Result<Outcome, (Queued, StorageError)>,
}

/// One attempt's result (or a delivery's new state), waiting to be written.
struct Outcome {
    previous: Delivery,
    next: Delivery,
    body: Option<Bytes>,
    disable: Option<String>,
    /// Storage has no record of `previous`: this write is the delivery's first.
    first_record: bool,
}

pub struct Dispatcher {
    storage: Arc<dyn Storage>,
    directory: Arc<Directory>,
    client: reqwest::Client,
    /// Where requests run (see `DispatchSettings::send_threads`); `None`: on the
    /// dispatcher's own thread.
    sender: Option<tokio::runtime::Handle>,
    clock: Clock,
    settings: DispatchSettings,
    /// `settings.retry`, shared with the attempts rather than copied into each.
    retry: Arc<RetryPolicy>,
    schedule: Schedule,
    /// Taken from the schedule and not yet durably recorded.
    in_flight: FastSet<(WebhookId, EventId)>,
    /// Requests open per subscription.
    busy: FastMap<WebhookId, usize>,
    /// Each subscription's endpoint, for the version of it the directory holds.
    endpoints: FastMap<WebhookId, (Arc<Subscription>, Arc<Endpoint>)>,
    sending: usize,
    /// Events noticed in memory, awaiting fan-out.
    noticed: Vec<Event>,
    /// A notice could not be kept: the outbox must be scanned.
    missed: Arc<AtomicBool>,
    /// A pass over the outbox in progress, and the event its next batch follows.
    outbox_pass: Option<Option<EventId>>,
    fanning_out: bool,
    outcomes: Vec<Outcome>,
    recording: bool,
    /// While a reload reads storage: the deliveries changed meanwhile.
    touched: Option<FastSet<(WebhookId, EventId)>>,
    /// The backlog was counted from storage (once, at the first reload).
    counted: bool,
    ticks: u64,
    /// Shutting down: who waits for the last attempt in flight to be recorded.
    draining: Option<Vec<tokio::sync::oneshot::Sender<()>>>,
    /// Pending deliveries with a next attempt, in memory and storage alike.
    backlog: u64,
    outcome_counters: OutcomeCounters,
    /// Events fanned out in memory whose deliveries are not all recorded yet, and
    /// how many are not; an event stays here until the write that marks it
    /// fanned out is durable.
    unrecorded: FastMap<EventId, usize>,
    /// Events with every delivery recorded (or none at all), to be marked fanned
    /// out by the next write.
    fanned_out: Vec<EventId>,
    /// Events fanned out from outbox scans in this scan period and the one before:
    /// a notice of one of them arriving late is not fanned out again. Only events
    /// made since this dispatcher started can have a notice still to come.
    scanned: [FastSet<EventId>; 2],
    /// The smallest id of an event made since this dispatcher started.
    started: EventId,
    /// While a scan reads the outbox: the events marked fanned out meanwhile,
    /// whose markers the read may still have seen.
    settled_during_scan: Option<FastSet<EventId>>,
}

impl Dispatcher {
    pub fn new(
        storage: Arc<dyn Storage>,
        directory: Arc<Directory>,
        client: reqwest::Client,
        clock: Clock,
        settings: DispatchSettings,
        missed: Arc<AtomicBool>,
        sender: Option<tokio::runtime::Handle>,
    ) -> Self {
        // Whatever committed before this start was never noticed.
        missed.store(true, Ordering::Relaxed);
        // Ids are made from the wall clock, whatever clock the service is given.
        let started = EventId::floor_at(Utc::now());
        Dispatcher {
            storage,
            directory,
            client,
            sender,
            clock,
            schedule: Schedule::new(settings.max_scheduled),
            retry: Arc::new(settings.retry.clone()),
            settings,
            in_flight: FastSet::default(),
            busy: FastMap::default(),
            endpoints: FastMap::default(),
            sending: 0,
            noticed: Vec::new(),
            missed,
            outbox_pass: None,
            fanning_out: false,
            outcomes: Vec::new(),
            recording: false,
            touched: None,
            counted: false,
            ticks: 0,
            draining: None,
            backlog: 0,
            outcome_counters: OutcomeCounters::new(),
            unrecorded: FastMap::default(),
            fanned_out: Vec::new(),
            scanned: Default::default(),
            started,
            settled_during_scan: None,
        }
    }

    fn set_backlog(&mut self, backlog: u64) {
        self.backlog = backlog;
        metrics::gauge!(BACKLOG_METRIC).set(backlog as f64);
    }

    fn pump(&mut self, ctx: &mut Context<Self>) {
        self.dispatch_due(ctx);
    }

    /// Turns events into fresh deliveries and schedules them: events noticed in
    /// memory first, the outbox when a notice was missed (or at start).
    fn fan_out(&mut self, ctx: &mut Context<Self>) {
        // Back-pressure: while the schedule is half full, events wait (in the
        // outbox, and a bounded list of notices) rather than spill deliveries to
        // storage that would have to be read back.
        if self.fanning_out || self.schedule.len() >= self.schedule.capacity() / 2 {
            return;
        }
        let noticed: Vec<Event> = if self.noticed.is_empty() {
            Vec::new()
        } else {
            let n = self.noticed.len().min(FAN_OUT_BATCH);
            self.noticed.drain(..n).collect()
        };
        // A pass over the outbox continues from where its last batch ended, unless
        // a notice was missed meanwhile: that event may be behind it, so start over.
        let mut scan_from = None;
        if noticed.is_empty() {
            if self.missed.swap(false, Ordering::Relaxed) {
                scan_from = Some(None);
            } else if let Some(floor) = self.outbox_pass.take() {
                scan_from = Some(floor);
            } else {
                return;
            }
        }
        let scan = scan_from.is_some();
        if scan {
            self.settled_during_scan = Some(FastSet::default());
        }
        self.fanning_out = true;
        let (storage, directory, clock) = (
            self.storage.clone(),
            self.directory.clone(),
            self.clock.clone(),
        );
        let work = async move {
            let events = match &scan_from {
                Some(after) => {
                    storage
                        .unfanned_events(after.as_ref(), FAN_OUT_BATCH)
                        .await?
                }
                None => noticed,
            };
            // The pass goes on after this batch's last event if the batch was full.
            let pass_goes_on = match scan && events.len() == FAN_OUT_BATCH {
                true => events.last().map(|e| e.id.clone()),
                false => None,
            };
            // Rendering bodies and matching subscriptions is CPU work; the
            // dispatcher's thread is the busiest in a drain, so it runs beside it.
            let now = clock.now();
            let FanOut { events, deliveries } =
                tokio::task::spawn_blocking(move || FanOut::prepare(&directory, events, now))
                    .await
                    .map_err(|e| StorageError::Unavailable(e.to_string()))?;
            // An event still in the outbox may have had some deliveries recorded
            // before a restart: those were attempted, and are not sent again.
            let deliveries = match scan {
                true => storage.without_records(deliveries).await?,
                false => deliveries,
            };
            Ok::<_, StorageError>((events, deliveries, pass_goes_on))
        };
        ctx.spawn(work.into_actor(self).map(move |result, actor, ctx| {
            actor.fanning_out = false;
            let settled_meanwhile = actor.settled_during_scan.take().unwrap_or_default();
            match result {
                Ok((events, deliveries, pass_goes_on)) => {
                    actor.schedule_fresh(events, deliveries, scan, &settled_meanwhile);
                    if let Some(last) = pass_goes_on {
                        actor.outbox_pass = Some(Some(last));
                    }
                    actor.write_outcomes(ctx);
                    actor.dispatch_due(ctx);
                }
                Err(error) => {
                    // The events are in the outbox still: read them from there.
                    actor.missed.store(true, Ordering::Relaxed);
                    tracing::error!(%error, "webhook fan-out failed; retrying on the next tick");
                    return;
                }
            }
            actor.fan_out(ctx);
        }));
    }

    /// Schedules the fresh deliveries of a batch of events, but for events that
    /// are being (or have been) fanned out already: in progress here, found by a
    /// scan and now noticed late, or marked fanned out while a scan read them.
    fn schedule_fresh(
        &mut self,
        events: Vec<(EventId, Option<Bytes>)>,
        deliveries: Vec<Delivery>,
        scan: bool,
        settled_meanwhile: &FastSet<EventId>,
    ) {
        let mut deliveries = deliveries.into_iter().peekable();
        let mut added = 0;
        for (event, body) in events {
            let seen_by_scan = || self.scanned.iter().any(|set| set.contains(&event));
            let skip = self.unrecorded.contains_key(&event)
                || settled_meanwhile.contains(&event)
                || (!scan && seen_by_scan());
            let mut count = 0;
            let mut body = body;
            while let Some(delivery) = deliveries.next_if(|d| d.event_id == event) {
                if !skip {
                    count += 1;
                    // The last of the event's deliveries takes the body itself: a
                    // clone would make its buffer shared (an allocation) for nothing.
                    let last = deliveries.peek().is_none_or(|d| d.event_id != event);
                    let body = if last { body.take() } else { body.clone() };
                    self.schedule.push(Queued {
                        delivery,
                        body,
                        recorded: false,
                    });
                }
            }
            if skip {
                continue;
            }
            if scan && event >= self.started {
                self.scanned[0].insert(event.clone());
            }
            if count == 0 {
                self.fanned_out.push(event.clone());
            }
            self.unrecorded.insert(event, count);
            added += count as u64;
        }
        self.set_backlog(self.backlog + added);
    }

    /// A fresh delivery left memory without a record (its webhook was deleted):
    /// it no longer holds its event's marker.
    fn forget_fresh(&mut self, event: &EventId) {
        if self.one_less_unrecorded(event) {
            self.fanned_out.push(event.clone());
        }
    }

    /// One of the event's fresh deliveries no longer needs its marker; true when
    /// none does any more, so the event can be marked fanned out.
    fn one_less_unrecorded(&mut self, event: &EventId) -> bool {
        match self.unrecorded.get_mut(event) {
            Some(count) => {
                *count = count.saturating_sub(1);
                *count == 0
            }
            None => false,
        }
    }

    /// Records as pending the fresh deliveries that have waited too long for
    /// their first attempt (a slow receiver), so that the delivery log shows them.
    fn record_waiting_fresh(&mut self, ctx: &mut Context<Self>) {
        let cutoff = self.clock.now() - FRESH_RECORD_AFTER;
        for queued in self.schedule.take_waiting_unrecorded(cutoff) {
            self.in_flight.insert((
                queued.delivery.webhook_id.clone(),
                queued.delivery.event_id.clone(),
            ));
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

    /// Starts every due delivery there is room for, and reads the soonest ones
    /// back from storage when memory has run low and storage holds more.
    fn dispatch_due(&mut self, ctx: &mut Context<Self>) {
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

    /// Reads the soonest pending deliveries back from storage into memory.
    fn reload(&mut self, ctx: &mut Context<Self>) {
        if self.touched.is_some() {
            return;
        }
        self.touched = Some(FastSet::default());
        let turned_away = self.schedule.turned_away();
        let storage = self.storage.clone();
        let limit = self.schedule.capacity();
        // In-flight deliveries are still pending in storage: ask for enough to skip them.
        let wanted = limit + self.in_flight.len();
        let count = !self.counted;
        let work = async move {
            let soonest = storage
                .due_deliveries(DateTime::<Utc>::MAX_UTC, wanted)
                .await?;
            let backlog = match count {
                true => Some(storage.count_due_deliveries().await?),
                false => None,
            };
            Ok::<_, StorageError>((soonest, backlog))
        };
        ctx.spawn(work.into_actor(self).map(move |result, actor, ctx| {
            let touched = actor.touched.take().unwrap_or_default();
            match result {
                Ok((soonest, backlog)) => {
                    // Complete: storage had no more, and none was turned away since the read.
                    let complete =
                        soonest.len() < wanted && actor.schedule.turned_away() == turned_away;
                    // What changed since the read began is known better in memory.
                    let fresh: Vec<Delivery> = soonest
                        .into_iter()
                        .filter(|d| {
                            let key = (d.webhook_id.clone(), d.event_id.clone());
                            !actor.in_flight.contains(&key) && !touched.contains(&key)
                        })
                        .collect();
                    actor.schedule.merge(fresh, complete);
                    if let Some(backlog) = backlog {
                        actor.counted = true;
                        actor.set_backlog(backlog);
                    }
                    actor.dispatch_due(ctx);
                }
                Err(error) => tracing::error!(%error, "reading pending webhook deliveries failed"),
            }
        }));
    }

    /// Notes a delivery that changed while a reload was reading storage.
    fn touch(&mut self, delivery: &Delivery) {
        if let Some(touched) = &mut self.touched {
            touched.insert((delivery.webhook_id.clone(), delivery.event_id.clone()));
        }
    }

    fn start(&mut self, ctx: &mut Context<Self>, queued: Queued) {
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
    fn endpoint(&mut self, subscription: &Arc<Subscription>) -> Arc<Endpoint> {
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

    fn send(&mut self, ctx: &mut Context<Self>, subscription: Arc<Subscription>, queued: Queued) {
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

    /// Queues an outcome for the next batched write.
    fn record(&mut self, ctx: &mut Context<Self>, outcome: Outcome) {
        self.outcomes.push(outcome);
        self.write_outcomes(ctx);
    }

    /// Writes the outcomes waiting, and marks fanned out the events whose last
    /// fresh delivery is among them (or that are waiting for it), in one write.
    fn write_outcomes(&mut self, ctx: &mut Context<Self>) {
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
                        actor
                            .in_flight
                            .remove(&(previous.webhook_id.clone(), previous.event_id.clone()));
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
    fn recorded(&mut self, ctx: &mut Context<Self>, outcomes: Vec<Outcome>) {
        let mut backlog = self.backlog;
        for outcome in outcomes {
            let next = outcome.next;
            self.touch(&next);
            let key = (next.webhook_id.clone(), next.event_id.clone());
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
            self.in_flight.remove(&key);
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

/// A batch of events turned into the deliveries they make, before recording.
struct FanOut {
    /// Every event of the batch, matched or not (all are marked fanned out once
    /// their deliveries are recorded), with the body its subscribers get.
    events: Vec<(EventId, Option<Bytes>)>,
    /// The deliveries, in the order of their events.
    deliveries: Vec<Delivery>,
}

impl FanOut {
    fn prepare(directory: &Directory, events: Vec<Event>, now: DateTime<Utc>) -> Self {
        let mut deliveries = Vec::new();
        let mut batch = Vec::with_capacity(events.len());
        for event in events {
            // A subscription made after the event never gets it (the event may be
            // fanned out again after a restart, when more subscriptions exist).
            let mut matching = directory.matching(&event.account_id, event.kind);
            matching.retain(|subscription| subscription.created_at <= event.timestamp);
            if matching.is_empty() {
                batch.push((event.id, None));
                continue;
            }
            deliveries.extend(matching.into_iter().map(|subscription| {
                Delivery::new(subscription.id.clone(), event.id.clone(), event.kind, now)
            }));
            batch.push((event.id.clone(), Some(Bytes::from(event.body()))));
        }
        FanOut {
            events: batch,
            deliveries,
        }
    }
}

/// A delivery whose event is no longer stored fails, saying why.
fn expired(delivery: Delivery, recorded: bool) -> Outcome {
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

/// `DELIVERIES_METRIC` by outcome, looked up once rather than per attempt.
struct OutcomeCounters {
    delivered: metrics::Counter,
    retrying: metrics::Counter,
    failed: metrics::Counter,
}

impl OutcomeCounters {
    fn new() -> Self {
        let counter =
            |outcome: &'static str| metrics::counter!(DELIVERIES_METRIC, "outcome" => outcome);
        OutcomeCounters {
            delivered: counter("delivered"),
            retrying: counter("retrying"),
            failed: counter("failed"),
        }
    }

    fn count(&self, delivery: &Delivery) {
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

impl Actor for Dispatcher {
    type Context = Context<Self>;

    fn started(&mut self, ctx: &mut Self::Context) {
        ctx.set_mailbox_capacity(1024);
        ctx.run_interval(self.settings.tick, |actor, ctx| {
            actor.ticks += 1;
            if actor.ticks % OUTBOX_SCAN_TICKS == 0 {
                actor.missed.store(true, Ordering::Relaxed);
                let recent = std::mem::take(&mut actor.scanned[0]);
                actor.scanned[1] = recent;
            }
            actor.record_waiting_fresh(ctx);
            // A retry that came due in storage while memory was full is found here.
            if actor.schedule.overflowed() {
                actor.reload(ctx);
            }
            actor.pump(ctx);
        });
        self.reload(ctx);
        self.pump(ctx);
    }
}

impl Handler<EventsCommitted> for Dispatcher {
    type Result = ();

    fn handle(&mut self, msg: EventsCommitted, ctx: &mut Self::Context) {
        if msg.0.is_empty() || self.noticed.len() + msg.0.len() > MAX_NOTICED {
            // Kept in the outbox alone; read from there.
            self.missed.store(true, Ordering::Relaxed);
        } else {
            self.noticed.extend(msg.0);
        }
        self.fan_out(ctx);
    }
}

impl Dispatcher {
    /// Answers the drain once nothing is in flight or waiting to be written.
    fn answer_drained(&mut self) {
        let idle = self.sending == 0 && self.outcomes.is_empty() && !self.recording;
        if idle && let Some(waiting) = self.draining.as_mut() {
            for waiter in waiting.drain(..) {
                let _ = waiter.send(());
            }
        }
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

impl Handler<Drain> for Dispatcher {
    type Result = ResponseFuture<()>;

    fn handle(&mut self, _: Drain, _: &mut Self::Context) -> Self::Result {
        let (tx, rx) = tokio::sync::oneshot::channel();
        self.draining.get_or_insert_with(Vec::new).push(tx);
        self.answer_drained();
        Box::pin(async move {
            let _ = rx.await;
        })
    }
}

impl Handler<Redeliver> for Dispatcher {
    type Result = ResponseActFuture<Self, Result<Option<Delivery>, StorageError>>;

    fn handle(&mut self, msg: Redeliver, _: &mut Self::Context) -> Self::Result {
        let key = (msg.webhook.clone(), msg.event.clone());
        let storage = self.storage.clone();
        if self.in_flight.contains(&key) {
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
        self.in_flight.insert(key.clone());
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
                actor.in_flight.remove(&key);
                let body = queued.and_then(|q| q.body);
                match result {
                    Ok(Some((current, again))) => {
                        actor.touch(&again);
                        if current.next_attempt_at.is_none() && again.next_attempt_at.is_some() {
                            actor.set_backlog(actor.backlog + 1);
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
        let busy = self.in_flight.clone();
        Box::pin(
            async move {
                let changes: Vec<(Delivery, Delivery)> = storage
                    .parked_deliveries(&msg.0)
                    .await?
                    .into_iter()
                    // One being parked right now is requeued when its parking is recorded.
                    .filter(|d| !busy.contains(&(d.webhook_id.clone(), d.event_id.clone())))
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
                actor.set_backlog(actor.backlog + changes.len() as u64);
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

#[cfg(test)]
mod tests;
