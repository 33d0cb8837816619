//! Positions a device sent that were answered as taken but not stored, by
//! reason: each app is answered as it needs (a refused position would be sent
//! again forever), so without this only `/metrics` would know that a phone's
//! clock runs an hour ahead or that its only load was delivered, while its
//! `last_seen_at` says it is healthy.
//!
//! Kept in this process's memory, since the instance started: each instance
//! of several counts what it received.

use std::sync::Mutex;

use chrono::{DateTime, Utc};

pub use crate::domain::device::Ignored;
use crate::domain::ids::DeviceId;
use crate::shared_map::SharedMap;

/// Why a position was not stored (the reasons `GET /v1/devices/{id}` shows).
pub const REASONS: &[(&str, &str)] = &[
    (
        "future_timestamp",
        "its time is more than 5 minutes ahead of the server's clock (the phone's clock or time zone is wrong)",
    ),
    ("too_old", "its time is more than 30 days ago"),
    ("bad_speed", "its speed is negative or over 200 mph"),
    (
        "no_fix",
        "the tracker had no satellite fix (it repeats its last place): acknowledged, not stored",
    ),
    (
        "no_active_load",
        "the device feeds no load that is assigned or in transit (none attached, or all delivered, cancelled or still posted)",
    ),
];

#[derive(Default)]
pub struct IgnoredPositions(SharedMap<DeviceId, Mutex<Ignored>>);

impl IgnoredPositions {
    /// Notes a post's ignored positions, one reason each, received `at`.
    pub fn note(&self, device: &DeviceId, reasons: &[&'static str], at: DateTime<Utc>) {
        let Some(&last) = reasons.last() else {
            return;
        };
        let entry = self.0.entry(device.clone()).or_default();
        let mut ignored = entry.lock().unwrap_or_else(|p| p.into_inner());
        for reason in reasons {
            *ignored.counts.entry(reason).or_default() += 1;
        }
        ignored.last = Some((last, at));
    }

    pub fn of(&self, device: &DeviceId) -> Ignored {
        self.0
            .get(device)
            .map(|entry| entry.lock().unwrap_or_else(|p| p.into_inner()).clone())
            .unwrap_or_default()
    }

    pub fn forget(&self, device: &DeviceId) {
        self.0.remove(device);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_per_reason_and_the_latest() {
        let ignored = IgnoredPositions::default();
        let device = DeviceId::generate();
        let at = Utc::now();
        assert_eq!(ignored.of(&device), Ignored::default());
        ignored.note(&device, &["too_old", "future_timestamp", "too_old"], at);
        ignored.note(&device, &[], at + chrono::Duration::seconds(5));
        let seen = ignored.of(&device);
        assert_eq!(seen.last, Some(("too_old", at)));
        assert_eq!(seen.counts.get("too_old"), Some(&2));
        assert_eq!(seen.counts.get("future_timestamp"), Some(&1));
        assert!(REASONS.iter().any(|(r, _)| *r == "no_active_load"));
    }
}
