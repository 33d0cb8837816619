//! A load's tracking: the points the time series stores, what a fix changed
//! of its stops, and the movement its actor holds.

pub use super::fix::{FixSource, GpsFix, MAX_AGE, MAX_FUTURE_SKEW, MAX_SPEED_MPH};

use super::event::Event;
use super::hos::DriverClock;
use super::ids::LoadId;
use super::load::LoadStatus;
use super::stop_etas::{self, RouteEta, RouteStop, Speed};
use super::stops::{StopTimer, StopsProgress};

/// A fix belonging to a load: the unit the time series stores, with the
/// `tracking.updated` event to write alongside it (when anyone subscribes).
#[derive(Debug, Clone, PartialEq)]
pub struct TrackingPoint {
    pub load_id: LoadId,
    pub fix: GpsFix,
    pub event: Option<Event>,
    /// The stop milestones this fix made, written with it (both or neither);
    /// boxed, as all but a handful of a load's fixes make none.
    pub stops: Option<Box<StopsChange>>,
}

/// What a fix changed of its load's stops: the progress to store, and the
/// milestone events (`load.arrived`, `load.departed`) to write.
#[derive(Debug, Clone, PartialEq)]
pub struct StopsChange {
    pub progress: StopsProgress,
    pub events: Vec<Event>,
    /// What becomes of the load's detention clock (`None`: nothing).
    pub timer: Option<StopTimer>,
}

/// What is known of a load's movement: its status, its latest fixes and the
/// stops ahead (what its actor holds in memory, and what tracking views show).
#[derive(Debug, Clone, PartialEq)]
pub struct TrackingState {
    pub status: LoadStatus,
    /// Newest first; the first is the latest position.
    pub recent: Vec<GpsFix>,
    /// Every stop, in order, with what the truck did there.
    pub route: Vec<RouteStop>,
    /// The driver's clock as of the newest fix folded (`None`: none yet).
    pub driver: Option<DriverClock>,
    pub team: bool,
    pub speed: Speed,
}

impl TrackingState {
    /// The upcoming stops' ETAs, only while the load is on its way.
    pub fn estimate(&self) -> Option<RouteEta> {
        if !matches!(self.status, LoadStatus::Assigned | LoadStatus::InTransit) {
            return None;
        }
        stop_etas::estimate(
            &self.recent,
            &self.route,
            self.driver.as_ref(),
            self.team,
            &self.speed,
        )
    }
}

/// What storing a point did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Appended {
    Stored,
    /// A point with the same (load, timestamp) was already stored; the stored one is kept.
    Duplicate,
}
