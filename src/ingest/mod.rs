//! Device ingest protocols (issue 35): pure parsers from the raw parts of a
//! request to positions in the API's units (mph, degrees, UTC).
//!
//! Nothing here knows HTTP, storage or tokens beyond extracting them: route
//! handlers authenticate the token, then run the API's own fix validation
//! (age, future skew, the speed cap) on each [`DevicePosition`]. What this
//! layer does check is what parsing needs: numbers are finite, latitude and
//! longitude are on the globe, timestamps exist.
//!
//! Lenience rules shared by every protocol, because a device's queue retries
//! a refused post forever and cannot be reconfigured from here:
//! - a negative speed or course is "unknown" (None), not an error;
//! - telemetry the fix model has no use for yet (accuracy, altitude, battery,
//!   charging) is dropped when it does not parse rather than refusing the
//!   position; the fields a fix is made of (lat, lon, time, speed, heading)
//!   are refused with a reason naming them;
//! - unknown keys are ignored.

mod form;
mod json;
pub mod osmand;
pub mod overland;
pub mod owntracks;
mod time;
mod traccar;
pub mod trackers;
pub mod units;

use chrono::{DateTime, Utc};

use crate::domain::tracking::FixSource;

pub use osmand::{OsmAndRequest, parse_osmand};
pub use overland::{MAX_OVERLAND_LOCATIONS, bearer_token, parse_overland};
pub use owntracks::{basic_auth_token, parse_owntracks};
pub use units::SpeedUnit;

/// Which protocol a position came in by (recorded with the stored fix).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Protocol {
    /// OsmAnd-style query or form parameters: Traccar Client 7 and 10, the
    /// OsmAnd app, GPSLogger.
    OsmAnd,
    /// The JSON body Traccar Client 9 posts to the OsmAnd endpoint.
    TraccarJson,
    OwnTracks,
    Overland,
    /// Teltonika's binary protocol over TCP (`trackers::teltonika`).
    Teltonika,
    /// GT06's binary protocol over TCP (`trackers::gt06`).
    Gt06,
    /// Queclink's @Track text protocol over TCP (`trackers::queclink`).
    Queclink,
    /// H02's text protocol over TCP (`trackers::h02`).
    H02,
    /// OwnTracks' JSON messages through an MQTT broker (`--mqtt-broker`).
    OwnTracksMqtt,
}

impl Protocol {
    pub const ALL: [Self; 9] = [
        Self::OsmAnd,
        Self::TraccarJson,
        Self::OwnTracks,
        Self::Overland,
        Self::Teltonika,
        Self::Gt06,
        Self::Queclink,
        Self::H02,
        Self::OwnTracksMqtt,
    ];

    /// Stable name for metric labels: the stored fix's source.
    pub const fn as_str(self) -> &'static str {
        self.source().as_str()
    }

    /// What the stored fix records (the same name).
    pub const fn source(self) -> FixSource {
        match self {
            Self::OsmAnd => FixSource::OsmAnd,
            Self::TraccarJson => FixSource::Traccar,
            Self::OwnTracks => FixSource::OwnTracks,
            Self::Overland => FixSource::Overland,
            Self::Teltonika => FixSource::Teltonika,
            Self::Gt06 => FixSource::Gt06,
            Self::Queclink => FixSource::Queclink,
            Self::H02 => FixSource::H02,
            Self::OwnTracksMqtt => FixSource::OwnTracksMqtt,
        }
    }
}

/// One position as a device reported it, in the API's units: mph, degrees
/// clockwise from north in `[0, 360)`, UTC. Not yet checked against the API's
/// fix rules (age, future skew, speed cap): the caller does that.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct DevicePosition {
    pub timestamp: DateTime<Utc>,
    pub lat: f64,
    pub lng: f64,
    /// None when the device does not know (Traccar Client 9 and iOS send -1).
    pub speed_mph: Option<f64>,
    /// None when the device does not know (-1).
    pub heading_deg: Option<f64>,
    pub accuracy_m: Option<f64>,
    pub altitude_m: Option<f64>,
    /// 0 to 100.
    pub battery_percent: Option<f64>,
    pub charging: Option<bool>,
}

/// What one OsmAnd-endpoint request carried.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Parsed {
    Position(DevicePosition),
    /// The device is alive but sent no coordinates.
    Heartbeat,
}

/// Why a request or one position was refused. A bounded set: the names are
/// metric labels.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum RefusalReason {
    /// Not decodable as the protocol's shape (bad JSON, a lone `lat`, …).
    Malformed,
    MissingToken,
    /// A parameter given twice (or under two aliases) with different values.
    ConflictingParameter,
    BadLatitude,
    BadLongitude,
    BadTimestamp,
    BadSpeed,
    BadSpeedUnit,
    BadHeading,
    TooManyLocations,
}

impl RefusalReason {
    pub const ALL: [Self; 10] = [
        Self::Malformed,
        Self::MissingToken,
        Self::ConflictingParameter,
        Self::BadLatitude,
        Self::BadLongitude,
        Self::BadTimestamp,
        Self::BadSpeed,
        Self::BadSpeedUnit,
        Self::BadHeading,
        Self::TooManyLocations,
    ];

    pub const fn as_str(self) -> &'static str {
        match self {
            Self::Malformed => "malformed",
            Self::MissingToken => "missing_token",
            Self::ConflictingParameter => "conflicting_parameter",
            Self::BadLatitude => "bad_latitude",
            Self::BadLongitude => "bad_longitude",
            Self::BadTimestamp => "bad_timestamp",
            Self::BadSpeed => "bad_speed",
            Self::BadSpeedUnit => "bad_speed_unit",
            Self::BadHeading => "bad_heading",
            Self::TooManyLocations => "too_many_locations",
        }
    }
}

/// A refused request or position: a reason for metrics and a message for the
/// device's operator. Messages name the field, never echo values (a token
/// pasted into the wrong field must not reach a log).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{message}")]
pub struct Refusal {
    kind: RefusalReason,
    message: String,
}

impl Refusal {
    pub fn new(kind: RefusalReason, message: impl Into<String>) -> Self {
        Self {
            kind,
            message: message.into(),
        }
    }

    pub(crate) fn malformed(message: impl Into<String>) -> Self {
        Self::new(RefusalReason::Malformed, message)
    }

    pub fn kind(&self) -> RefusalReason {
        self.kind
    }

    /// Stable snake_case label for metrics.
    pub fn reason(&self) -> &'static str {
        self.kind.as_str()
    }

    pub fn message(&self) -> &str {
        &self.message
    }
}

/// A number as text: decimal, optionally signed or with an exponent, finite
/// (Rust also reads "inf" and "NaN", which no device means).
pub(crate) fn finite_number(raw: &str) -> Result<f64, ()> {
    match raw.trim().parse::<f64>() {
        Ok(v) if v.is_finite() => Ok(v),
        _ => Err(()),
    }
}

/// `true`/`false`/`1`/`0` as devices write a flag; anything else is unknown.
pub(crate) fn flag(raw: &str) -> Option<bool> {
    match raw.trim() {
        "1" | "true" | "TRUE" | "True" => Some(true),
        "0" | "false" | "FALSE" | "False" => Some(false),
        _ => None,
    }
}

// Checks shared by the protocols; `field` is the name as the protocol spells it.

pub(crate) fn latitude(value: f64, field: &str) -> Result<f64, Refusal> {
    if value.is_finite() && (-90.0..=90.0).contains(&value) {
        Ok(value)
    } else {
        Err(bad_latitude(field))
    }
}

pub(crate) fn longitude(value: f64, field: &str) -> Result<f64, Refusal> {
    if value.is_finite() && (-180.0..=180.0).contains(&value) {
        Ok(value)
    } else {
        Err(bad_longitude(field))
    }
}

pub(crate) fn bad_latitude(field: &str) -> Refusal {
    Refusal::new(
        RefusalReason::BadLatitude,
        format!("{field} must be a number of degrees from -90 to 90"),
    )
}

pub(crate) fn bad_longitude(field: &str) -> Refusal {
    Refusal::new(
        RefusalReason::BadLongitude,
        format!("{field} must be a number of degrees from -180 to 180"),
    )
}

/// Negative is "unknown"; the 200 mph cap is the caller's.
pub(crate) fn speed(
    value: Option<f64>,
    unit: SpeedUnit,
    field: &str,
) -> Result<Option<f64>, Refusal> {
    match value {
        None => Ok(None),
        Some(v) if !v.is_finite() => Err(Refusal::new(
            RefusalReason::BadSpeed,
            format!("{field} must be a finite number"),
        )),
        Some(v) if v < 0.0 => Ok(None),
        Some(v) => Ok(Some(unit.to_mph(v))),
    }
}

pub(crate) fn heading(value: Option<f64>, field: &str) -> Result<Option<f64>, Refusal> {
    match value {
        None => Ok(None),
        Some(v) if !v.is_finite() => Err(Refusal::new(
            RefusalReason::BadHeading,
            format!("{field} must be a finite number of degrees"),
        )),
        Some(v) => Ok(units::normalise_heading(v)),
    }
}

pub(crate) fn bad_speed(field: &str) -> Refusal {
    Refusal::new(RefusalReason::BadSpeed, format!("{field} must be a number"))
}

pub(crate) fn bad_heading(field: &str) -> Refusal {
    Refusal::new(
        RefusalReason::BadHeading,
        format!("{field} must be a number of degrees"),
    )
}

pub(crate) fn bad_timestamp(field: &str) -> Refusal {
    Refusal::new(
        RefusalReason::BadTimestamp,
        format!(
            "{field} must be Unix seconds, Unix milliseconds, ISO 8601 \
             or yyyy-MM-dd HH:mm:ss in UTC"
        ),
    )
}

/// Telemetry outside its meaning (negative accuracy, a battery above 100 %)
/// is dropped, not refused: see the module docs.
pub(crate) fn accuracy(value: Option<f64>) -> Option<f64> {
    value.filter(|v| v.is_finite() && *v >= 0.0)
}

pub(crate) fn altitude(value: Option<f64>) -> Option<f64> {
    value.filter(|v| v.is_finite())
}

pub(crate) fn battery_percent(value: Option<f64>) -> Option<f64> {
    value.filter(|v| v.is_finite() && (0.0..=100.0).contains(v))
}

/// A battery level as a fraction (Traccar Client 9, Overland); -1 is unknown.
pub(crate) fn battery_fraction(value: Option<f64>) -> Option<f64> {
    value
        .filter(|v| v.is_finite() && (0.0..=1.0).contains(v))
        .map(|v| v * 100.0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn protocol_names_are_stable() {
        let names: Vec<_> = Protocol::ALL.iter().map(|p| p.as_str()).collect();
        assert_eq!(
            names,
            [
                "osmand",
                "traccar",
                "owntracks",
                "overland",
                "teltonika",
                "gt06",
                "queclink",
                "h02",
                "owntracks_mqtt"
            ]
        );
        for protocol in Protocol::ALL {
            let source = protocol.source();
            assert_eq!(FixSource::from_code(source.code()), Some(source));
            assert_eq!(FixSource::parse(source.as_str()), Some(source));
        }
    }

    #[test]
    fn refusal_reasons_are_distinct_snake_case() {
        let names: Vec<_> = RefusalReason::ALL.iter().map(|r| r.as_str()).collect();
        for name in &names {
            assert!(
                name.bytes().all(|b| b.is_ascii_lowercase() || b == b'_'),
                "{name}"
            );
        }
        let mut unique = names.clone();
        unique.sort_unstable();
        unique.dedup();
        assert_eq!(unique.len(), names.len());
        let refusal = Refusal::new(RefusalReason::BadLatitude, "lat is off");
        assert_eq!(refusal.reason(), "bad_latitude");
        assert_eq!(refusal.kind(), RefusalReason::BadLatitude);
        assert_eq!(refusal.to_string(), "lat is off");
    }

    #[test]
    fn coordinates_are_range_checked() {
        assert_eq!(latitude(90.0, "lat"), Ok(90.0));
        assert_eq!(latitude(-90.0, "lat"), Ok(-90.0));
        assert_eq!(
            latitude(90.000001, "lat").unwrap_err().reason(),
            "bad_latitude"
        );
        assert_eq!(
            latitude(f64::NAN, "lat").unwrap_err().reason(),
            "bad_latitude"
        );
        assert_eq!(longitude(-180.0, "lon"), Ok(-180.0));
        assert_eq!(
            longitude(180.5, "lon").unwrap_err().reason(),
            "bad_longitude"
        );
        let err = longitude(f64::INFINITY, "longitude").unwrap_err();
        assert_eq!(err.reason(), "bad_longitude");
        assert!(err.message().contains("longitude"), "{}", err.message());
    }

    #[test]
    fn telemetry_outside_its_meaning_is_dropped() {
        assert_eq!(accuracy(Some(-1.0)), None);
        assert_eq!(accuracy(Some(4.5)), Some(4.5));
        assert_eq!(altitude(Some(-12.0)), Some(-12.0));
        assert_eq!(altitude(Some(f64::NAN)), None);
        assert_eq!(battery_percent(Some(101.0)), None);
        assert_eq!(battery_percent(Some(88.0)), Some(88.0));
        assert_eq!(battery_fraction(Some(-1.0)), None);
        let level = battery_fraction(Some(0.42)).unwrap();
        assert!((level - 42.0).abs() < 1e-6, "{level}");
    }
}
