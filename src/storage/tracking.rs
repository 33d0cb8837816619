//! GPS tracking: each load's time series of points.

use async_trait::async_trait;
use chrono::{DateTime, Utc};

use super::StorageResult;
use crate::domain::ids::LoadId;
use crate::domain::tracking::{Appended, GpsFix, TrackingPoint};

/// Which of a load's points to read, newest first.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PointRange {
    pub from: DateTime<Utc>,
    pub to: DateTime<Utc>,
    pub before: Option<DateTime<Utc>>,
    pub limit: usize,
}

impl PointRange {
    /// The latest `limit` points, whatever their time.
    pub fn latest(limit: usize) -> Self {
        PointRange {
            from: DateTime::<Utc>::MIN_UTC,
            to: DateTime::<Utc>::MAX_UTC,
            before: None,
            limit,
        }
    }
}

/// A write that may not be durable yet: [`PendingSync::wait`] returns once it is.
#[must_use = "a write is durable only once its sync has been waited for"]
pub struct PendingSync(Option<Box<dyn FnOnce() -> StorageResult<()> + Send>>);

impl PendingSync {
    /// A write that was durable when it returned.
    pub fn durable() -> Self {
        PendingSync(None)
    }

    /// A write made durable by `wait` (which may block, and may run the sync).
    pub fn new(wait: impl FnOnce() -> StorageResult<()> + Send + 'static) -> Self {
        PendingSync(Some(Box::new(wait)))
    }

    /// Blocks until the write is durable, or the sync that would cover it has
    /// failed. Call it on a thread that may block.
    pub fn wait(self) -> StorageResult<()> {
        self.0.map_or(Ok(()), |wait| wait())
    }
}

#[async_trait]
pub trait TrackingStore: Send + Sync {
    /// Stores GPS points in one durable batch (the group commit). A point whose
    /// (load, timestamp) is already stored, or repeats an earlier one in the same
    /// batch, is a duplicate and is not written again, nor is its event. Outcomes
    /// are in input order.
    async fn append_points(&self, points: Vec<TrackingPoint>) -> StorageResult<Vec<Appended>>;
    /// [`Self::append_points`] in two halves, for a committer that may write
    /// the next batch while the last one syncs: the points are written (later
    /// writes see them, as duplicates too), and they are durable once the
    /// answer's [`PendingSync`] has been waited for. Nobody may be told of the
    /// outcomes before that. (The GPS committer today waits before it takes the
    /// next batch: see `actors::group_commit`.) A store whose writes are durable
    /// when they return keeps this default.
    async fn write_points(
        &self,
        points: Vec<TrackingPoint>,
    ) -> StorageResult<(Vec<Appended>, PendingSync)> {
        Ok((self.append_points(points).await?, PendingSync::durable()))
    }
    /// A load's points newest first: at most `limit` with `from <= timestamp <= to`
    /// and, if given, `timestamp < before` (the cursor of the previous page).
    async fn load_points(&self, load: &LoadId, range: PointRange) -> StorageResult<Vec<GpsFix>>;
    /// How many points a load has with `from <= timestamp <= to`.
    async fn count_points(
        &self,
        load: &LoadId,
        from: DateTime<Utc>,
        to: DateTime<Utc>,
    ) -> StorageResult<u64>;
}
