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
//! while the window is half full, which bounds them). Attempt outcomes are
//! written in batches (one atomic write for whatever finished since the one
//! before, at most one every `write_spacing` while they keep coming), and a
//! delivery counts as in flight until its outcome is
//! durable, so a reload never sends it twice at once. A slow or dead receiver
//! holds at most `max_per_webhook` requests and never slows GPS ingest or other
//! receivers.
//!
//! Where each part lives:
//! - `fan_out`: events (notices, or the outbox) into fresh deliveries on the
//!   schedule; `ledger`: which events' markers still stand for fresh deliveries.
//! - `sending`: due deliveries started, parked or sent; `in_flight`: what is
//!   held until durable, and the request limits.
//! - `recording`: the batched writes (`FRESH_RECORD_AFTER` is there), and what
//!   follows once they are durable.
//! - `reload`: the soonest pending deliveries read back from storage.
//! - `operator`: redeliveries and requeues asked for through the API.
//! - `role`: with a store several instances share, which one dispatches.
//! - here: the actor, its messages and settings, the backlog gauge, shutdown.

mod fan_out;
mod in_flight;
mod ledger;
mod operator;
mod recording;
mod reload;
mod role;
mod sending;

use std::sync::Arc;
use std::sync::atomic::AtomicBool;
use std::time::Duration;

use actix::prelude::*;

use self::fan_out::{FanOutState, Intake};
use self::in_flight::InFlight;
use self::ledger::FreshLedger;
use self::recording::{OutcomeCounters, WriteQueue};
use self::reload::Reload;
pub use self::role::{ROLE, ROLE_TTL};
use self::role::{Role, SHARED_RELOAD_TICKS};
use self::sending::Endpoints;
use super::directory::Directory;
use super::retry::RetryPolicy;
use super::schedule::Schedule;
use crate::clock::Clock;
use crate::domain::event::Event;
use crate::domain::ids::{EventId, WebhookId};
use crate::domain::webhook::{Delivery, UrlPolicy};
use crate::storage::{Storage, StorageError};

pub const BACKLOG_METRIC: &str = "freight_webhook_backlog";
pub const DELIVERIES_METRIC: &str = "freight_webhook_deliveries_total";

/// A delivery's identity: one per subscription and event.
type Key = (WebhookId, EventId);

fn key_of(delivery: &Delivery) -> Key {
    (delivery.webhook_id.clone(), delivery.event_id.clone())
}

/// Every this many ticks the outbox is scanned even without a missed notice: a
/// safety net that costs one short scan.
const OUTBOX_SCAN_TICKS: u64 = 30;

#[derive(Debug, Clone)]
pub struct DispatchSettings {
    pub url_policy: UrlPolicy,
    /// The proxy every delivery goes through, if the operator names one
    /// (`--webhooks-proxy`); never taken from the environment.
    pub proxy: Option<reqwest::Url>,
    /// The file of the key that seals subscription secrets at rest
    /// (`--secrets-key-file`); `None`: `secrets.key` in the data directory.
    /// Read once at start, by `server::secrets_key`, not by the dispatcher.
    pub secrets_key_file: Option<std::path::PathBuf>,
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
    /// While outcomes keep coming, a write of them begins at most this often
    /// (see `recording::WRITE_SPACING`, the default); zero begins each as soon
    /// as the one before it is durable.
    pub write_spacing: Duration,
}

impl Default for DispatchSettings {
    fn default() -> Self {
        DispatchSettings {
            url_policy: UrlPolicy::default(),
            proxy: None,
            secrets_key_file: None,
            retry: RetryPolicy::default(),
            tick: Duration::from_secs(1),
            max_in_flight: 256,
            max_per_webhook: 16,
            max_scheduled: 16_384,
            // Measured on 2 cores: separate sender threads cost more in cross-thread
            // wake-ups than they gained (22% of a bare loop at 128 in flight, against
            // 40% from the dispatcher's own thread). Worth trying on larger machines.
            send_threads: 0,
            write_spacing: recording::WRITE_SPACING,
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

/// A subscription was deleted (its stored deliveries went with it): its
/// queued deliveries leave memory and the backlog at once, rather than when
/// each comes due.
#[derive(Message)]
#[rtype(result = "()")]
pub struct Forget(pub WebhookId);

/// A subscription was enabled again: its parked deliveries become due now.
#[derive(Message)]
#[rtype(result = "Result<(), StorageError>")]
pub struct Requeue(pub WebhookId);

/// The one owner of the schedule and of the state below: every change to a
/// delivery in memory goes through this actor's mailbox, so none needs a lock.
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
    in_flight: InFlight,
    endpoints: Endpoints,
    intake: Intake,
    fanning_out: FanOutState,
    ledger: FreshLedger,
    writes: WriteQueue,
    reloading: Reload,
    backlog: Backlog,
    outcome_counters: OutcomeCounters,
    mode: Mode,
    role: Role,
    ticks: u64,
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
        Dispatcher {
            storage,
            directory,
            client,
            sender,
            clock,
            schedule: Schedule::new(settings.max_scheduled),
            retry: Arc::new(settings.retry.clone()),
            settings,
            in_flight: InFlight::default(),
            endpoints: Endpoints::default(),
            intake: Intake::new(missed),
            fanning_out: FanOutState::Idle,
            ledger: FreshLedger::new(),
            writes: WriteQueue::default(),
            reloading: Reload::Idle,
            backlog: Backlog::default(),
            outcome_counters: OutcomeCounters::new(),
            mode: Mode::Running,
            role: Role::sole(),
            ticks: 0,
        }
    }

    /// Names this process as the owner of the dispatcher role, for stores that
    /// several instances share (see `role`).
    pub fn owned_by(mut self, owner: std::sync::Arc<str>) -> Self {
        self.role.owned_by(owner);
        self
    }

    /// What is looked at without a nudge: the outbox now and then, fresh
    /// deliveries waiting too long, retries that came due in storage.
    fn tick(&mut self, ctx: &mut Context<Self>) {
        if !self.role.active() {
            return;
        }
        self.ticks += 1;
        // Other instances commit events without a notice to this one.
        let shared = self.storage.needs_leases();
        if shared || self.ticks.is_multiple_of(OUTBOX_SCAN_TICKS) {
            self.intake.scan_outbox();
        }
        if self.ticks.is_multiple_of(OUTBOX_SCAN_TICKS) {
            self.ledger.next_scan_period();
        }
        self.record_waiting_fresh(ctx);
        // A retry that came due in storage while memory was full is found here,
        // and with a shared store, a redelivery another instance stored.
        if self.schedule.overflowed() || (shared && self.ticks.is_multiple_of(SHARED_RELOAD_TICKS))
        {
            self.reload(ctx);
        }
        self.dispatch_due(ctx);
    }

    /// Answers the drain once nothing is in flight or waiting to be written.
    fn answer_drained(&mut self) {
        let idle = self.in_flight.no_requests() && self.writes.is_idle();
        if idle && let Mode::Draining(waiting) = &mut self.mode {
            for waiter in waiting.drain(..) {
                let _ = waiter.send(());
            }
        }
    }
}

impl Actor for Dispatcher {
    type Context = Context<Self>;

    fn started(&mut self, ctx: &mut Self::Context) {
        ctx.set_mailbox_capacity(1024);
        ctx.run_interval(self.settings.tick, |actor, ctx| actor.tick(ctx));
        if self.storage.needs_leases() {
            // Acts once it holds the role.
            self.contend_for_role(ctx);
            return;
        }
        self.reload(ctx);
        self.dispatch_due(ctx);
    }
}

impl Handler<EventsCommitted> for Dispatcher {
    type Result = ();

    fn handle(&mut self, msg: EventsCommitted, ctx: &mut Self::Context) {
        if !self.role.active() {
            // In the shared outbox, where the active instance finds them.
            return;
        }
        self.intake.notice(msg.0);
        self.fan_out(ctx);
    }
}

impl Handler<Drain> for Dispatcher {
    type Result = ResponseFuture<()>;

    fn handle(&mut self, _: Drain, _: &mut Self::Context) -> Self::Result {
        let (tx, rx) = tokio::sync::oneshot::channel();
        match &mut self.mode {
            Mode::Running => self.mode = Mode::Draining(vec![tx]),
            Mode::Draining(waiting) => waiting.push(tx),
        }
        self.answer_drained();
        // Given up once drained, so another instance takes it over at once
        // rather than after `ROLE_TTL`.
        let release = self.role.release_at_shutdown(&self.storage);
        Box::pin(async move {
            let _ = rx.await;
            if let Some(release) = release {
                release.await;
            }
        })
    }
}

/// Pending deliveries with a next attempt, in memory and storage alike, and the
/// gauge that shows them. Storage is counted once, at the first reload; every
/// change after that passes through the dispatcher, so it is kept here.
#[derive(Default)]
struct Backlog {
    pending: u64,
    counted: bool,
}

impl Backlog {
    fn get(&self) -> u64 {
        self.pending
    }

    fn set(&mut self, pending: u64) {
        self.pending = pending;
        metrics::gauge!(BACKLOG_METRIC).set(pending as f64);
    }

    fn add(&mut self, more: u64) {
        self.set(self.pending + more);
    }

    /// Storage has not been counted yet (the next reload counts it).
    fn needs_count(&self) -> bool {
        !self.counted
    }

    /// Storage must be counted again (it holds deliveries memory has lost
    /// track of); the gauge keeps its value until then.
    fn recount(&mut self) {
        self.counted = false;
    }

    fn counted(&mut self, pending: u64) {
        self.counted = true;
        self.set(pending);
    }
}

/// Whether new attempts may start. Draining is for good: once asked, the
/// dispatcher only finishes what it started.
enum Mode {
    Running,
    /// Who waits for the last attempt in flight to be recorded; emptied as they
    /// are answered.
    Draining(Vec<tokio::sync::oneshot::Sender<()>>),
}

#[cfg(test)]
mod tests;
