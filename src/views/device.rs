//! Devices as clients see them, and the settings to type into each app.

use std::collections::BTreeMap;

use serde::Serialize;
use utoipa::ToSchema;

use crate::domain::device::{Device, Standing};
use crate::domain::ids::LoadId;
use crate::domain::timestamp::format;

/// What a device may send and feed, and what it may send now.
#[derive(Serialize, ToSchema)]
pub struct AllowanceView {
    /// The sustained rate; a position fed to several loads counts once per load.
    pub positions_per_second: f64,
    /// Positions it may send at once after a quiet spell.
    pub burst: u32,
    /// Loads (not delivered or cancelled) it may feed at once.
    pub max_loads: usize,
    /// Positions it may send now; below zero, the debt a large batch left,
    /// waited off at the sustained rate before the next post is taken.
    pub available: i64,
}

/// Positions the device sent that were answered as taken but not stored,
/// since this instance started.
#[derive(Serialize, ToSchema)]
pub struct IgnoredView {
    /// The latest one's reason: `future_timestamp`, `too_old`, `bad_speed` or
    /// `no_active_load` (see the guide's "Connect a device").
    #[schema(required = true, value_type = Option<String>)]
    pub last_reason: Option<&'static str>,
    /// When it arrived.
    #[schema(required = true, format = DateTime)]
    pub last_at: Option<String>,
    /// How many, per reason.
    #[schema(value_type = BTreeMap<String, u64>)]
    pub counts: BTreeMap<&'static str, u64>,
}

/// A device. `last_seen_at` is when a post of it last arrived.
#[derive(Serialize, ToSchema)]
#[schema(as = Device)]
pub struct DeviceView {
    #[schema(value_type = String, examples("dev_01jd8y6m2x0q3v5p7r9t1w3y5z"))]
    pub id: String,
    pub name: String,
    #[schema(required = true, value_type = Option<String>)]
    pub carrier_id: Option<String>,
    /// What the device calls itself (a tracker's IMEI, an OwnTracks
    /// `user/device`), if set.
    #[schema(required = true, value_type = Option<String>)]
    pub identifier: Option<String>,
    /// The UTC offset of the local times the unit reports (GT06), if set.
    #[schema(required = true, value_type = Option<String>)]
    pub time_zone: Option<String>,
    pub created_at: String,
    #[schema(required = true)]
    pub last_seen_at: Option<String>,
    /// The loads it is attached to (its positions become their fixes while
    /// they are `assigned` or `in_transit`).
    #[schema(value_type = Vec<String>)]
    pub loads: Vec<String>,
    pub allowance: AllowanceView,
    pub ignored_positions: IgnoredView,
}

impl DeviceView {
    pub fn new(device: &Device, loads: &[LoadId], standing: &Standing) -> Self {
        let limits = standing.limits;
        let ignored = &standing.ignored;
        DeviceView {
            id: device.id.to_string(),
            name: device.name.clone(),
            carrier_id: device.carrier_id.as_ref().map(ToString::to_string),
            identifier: device.identifier.clone(),
            time_zone: device.time_zone.clone(),
            created_at: format(&device.created_at),
            last_seen_at: device.last_seen_at.as_ref().map(format),
            loads: loads.iter().map(ToString::to_string).collect(),
            allowance: AllowanceView {
                positions_per_second: limits.positions_per_second,
                burst: limits.burst,
                max_loads: limits.max_loads,
                available: standing.available.floor() as i64,
            },
            ignored_positions: IgnoredView {
                last_reason: ignored.last.map(|(reason, _)| reason),
                last_at: ignored.last.map(|(_, at)| format(&at)),
                counts: ignored.counts.clone(),
            },
        }
    }
}

/// A load's device, as `GET /v1/loads/{id}` shows it (`device`).
#[derive(Serialize, ToSchema)]
pub struct AttachedDevice {
    #[schema(value_type = String)]
    pub id: String,
    pub name: String,
    #[schema(required = true)]
    pub last_seen_at: Option<String>,
}

impl AttachedDevice {
    pub fn new(device: &Device) -> Self {
        AttachedDevice {
            id: device.id.to_string(),
            name: device.name.clone(),
            last_seen_at: device.last_seen_at.as_ref().map(format),
        }
    }
}

/// A new device: as [`DeviceView`], with its token (shown this once) and
/// what to type into each app.
#[derive(Serialize, ToSchema)]
pub struct NewDeviceView {
    #[schema(value_type = String, examples("dev_01jd8y6m2x0q3v5p7r9t1w3y5z"))]
    pub id: String,
    pub name: String,
    #[schema(required = true, value_type = Option<String>)]
    pub carrier_id: Option<String>,
    #[schema(required = true, value_type = Option<String>)]
    pub identifier: Option<String>,
    #[schema(required = true, value_type = Option<String>)]
    pub time_zone: Option<String>,
    pub created_at: String,
    /// Null: a new device has posted nothing yet.
    #[schema(required = true)]
    pub last_seen_at: Option<String>,
    #[schema(value_type = Vec<String>)]
    pub loads: Vec<String>,
    /// The device's token: it authenticates only this device's position posts.
    /// Shown once; only its hash is kept.
    pub token: String,
    pub ingest: IngestSettings,
}

impl NewDeviceView {
    pub fn new(device: &Device, token: String, ingest: IngestSettings) -> Self {
        NewDeviceView {
            id: device.id.to_string(),
            name: device.name.clone(),
            carrier_id: device.carrier_id.as_ref().map(ToString::to_string),
            identifier: device.identifier.clone(),
            time_zone: device.time_zone.clone(),
            created_at: format(&device.created_at),
            last_seen_at: None,
            loads: Vec::new(),
            token,
            ingest,
        }
    }
}

/// Per app, the exact settings that make it post to this device.
#[derive(Serialize, ToSchema)]
pub struct IngestSettings {
    /// Traccar Client (Android, iOS): Server URL and Device identifier.
    pub traccar_client: UrlAndIdentifier,
    /// OsmAnd (online tracking web address).
    pub osmand: UrlOnly,
    /// GPSLogger (custom URL, GET).
    pub gpslogger: UrlOnly,
    /// OwnTracks (HTTP mode): URL, and the token as password (any user name).
    pub owntracks: UrlAndCredentials,
    /// Overland (receiver endpoint).
    pub overland: UrlOnly,
}

#[derive(Serialize, ToSchema)]
pub struct UrlAndIdentifier {
    pub url: String,
    pub identifier: String,
}

#[derive(Serialize, ToSchema)]
pub struct UrlOnly {
    pub url: String,
}

#[derive(Serialize, ToSchema)]
pub struct UrlAndCredentials {
    pub url: String,
    pub username: String,
    pub password: String,
}

impl IngestSettings {
    /// For a device with `token`, at the service's `origin` (`https://host`).
    pub fn new(origin: &str, token: &str) -> Self {
        let osmand = format!("{origin}/v1/ingest/osmand");
        IngestSettings {
            traccar_client: UrlAndIdentifier {
                url: osmand.clone(),
                identifier: token.to_owned(),
            },
            // OsmAnd fills {0}..{6}: lat, lon, time (ms), hdop, altitude,
            // speed (m/s), bearing.
            osmand: UrlOnly {
                url: format!(
                    "{osmand}?id={token}&lat={{0}}&lon={{1}}&timestamp={{2}}&hdop={{3}}\
                     &altitude={{4}}&speed={{5}}&bearing={{6}}&speed_unit=mps"
                ),
            },
            gpslogger: UrlOnly {
                url: format!(
                    "{osmand}?id={token}&lat=%LAT&lon=%LON&timestamp=%TIMESTAMP&speed=%SPD\
                     &bearing=%DIR&accuracy=%ACC&altitude=%ALT&batt=%BATT&speed_unit=mps"
                ),
            },
            owntracks: UrlAndCredentials {
                url: format!("{origin}/v1/ingest/owntracks"),
                username: "freight".to_owned(),
                password: token.to_owned(),
            },
            overland: UrlOnly {
                url: format!("{origin}/v1/ingest/overland?token={token}"),
            },
        }
    }
}
