//! One actor per active load: the only writer of its load, holding its status and
//! latest positions in memory so GPS ingest and tracking reads need no storage
//! round trip beyond the group commit.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use actix::prelude::*;
use dashmap::DashMap;
use tokio::time::Instant;

use super::LoadError;
use super::status_change::apply_status_change;
use crate::clock::Clock;
use crate::domain::ids::{AccountId, LoadId};
use crate::domain::load::{Load, LoadStatus, StatusChange};
use crate::domain::tracking::{Appended, GpsFix, TrackingState};
use crate::geo;
use crate::storage::{PointRange, Storage, StorageError};
use crate::telemetry::error_chain;
use crate::webhooks::notifier::Notifier;

/// Positions kept in memory per load, newest first (the rest is in storage).
pub const RECENT_FIXES: usize = 10;
/// A mailbox this deep makes many connections posting to one load wait rather than fail.
const MAILBOX_CAPACITY: usize = 1024;
/// An actor for a load that does not exist answers "not found" this long, then stops.
const MISSING_LINGER: Duration = Duration::from_secs(1);

/// Admits GPS fixes for the load: the actor checks that the load exists, belongs to
/// the account and takes fixes, and counts a write in flight (it will not stop
/// until the matching [`FixesStored`]). Answers at once with the actor's address,
/// so the outcome goes back to this very actor.
#[derive(Message, Clone)]
#[rtype(result = "Result<Admission, LoadError>")]
pub struct AdmitFixes {
    pub account: AccountId,
    /// How many fixes, for numbering their events.
    pub fixes: u32,
    /// Whether `tracking.updated` events are wanted (someone subscribes).
    pub events: bool,
}

/// An admission: where to report back, the load's status, and the first of the
/// event sequence numbers reserved for the fixes (when events are wanted).
#[derive(Debug)]
pub struct Admission {
    pub actor: Addr<LoadActor>,
    pub status: LoadStatus,
    pub first_sequence: Option<u64>,
}

/// The fate of admitted fixes once their group commit is durable (`outcomes`,
/// one per fix) or has failed (`None`): stored fixes among the latest become the
/// load's latest positions. Always sent once per admission. With `snapshot`,
/// answered with the load's tracking state once they are applied (for the live
/// streams, which show the ETA); else with `None`.
#[derive(Message)]
#[rtype(result = "Option<TrackingState>")]
pub struct FixesStored {
    pub fixes: Vec<GpsFix>,
    pub outcomes: Option<Vec<Appended>>,
    pub snapshot: bool,
}

/// Changes the load's status (and carrier), applied one at a time.
#[derive(Message, Clone)]
#[rtype(result = "Result<Load, LoadError>")]
pub struct ChangeStatus {
    pub account: AccountId,
    pub change: StatusChange,
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
}

impl Default for ActorSettings {
    fn default() -> Self {
        ActorSettings {
            threads: std::thread::available_parallelism().map_or(1, |n| n.get()),
            idle_timeout: Duration::from_secs(300),
            delivered_linger: Duration::from_secs(30),
        }
    }
}

/// A registry entry: the actor's address, which start of it this is, and the
/// state it owns (which readers may look at without a message).
pub struct Resident {
    pub addr: Addr<LoadActor>,
    pub incarnation: u64,
    pub state: SharedState,
}

/// The actor's state. Only the actor writes it; `GET …/tracking` reads it under
/// the lock instead of sending a message, which would cost two thread hops for a
/// read that takes nanoseconds.
pub type SharedState = Arc<Mutex<State>>;

/// What every load actor shares.
pub struct ActorDeps {
    pub storage: Arc<dyn Storage>,
    pub notifier: Arc<Notifier>,
    pub clock: Clock,
    pub settings: ActorSettings,
    pub residents: Arc<DashMap<LoadId, Resident>>,
}

/// A GPS fix as held in memory: 40 bytes.
#[derive(Debug, Clone, Copy, PartialEq)]
struct HeldFix {
    micros: i64,
    lat: f64,
    lng: f64,
    speed: f64,
    heading: f64,
}

impl HeldFix {
    fn new(fix: &GpsFix) -> Self {
        HeldFix {
            micros: fix.timestamp.timestamp_micros(),
            lat: fix.lat,
            lng: fix.lng,
            speed: fix.speed_mph.unwrap_or(f64::NAN),
            heading: fix.heading_deg.unwrap_or(f64::NAN),
        }
    }

    fn fix(&self) -> GpsFix {
        let optional = |v: f64| (!v.is_nan()).then_some(v);
        GpsFix {
            timestamp: chrono::DateTime::from_timestamp_micros(self.micros).unwrap_or_default(),
            lat: self.lat,
            lng: self.lng,
            speed_mph: optional(self.speed),
            heading_deg: optional(self.heading),
        }
    }
}

pub struct Tracked {
    account: AccountId,
    status: LoadStatus,
    destination: Option<(f64, f64)>,
    /// Newest first, at most `RECENT_FIXES`.
    recent: VecDeque<HeldFix>,
    /// The sequence number the load's next event gets.
    next_sequence: u64,
}

impl Tracked {
    fn snapshot(&self) -> TrackingState {
        TrackingState {
            status: self.status,
            recent: self.recent.iter().map(HeldFix::fix).collect(),
            destination: self.destination,
        }
    }

    /// Keeps a newly stored fix if it is among the latest; an older fix stays only
    /// in storage and does not move the latest position.
    fn remember(&mut self, fix: &GpsFix) {
        let held = HeldFix::new(fix);
        let position = self.recent.partition_point(|f| f.micros > held.micros);
        if self
            .recent
            .get(position)
            .is_some_and(|f| f.micros == held.micros)
        {
            return;
        }
        if position < RECENT_FIXES {
            self.recent.insert(position, held);
            self.recent.truncate(RECENT_FIXES);
        }
    }
}

pub enum State {
    /// Being read from storage; readers must ask the actor (which answers once loaded).
    Loading,
    Missing,
    Failed(StorageError),
    Active(Tracked),
}

impl State {
    /// The tracked load, if it exists and belongs to `account`.
    fn tracked(&mut self, account: &AccountId) -> Result<&mut Tracked, LoadError> {
        match self {
            State::Active(tracked) if &tracked.account == account => Ok(tracked),
            State::Active(_) | State::Missing | State::Loading => Err(LoadError::NotFound),
            State::Failed(error) => Err(LoadError::Storage(error.clone())),
        }
    }

    /// What a reader may know, or `None` while loading.
    pub fn read(&mut self, account: &AccountId) -> Option<Result<TrackingState, LoadError>> {
        if matches!(self, State::Loading) {
            return None;
        }
        Some(self.tracked(account).map(|tracked| tracked.snapshot()))
    }
}

pub struct LoadActor {
    id: LoadId,
    incarnation: u64,
    deps: Arc<ActorDeps>,
    state: SharedState,
    last_active: Instant,
    /// GPS batches submitted and not yet durable: the actor does not stop while any are.
    in_flight: u32,
}

impl LoadActor {
    pub fn new(id: LoadId, incarnation: u64, deps: Arc<ActorDeps>, state: SharedState) -> Self {
        LoadActor {
            id,
            incarnation,
            deps,
            state,
            last_active: Instant::now(),
            in_flight: 0,
        }
    }

    fn state(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Stops once idle (or after `after`), re-arming while there is activity.
    fn stop_when_idle(&self, ctx: &mut Context<Self>, after: Duration) {
        ctx.run_later(after, |actor, ctx| {
            let idle_for = actor.last_active.elapsed();
            let timeout = actor.deps.settings.idle_timeout;
            if actor.in_flight == 0 && idle_for >= timeout {
                ctx.stop();
            } else {
                actor.stop_when_idle(
                    ctx,
                    timeout
                        .saturating_sub(idle_for)
                        .max(Duration::from_millis(10)),
                );
            }
        });
    }

    /// Stops after `after` regardless of activity, once no write is in flight.
    fn stop_after(&self, ctx: &mut Context<Self>, after: Duration) {
        ctx.run_later(after, |actor, ctx| {
            if actor.in_flight == 0 {
                ctx.stop();
            } else {
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
        // `wait`: no message is handled until the state is loaded.
        ctx.wait(
            async move {
                let Some(load) = storage.get_load(&id).await? else {
                    return Ok(None);
                };
                let recent = storage
                    .load_points(&id, PointRange::latest(RECENT_FIXES))
                    .await?;
                let last_sequence = storage.last_event_sequence(&id).await?;
                Ok::<_, StorageError>(Some((load, recent, last_sequence)))
            }
            .into_actor(self)
            .map(|loaded, actor, ctx| match loaded {
                Ok(Some((load, recent, last_sequence))) => {
                    let destination =
                        geo::zip_centroid(&load.destination.zip).map(|p| (p.lat, p.lng));
                    let delivered = load.status == LoadStatus::Delivered;
                    *actor.state() = State::Active(Tracked {
                        account: load.account_id,
                        status: load.status,
                        destination,
                        recent: recent.iter().map(HeldFix::new).collect(),
                        next_sequence: last_sequence + 1,
                    });
                    if delivered {
                        actor.stop_after(ctx, actor.deps.settings.delivered_linger);
                    } else {
                        actor.stop_when_idle(ctx, actor.deps.settings.idle_timeout);
                    }
                }
                Ok(None) => {
                    *actor.state() = State::Missing;
                    actor.stop_after(ctx, MISSING_LINGER);
                }
                Err(error) => {
                    tracing::error!(load = %actor.id, error = %error_chain(&error), "could not load the load's state");
                    *actor.state() = State::Failed(error);
                    actor.stop_after(ctx, MISSING_LINGER);
                }
            }),
        );
    }

    fn stopped(&mut self, _: &mut Self::Context) {
        let incarnation = self.incarnation;
        self.deps
            .residents
            .remove_if(&self.id, |_, resident| resident.incarnation == incarnation);
    }
}

impl Handler<AdmitFixes> for LoadActor {
    type Result = Result<Admission, LoadError>;

    fn handle(&mut self, msg: AdmitFixes, ctx: &mut Self::Context) -> Self::Result {
        self.last_active = Instant::now();
        let mut state = self.state();
        let tracked = state.tracked(&msg.account)?;
        let status = tracked.status;
        if !matches!(status, LoadStatus::Assigned | LoadStatus::InTransit) {
            return Err(LoadError::NotTrackable(status));
        }
        let first_sequence = msg.events.then(|| {
            let first = tracked.next_sequence;
            tracked.next_sequence += u64::from(msg.fixes);
            first
        });
        drop(state);
        // Balanced by the `FixesStored` that always follows an admission.
        self.in_flight += 1;
        Ok(Admission {
            actor: ctx.address(),
            status,
            first_sequence,
        })
    }
}

impl Handler<FixesStored> for LoadActor {
    type Result = Option<TrackingState>;

    fn handle(&mut self, msg: FixesStored, _: &mut Self::Context) -> Self::Result {
        self.in_flight = self.in_flight.saturating_sub(1);
        self.last_active = Instant::now();
        let outcomes = msg.outcomes?;
        let mut state = self.state();
        let State::Active(tracked) = &mut *state else {
            return None;
        };
        for (fix, outcome) in msg.fixes.iter().zip(&outcomes) {
            if *outcome == Appended::Stored {
                tracked.remember(fix);
            }
        }
        msg.snapshot.then(|| tracked.snapshot())
    }
}

impl Handler<ChangeStatus> for LoadActor {
    type Result = AtomicResponse<Self, Result<Load, LoadError>>;

    fn handle(&mut self, msg: ChangeStatus, _: &mut Self::Context) -> Self::Result {
        self.last_active = Instant::now();
        let (next_sequence, final_position) = match self.state().tracked(&msg.account) {
            Ok(tracked) => (
                tracked.next_sequence,
                tracked.recent.front().map(HeldFix::fix),
            ),
            Err(error) => return AtomicResponse::new(Box::pin(fut::ready(Err(error)))),
        };
        let notifier = self.deps.notifier.clone();
        let storage = self.deps.storage.clone();
        let clock = self.deps.clock.clone();
        let id = self.id.clone();
        // Atomic: nothing else runs on this actor until the change is durable, so
        // each change is planned against the result of the previous one.
        AtomicResponse::new(Box::pin(
            async move {
                apply_status_change(
                    &*storage,
                    &clock,
                    &id,
                    &msg.account,
                    &msg.change,
                    next_sequence,
                    final_position,
                )
                .await
            }
            .into_actor(self)
            .map(move |changed, actor, ctx| {
                let mut newly_delivered = false;
                if let (Ok(changed), State::Active(tracked)) = (&changed, &mut *actor.state()) {
                    newly_delivered = changed.load.status == LoadStatus::Delivered
                        && tracked.status != LoadStatus::Delivered;
                    tracked.status = changed.load.status;
                    tracked.next_sequence += changed.events.len() as u64;
                }
                let mut changed = changed;
                if let Ok(changed) = &mut changed
                    && !changed.events.is_empty()
                {
                    notifier.events_committed(std::mem::take(&mut changed.events));
                }
                if newly_delivered {
                    actor.stop_after(ctx, actor.deps.settings.delivered_linger);
                }
                changed.map(|c| c.load)
            }),
        ))
    }
}

impl Handler<ReadTracking> for LoadActor {
    type Result = Result<TrackingState, LoadError>;

    fn handle(&mut self, msg: ReadTracking, _: &mut Self::Context) -> Self::Result {
        self.last_active = Instant::now();
        self.state()
            .read(&msg.account)
            .unwrap_or(Err(LoadError::NotFound))
    }
}
