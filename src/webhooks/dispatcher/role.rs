//! One dispatcher for all the instances that share a store.
//!
//! Every instance runs a dispatcher, but with a shared store (ScyllaDB) only
//! the one holding the `webhook_dispatcher` role lease acts: it fans events
//! out of the shared outbox and sends deliveries. The others stand by: they
//! leave the events they commit to the outbox (the active one scans it every
//! tick), and apply redeliveries and requeues asked of them to storage alone
//! (the active one reads them back every `SHARED_RELOAD_TICKS`). Without this,
//! every instance would send every event.
//!
//! A standby instance asks for the lease every `ROLE_RENEWAL`, and gets it once
//! the holder has released it (at shutdown) or stopped renewing it (it died:
//! `ROLE_TTL` later). Taking over starts from storage alone: memory is emptied
//! (but for the events scans found, whose notices may still come: see
//! `FreshLedger::taken_over`), the outbox scanned and the pending deliveries
//! read back, as at a start. An
//! instance that finds it has lost the lease stops starting attempts at once;
//! what it has in flight is sent and recorded, and may be sent again by the
//! new holder (delivery is at least once; receivers dedupe on the event id).
//!
//! A store that one process owns (the embedded one) grants the lease at once
//! and for good, so a single instance is active from its start.

use std::sync::Arc;
use std::time::Duration;

use actix::prelude::*;
use tokio::time::Instant;

use super::fan_out::{FanOutState, Intake};
use super::reload::Reload;
use super::{Backlog, Dispatcher};
use crate::storage::Storage;
use crate::telemetry::error_chain;
use crate::webhooks::schedule::Schedule;

/// The role's name in storage.
pub const ROLE: &str = "webhook_dispatcher";
/// How long the role outlives its holder's last renewal: how long webhooks
/// wait when the dispatching instance dies.
pub const ROLE_TTL: Duration = Duration::from_secs(15);
/// The role is renewed (or asked for) this often: two renewals can fail
/// before it expires.
pub(super) const ROLE_RENEWAL: Duration = Duration::from_secs(5);
/// With a shared store, the active dispatcher reads pending deliveries back
/// this often (in ticks), to find redeliveries other instances stored.
pub(super) const SHARED_RELOAD_TICKS: u64 = 5;

/// Whether this dispatcher acts, and how its lease stands.
pub(super) struct Role {
    /// This process's name as a lease owner.
    owner: Arc<str>,
    active: bool,
    /// A lease request is under way.
    asking: bool,
    /// When the lease was last taken or renewed.
    renewed_at: Option<Instant>,
}

impl Role {
    /// Active from the start, as with a store no other process shares.
    pub(super) fn sole() -> Self {
        Role {
            owner: Arc::from("this-process"),
            active: true,
            asking: false,
            renewed_at: None,
        }
    }

    /// Names the owner the lease is asked for in, with a shared store.
    pub(super) fn owned_by(&mut self, owner: Arc<str>) {
        self.owner = owner;
    }

    pub(super) fn active(&self) -> bool {
        self.active
    }

    /// What gives the role up at shutdown, if this instance holds it in a
    /// shared store; it acts no more either way.
    pub(super) fn release_at_shutdown(
        &mut self,
        storage: &Arc<dyn Storage>,
    ) -> Option<impl Future<Output = ()> + use<>> {
        let held = std::mem::replace(&mut self.active, false) && storage.needs_leases();
        let (storage, owner) = (storage.clone(), self.owner.clone());
        held.then_some(async move {
            if let Err(error) = storage.release_role(ROLE, &owner).await {
                tracing::warn!(error = %error_chain(&error), "could not release the webhook dispatcher role; it expires on its own");
            }
        })
    }
}

impl Dispatcher {
    /// Asks for the lease now and every `ROLE_RENEWAL` (a shared store).
    pub(super) fn contend_for_role(&mut self, ctx: &mut Context<Self>) {
        self.role.active = false;
        self.backlog.set(0);
        self.keep_role(ctx);
        ctx.run_interval(ROLE_RENEWAL, |actor, ctx| actor.keep_role(ctx));
    }

    fn keep_role(&mut self, ctx: &mut Context<Self>) {
        if self.role.asking || matches!(self.mode, super::Mode::Draining(_)) {
            return;
        }
        // Work left from a time this instance was active finishes first, so
        // that taking over starts from storage alone.
        if !self.role.active && !self.idle() {
            return;
        }
        self.role.asking = true;
        let (storage, owner) = (self.storage.clone(), self.role.owner.clone());
        let ask = async move { storage.lease_role(ROLE, &owner, ROLE_TTL).await };
        ctx.spawn(ask.into_actor(self).map(|result, actor, ctx| {
            actor.role.asking = false;
            match result {
                Ok(true) => {
                    actor.role.renewed_at = Some(Instant::now());
                    if !actor.role.active && !matches!(actor.mode, super::Mode::Draining(_)) {
                        actor.take_over(ctx);
                    }
                }
                Ok(false) if actor.role.active => {
                    tracing::warn!(
                        "another instance took the webhook dispatcher role; this one stands by"
                    );
                    actor.stand_by();
                }
                Ok(false) => {}
                Err(error) => {
                    let expired = actor
                        .role
                        .renewed_at
                        .is_none_or(|at| at.elapsed() >= ROLE_TTL - ROLE_RENEWAL);
                    if actor.role.active && expired {
                        tracing::warn!(error = %error_chain(&error), "could not renew the webhook dispatcher role before it ran out; this instance stands by");
                        actor.stand_by();
                    } else if actor.role.active {
                        tracing::warn!(error = %error_chain(&error), "could not renew the webhook dispatcher role; retrying");
                    } else {
                        tracing::debug!(error = %error_chain(&error), "could not ask for the webhook dispatcher role");
                    }
                }
            }
        }));
    }

    /// Nothing started by this dispatcher is still under way.
    fn idle(&self) -> bool {
        self.in_flight.held() == 0
            && self.writes.is_idle()
            && matches!(self.reloading, Reload::Idle)
            && matches!(self.fanning_out, FanOutState::Idle)
    }

    /// Starts acting from what storage holds, as at a start.
    fn take_over(&mut self, ctx: &mut Context<Self>) {
        tracing::info!(owner = %self.role.owner, "this instance now dispatches webhooks");
        self.role.active = true;
        self.schedule = Schedule::new(self.settings.max_scheduled);
        self.ledger.taken_over();
        self.intake = Intake::new(self.intake.missed_flag());
        self.backlog = Backlog::default();
        self.reload(ctx);
        self.dispatch_due(ctx);
    }

    /// Stops starting attempts; what is in flight finishes and is recorded.
    fn stand_by(&mut self) {
        self.role.active = false;
        self.role.renewed_at = None;
        // The gauge is the active instance's to report.
        self.backlog.set(0);
    }
}
