//! One actor per active load: the only writer of its load, holding its status and
//! latest positions in memory so GPS ingest and tracking reads need no storage
//! round trip beyond the group commit. It shares that state with the HTTP
//! workers, which admit fixes and read it under its lock while the actor lets
//! them (`load_state`).

use std::sync::Arc;
use std::time::Duration;

use crate::shared_map::SharedMap;
use actix::prelude::*;

use super::LoadError;
use super::load_edit::apply_edit;
use super::load_state::{Admission, HeldFix, SharedState, State, Tracked, Wanted};
use super::status_change::apply_status_change;
use super::writer::{Changed, LoadWriter};
use crate::clock::Clock;
use crate::domain::ids::{AccountId, LoadId, StopId};
use crate::domain::load::{Load, LoadEdit, StatusChange};
use crate::domain::tracking::{GpsFix, TrackingState};
use crate::storage::{PointRange, Storage, StorageError};
use crate::telemetry::error_chain;
use crate::unavailable::Unavailable;
use crate::webhooks::notifier::Notifier;

pub use super::load_state::RECENT_FIXES;
/// A mailbox this deep makes many connections posting to one load wait rather than fail.
const MAILBOX_CAPACITY: usize = 1024;
/// An actor for a load that does not exist answers "not found" this long, then stops.
const MISSING_LINGER: Duration = Duration::from_secs(1);
/// An actor for a load another instance acts for says so this long, then
/// stops: the holder is looked up once per this, not once per request.
const ELSEWHERE_LINGER: Duration = Duration::from_secs(2);
/// How long a load's lease outlives its last renewal by default (stores
/// shared by several instances; see `Coordination::lease_load`): how long a
/// dead instance's loads stay unserved. A lease is renewed every third of it,
/// so two renewals can fail before it expires.
pub const LEASE_TTL: Duration = Duration::from_secs(15);
/// `Retry-After` when another instance holds a load's lease.
pub const LEASE_RETRY_AFTER_SECS: &str = "5";

/// Admits GPS fixes for the load when [`SharedState::try_admit`] could not: the
/// actor checks that the load exists, belongs to the account and takes fixes,
/// and counts a write in flight (it will not stop until the matching
/// [`SharedState::record_stored`]).
#[derive(Message, Clone)]
#[rtype(result = "Result<Admission, LoadError>")]
pub struct AdmitFixes {
    pub account: AccountId,
    /// The fixes, in the order their events are numbered (and their stops watched).
    pub fixes: Vec<GpsFix>,
    /// Whether `tracking.updated` events are wanted (someone subscribes).
    pub events: Wanted,
}

/// Changes the load's status (and carrier), applied one at a time.
#[derive(Message, Clone)]
#[rtype(result = "Result<Load, LoadError>")]
pub struct ChangeStatus {
    pub account: AccountId,
    pub change: StatusChange,
}

/// Changes the load's fields (`PATCH /v1/loads/{id}`), applied one at a
/// time with status changes.
#[derive(Message, Clone)]
#[rtype(result = "Result<Load, LoadError>")]
pub struct EditLoad {
    pub account: AccountId,
    pub edit: LoadEdit,
}

/// Reads the in-memory tracking state.
#[derive(Message, Clone)]
#[rtype(result = "Result<TrackingState, LoadError>")]
pub struct ReadTracking {
    pub account: AccountId,
}

#[derive(Debug, Clone, Copy)]
pub struct ActorSettings {
    /// Arbiter threads the actors are spread over; 0 runs them on the caller's
    /// arbiter (tests with paused time).
    pub threads: usize,
    /// An actor with no message for this long stops; the next message restarts it
    /// from storage.
    pub idle_timeout: Duration,
    /// A delivered load's actor stops this long after delivery.
    pub delivered_linger: Duration,
    /// With a shared store: how long a load's lease lasts past its last
    /// renewal ([`LEASE_TTL`]; shorter in tests).
    pub lease_ttl: Duration,
}

impl ActorSettings {
    /// How often a lease is renewed.
    fn lease_renewal(&self) -> Duration {
        self.lease_ttl / 3
    }
}

impl Default for ActorSettings {
    fn default() -> Self {
        ActorSettings {
            threads: std::thread::available_parallelism().map_or(1, |n| n.get()),
            idle_timeout: Duration::from_secs(300),
            delivered_linger: Duration::from_secs(30),
            lease_ttl: LEASE_TTL,
        }
    }
}

/// A registry entry: the actor's address, which start of it this is, and the
/// state it shares with callers (see `load_state`).
pub struct Resident {
    pub addr: Addr<LoadActor>,
    pub incarnation: u64,
    pub state: SharedState,
}

/// What every load actor shares.
pub struct ActorDeps {
    pub storage: Arc<dyn Storage>,
    pub notifier: Arc<Notifier>,
    pub clock: Clock,
    pub settings: ActorSettings,
    pub residents: Arc<SharedMap<LoadId, Resident>>,
    /// This instance's name as a lease owner: unique per process start.
    pub instance: Arc<str>,
    /// Held by an assignment from reading its carrier to writing the load.
    pub carriers: Arc<super::carrier_locks::CarrierLocks>,
}

pub struct LoadActor {
    id: LoadId,
    incarnation: u64,
    deps: Arc<ActorDeps>,
    state: SharedState,
    /// When the last lease renewal that succeeded was sent: the lease lives at
    /// least the lease's TTL from then, and this actor acts for the load no longer.
    lease_renewed_at: tokio::time::Instant,
}

impl LoadActor {
    pub fn new(id: LoadId, incarnation: u64, deps: Arc<ActorDeps>, state: SharedState) -> Self {
        LoadActor {
            id,
            incarnation,
            deps,
            state,
            lease_renewed_at: tokio::time::Instant::now(),
        }
    }

    /// This incarnation's name as the load's lease owner.
    fn lease_owner(&self) -> String {
        crate::storage::lease_owner(&self.deps.instance, self.incarnation)
    }

    /// Stops acting for the load at once (callers hear `leased_elsewhere`) and stops.
    fn give_up_load(&mut self, ctx: &mut Context<Self>) {
        self.state.lock().state = State::Failed(self.leased_elsewhere(None));
        self.stop_after(ctx, Duration::ZERO);
    }

    /// Stops once idle (or after `after`), re-arming while there is activity.
    fn stop_when_idle(&self, ctx: &mut Context<Self>, after: Duration) {
        ctx.run_later(after, |actor, ctx| {
            let timeout = actor.deps.settings.idle_timeout;
            let mut shared = actor.state.lock();
            let idle_for = shared.last_active.elapsed();
            if shared.in_flight == 0 && idle_for >= timeout {
                // Under the lock: nothing can be admitted between the check and this.
                shared.stopping = true;
                ctx.stop();
            } else {
                drop(shared);
                actor.stop_when_idle(
                    ctx,
                    timeout
                        .saturating_sub(idle_for)
                        .max(Duration::from_millis(10)),
                );
            }
        });
    }

    /// What callers hear when another instance (`holder`, if known) acts for the load.
    fn leased_elsewhere(&self, holder: Option<Arc<str>>) -> LoadError {
        Unavailable::LeasedElsewhere {
            load: self.id.clone(),
            holder,
        }
        .into()
    }

    /// Renews the load's lease every third of its TTL. If it is lost (another
    /// instance took it), the actor stops acting for the load at once and
    /// stops. If renewals fail or hang, it stops one renewal period before the
    /// lease could expire, so that two instances never act for one load.
    fn keep_lease(&self, ctx: &mut Context<Self>) {
        let (ttl, renewal) = (
            self.deps.settings.lease_ttl,
            self.deps.settings.lease_renewal(),
        );
        ctx.run_interval(renewal, move |actor, ctx| {
            let sent = tokio::time::Instant::now();
            if sent + renewal >= actor.lease_renewed_at + ttl {
                tracing::warn!(load = %actor.id, "the load's lease could not be renewed in time; this instance stops acting for it");
                return actor.give_up_load(ctx);
            }
            let storage = actor.deps.storage.clone();
            let (id, owner) = (actor.id.clone(), actor.lease_owner());
            ctx.spawn(
                async move { storage.lease_load(&id, &owner, ttl).await }
                    .into_actor(actor)
                    .map(move |renewed, actor, ctx| match renewed {
                        Ok(true) => actor.lease_renewed_at = actor.lease_renewed_at.max(sent),
                        Ok(false) => {
                            tracing::warn!(load = %actor.id, "another instance took the load's lease; this one stops acting for it");
                            actor.give_up_load(ctx);
                        }
                        // Not lost yet: the next tick decides whether it is too late.
                        Err(error) => {
                            tracing::warn!(load = %actor.id, error = %error_chain(&error), "could not renew the load's lease; retrying");
                        }
                    }),
            );
        });
    }

    /// Stops after `after` regardless of activity, once no write is in flight.
    fn stop_after(&self, ctx: &mut Context<Self>, after: Duration) {
        ctx.run_later(after, |actor, ctx| {
            let mut shared = actor.state.lock();
            if shared.in_flight == 0 {
                shared.stopping = true;
                ctx.stop();
            } else {
                drop(shared);
                actor.stop_after(ctx, Duration::from_millis(100));
            }
        });
    }
}

impl Actor for LoadActor {
    type Context = Context<Self>;

    fn started(&mut self, ctx: &mut Self::Context) {
        ctx.set_mailbox_capacity(MAILBOX_CAPACITY);
        let storage = self.deps.storage.clone();
        let id = self.id.clone();
        let owner = self.lease_owner();
        let ttl = self.deps.settings.lease_ttl;
        self.lease_renewed_at = tokio::time::Instant::now();
        // `wait`: no message is handled until the state is loaded.
        ctx.wait(
            async move {
                if !storage.lease_load(&id, &owner, ttl).await? {
                    // Where requests for the load go instead (`cluster::forward`).
                    let holder = storage.load_lease_holder(&id).await?;
                    return Ok(Err(holder));
                }
                // The load's writer now: a change an earlier writer committed
                // and did not follow up (list rows, events) is finished here.
                storage.finish_load_change(&id).await?;
                let Some(load) = storage.get_load(&id).await? else {
                    return Ok(Ok(None));
                };
                let recent = storage
                    .load_points(&id, PointRange::latest(RECENT_FIXES))
                    .await?;
                let last_sequence = storage.last_event_sequence(&id).await?;
                let stops = storage.load_stops(&id).await?.unwrap_or_default();
                Ok::<_, StorageError>(Ok(Some((load, recent, last_sequence, stops))))
            }
            .into_actor(self)
            .map(|loaded, actor, ctx| match loaded {
                Ok(Ok(Some((load, recent, last_sequence, stops)))) => {
                    if actor.deps.storage.needs_leases() {
                        actor.keep_lease(ctx);
                    }
                    // Delivered or cancelled: read for a while, then let go.
                    let finished = load.status.is_final();
                    if let Some(to) = stop_messages::unmade_move(&load, &stops) {
                        actor.finish_move(ctx, load.account_id.clone(), to);
                    }
                    actor.state.lock().state = State::Active(Tracked::from_load(
                        load,
                        &recent,
                        last_sequence + 1,
                        stops,
                    ));
                    if finished {
                        actor.stop_after(ctx, actor.deps.settings.delivered_linger);
                    } else {
                        actor.stop_when_idle(ctx, actor.deps.settings.idle_timeout);
                    }
                }
                Ok(Ok(None)) => {
                    actor.state.lock().state = State::Missing;
                    actor.stop_after(ctx, MISSING_LINGER);
                }
                Ok(Err(holder)) => {
                    let holder = holder
                        .as_deref()
                        .and_then(crate::storage::lease_owner_parts)
                        .map(|(instance, _)| Arc::from(instance));
                    actor.state.lock().state = State::Failed(actor.leased_elsewhere(holder));
                    // Meanwhile requests for the load go to the holder without
                    // asking the store again.
                    actor.stop_after(ctx, ELSEWHERE_LINGER);
                }
                Err(error) => {
                    tracing::error!(load = %actor.id, error = %error_chain(&error), "could not load the load's state");
                    actor.state.lock().state = State::Failed(error.into());
                    actor.stop_after(ctx, MISSING_LINGER);
                }
            }),
        );
    }

    fn stopped(&mut self, _: &mut Self::Context) {
        // Also when stopped from outside (its arbiter ending): callers must not
        // admit fixes into a state nobody will look after.
        let leased = {
            let mut shared = self.state.lock();
            shared.stopping = true;
            matches!(shared.state, State::Active(_))
        };
        if leased && self.deps.storage.needs_leases() {
            // Given up now rather than left to expire, so another instance can
            // act for the load at once. If this fails, the TTL ends it.
            let storage = self.deps.storage.clone();
            let (id, owner) = (self.id.clone(), self.lease_owner());
            actix::spawn(async move {
                if let Err(error) = storage.release_load(&id, &owner).await {
                    tracing::warn!(load = %id, error = %error_chain(&error), "could not release the load's lease; it expires on its own");
                }
            });
        }
        let incarnation = self.incarnation;
        self.deps
            .residents
            .remove_if(&self.id, |_, resident| resident.incarnation == incarnation);
    }
}

impl Handler<AdmitFixes> for LoadActor {
    type Result = Result<Admission, LoadError>;

    fn handle(&mut self, msg: AdmitFixes, _: &mut Self::Context) -> Self::Result {
        self.state
            .lock()
            .admit(&self.state, &msg.account, &msg.fixes, &msg.events)
    }
}

/// What a change is planned from: the next event sequence number, the
/// newest fix, and the stops the truck has arrived at.
struct Planned {
    next_sequence: u64,
    final_position: Option<GpsFix>,
    frozen: Vec<StopId>,
}

impl ActorDeps {
    fn writer(&self) -> LoadWriter<'_> {
        LoadWriter {
            storage: &*self.storage,
            clock: &self.clock,
            carriers: &self.carriers,
        }
    }
}

impl LoadActor {
    /// Runs a change of the load (its status, its fields) atomically on this
    /// actor: `run` gets what it is planned from ([`Planned`]), and nothing else runs here until its write is durable, so each change
    /// is planned against the result of the previous one. Meanwhile fixes are
    /// admitted only through the mailbox, behind the change.
    fn run_change<F, Fut>(
        &mut self,
        account: &AccountId,
        run: F,
    ) -> AtomicResponse<Self, Result<Load, LoadError>>
    where
        F: FnOnce(Planned) -> Fut,
        Fut: std::future::Future<Output = Result<Changed, LoadError>> + 'static,
    {
        let planned = {
            let mut shared = self.state.lock();
            shared.last_active = tokio::time::Instant::now();
            match shared.state.tracked(account) {
                Ok(tracked) => {
                    let planned = Planned {
                        next_sequence: tracked.next_sequence,
                        final_position: tracked.recent.front().map(HeldFix::fix),
                        frozen: tracked.frozen_stops(),
                    };
                    shared.changing = true;
                    Ok(planned)
                }
                Err(error) => Err(error),
            }
        };
        let planned = match planned {
            Ok(planned) => planned,
            Err(error) => return AtomicResponse::new(Box::pin(fut::ready(Err(error)))),
        };
        let notifier = self.deps.notifier.clone();
        AtomicResponse::new(Box::pin(
            run(planned)
                .into_actor(self)
                .map(move |changed, actor, ctx| {
                    let mut newly_final = false;
                    {
                        let mut shared = actor.state.lock();
                        shared.changing = false;
                        if let (Ok(changed), State::Active(tracked)) = (&changed, &mut shared.state)
                        {
                            newly_final =
                                changed.load.status.is_final() && !tracked.status().is_final();
                            tracked.follow(&changed.load);
                            tracked.next_sequence += changed.events.len() as u64;
                        }
                    }
                    if let Err(LoadError::Storage(error)) = &changed {
                        // The change may be stored though its write failed (a
                        // timeout after it landed): the load and the next event
                        // number held here may be behind. This actor stops; the
                        // next message starts one from storage.
                        tracing::warn!(load = %actor.id, error = %error_chain(error), "a change's write failed; the load's actor restarts from storage");
                        actor.state.lock().state = State::Failed(LoadError::Storage(error.clone()));
                        actor.stop_after(ctx, Duration::ZERO);
                    }
                    let mut changed = changed;
                    if let Ok(changed) = &mut changed
                        && !changed.events.is_empty()
                    {
                        notifier.events_committed(std::mem::take(&mut changed.events));
                    }
                    if newly_final {
                        actor.stop_after(ctx, actor.deps.settings.delivered_linger);
                    }
                    changed.map(|c| c.load)
                }),
        ))
    }
}

impl Handler<ChangeStatus> for LoadActor {
    type Result = AtomicResponse<Self, Result<Load, LoadError>>;

    fn handle(&mut self, msg: ChangeStatus, _: &mut Self::Context) -> Self::Result {
        let deps = self.deps.clone();
        let id = self.id.clone();
        let account = msg.account.clone();
        self.run_change(&account, move |planned| async move {
            apply_status_change(
                &deps.writer(),
                &id,
                &msg.account,
                &msg.change,
                planned.next_sequence,
                planned.final_position,
            )
            .await
        })
    }
}

impl Handler<EditLoad> for LoadActor {
    type Result = AtomicResponse<Self, Result<Load, LoadError>>;

    fn handle(&mut self, msg: EditLoad, _: &mut Self::Context) -> Self::Result {
        let deps = self.deps.clone();
        let id = self.id.clone();
        let account = msg.account.clone();
        self.run_change(&account, move |planned| async move {
            apply_edit(
                &deps.writer(),
                &id,
                &msg.account,
                &msg.edit,
                &planned.frozen,
                planned.next_sequence,
            )
            .await
        })
    }
}

impl Handler<ReadTracking> for LoadActor {
    type Result = Result<TrackingState, LoadError>;

    fn handle(&mut self, msg: ReadTracking, _: &mut Self::Context) -> Self::Result {
        let mut shared = self.state.lock();
        shared.last_active = tokio::time::Instant::now();
        shared.state.read(&msg.account)
    }
}

/// This process's name as a lease owner: the host name and a random tag, so
/// that a restarted instance does not mistake its predecessor's leases for its own.
pub fn instance_name() -> String {
    let host = crate::telemetry::host_name().unwrap_or_else(|| "freight".to_owned());
    let tag = crate::domain::ids::new_suffix();
    format!("{host}/{}", &tag[tag.len() - 10..])
}

mod stop_messages;
pub use stop_messages::{DetentionDue, GeofenceMove};

#[cfg(test)]
mod tests;
