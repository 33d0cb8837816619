//! GPS fixes: what a telematics device reports, validated at the boundary,
//! and how it arrived. The bottom of the tracking types: stops, ETA and the
//! driver's clock fold these, and nothing here knows of them.

use chrono::{DateTime, Duration, Utc};

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
    /// How the fix arrived; stored with it and shown in the history.
    pub source: FixSource,
}

/// How a fix arrived: the API's own tracking routes, or one of the device
/// protocols. The code is what the embedded store keeps in each point (one
/// byte); the name is what ScyllaDB, the API and the metrics use. Both are
/// stable: stored points carry them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, serde::Serialize, utoipa::ToSchema)]
#[serde(rename_all = "lowercase")]
pub enum FixSource {
    #[default]
    Api,
    /// OsmAnd-style parameters: Traccar Client 7 and 10, the OsmAnd app, GPSLogger.
    OsmAnd,
    /// The JSON body Traccar Client 9 posts to the OsmAnd endpoint.
    Traccar,
    OwnTracks,
    Overland,
    /// A Teltonika unit over TCP (Codec 8/8E/16).
    Teltonika,
    /// A GT06 (Concox/Jimi or a clone) over TCP.
    Gt06,
    /// A Queclink unit (@Track text) over TCP.
    Queclink,
    /// An H02 unit (text) over TCP.
    H02,
    /// OwnTracks publishing through an MQTT broker.
    #[serde(rename = "owntracks_mqtt")]
    OwnTracksMqtt,
}

impl FixSource {
    pub const ALL: [Self; 10] = [
        Self::Api,
        Self::OsmAnd,
        Self::Traccar,
        Self::OwnTracks,
        Self::Overland,
        Self::Teltonika,
        Self::Gt06,
        Self::Queclink,
        Self::H02,
        Self::OwnTracksMqtt,
    ];

    pub const fn as_str(self) -> &'static str {
        match self {
            Self::Api => "api",
            Self::OsmAnd => "osmand",
            Self::Traccar => "traccar",
            Self::OwnTracks => "owntracks",
            Self::Overland => "overland",
            Self::Teltonika => "teltonika",
            Self::Gt06 => "gt06",
            Self::Queclink => "queclink",
            Self::H02 => "h02",
            Self::OwnTracksMqtt => "owntracks_mqtt",
        }
    }

    pub const fn code(self) -> u8 {
        match self {
            Self::Api => 0,
            Self::OsmAnd => 1,
            Self::Traccar => 2,
            Self::OwnTracks => 3,
            Self::Overland => 4,
            Self::Teltonika => 5,
            Self::Gt06 => 6,
            Self::Queclink => 7,
            Self::H02 => 8,
            Self::OwnTracksMqtt => 9,
        }
    }

    /// A code from a newer build reads as `None`: the caller decides.
    pub fn from_code(code: u8) -> Option<Self> {
        Self::ALL.into_iter().find(|s| s.code() == code)
    }

    pub fn parse(name: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|s| s.as_str() == name)
    }
}
