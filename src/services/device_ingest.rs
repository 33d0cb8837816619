//! What becomes of a device's positions: each, checked by the API's rules for
//! fixes, becomes a fix of every load the device is attached to, through the
//! same write path as the API's fixes (`TrackingService::record_many`): durable
//! before the answer, deduplicated, out-of-order safe, with webhooks and
//! streams. A position that reaches no load taking fixes is accepted and not
//! stored: a device's queue must never jam on a load's status.

use chrono::{DateTime, Utc};

use super::devices::DeviceContext;
use super::tracking::{PointBatch, PointOutcome, TrackingService};
use crate::actors::LoadError;
use crate::domain::tracking::{GpsFix, MAX_AGE, MAX_FUTURE_SKEW, MAX_SPEED_MPH};
use crate::ingest::{DevicePosition, Protocol};

/// Positions taken from devices, by protocol and outcome.
pub const POSITIONS_METRIC: &str = "freight_device_positions_total";
/// Device posts refused, by protocol and reason.
pub const REFUSALS_METRIC: &str = "freight_device_refusals_total";

/// How a device's post went, position by position.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct IngestOutcome {
    /// Fixes stored (one position may be the fix of several loads).
    pub stored: usize,
    /// Fixes already stored with the same timestamp.
    pub duplicates: usize,
    /// Positions that reached no load taking fixes (none attached, or none
    /// `assigned` or `in_transit`): accepted, not stored.
    pub unattached: usize,
    /// Positions the API's rules refuse (too old, in the future, too fast):
    /// counted and skipped.
    pub invalid: usize,
    /// Why each position not stored was not (a reason of
    /// `ignored_positions::REASONS`), in the order sent.
    pub ignored: Vec<&'static str>,
}

impl IngestOutcome {
    /// Fixes beyond one per position: what the positions cost again for the
    /// further loads they fed.
    pub fn further_fixes(&self, positions: usize) -> usize {
        (self.stored + self.duplicates).saturating_sub(positions)
    }
}

/// Why a position is not a fix the API would take.
fn check(
    position: &DevicePosition,
    protocol: Protocol,
    now: DateTime<Utc>,
) -> Result<GpsFix, &'static str> {
    if position.timestamp > now + MAX_FUTURE_SKEW {
        return Err("future_timestamp");
    }
    if position.timestamp < now - MAX_AGE {
        return Err("too_old");
    }
    let speed_mph = match position.speed_mph {
        Some(speed) if !(0.0..=MAX_SPEED_MPH).contains(&speed) => return Err("bad_speed"),
        speed => speed,
    };
    let heading_deg = position.heading_deg.filter(|h| (0.0..=360.0).contains(h));
    Ok(GpsFix {
        timestamp: position.timestamp,
        lat: position.lat,
        lng: position.lng,
        speed_mph,
        heading_deg,
        source: protocol.source(),
    })
}

/// Records the positions of one post (valid ones already parsed; `refused`
/// counts those the parser refused) as fixes of the device's loads. Fails
/// only when storage or the write path cannot take them: the device retries.
pub async fn record(
    tracking: &TrackingService,
    device: &DeviceContext,
    positions: &[DevicePosition],
    protocol: Protocol,
    now: DateTime<Utc>,
) -> Result<IngestOutcome, LoadError> {
    let mut outcome = IngestOutcome::default();
    // Each position is one point per attached load, or one rejected point.
    let mut points = PointBatch::with_capacity(positions.len() * device.loads.len().max(1));
    let mut spans = Vec::with_capacity(positions.len());
    for position in positions {
        let start = points.len();
        match check(position, protocol, now) {
            Ok(_) if device.loads.is_empty() => {}
            Ok(fix) => {
                for load in device.loads.iter() {
                    points.submit(load.clone(), fix);
                }
            }
            Err(reason) => points.reject(reason),
        }
        spans.push(start..points.len());
    }
    let outcomes = points.record(tracking, &device.account).await;
    for span in spans {
        let mut reached = false;
        let mut rejected = None;
        for point in &outcomes[span.clone()] {
            match point {
                PointOutcome::Stored => {
                    outcome.stored += 1;
                    reached = true;
                }
                PointOutcome::Duplicate => {
                    outcome.duplicates += 1;
                    reached = true;
                }
                PointOutcome::Rejected(reason) => {
                    outcome.invalid += 1;
                    refused(protocol, reason);
                    rejected = Some(*reason);
                    reached = true;
                }
                // A load not taking fixes, or gone: not stored, not refused.
                PointOutcome::Refused(LoadError::NotTrackable(_) | LoadError::NotFound) => {}
                PointOutcome::Refused(
                    error @ (LoadError::Storage(_) | LoadError::Unavailable(_)),
                ) => return Err(error.clone()),
                PointOutcome::Refused(
                    error @ (LoadError::UnknownCarrier(_)
                    | LoadError::Transition(_)
                    | LoadError::ReferenceTaken(_)
                    | LoadError::Edit(_)),
                ) => {
                    tracing::warn!(%error, "a device's fix got an answer fixes never get");
                }
            }
        }
        if !reached {
            outcome.unattached += 1;
            outcome.ignored.push("no_active_load");
        } else if let Some(reason) = rejected {
            outcome.ignored.push(reason);
        }
    }
    for (label, n) in [
        ("stored", outcome.stored),
        ("duplicate", outcome.duplicates),
        ("unattached", outcome.unattached),
        ("invalid", outcome.invalid),
    ] {
        if n > 0 {
            metrics::counter!(POSITIONS_METRIC, "protocol" => protocol.as_str(), "outcome" => label)
                .increment(n as u64);
        }
    }
    Ok(outcome)
}

/// Counts a refused post or position.
pub fn refused(protocol: Protocol, reason: &'static str) {
    metrics::counter!(REFUSALS_METRIC, "protocol" => protocol.as_str(), "reason" => reason)
        .increment(1);
}

#[cfg(test)]
mod tests {
    use chrono::Duration;

    use super::*;
    use crate::domain::tracking::FixSource;

    fn position(at: DateTime<Utc>) -> DevicePosition {
        DevicePosition {
            timestamp: at,
            lat: 32.7,
            lng: -96.8,
            speed_mph: Some(55.0),
            heading_deg: Some(90.0),
            accuracy_m: None,
            altitude_m: None,
            battery_percent: None,
            charging: None,
        }
    }

    #[test]
    fn positions_follow_the_apis_rules_for_fixes() {
        let now = Utc::now();
        assert!(check(&position(now - Duration::minutes(1)), Protocol::OsmAnd, now).is_ok());
        assert_eq!(
            check(&position(now + Duration::minutes(6)), Protocol::OsmAnd, now),
            Err("future_timestamp")
        );
        assert_eq!(
            check(&position(now - Duration::days(31)), Protocol::OsmAnd, now),
            Err("too_old")
        );
        let fast = DevicePosition {
            speed_mph: Some(250.0),
            ..position(now)
        };
        assert_eq!(check(&fast, Protocol::OsmAnd, now), Err("bad_speed"));
        let unknown = DevicePosition {
            speed_mph: None,
            heading_deg: None,
            ..position(now)
        };
        let fix = check(&unknown, Protocol::Overland, now).unwrap();
        assert_eq!((fix.speed_mph, fix.heading_deg), (None, None));
        assert_eq!(
            fix.source,
            FixSource::Overland,
            "the fix records its protocol"
        );
    }
}
