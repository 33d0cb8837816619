//! Estimated time of arrival from the latest fix, recent fixes and the destination.
//!
//! The destination has only city, state and ZIP, so its position is the ZIP's
//! centroid. Method:
//!
//! 1. Remaining road miles = great-circle miles to the destination × 1.2, the
//!    typical circuity of US road travel between cities.
//! 2. Speed = mean of the *moving* speeds (≥ 5 mph) reported in the hour before the
//!    latest fix; where fixes carry no speed, the speed between consecutive fixes is
//!    used instead. It is clamped to 20–70 mph so one burst or crawl does not swing
//!    the estimate.
//! 3. With no moving speed in that hour (the truck is stopped: a break, a
//!    dock, traffic), 45 mph is assumed: a long-haul average including stops.
//! 4. ETA = time of the latest fix + remaining miles / speed; within one mile of the
//!    destination, the ETA is the latest fix's time.

use chrono::{DateTime, Duration, Utc};

use super::fix::GpsFix;
use super::stop_plan::StopRef;
use crate::geo::haversine_miles;

pub const ROAD_CIRCUITY: f64 = 1.2;
pub const MOVING_MPH: f64 = 5.0;
pub const MIN_SPEED_MPH: f64 = 20.0;
pub const MAX_SPEED_MPH: f64 = 70.0;
pub const STOPPED_DEFAULT_MPH: f64 = 45.0;
pub const SPEED_WINDOW: Duration = Duration::hours(1);
pub const ARRIVED_MILES: f64 = 1.0;

/// A delivery is at risk of being late while its ETA is more than this past
/// the delivery appointment.
pub const LATE_RISK_AFTER: Duration = Duration::minutes(15);
/// `load.eta_changed` goes out when the ETA moves at least this far from the
/// last one sent...
pub const ETA_CHANGE: Duration = Duration::minutes(15);
/// ...and at most once per this much fix time, unless late risk flips.
pub const ETA_CHANGE_EVERY: Duration = Duration::minutes(10);
/// A load's ETA is looked at again once its newest fix is this much newer
/// than the last one looked at: the ETA rarely moves faster, and ingest
/// must not pay for an estimate per fix.
pub const ETA_CHECK_EVERY: Duration = Duration::minutes(1);

/// Whether an ETA puts the delivery at risk of being late.
pub fn late_risk(eta: DateTime<Utc>, appointment: Option<DateTime<Utc>>) -> bool {
    appointment.is_some_and(|appointment| eta > appointment + LATE_RISK_AFTER)
}

/// The ETA last sent in `load.eta_changed` (times in µs), stored with the
/// load's stop progress so that a restart does not send it again.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct EtaSent {
    pub eta: i64,
    /// The time of the fix that moved it.
    pub at: i64,
    pub late_risk: bool,
}

/// A new estimate and its late risk, against the last one sent: `Some` when
/// it must be sent.
pub fn change_to_send(
    sent: Option<&EtaSent>,
    eta: DateTime<Utc>,
    fix_at: DateTime<Utc>,
    late_risk: bool,
) -> Option<EtaSent> {
    let now = EtaSent {
        eta: eta.timestamp_micros(),
        at: fix_at.timestamp_micros(),
        late_risk,
    };
    let Some(sent) = sent else {
        return Some(now);
    };
    let micros = |d: Duration| d.num_microseconds().unwrap_or(i64::MAX);
    let flipped = sent.late_risk != now.late_risk;
    let moved = (now.eta - sent.eta).abs() >= micros(ETA_CHANGE);
    let quiet = now.at - sent.at >= micros(ETA_CHANGE_EVERY);
    (flipped || (moved && quiet)).then_some(now)
}

/// A `load.eta_changed` to send with a fix.
#[derive(Debug, Clone, PartialEq)]
pub struct EtaChanged {
    pub stop: StopRef,
    pub eta: DateTime<Utc>,
    /// The ETA sent before; `None` for the load's first.
    pub previous: Option<DateTime<Utc>>,
    pub late_risk: bool,
    pub appointment: Option<DateTime<Utc>>,
    /// The event's sequence number.
    pub sequence: u64,
}

#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Eta {
    pub at: DateTime<Utc>,
    pub remaining_miles: f64,
    pub assumed_mph: f64,
}

/// `recent` holds fixes newest first, the latest among them.
pub fn estimate(recent: &[GpsFix], destination: (f64, f64)) -> Option<Eta> {
    let latest = recent.first()?;
    let straight = haversine_miles(latest.lat, latest.lng, destination.0, destination.1);
    let remaining_miles = straight * ROAD_CIRCUITY;
    let assumed_mph = moving_speed(recent).map_or(STOPPED_DEFAULT_MPH, |mph| {
        mph.clamp(MIN_SPEED_MPH, MAX_SPEED_MPH)
    });
    if straight <= ARRIVED_MILES {
        return Some(Eta {
            at: latest.timestamp,
            remaining_miles,
            assumed_mph,
        });
    }
    let seconds = (remaining_miles / assumed_mph * 3600.0).round() as i64;
    Some(Eta {
        at: latest.timestamp + Duration::seconds(seconds),
        remaining_miles,
        assumed_mph,
    })
}

/// Mean moving speed in the window before the latest fix, if the truck moved.
fn moving_speed(recent: &[GpsFix]) -> Option<f64> {
    let latest = recent.first()?;
    let window: Vec<&GpsFix> = recent
        .iter()
        .take_while(|f| latest.timestamp - f.timestamp <= SPEED_WINDOW)
        .collect();
    let mut speeds = Vec::with_capacity(window.len());
    for (i, fix) in window.iter().enumerate() {
        let speed = fix.speed_mph.or_else(|| {
            // No reported speed: distance over time to the previous (older) fix.
            let older = window.get(i + 1)?;
            let hours = (fix.timestamp - older.timestamp).num_milliseconds() as f64 / 3.6e6;
            (hours > 0.0).then(|| haversine_miles(older.lat, older.lng, fix.lat, fix.lng) / hours)
        });
        if let Some(speed) = speed.filter(|s| *s >= MOVING_MPH) {
            speeds.push(speed);
        }
    }
    (!speeds.is_empty()).then(|| speeds.iter().sum::<f64>() / speeds.len() as f64)
}

#[cfg(test)]
mod change_tests {
    use super::*;

    fn t(minutes: i64) -> DateTime<Utc> {
        DateTime::from_timestamp(1_790_000_000 + minutes * 60, 0).unwrap()
    }

    #[test]
    fn an_eta_is_sent_first_then_when_it_moves_15_minutes_at_most_every_10_or_risk_flips() {
        let appointment = Some(t(600));
        let send = |sent: Option<&EtaSent>, eta, at| {
            change_to_send(sent, eta, at, late_risk(eta, appointment))
        };
        let first = send(None, t(500), t(0)).unwrap();
        assert!(!first.late_risk);
        // Moved 14 minutes: no; 15 minutes but 5 minutes after the last: no.
        assert_eq!(send(Some(&first), t(514), t(20)), None);
        assert_eq!(send(Some(&first), t(515), t(5)), None);
        let moved = send(Some(&first), t(515), t(10)).unwrap();
        // Late risk flips (ETA past 600 + 15): sent at once.
        let late = send(Some(&moved), t(616), t(11)).unwrap();
        assert!(late.late_risk);
        assert!(late_risk(t(616), appointment));
        assert!(!late_risk(t(615), appointment));
        assert!(!late_risk(t(10_000), None));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::domain::timestamp::parse_utc;
    use crate::domain::tracking::FixSource;

    fn fix(at: &str, lat: f64, lng: f64, speed: Option<f64>) -> GpsFix {
        GpsFix {
            timestamp: parse_utc(at).unwrap(),
            lat,
            lng,
            speed_mph: speed,
            heading_deg: None,
            source: FixSource::Api,
        }
    }

    const ATLANTA: (f64, f64) = (33.749, -84.388);

    #[test]
    fn uses_recent_moving_speed_over_road_distance() {
        // Dallas, moving at 60 mph.
        let recent = [
            fix("2026-06-01T12:00:00Z", 32.7767, -96.7970, Some(60.0)),
            fix("2026-06-01T11:50:00Z", 32.70, -96.90, Some(60.0)),
        ];
        let eta = estimate(&recent, ATLANTA).unwrap();
        let straight = haversine_miles(32.7767, -96.7970, ATLANTA.0, ATLANTA.1);
        assert!((eta.remaining_miles - straight * 1.2).abs() < 1e-6);
        assert_eq!(eta.assumed_mph, 60.0);
        let hours = (eta.at - recent[0].timestamp).num_seconds() as f64 / 3600.0;
        assert!((hours - eta.remaining_miles / 60.0).abs() < 0.01, "{hours}");
    }

    #[test]
    fn a_stopped_truck_gets_the_default_speed() {
        let recent = [
            fix("2026-06-01T12:00:00Z", 32.7767, -96.7970, Some(0.0)),
            fix("2026-06-01T11:30:00Z", 32.7767, -96.7970, Some(0.0)),
        ];
        assert_eq!(
            estimate(&recent, ATLANTA).unwrap().assumed_mph,
            STOPPED_DEFAULT_MPH
        );
    }

    #[test]
    fn speeds_are_derived_from_positions_and_clamped() {
        // 1 degree of latitude (~69 miles) in one hour, no reported speed.
        let recent = [
            fix("2026-06-01T12:00:00Z", 33.0, -90.0, None),
            fix("2026-06-01T11:00:00Z", 32.0, -90.0, None),
        ];
        let eta = estimate(&recent, ATLANTA).unwrap();
        assert!((eta.assumed_mph - 69.1).abs() < 0.5, "{}", eta.assumed_mph);
        let fast = [fix("2026-06-01T12:00:00Z", 33.0, -90.0, Some(120.0))];
        assert_eq!(estimate(&fast, ATLANTA).unwrap().assumed_mph, MAX_SPEED_MPH);
        let old_speed = [
            fix("2026-06-01T12:00:00Z", 33.0, -90.0, None),
            fix("2026-06-01T09:00:00Z", 32.0, -90.0, Some(65.0)),
        ];
        assert_eq!(
            estimate(&old_speed, ATLANTA).unwrap().assumed_mph,
            STOPPED_DEFAULT_MPH
        );
    }

    #[test]
    fn at_the_destination_the_eta_is_now() {
        let recent = [fix("2026-06-01T12:00:00Z", 33.7491, -84.3881, Some(10.0))];
        let eta = estimate(&recent, ATLANTA).unwrap();
        assert_eq!(eta.at, recent[0].timestamp);
        assert!(estimate(&[], ATLANTA).is_none());
    }
}
