//! GPS fixes: what a telematics device reports, validated at the boundary.

use chrono::{DateTime, Duration, Utc};

use super::event::Event;
use super::ids::LoadId;
use super::load::LoadStatus;

/// How far ahead of the server's clock a fix may be dated (device clock skew).
pub const MAX_FUTURE_SKEW: Duration = Duration::minutes(5);
/// How old a fix may be: a device that was offline uploads its buffer, but not forever.
pub const MAX_AGE: Duration = Duration::days(30);
/// Fastest plausible ground speed, in mph: anything above is a unit or device error.
pub const MAX_SPEED_MPH: f64 = 200.0;

/// One position report. Speed in miles per hour; heading in degrees clockwise from
/// true north (0 = north, 90 = east). Both are optional: a device may not know them.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct GpsFix {
    pub timestamp: DateTime<Utc>,
    pub lat: f64,
    pub lng: f64,
    pub speed_mph: Option<f64>,
    pub heading_deg: Option<f64>,
}

/// A fix belonging to a load: the unit the time series stores, with the
/// `tracking.updated` event to write alongside it (when anyone subscribes).
#[derive(Debug, Clone, PartialEq)]
pub struct TrackingPoint {
    pub load_id: LoadId,
    pub fix: GpsFix,
    pub event: Option<Event>,
}

/// What is known of a load's movement: its status, its latest fixes and where
/// it is going (what its actor holds in memory, and what tracking views show).
#[derive(Debug, Clone, PartialEq)]
pub struct TrackingState {
    pub status: LoadStatus,
    /// Newest first; the first is the latest position.
    pub recent: Vec<GpsFix>,
    /// The destination ZIP's centroid, if the ZIP is known.
    pub destination: Option<(f64, f64)>,
}

/// What storing a point did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Appended {
    Stored,
    /// A point with the same (load, timestamp) was already stored; the stored one is kept.
    Duplicate,
}
