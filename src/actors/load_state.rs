//! What a load's actor holds in memory, behind a lock it shares with the HTTP
//! workers: GPS ingest admits fixes and records their outcome, and
//! `GET …/tracking` reads, under that lock instead of by a message. A message
//! costs two thread hops (worker to the actor's arbiter and back) for work that
//! takes nanoseconds; on the ingest path those hops were most of a fix's cost.
//!
//! Per-load order and the actor's promises still hold, because the lock admits
//! nothing the actor would not admit itself:
//! - while the actor is loading its state, applying a status change, or
//!   stopping, callers are told to send the message instead, and it waits in the
//!   mailbox behind whatever the actor is doing;
//! - every admission counts a write in flight, and the actor does not stop while
//!   any is, so each admitted fix's outcome reaches a live actor's state.

use std::collections::VecDeque;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};

use bytes::Bytes;
use tokio::time::Instant;

use super::LoadError;
use crate::domain::hos::DriverClock;
use crate::domain::ids::AccountId;
use crate::domain::ids::StopId;
use crate::domain::load::{Load, LoadStatus};
use crate::domain::location::UsState;
use crate::domain::speed_history::{self, DeliveredSpeed};
use crate::domain::stop_etas::Speed;
use crate::domain::stops::{StopKey, StopRef, StopWatch, StopsProgress};
use crate::domain::tracking::{Appended, GpsFix, TrackingState};

/// Positions kept in memory per load, newest first (the rest is in storage).
pub const RECENT_FIXES: usize = 10;

/// Memory all loads' kept views may take together (a full view is about 1.6 KB,
/// so some 160,000 loads' views). Beyond it a read renders its view and does not
/// keep it: a million polled loads must not cost 1.6 GB of views.
const VIEW_BUDGET_BYTES: usize = 256 << 20;
/// Bytes of views kept now, across all loads.
static KEPT_VIEW_BYTES: AtomicUsize = AtomicUsize::new(0);

/// The actor's state and the bookkeeping that lets callers act on it directly.
pub struct Shared {
    pub(super) state: State,
    /// Admitted fixes whose outcome is not yet recorded: the actor does not stop
    /// while any are.
    pub(super) in_flight: u32,
    /// Last time anything was asked of the load (the idle timer's reference).
    pub(super) last_active: Instant,
    /// A status change is being made durable; fixes wait for it in the mailbox,
    /// so that each is admitted against the status it will be stored under.
    pub(super) changing: bool,
    /// The actor has decided to stop: messages go to its successor.
    pub(super) stopping: bool,
}

/// The state a load's actor shares (see the module doc).
#[derive(Clone)]
pub struct SharedState(Arc<Mutex<Shared>>);

impl SharedState {
    pub fn loading() -> Self {
        SharedState(Arc::new(Mutex::new(Shared {
            state: State::Loading,
            in_flight: 0,
            last_active: Instant::now(),
            changing: false,
            stopping: false,
        })))
    }

    /// The lock; every change under it leaves the state consistent, so a lock
    /// poisoned by a panic is taken as it is.
    pub(super) fn lock(&self) -> MutexGuard<'_, Shared> {
        self.0.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Admits fixes without a message, or `None` when the actor must decide
    /// (loading, mid-change, stopping): then send it [`super::load_actor::AdmitFixes`].
    pub fn try_admit(
        &self,
        account: &AccountId,
        fixes: &[GpsFix],
        events: &Wanted,
    ) -> Option<Result<Admission, LoadError>> {
        let mut shared = self.lock();
        if shared.changing || shared.stopping || matches!(shared.state, State::Loading) {
            return None;
        }
        Some(shared.admit(self, account, fixes, events))
    }

    /// What a reader may know, or `None` while the actor loads its state.
    pub fn try_read(&self, account: &AccountId) -> Option<Result<TrackingState, LoadError>> {
        let mut shared = self.lock();
        if matches!(shared.state, State::Loading) {
            return None;
        }
        shared.last_active = Instant::now();
        Some(shared.state.tracked(account).map(|t| t.snapshot()))
    }

    /// The load's rendered live view if it is current, else the state to render
    /// it from (then hand the render to [`Self::keep_view`]). Dashboards poll
    /// loads far more often than most loads move, so a view is rendered once per
    /// change rather than once per read. `None` while the actor loads its state.
    pub fn try_view(&self, account: &AccountId) -> Option<Result<View, LoadError>> {
        let mut shared = self.lock();
        if matches!(shared.state, State::Loading) {
            return None;
        }
        shared.last_active = Instant::now();
        Some(
            shared
                .state
                .tracked(account)
                .map(|tracked| match &tracked.view {
                    Some(view) => View::Current(view.clone()),
                    None => View::Stale {
                        state: tracked.snapshot(),
                        version: tracked.version,
                    },
                }),
        )
    }

    /// Keeps `view`, rendered from the state of `version`, unless the state has
    /// changed since (rendering happens outside the lock).
    pub fn keep_view(&self, version: u64, view: Bytes) {
        if let State::Active(tracked) = &mut self.lock().state
            && tracked.version == version
        {
            tracked.keep_view(view);
        }
    }

    /// Records what became of admitted fixes: `outcomes` (one per fix) once their
    /// group commit is durable, `None` if it failed. Stored fixes among the latest
    /// become the load's latest positions. Called exactly once per admission.
    /// With `snapshot`, answers the tracking state once they are applied (for the
    /// live streams, which show the ETA). The load's last activity stays its
    /// admission (an actor never stops with a write in flight), so this runs
    /// without a clock on the committer's threads.
    pub fn record_stored(
        &self,
        fixes: &[GpsFix],
        outcomes: Option<&[Appended]>,
        snapshot: bool,
        stops_undo: Option<StopsUndo>,
    ) -> Option<TrackingState> {
        let mut shared = self.lock();
        shared.in_flight = shared.in_flight.saturating_sub(1);
        let State::Active(tracked) = &mut shared.state else {
            return None;
        };
        let Some(outcomes) = outcomes else {
            // Not stored: the stops must not stay advanced by fixes that are
            // not there (the client will send them again). Undone unless a
            // later admission built on them, which then stands.
            if let Some(undo) = stops_undo {
                if tracked.stops_version == undo.version {
                    tracked.stops = undo.before;
                    tracked.driver = undo.driver;
                    tracked.stops_version += 1;
                } else {
                    tracing::warn!("a failed commit's stop milestones were built on; they stand");
                }
            }
            return None;
        };
        for (fix, outcome) in fixes.iter().zip(outcomes) {
            if *outcome == Appended::Stored {
                tracked.remember(fix);
            }
        }
        snapshot.then(|| tracked.snapshot())
    }
}

impl Shared {
    /// Admits `fixes` fixes for `account`, reserving event sequence numbers for
    /// them when `events`, and counts a write in flight.
    pub(super) fn admit(
        &mut self,
        handle: &SharedState,
        account: &AccountId,
        fixes: &[GpsFix],
        events: &Wanted,
    ) -> Result<Admission, LoadError> {
        self.last_active = Instant::now();
        let tracked = self.state.tracked(account)?;
        tracked.plan_speed(events);
        let status = tracked.status();
        if !matches!(status, LoadStatus::Assigned | LoadStatus::InTransit) {
            return Err(LoadError::NotTrackable(status));
        }
        let first_sequence = events.tracking.then(|| {
            let first = tracked.next_sequence;
            tracked.next_sequence += fixes.len() as u64;
            first
        });
        let (stops, stops_undo) = tracked.watch_stops(fixes, events.eta);
        // Balanced by the `record_stored` that always follows an admission.
        self.in_flight += 1;
        Ok(Admission {
            state: handle.clone(),
            status,
            first_sequence,
            stops,
            stops_undo,
        })
    }
}

pub struct Tracked {
    pub(super) account: AccountId,
    status: LoadStatus,
    /// The stops, folded from admitted fixes.
    stops: StopWatch,
    /// Bumped by every admission that changes `stops`.
    stops_version: u64,
    /// The driver's hours-of-service clock, folded from every admitted fix
    /// (stored with the stops' progress when that is written).
    driver: DriverClock,
    team: bool,
    /// Origin and destination states: the lane its account's speeds are kept by.
    lane: (UsState, UsState),
    /// The speed the ETA plans with: the account's, as of its latest fixes.
    pub(super) speed: Speed,
    /// What `speed` was learned from, so that it is learned again only when
    /// the account's speeds or setting change.
    /// `None`: to be learned at the next admission.
    speed_from: Option<(Speed, Option<Arc<Vec<DeliveredSpeed>>>)>,
    /// The time (µs) of the newest fix whose ETA was looked at.
    eta_checked: i64,
    /// Stops whose `load.detention_started` this actor sent (a clock read
    /// again from storage while its end was being written must not send it twice).
    detention_sent: Vec<StopId>,
    /// Newest first, at most `RECENT_FIXES`.
    pub(super) recent: VecDeque<HeldFix>,
    /// The sequence number the load's next event gets.
    pub(super) next_sequence: u64,
    /// Bumped by every change a reader can see (status, latest positions).
    version: u64,
    /// The rendered live view of this version, once someone asked for it.
    view: Option<Bytes>,
}

impl Tracked {
    /// The state of `load` as stored: its newest fixes (newest first), the
    /// sequence number of its next event and its stop progress.
    pub(super) fn from_load(
        load: Load,
        recent: &[GpsFix],
        next_sequence: u64,
        progress: StopsProgress,
    ) -> Self {
        // Fixes no newer than the newest stored one were folded into the
        // stored progress already, or were late.
        let stops = StopWatch::new(
            &load.stops(),
            load.free_minutes(),
            &progress,
            recent.first(),
        );
        // The stored clock is as of the last stop change: the newer of the
        // load's latest fixes carry it on (the gap between reads as a sparse
        // stretch).
        let mut driver = progress.driver.unwrap_or_default();
        for fix in recent.iter().rev() {
            driver.observe(fix);
        }
        Tracked {
            stops,
            stops_version: 0,
            driver,
            team: load.team,
            lane: (load.origin.state, load.destination.state),
            speed: Speed::default(),
            speed_from: None,
            detention_sent: Vec::new(),
            eta_checked: i64::MIN,
            recent: recent.iter().map(HeldFix::new).collect(),
            next_sequence,
            version: 0,
            view: None,
            status: load.status,
            account: load.account_id,
        }
    }

    pub(super) fn status(&self) -> LoadStatus {
        self.status
    }

    /// The speed the load's ETAs plan with, from the account's setting and
    /// its delivered loads' speeds on the load's lane.
    fn plan_speed(&mut self, wanted: &Wanted) {
        let same = self.speed_from.as_ref().is_some_and(|(setting, from)| {
            *setting == wanted.speed
                && match (from, &wanted.delivered) {
                    (Some(held), Some(given)) => Arc::ptr_eq(held, given),
                    (None, None) => true,
                    _ => false,
                }
        });
        if same {
            return;
        }
        self.speed = match &wanted.delivered {
            Some(delivered) => speed_history::learned(delivered, wanted.speed, self.lane),
            None => wanted.speed,
        };
        self.speed_from = Some((wanted.speed, wanted.delivered.clone()));
    }

    /// The stops the truck has arrived at (an edit may not change them).
    pub(super) fn frozen_stops(&self) -> Vec<StopId> {
        self.stops.frozen()
    }

    /// Folds admitted fixes into the stops: what each changed (with sequence
    /// numbers reserved for its milestones' events), and how to undo it.
    fn watch_stops(
        &mut self,
        fixes: &[GpsFix],
        eta_wanted: bool,
    ) -> (Vec<StopsAdmitted>, Option<StopsUndo>) {
        // A copy of a few hundred bytes: cheaper than deciding whether it is needed.
        let before = (self.stops.clone(), self.driver);
        let mut changes = Vec::new();
        for (index, fix) in fixes.iter().enumerate() {
            let since_break = folded_since_break(&self.driver);
            self.driver.observe(fix);
            let (milestones, progress_changed) = self.stops.observe(fix);
            // A break or rest the fix ended is stored too, so a restarted
            // actor's clock knows of it.
            let rested = folded_since_break(&self.driver) < since_break;
            if milestones.is_empty() && !progress_changed && !rested {
                continue;
            }
            self.stops.set_driver(self.driver);
            let first_sequence = self.next_sequence;
            self.next_sequence += milestones.len() as u64;
            changes.push(StopsAdmitted {
                index,
                timer: self.stops.timer_after(&milestones),
                eta_changed: Vec::new(),
                milestones,
                progress: self.stops.progress().clone(),
                first_sequence,
            });
        }
        if eta_wanted {
            self.watch_eta(fixes, &mut changes);
        }
        let undo = (!changes.is_empty()).then(|| {
            self.stops_version += 1;
            StopsUndo {
                before: before.0,
                driver: before.1,
                version: self.stops_version,
            }
        });
        (changes, undo)
    }

    /// A stop's detention clock came due: the event's sequence number, the
    /// stop and its free minutes when the truck is still there (and it was
    /// not sent yet).
    pub(super) fn start_detention(&mut self, stop: &StopKey) -> Option<(u64, StopRef, u32)> {
        let index = self.stops.index_of(stop)?;
        let (at, progress) = self.stops.stops().nth(index)?;
        // A delivered or cancelled load's truck is nobody's to wait for.
        if self.status.is_final() || !progress.at_stop() || self.detention_sent.contains(&at.id) {
            return None;
        }
        let at = at.clone();
        self.detention_sent.push(at.id.clone());
        let sequence = self.next_sequence;
        self.next_sequence += 1;
        Some((sequence, at, self.stops.free_minutes(index)))
    }

    /// The detention event could not be written: it may be sent again.
    pub(super) fn detention_not_sent(&mut self, stop: &StopId) {
        self.detention_sent.retain(|s| s != stop);
    }

    /// Follows the load as a change left it: its status, and the plan its
    /// fixes are judged by (stops, appointments).
    pub(super) fn follow(&mut self, load: &Load) {
        self.status = load.status;
        self.team = load.team;
        self.lane = (load.origin.state, load.destination.state);
        // Learned again on the next admission, for the lane as it is now.
        self.speed_from = None;
        self.stops.replan(&load.stops(), load.free_minutes());
        self.changed();
    }

    fn changed(&mut self) {
        self.version += 1;
        self.drop_view();
    }

    /// Keeps a rendered view while the budget of all loads' views allows.
    fn keep_view(&mut self, view: Bytes) {
        self.drop_view();
        let kept = KEPT_VIEW_BYTES.fetch_add(view.len(), Ordering::Relaxed);
        if kept + view.len() <= VIEW_BUDGET_BYTES {
            self.view = Some(view);
        } else {
            KEPT_VIEW_BYTES.fetch_sub(view.len(), Ordering::Relaxed);
        }
    }

    fn drop_view(&mut self) {
        if let Some(view) = self.view.take() {
            KEPT_VIEW_BYTES.fetch_sub(view.len(), Ordering::Relaxed);
        }
    }

    fn snapshot(&self) -> TrackingState {
        TrackingState {
            status: self.status,
            recent: self.recent.iter().map(HeldFix::fix).collect(),
            route: self.stops.route(self.status == LoadStatus::InTransit),
            driver: Some(self.driver),
            team: self.team,
            speed: self.speed,
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
            self.changed();
        }
    }
}

/// Driving since the last break as of the newest fix folded.
fn folded_since_break(driver: &DriverClock) -> chrono::Duration {
    driver.last_fix_at().map_or(chrono::Duration::zero(), |at| {
        driver.shift_at(at).since_break
    })
}

impl Drop for Tracked {
    fn drop(&mut self) {
        self.drop_view();
    }
}

// One per actor, kept in place inside its `Arc<Mutex<_>>`: the small
// variants' wasted bytes cost less than a box's indirection on every fix.
#[allow(clippy::large_enum_variant)]
pub enum State {
    /// Being read from storage; callers must ask the actor (which answers once loaded).
    Loading,
    Missing,
    /// Could not be loaded, or another instance acts for it: every caller hears why.
    Failed(LoadError),
    Active(Tracked),
}

impl State {
    /// The tracked load, if it exists and belongs to `account`.
    pub(super) fn tracked(&mut self, account: &AccountId) -> Result<&mut Tracked, LoadError> {
        match self {
            State::Active(tracked) if &tracked.account == account => Ok(tracked),
            State::Active(_) | State::Missing | State::Loading => Err(LoadError::NotFound),
            State::Failed(error) => Err(error.clone()),
        }
    }

    /// What a reader may know (not found while loading: the actor answers a
    /// reader only once loaded).
    pub(super) fn read(&mut self, account: &AccountId) -> Result<TrackingState, LoadError> {
        self.tracked(account).map(|tracked| tracked.snapshot())
    }
}

mod admission;
mod eta_watch;
mod held_fix;
pub use admission::{Admission, StopsAdmitted, StopsUndo, View, Wanted};
pub use eta_watch::stored_state;
pub(super) use held_fix::HeldFix;

#[cfg(test)]
mod tests;
