//! GPS ingest and tracking reads, through the load actors, and the live
//! streams of what is stored (`services::live`).

mod batch;
pub mod group_commit;
mod ingest;
#[cfg(test)]
mod tests;

use std::sync::Arc;

pub use self::batch::{PointBatch, PointOutcome};
use self::ingest::Writer;
use super::live::{Ending, LiveHub, LiveStream, Resume, TooManyStreams};
use super::loads::LoadError;
use crate::actors::registry::LoadRegistry;
use crate::clock::Clock;
use crate::domain::account::Account;
use crate::domain::ids::{AccountId, LoadId};
use crate::domain::tracking::TrackingState;
use crate::domain::tracking::{Appended, GpsFix};
use crate::services::detention::DetentionClock;
use crate::services::tracking::group_commit::GroupCommitter;
use crate::storage::{PointRange, Storage};
use crate::webhooks::directory::Directory;
use crate::webhooks::notifier::Notifier;

/// Sends fixes of loads another instance acts for to that instance
/// (`server::cluster`, with a store several instances share).
#[async_trait::async_trait]
pub trait ForwardFixes: Send + Sync {
    /// Gives the fixes that `outcomes` (of `fixes`, in order) says another
    /// instance acts for to that instance, and puts its outcomes in their place.
    async fn forward_fixes(
        &self,
        account: &Account,
        fixes: &[(LoadId, GpsFix)],
        outcomes: &mut [Result<Appended, LoadError>],
    );
}

pub struct TrackingService {
    storage: Arc<dyn Storage>,
    /// What the write path needs, cloned into each detached write.
    writer: Writer,
    /// With instances sharing the store: where fixes of loads another
    /// instance acts for are sent (`cluster::forward`).
    cluster: std::sync::OnceLock<Arc<dyn ForwardFixes>>,
}

/// One page of a load's history.
pub struct History {
    pub points: Vec<GpsFix>,
    /// Points in the requested time range, all pages.
    pub total: u64,
}

impl TrackingService {
    /// The account delivered a load (through this instance): its loads'
    /// ETAs learn from it from their next fix on, not within the refresh.
    pub fn delivered(&self, account: &AccountId) {
        self.writer.speeds.forget(account);
    }

    pub fn new(
        storage: Arc<dyn Storage>,
        registry: Arc<LoadRegistry>,
        committer: GroupCommitter,
        directory: Arc<Directory>,
        notifier: Arc<Notifier>,
        live: LiveHub,
        clock: Clock,
    ) -> Self {
        let writer = Writer {
            registry,
            committer,
            directory,
            notifier,
            live,
            clock,
            detention: Arc::default(),
            speeds: crate::services::eta_speeds::EtaSpeeds::new(storage.clone()),
        };
        Self {
            storage,
            writer,
            cluster: std::sync::OnceLock::new(),
        }
    }

    /// Forwards fixes of loads other instances act for from now on.
    pub fn join(&self, cluster: Arc<dyn ForwardFixes>) {
        let _ = self.cluster.set(cluster);
    }

    /// The detention clocks the committed points set (run by `detention::run`).
    pub fn detention(&self) -> &Arc<DetentionClock> {
        &self.writer.detention
    }

    pub fn registry(&self) -> &LoadRegistry {
        &self.writer.registry
    }

    /// The live streams' hub.
    pub fn live(&self) -> &LiveHub {
        &self.writer.live
    }

    /// Records one fix; answers once it is durable.
    pub async fn record(
        &self,
        account: &Account,
        load: &LoadId,
        fix: GpsFix,
    ) -> Result<Appended, LoadError> {
        self.record_many(account, vec![(load.clone(), fix)])
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
    ///
    /// A fix of a load another instance acts for is recorded there, and its
    /// outcome is that instance's answer.
    pub async fn record_many(
        &self,
        account: &Account,
        fixes: Vec<(LoadId, GpsFix)>,
    ) -> Vec<Result<Appended, LoadError>> {
        let Some(cluster) = self.cluster.get() else {
            return ingest::record(&self.writer, account, fixes).await;
        };
        let mut outcomes = ingest::record(&self.writer, account, fixes.clone()).await;
        cluster.forward_fixes(account, &fixes, &mut outcomes).await;
        outcomes
    }

    /// As [`Self::record_many`], without forwarding: fixes forwarded here.
    pub async fn record_here(
        &self,
        account: &Account,
        fixes: Vec<(LoadId, GpsFix)>,
    ) -> Vec<Result<Appended, LoadError>> {
        ingest::record(&self.writer, account, fixes).await
    }

    /// The load's tracking state from its actor (no storage read if resident).
    pub async fn current(
        &self,
        account: &AccountId,
        load: &LoadId,
    ) -> Result<TrackingState, LoadError> {
        self.writer.registry.read_tracking(load, account).await
    }

    /// As [`Self::current`], and for a load another instance acts for, as
    /// stored (for views over many loads, which are not forwarded: the
    /// dashboard's board). Fixes are stored before they are acknowledged, so
    /// the stored state is as new as the actor's.
    pub async fn current_anywhere(
        &self,
        account: &AccountId,
        load: &LoadId,
    ) -> Result<TrackingState, LoadError> {
        match self.current(account, load).await {
            Err(LoadError::Unavailable(crate::unavailable::Unavailable::LeasedElsewhere {
                ..
            })) => {
                let stored = self.storage.get_load(load).await?;
                let Some(stored) = stored.filter(|l| l.account_id == *account) else {
                    return Err(LoadError::NotFound);
                };
                let recent = self
                    .storage
                    .load_points(
                        load,
                        PointRange::latest(crate::actors::load_actor::RECENT_FIXES),
                    )
                    .await?;
                let progress = self.storage.load_stops(load).await?.unwrap_or_default();
                Ok(crate::actors::load_state::stored_state(
                    &stored, recent, &progress,
                ))
            }
            other => other,
        }
    }

    /// The load's live view as `render` writes it, rendered once per change of
    /// its state rather than once per read.
    pub async fn current_view<E>(
        &self,
        account: &AccountId,
        load: &LoadId,
        render: impl FnOnce(&TrackingState) -> Result<bytes::Bytes, E>,
    ) -> Result<Result<bytes::Bytes, E>, LoadError> {
        self.writer
            .registry
            .read_rendered(load, account, render)
            .await
    }

    /// The fix stored for the load at `at` (to the microsecond, as stored):
    /// what a duplicate's answer shows.
    pub async fn stored_fix(
        &self,
        id: &LoadId,
        at: chrono::DateTime<chrono::Utc>,
    ) -> Result<Option<GpsFix>, LoadError> {
        let at = chrono::DateTime::from_timestamp_micros(at.timestamp_micros()).unwrap_or(at);
        let range = PointRange {
            from: at,
            to: at,
            before: None,
            limit: 1,
        };
        Ok(self.storage.load_points(id, range).await?.pop())
    }

    /// A page of history, newest first, straight from storage.
    pub async fn history(
        &self,
        account: &AccountId,
        id: &LoadId,
        range: PointRange,
    ) -> Result<History, LoadError> {
        self.check_owned(account, id).await?;
        let points = self.storage.load_points(id, range).await?;
        let total = self.storage.count_points(id, range.from, range.to).await?;
        Ok(History { points, total })
    }

    /// A live stream of the fixes stored from now on (after `resume`, if it can
    /// be resumed), of every load of the account or of one (which must be the
    /// account's), unless the account has its plan's number of streams open.
    /// It ends when `ending` (its credential's guard) resolves.
    pub async fn stream(
        &self,
        account: &Account,
        load: Option<LoadId>,
        resume: Resume,
        ending: Ending,
    ) -> Result<LiveStream, StreamError> {
        if let Some(load) = &load {
            self.check_owned(&account.id, load).await?;
        }
        let limit = account.max_streams();
        Ok(self
            .writer
            .live
            .subscribe(&account.id, load, resume, limit, ending)?)
    }

    /// Not found unless the load exists and is the account's (read from storage:
    /// no actor is started for it).
    pub async fn check_owned(&self, account: &AccountId, id: &LoadId) -> Result<(), LoadError> {
        self.storage
            .get_load(id)
            .await?
            .filter(|l| &l.account_id == account)
            .map(|_| ())
            .ok_or(LoadError::NotFound)
    }
}

/// Why a stream was not opened.
#[derive(Debug, thiserror::Error)]
pub enum StreamError {
    #[error(transparent)]
    Load(#[from] LoadError),
    #[error(transparent)]
    TooMany(#[from] TooManyStreams),
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
    POINT_COUNTERS.with(|[stored_total, duplicate_total, refused_total]| {
        for (counter, n) in [
            (stored_total, stored),
            (duplicate_total, duplicate),
            (refused_total, refused),
        ] {
            if n > 0 {
                counter.increment(n);
            }
        }
    });
}

thread_local! {
    /// The three outcome counters, looked up in the recorder once per thread
    /// rather than once per request (the recorder is installed at start-up,
    /// before any request).
    static POINT_COUNTERS: [metrics::Counter; 3] = ["stored", "duplicate", "refused"]
        .map(|outcome| metrics::counter!(POINTS_METRIC, "outcome" => outcome));
}
