//! The write path of GPS fixes: admitted by their loads' actors, committed in
//! one group commit, reported back to the actors and published to the live
//! streams before anyone is answered.
//!
//! Once its fixes are admitted, a request hands everything that must follow
//! to the group committer (a `Completion`): the actors hear what became of
//! their fixes even if the client goes away, and that work runs on the
//! committer's threads rather than the HTTP worker's.

use std::sync::Arc;

use futures_util::stream::{self, StreamExt};
use tokio::sync::oneshot;

use super::count_points;
use crate::actors::LoadError;
use crate::actors::load_actor::AdmitFixes;
use crate::actors::load_state::{Admission, SharedState, StopsUndo, Wanted};
use crate::actors::registry::LoadRegistry;
use crate::clock::Clock;
use crate::domain::account::{Account, StopSettings};
use crate::domain::event::{Event, EventType};
use crate::domain::ids::{AccountId, LoadId};
use crate::domain::load::LoadStatus;
use crate::domain::stops::{Milestone, StopTimer};
use crate::domain::tracking::{Appended, GpsFix, StopsChange, TrackingPoint, TrackingState};
use crate::services::detention::DetentionClock;
use crate::services::eta_speeds::EtaSpeeds;
use crate::services::live::{LiveHub, TRACKING_EVENT, Update};
use crate::services::tracking::group_commit::{Completion, GroupCommitter};
use crate::shared_map::FastHashMap;
use crate::unavailable::Unavailable;
use crate::views::tracking::{PointView, TrackingUpdate, eta};
use crate::webhooks::directory::Directory;
use crate::webhooks::notifier::Notifier;
use crate::webhooks::payloads;

mod stop_events;
use stop_events::{MilestonesAt, add_stops};

/// Loads admitted at once by one request: a batch spread over many loads must not
/// start (and read from storage) a thousand actors at the same moment.
const MAX_CONCURRENT_ADMISSIONS: usize = 64;

/// What the detached write needs.
#[derive(Clone)]
pub(super) struct Writer {
    pub registry: Arc<LoadRegistry>,
    pub committer: GroupCommitter,
    pub directory: Arc<Directory>,
    pub notifier: Arc<Notifier>,
    pub live: LiveHub,
    pub clock: Clock,
    pub detention: Arc<DetentionClock>,
    /// The accounts' delivered loads' speeds, for ETAs.
    pub speeds: Arc<EtaSpeeds>,
}

/// Each fix's outcome, in input order; `None` until decided.
type Outcomes = Vec<Option<Result<Appended, LoadError>>>;

/// One load's fixes, with their places in the request.
struct LoadFixes {
    load: LoadId,
    indexes: Vec<usize>,
    fixes: Vec<GpsFix>,
}

/// Fixes its actor admitted, waiting to hear how their commit ended.
struct Admitted {
    state: SharedState,
    load: LoadId,
    status: LoadStatus,
    indexes: Vec<usize>,
    fixes: Vec<GpsFix>,
    stops_undo: Option<StopsUndo>,
}

/// One load's stored fixes, for the live streams.
struct Stored {
    load: LoadId,
    status: LoadStatus,
    fixes: Vec<GpsFix>,
}

/// Each fix's outcome, in input order.
type Answer = Vec<Result<Appended, LoadError>>;

pub(super) async fn record(
    writer: &Writer,
    account: &Account,
    fixes: Vec<(LoadId, GpsFix)>,
) -> Answer {
    let settings = account.stop_settings;
    let account = &account.id;
    // `tracking.updated` events are written only while someone subscribes to them:
    // they would double the GPS write volume for nobody. ETA changes likewise.
    let events = Wanted {
        tracking: writer.directory.wants(account, EventType::TrackingUpdated),
        eta: writer.directory.wants(account, EventType::LoadEtaChanged),
        speed: settings.speed(),
        delivered: writer.speeds.of(account),
    };
    let count = fixes.len();
    let (decided, deferred) = admit_now(&writer.registry, account, by_load(fixes), &events);
    let answered = if deferred.is_empty() {
        // Every actor decided under its lock (the usual case): nothing is
        // awaited between admitting and handing over to the committer.
        submit(writer, account.clone(), settings, count, decided, events).await
    } else {
        // The loads admitted so far must reach the committer even if this
        // future is dropped while the rest are admitted by message: a task
        // of its own carries them.
        let writer = writer.clone();
        let account = account.clone();
        let task = actix_rt::spawn(async move {
            let mut decided = decided;
            decided.extend(admit_by_message(&writer.registry, &account, deferred, &events).await);
            submit(&writer, account, settings, count, decided, events).await
        });
        match task.await {
            Ok(answered) => answered,
            Err(join) => return refused(count, LoadError::Unavailable(Unavailable::task(join))),
        }
    };
    let outcomes = answered
        .unwrap_or_else(|_| refused(count, LoadError::Unavailable(Unavailable::GpsCommitter)));
    count_points(&outcomes);
    outcomes
}

fn refused(count: usize, error: LoadError) -> Answer {
    (0..count).map(|_| Err(error.clone())).collect()
}

/// Hands the admitted fixes to the group committer, with what must follow
/// their commit; the answer arrives once that has run.
fn submit(
    writer: &Writer,
    account: AccountId,
    settings: StopSettings,
    count: usize,
    admissions: Vec<(LoadFixes, Result<Admission, LoadError>)>,
    events: Wanted,
) -> oneshot::Receiver<Answer> {
    let (reply, answer) = oneshot::channel();
    let mut outcomes: Outcomes = (0..count).map(|_| None).collect();
    let mut admitted = Vec::new();
    let mut points = Vec::with_capacity(count);
    let mut milestones = Vec::new();
    let now = writer.clock.now();
    for (group, mut admission) in admissions {
        match admission {
            Ok(ref mut admission) => {
                let first = points.len();
                points.extend(points_of(&account, &group, admission, now));
                let made = add_stops(
                    &account,
                    &settings,
                    now,
                    &mut points[first..],
                    &group.load,
                    admission,
                );
                milestones.extend(made.into_iter().map(|at| MilestonesAt {
                    point: first + at.point,
                    ..at
                }));
                admitted.push(Admitted {
                    state: admission.state.clone(),
                    load: group.load,
                    status: admission.status,
                    indexes: group.indexes,
                    fixes: group.fixes,
                    stops_undo: admission.stops_undo.take(),
                });
            }
            Err(error) => {
                for index in group.indexes {
                    outcomes[index] = Some(Err(error.clone()));
                }
            }
        }
    }
    if admitted.is_empty() {
        let _ = reply.send(finish(outcomes));
        return answer;
    }
    // The events go to the dispatcher too, once stored (a duplicate's are not).
    let emitted: Vec<Option<Event>> = match events.tracking {
        true => points.iter().map(|p| p.event.clone()).collect(),
        false => Vec::new(),
    };
    let after = AfterCommit {
        live: writer.live.clone(),
        notifier: writer.notifier.clone(),
        registry: writer.registry.clone(),
        detention: writer.detention.clone(),
        account,
        admitted,
        emitted,
        milestones,
    };
    writer.committer.submit(
        points,
        Completion::new(move |stored| {
            after.run(stored, &mut outcomes);
            let _ = reply.send(finish(outcomes));
        }),
    );
    answer
}

fn finish(outcomes: Outcomes) -> Answer {
    outcomes
        .into_iter()
        .map(|o| o.unwrap_or(Err(LoadError::NotFound)))
        .collect()
}

/// The fixes grouped by load, each remembering its place in the request.
fn by_load(mut fixes: Vec<(LoadId, GpsFix)>) -> Vec<LoadFixes> {
    if fixes.len() == 1 {
        // A single fix, the usual request: no map to build.
        let (load, fix) = fixes.remove(0);
        return vec![LoadFixes {
            load,
            indexes: vec![0],
            fixes: vec![fix],
        }];
    }
    // A bulk request usually carries one fix for each of many loads: the map is
    // sized for that at once and hashes with foldhash (SipHash, regrowth and
    // each group's vectors growing from empty were a seventh of a 1,000-load
    // request's time on the worker).
    let mut place: FastHashMap<LoadId, usize> =
        FastHashMap::with_capacity_and_hasher(fixes.len(), Default::default());
    let mut groups: Vec<LoadFixes> = Vec::with_capacity(fixes.len());
    for (index, (load, fix)) in fixes.into_iter().enumerate() {
        let at = *place.entry(load.clone()).or_insert_with(|| {
            groups.push(LoadFixes {
                load,
                indexes: Vec::with_capacity(1),
                fixes: Vec::with_capacity(1),
            });
            groups.len() - 1
        });
        groups[at].indexes.push(index);
        groups[at].fixes.push(fix);
    }
    groups
}

/// A load's fixes with its actor's decision on them.
type Decided = Vec<(LoadFixes, Result<Admission, LoadError>)>;

fn admit_request(account: &AccountId, group: &LoadFixes, events: &Wanted) -> AdmitFixes {
    AdmitFixes {
        account: account.clone(),
        fixes: group.fixes.clone(),
        events: events.clone(),
    }
}

/// Has each load's actor admit its fixes under its lock where it allows; the
/// loads whose actors must decide themselves come back undecided.
fn admit_now(
    registry: &LoadRegistry,
    account: &AccountId,
    groups: Vec<LoadFixes>,
    events: &Wanted,
) -> (Decided, Vec<LoadFixes>) {
    let mut decided = Vec::with_capacity(groups.len());
    let mut deferred = Vec::new();
    for group in groups {
        match registry.try_admit(&group.load, account, &group.fixes, events) {
            Some(admitted) => decided.push((group, admitted)),
            None => deferred.push(group),
        }
    }
    (decided, deferred)
}

/// Has each load's actor admit its fixes by message (starting it if needed),
/// a bounded number of loads at once.
async fn admit_by_message(
    registry: &LoadRegistry,
    account: &AccountId,
    deferred: Vec<LoadFixes>,
    events: &Wanted,
) -> Decided {
    stream::iter(deferred)
        .map(|group| async move {
            let admitted = registry
                .send(&group.load, admit_request(account, &group, events))
                .await
                .and_then(|r| r);
            (group, admitted)
        })
        .buffer_unordered(MAX_CONCURRENT_ADMISSIONS)
        .collect()
        .await
}

/// The points to store for one load's admitted fixes, with their events when
/// the admission reserved sequence numbers for them.
fn points_of<'a>(
    account: &'a AccountId,
    group: &'a LoadFixes,
    admission: &'a Admission,
    now: chrono::DateTime<chrono::Utc>,
) -> impl Iterator<Item = TrackingPoint> + 'a {
    group
        .fixes
        .iter()
        .enumerate()
        .map(move |(n, fix)| TrackingPoint {
            load_id: group.load.clone(),
            fix: *fix,
            stops: None,
            event: admission.first_sequence.map(|first| {
                Event::new(
                    account.clone(),
                    group.load.clone(),
                    EventType::TrackingUpdated,
                    first + n as u64,
                    now,
                    payloads::tracking(admission.status.as_str(), fix),
                )
            }),
        })
}

/// What follows a request's commit: each actor records what became of its
/// fixes (before anyone is answered, so a read right after the answer sees
/// them), the stored ones go to the account's live streams (if it has any),
/// and the stored points' events to the dispatcher.
struct AfterCommit {
    live: LiveHub,
    notifier: Arc<Notifier>,
    registry: Arc<LoadRegistry>,
    detention: Arc<DetentionClock>,
    account: AccountId,
    admitted: Vec<Admitted>,
    emitted: Vec<Option<Event>>,
    milestones: Vec<MilestonesAt>,
}

impl AfterCommit {
    fn run(self, stored: Result<Vec<Appended>, LoadError>, outcomes: &mut Outcomes) {
        let AfterCommit {
            live: hub,
            notifier,
            registry,
            detention,
            account,
            admitted,
            emitted,
            milestones,
        } = self;
        // Checked once per request: while nobody streams, an atomic load.
        let live = stored.is_ok() && hub.listening(&account);
        let mut published = Vec::new();
        let mut results = stored.as_ref().map(|all| all.iter().copied());
        let mut states = Vec::with_capacity(if live { admitted.len() } else { 0 });
        for Admitted {
            state,
            load,
            status,
            indexes,
            fixes,
            stops_undo,
        } in admitted
        {
            let mine: Result<Vec<Appended>, LoadError> = results
                .as_mut()
                .map(|all| all.by_ref().take(fixes.len()).collect())
                .map_err(|error| (*error).clone());
            for (n, index) in indexes.into_iter().enumerate() {
                outcomes[index] = Some(mine.as_ref().map(|mine| mine[n]).map_err(Clone::clone));
            }
            if live {
                // One per notice, in the same order, to be matched with its answer.
                published.push(Stored {
                    load,
                    status,
                    fixes: mine
                        .as_ref()
                        .map(|mine| stored_only(&fixes, mine))
                        .unwrap_or_default(),
                });
            }
            let snapshot = state.record_stored(&fixes, mine.as_deref().ok(), live, stops_undo);
            if live {
                states.push(snapshot);
            }
        }
        if live {
            hub.publish(&account, updates(published, states.into_iter()));
        }
        if let Ok(stored) = &stored {
            for at in milestones {
                if stored.get(at.point) != Some(&Appended::Stored) {
                    continue;
                }
                // The notifier shows them to the load's streams too
                // (`LiveHub::publish_committed`), after the fixes above.
                if !at.events.is_empty() {
                    notifier.events_committed(at.events);
                }
                if let Some(timer) = at.timer {
                    detention.note(&at.load, timer);
                }
                if let Some(to) = at.geofence_move {
                    registry.move_by_geofence(&at.load, &account, to);
                }
            }
        }
        if let Ok(stored) = &stored
            && !emitted.is_empty()
        {
            let committed: Vec<Event> = emitted
                .into_iter()
                .zip(stored)
                .filter_map(|(event, appended)| event.filter(|_| *appended == Appended::Stored))
                .collect();
            if !committed.is_empty() {
                notifier.events_committed(committed);
            }
        }
    }
}

fn stored_only(fixes: &[GpsFix], outcomes: &[Appended]) -> Vec<GpsFix> {
    fixes
        .iter()
        .zip(outcomes)
        .filter(|(_, outcome)| **outcome == Appended::Stored)
        .map(|(fix, _)| *fix)
        .collect()
}

/// The stored fixes as live updates, each with its load's ETA from the state
/// its actor answered with once they were applied.
fn updates(
    published: Vec<Stored>,
    states: impl Iterator<Item = Option<TrackingState>>,
) -> Vec<Update> {
    let mut updates = Vec::new();
    for (stored, state) in published.into_iter().zip(states) {
        let eta = state.as_ref().and_then(eta);
        for fix in &stored.fixes {
            let data = TrackingUpdate {
                load_id: stored.load.as_str(),
                status: stored.status.as_str(),
                position: PointView::new(fix),
                eta: eta.clone(),
            };
            match serde_json::to_string(&data) {
                Ok(data) => updates.push(Update {
                    load: stored.load.clone(),
                    kind: TRACKING_EVENT,
                    data,
                }),
                Err(error) => tracing::error!(%error, "a live tracking update did not serialise"),
            }
        }
    }
    updates
}
