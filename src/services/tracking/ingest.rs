//! The write path of GPS fixes: admitted by their loads' actors, committed in
//! one group commit, reported back to the actors before anyone is answered.
//! Runs as a task of its own (see `TrackingService::record_many`).

use std::collections::HashMap;
use std::sync::Arc;

use futures_util::future::join_all;
use futures_util::stream::{self, StreamExt};

use super::count_points;
use crate::actors::LoadError;
use crate::actors::group_commit::GroupCommitter;
use crate::actors::load_actor::{Admission, AdmitFixes, FixesStored, LoadActor};
use crate::actors::registry::LoadRegistry;
use crate::clock::Clock;
use crate::domain::event::{Event, EventType};
use crate::domain::ids::{AccountId, LoadId};
use crate::domain::tracking::{Appended, GpsFix, TrackingPoint};
use crate::webhooks::directory::Directory;
use crate::webhooks::notifier::Notifier;
use crate::webhooks::payloads;

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
    pub clock: Clock,
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
    actor: actix::Addr<LoadActor>,
    indexes: Vec<usize>,
    fixes: Vec<GpsFix>,
}

pub(super) async fn record_detached(
    writer: Writer,
    account: AccountId,
    fixes: Vec<(LoadId, GpsFix)>,
) -> Vec<Result<Appended, LoadError>> {
    // `tracking.updated` events are written only while someone subscribes to them:
    // they would double the GPS write volume for nobody.
    let events = writer.directory.wants(&account, EventType::TrackingUpdated);
    let count = fixes.len();
    let admissions = admit(&writer.registry, &account, by_load(fixes), events).await;
    let mut outcomes: Outcomes = (0..count).map(|_| None).collect();
    let mut admitted = Vec::new();
    let mut points = Vec::with_capacity(count);
    let now = writer.clock.now();
    for (group, admission) in admissions {
        match admission {
            Ok(admission) => {
                points.extend(points_of(&account, &group, &admission, now));
                admitted.push(Admitted {
                    actor: admission.actor,
                    indexes: group.indexes,
                    fixes: group.fixes,
                });
            }
            Err(error) => {
                for index in group.indexes {
                    outcomes[index] = Some(Err(error.clone()));
                }
            }
        }
    }
    if !admitted.is_empty() {
        commit(&writer, points, admitted, events, &mut outcomes).await;
    }
    let outcomes: Vec<Result<Appended, LoadError>> = outcomes
        .into_iter()
        .map(|o| o.unwrap_or(Err(LoadError::NotFound)))
        .collect();
    count_points(&outcomes);
    outcomes
}

/// The fixes grouped by load, each remembering its place in the request.
fn by_load(fixes: Vec<(LoadId, GpsFix)>) -> Vec<LoadFixes> {
    let mut groups: HashMap<LoadId, LoadFixes> = HashMap::new();
    for (index, (load, fix)) in fixes.into_iter().enumerate() {
        let group = groups.entry(load.clone()).or_insert_with(|| LoadFixes {
            load,
            indexes: Vec::new(),
            fixes: Vec::new(),
        });
        group.indexes.push(index);
        group.fixes.push(fix);
    }
    groups.into_values().collect()
}

/// Asks each load's actor to admit its fixes, a bounded number of loads at once.
async fn admit(
    registry: &LoadRegistry,
    account: &AccountId,
    groups: Vec<LoadFixes>,
    events: bool,
) -> Vec<(LoadFixes, Result<Admission, LoadError>)> {
    stream::iter(groups)
        .map(|group| async move {
            let admit = AdmitFixes {
                account: account.clone(),
                fixes: group.fixes.len() as u32,
                events,
            };
            let admitted = registry.send(&group.load, admit).await.and_then(|r| r);
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

/// Commits the admitted points in one group commit, tells each actor what became
/// of its fixes (before anyone is answered, so a read right after the answer sees
/// them), and hands the stored points' events to the dispatcher.
async fn commit(
    writer: &Writer,
    points: Vec<TrackingPoint>,
    admitted: Vec<Admitted>,
    events: bool,
    outcomes: &mut Outcomes,
) {
    // The events go to the dispatcher too, once stored (a duplicate's are not).
    let emitted: Vec<Option<Event>> = match events {
        true => points.iter().map(|p| p.event.clone()).collect(),
        false => Vec::new(),
    };
    // The committer checks that storage answered one outcome per point.
    let stored = writer.committer.append(points).await;
    let mut results = stored.as_ref().map(|all| all.iter().copied());
    let mut notices = Vec::with_capacity(admitted.len());
    for Admitted {
        actor,
        indexes,
        fixes,
    } in admitted
    {
        let mine: Result<Vec<Appended>, LoadError> = results
            .as_mut()
            .map(|all| all.by_ref().take(fixes.len()).collect())
            .map_err(|error| (*error).clone());
        for (n, index) in indexes.into_iter().enumerate() {
            outcomes[index] = Some(mine.as_ref().map(|mine| mine[n]).map_err(Clone::clone));
        }
        notices.push(actor.send(FixesStored {
            fixes,
            outcomes: mine.ok(),
        }));
    }
    // An actor whose arbiter has stopped (shutdown) cannot be told; nothing to do.
    let _ = join_all(notices).await;
    if let Ok(stored) = &stored
        && events
    {
        let committed: Vec<Event> = emitted
            .into_iter()
            .zip(stored)
            .filter_map(|(event, appended)| event.filter(|_| *appended == Appended::Stored))
            .collect();
        if !committed.is_empty() {
            writer.notifier.events_committed(committed);
        }
    }
}
