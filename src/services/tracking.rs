//! GPS ingest and tracking reads, through the load actors.

use std::collections::HashMap;
use std::sync::Arc;

use futures_util::future::join_all;
use futures_util::stream::{self, StreamExt};

use super::loads::LoadError;
use crate::actors::group_commit::GroupCommitter;
use crate::actors::load_actor::{AdmitFixes, FixesStored};
use crate::actors::registry::LoadRegistry;
use crate::clock::Clock;
use crate::domain::event::{Event, EventType};
use crate::domain::ids::{AccountId, LoadId};
use crate::domain::tracking::TrackingState;
use crate::domain::tracking::{Appended, GpsFix, TrackingPoint};
use crate::storage::{PointRange, Storage, StorageError};
use crate::webhooks::directory::Directory;
use crate::webhooks::notifier::Notifier;
use crate::webhooks::payloads;

pub struct TrackingService {
    storage: Arc<dyn Storage>,
    registry: Arc<LoadRegistry>,
    committer: GroupCommitter,
    directory: Arc<Directory>,
    notifier: Arc<Notifier>,
    clock: Clock,
}

/// One page of a load's history.
pub struct History {
    pub points: Vec<GpsFix>,
    /// Points in the requested time range, all pages.
    pub total: u64,
}

impl TrackingService {
    pub fn new(
        storage: Arc<dyn Storage>,
        registry: Arc<LoadRegistry>,
        committer: GroupCommitter,
        directory: Arc<Directory>,
        notifier: Arc<Notifier>,
        clock: Clock,
    ) -> Self {
        Self {
            storage,
            registry,
            committer,
            directory,
            notifier,
            clock,
        }
    }

    pub fn registry(&self) -> &LoadRegistry {
        &self.registry
    }

    /// Records one fix; answers once it is durable.
    pub async fn record(
        &self,
        account: &AccountId,
        load: &str,
        fix: GpsFix,
    ) -> Result<Appended, LoadError> {
        let id = LoadId::parse(load).ok_or(LoadError::NotFound)?;
        self.record_many(account, vec![(id, fix)])
            .await
            .pop()
            .unwrap_or(Err(LoadError::NotFound))
    }

    /// Records fixes of one or many loads. Each load's actor admits its fixes (or
    /// refuses them: unknown load, wrong status); the admitted fixes of all loads
    /// go to storage in one group-commit submission; then each actor records what
    /// was stored before the answer goes out, so a read right after the answer sees
    /// it. Each fix gets its own outcome, in input order, and is stored durably or
    /// not at all.
    pub async fn record_many(
        &self,
        account: &AccountId,
        fixes: Vec<(LoadId, GpsFix)>,
    ) -> Vec<Result<Appended, LoadError>> {
        let count = fixes.len();
        // Detached before anything is admitted: an actor that admitted fixes must
        // hear how they ended even if the client goes away and this future is dropped.
        let writer = Writer {
            registry: self.registry.clone(),
            committer: self.committer.clone(),
            directory: self.directory.clone(),
            notifier: self.notifier.clone(),
            clock: self.clock.clone(),
        };
        let task = actix_rt::spawn(record_detached(writer, account.clone(), fixes));
        task.await.unwrap_or_else(|join| {
            let error = LoadError::Storage(StorageError::Unavailable(format!(
                "the GPS write task failed: {join}"
            )));
            (0..count).map(|_| Err(error.clone())).collect()
        })
    }

    /// The load's tracking state from its actor (no storage read if resident).
    pub async fn current(
        &self,
        account: &AccountId,
        load: &str,
    ) -> Result<TrackingState, LoadError> {
        let id = LoadId::parse(load).ok_or(LoadError::NotFound)?;
        self.registry.read_tracking(&id, account).await
    }

    /// A page of history, newest first, straight from storage.
    pub async fn history(
        &self,
        account: &AccountId,
        load: &str,
        range: PointRange,
    ) -> Result<History, LoadError> {
        let id = LoadId::parse(load).ok_or(LoadError::NotFound)?;
        self.storage
            .get_load(&id)
            .await?
            .filter(|l| &l.account_id == account)
            .ok_or(LoadError::NotFound)?;
        let points = self.storage.load_points(&id, range).await?;
        let total = self.storage.count_points(&id, range.from, range.to).await?;
        Ok(History { points, total })
    }
}

/// Loads admitted at once by one request: a batch spread over many loads must not
/// start (and read from storage) a thousand actors at the same moment.
const MAX_CONCURRENT_ADMISSIONS: usize = 64;

/// What the detached write needs.
struct Writer {
    registry: Arc<LoadRegistry>,
    committer: GroupCommitter,
    directory: Arc<Directory>,
    notifier: Arc<Notifier>,
    clock: Clock,
}

async fn record_detached(
    writer: Writer,
    account: AccountId,
    fixes: Vec<(LoadId, GpsFix)>,
) -> Vec<Result<Appended, LoadError>> {
    let Writer {
        registry,
        committer,
        directory,
        notifier,
        clock,
    } = writer;
    // `tracking.updated` events are written only while someone subscribes to them:
    // they would double the GPS write volume for nobody.
    let events = directory.wants(&account, EventType::TrackingUpdated);
    let mut groups: HashMap<LoadId, (Vec<usize>, Vec<GpsFix>)> = HashMap::new();
    for (index, (load, fix)) in fixes.iter().enumerate() {
        let group = groups.entry(load.clone()).or_default();
        group.0.push(index);
        group.1.push(*fix);
    }
    let admissions: Vec<_> = stream::iter(groups)
        .map(|(load, (indexes, fixes))| {
            let (registry, account) = (&registry, &account);
            async move {
                let admit = AdmitFixes {
                    account: account.clone(),
                    fixes: fixes.len() as u32,
                    events,
                };
                let admitted = registry.send(&load, admit).await.and_then(|r| r);
                (load, indexes, fixes, admitted)
            }
        })
        .buffer_unordered(MAX_CONCURRENT_ADMISSIONS)
        .collect()
        .await;

    let mut outcomes: Vec<Option<Result<Appended, LoadError>>> =
        (0..fixes.len()).map(|_| None).collect();
    let mut admitted = Vec::new();
    let mut points = Vec::with_capacity(fixes.len());
    let now = clock.now();
    for (load, indexes, fixes, admission) in admissions {
        match admission {
            Ok(admission) => {
                points.extend(fixes.iter().enumerate().map(|(n, fix)| TrackingPoint {
                    load_id: load.clone(),
                    fix: *fix,
                    event: admission.first_sequence.map(|first| {
                        Event::new(
                            account.clone(),
                            load.clone(),
                            EventType::TrackingUpdated,
                            first + n as u64,
                            now,
                            payloads::tracking(admission.status.as_str(), fix),
                        )
                    }),
                }));
                admitted.push((admission.actor, indexes, fixes));
            }
            Err(error) => {
                for index in indexes {
                    outcomes[index] = Some(Err(error.clone()));
                }
            }
        }
    }
    if !admitted.is_empty() {
        // The events go to the dispatcher too, once stored (a duplicate's are not).
        let emitted: Vec<Option<Event>> = match events {
            true => points.iter().map(|p| p.event.clone()).collect(),
            false => Vec::new(),
        };
        // The committer checks that storage answered one outcome per point.
        let stored = committer.append(points).await;
        let mut results = stored.as_ref().ok().map(|all| all.iter().copied());
        let mut notices = Vec::with_capacity(admitted.len());
        for (actor, indexes, fixes) in admitted {
            let mine: Option<Vec<Appended>> = results
                .as_mut()
                .map(|all| all.by_ref().take(fixes.len()).collect());
            for (n, index) in indexes.into_iter().enumerate() {
                outcomes[index] = Some(match &mine {
                    Some(mine) => Ok(mine[n]),
                    None => Err(LoadError::Storage(
                        stored.as_ref().err().cloned().unwrap_or_else(|| {
                            StorageError::Unavailable("the GPS batch failed".into())
                        }),
                    )),
                });
            }
            notices.push(actor.send(FixesStored {
                fixes,
                outcomes: mine,
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
                notifier.events_committed(committed);
            }
        }
    }
    let outcomes: Vec<Result<Appended, LoadError>> = outcomes
        .into_iter()
        .map(|o| o.unwrap_or(Err(LoadError::NotFound)))
        .collect();
    count_points(&outcomes);
    outcomes
}

/// GPS points by what became of them (malformed points never get this far; the
/// handlers count those as refused).
pub const POINTS_METRIC: &str = "freight_gps_points_total";

fn count_points(outcomes: &[Result<Appended, LoadError>]) {
    let (mut stored, mut duplicate, mut refused) = (0u64, 0u64, 0u64);
    for outcome in outcomes {
        match outcome {
            Ok(Appended::Stored) => stored += 1,
            Ok(Appended::Duplicate) => duplicate += 1,
            Err(_) => refused += 1,
        }
    }
    for (outcome, n) in [
        ("stored", stored),
        ("duplicate", duplicate),
        ("refused", refused),
    ] {
        if n > 0 {
            metrics::counter!(POINTS_METRIC, "outcome" => outcome).increment(n);
        }
    }
}
