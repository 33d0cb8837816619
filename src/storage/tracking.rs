//! GPS tracking: each load's time series of points.

use async_trait::async_trait;
use chrono::{DateTime, Utc};

use super::StorageResult;
use crate::domain::event::Event;
use crate::domain::ids::LoadId;
use crate::domain::stops::{StopKey, StopsProgress};
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

/// A load's set detention clock.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StopTimerEntry {
    pub load: LoadId,
    pub stop: StopKey,
    /// When detention starts if the truck is still there.
    pub due: DateTime<Utc>,
}

#[async_trait]
pub trait TrackingStore: Send + Sync {
    /// Stores GPS points in one durable batch (the group commit). A point whose
    /// (load, timestamp) is already stored, or repeats an earlier one in the same
    /// batch, is a duplicate and is not written again, nor is its event or its
    /// stops change. A stored point's stops change is written in the same batch
    /// (the stored progress is the one of the load's newest such point). Outcomes
    /// are in input order.
    async fn append_points(&self, points: Vec<TrackingPoint>) -> StorageResult<Vec<Appended>>;
    /// A load's points newest first: at most `limit` with `from <= timestamp <= to`
    /// and, if given, `timestamp < before` (the cursor of the previous page).
    async fn load_points(&self, load: &LoadId, range: PointRange) -> StorageResult<Vec<GpsFix>>;
    /// The load's stop progress as last stored with a point (`None`: no fix
    /// has changed it yet).
    async fn load_stops(&self, load: &LoadId) -> StorageResult<Option<StopsProgress>>;
    /// Every load's set detention clock (`StopTimer::Set` written with a
    /// point and not yet cleared or ended): a small table, read whole.
    async fn stop_timers(&self) -> StorageResult<Vec<StopTimerEntry>>;
    /// Ends the load's detention clock, with the event it fired (if any), in
    /// one durable write.
    async fn end_stop_timer(&self, load: &LoadId, fired: Option<&Event>) -> StorageResult<()>;
    /// How many points a load has with `from <= timestamp <= to`.
    async fn count_points(
        &self,
        load: &LoadId,
        from: DateTime<Utc>,
        to: DateTime<Utc>,
    ) -> StorageResult<u64>;
}
