//! A GPS fix as a load's state holds it.

use crate::domain::tracking::{FixSource, GpsFix};

/// A GPS fix as held in memory: 48 bytes (40 without the source, which
/// alignment rounds up).
#[derive(Debug, Clone, Copy, PartialEq)]
pub(in crate::actors) struct HeldFix {
    pub(in crate::actors) micros: i64,
    pub(in crate::actors) lat: f64,
    pub(in crate::actors) lng: f64,
    pub(in crate::actors) speed: f64,
    pub(in crate::actors) heading: f64,
    pub(in crate::actors) source: FixSource,
}

impl HeldFix {
    pub(in crate::actors) fn new(fix: &GpsFix) -> Self {
        HeldFix {
            micros: fix.timestamp.timestamp_micros(),
            lat: fix.lat,
            lng: fix.lng,
            speed: fix.speed_mph.unwrap_or(f64::NAN),
            heading: fix.heading_deg.unwrap_or(f64::NAN),
            source: fix.source,
        }
    }

    pub(in crate::actors) fn fix(&self) -> GpsFix {
        let optional = |v: f64| (!v.is_nan()).then_some(v);
        GpsFix {
            timestamp: chrono::DateTime::from_timestamp_micros(self.micros).unwrap_or_default(),
            lat: self.lat,
            lng: self.lng,
            speed_mph: optional(self.speed),
            heading_deg: optional(self.heading),
            source: self.source,
        }
    }
}
