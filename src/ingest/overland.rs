//! Overland (iOS): batches of GeoJSON Point features.
//!
//! Only the batch's shape can refuse the batch: a location that fails is an
//! inner `Err` for the caller to count and skip, because Overland resends a
//! refused batch forever and one bad point would jam the queue. Each
//! location is kept as raw JSON until it is parsed on its own, so a location
//! of an unexpected shape spoils only itself.

use std::fmt;

use serde::Deserialize;
use serde::de::{Deserializer, IgnoredAny, SeqAccess, Visitor};
use serde_json::value::RawValue;

use super::json::{Object, Scalar};
use super::units::SpeedUnit;
use super::{
    DevicePosition, Refusal, RefusalReason, accuracy, altitude, bad_heading, bad_latitude,
    bad_longitude, bad_speed, bad_timestamp, battery_fraction, heading, latitude, longitude, speed,
};

/// The most locations one batch may carry (Overland sends 200 by default).
pub const MAX_OVERLAND_LOCATIONS: usize = 1_000;

#[derive(Deserialize)]
struct Batch<'a> {
    #[serde(borrow, default)]
    locations: Option<Vec<&'a RawValue>>,
}

#[derive(Deserialize)]
struct Feature<'a> {
    #[serde(borrow, default)]
    geometry: Option<Object<Geometry<'a>>>,
    #[serde(borrow, default)]
    properties: Option<Object<Properties<'a>>>,
}

#[derive(Deserialize)]
struct Geometry<'a> {
    #[serde(rename = "type", borrow, default)]
    kind: Scalar<'a>,
    #[serde(borrow, default)]
    coordinates: Coordinates<'a>,
}

#[derive(Deserialize, Default)]
struct Properties<'a> {
    #[serde(borrow, default)]
    timestamp: Scalar<'a>,
    #[serde(borrow, default)]
    speed: Scalar<'a>,
    #[serde(borrow, default)]
    course: Scalar<'a>,
    #[serde(borrow, default)]
    horizontal_accuracy: Scalar<'a>,
    #[serde(borrow, default)]
    altitude: Scalar<'a>,
    #[serde(borrow, default)]
    battery_level: Scalar<'a>,
    #[serde(borrow, default)]
    battery_state: Scalar<'a>,
}

/// `[longitude, latitude, …]` read without allocating; `len` is how many
/// positions the array held.
#[derive(Default)]
struct Coordinates<'a> {
    lon: Scalar<'a>,
    lat: Scalar<'a>,
    len: usize,
}

impl<'de: 'a, 'a> Deserialize<'de> for Coordinates<'a> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct CoordinatesVisitor;
        impl<'de> Visitor<'de> for CoordinatesVisitor {
            type Value = Coordinates<'de>;

            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("an array [longitude, latitude]")
            }

            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
                let mut coordinates = Coordinates::default();
                if let Some(lon) = seq.next_element()? {
                    coordinates.lon = lon;
                    coordinates.len = 1;
                }
                if let Some(lat) = seq.next_element()? {
                    coordinates.lat = lat;
                    coordinates.len = 2;
                }
                while seq.next_element::<IgnoredAny>()?.is_some() {
                    coordinates.len += 1;
                }
                Ok(coordinates)
            }
        }
        deserializer.deserialize_seq(CoordinatesVisitor)
    }
}

/// Parses a batch. The outer `Err` refuses the whole post (not JSON, no
/// `locations` array, too many locations); each inner result is one location.
pub fn parse_overland(body: &[u8]) -> Result<Vec<Result<DevicePosition, Refusal>>, Refusal> {
    let Object(batch) = serde_json::from_slice::<Object<Batch<'_>>>(body).map_err(|err| {
        Refusal::malformed(match err.classify() {
            serde_json::error::Category::Data if body.trim_ascii().starts_with(b"{") => {
                "locations must be an array of GeoJSON features"
            }
            serde_json::error::Category::Data => "the body must be a JSON object with locations",
            _ => "the body is not valid JSON",
        })
    })?;
    let locations = batch
        .locations
        .ok_or_else(|| Refusal::malformed("the body has no locations array"))?;
    if locations.len() > MAX_OVERLAND_LOCATIONS {
        return Err(Refusal::new(
            RefusalReason::TooManyLocations,
            format!(
                "locations holds {} entries; at most {MAX_OVERLAND_LOCATIONS} a batch",
                locations.len()
            ),
        ));
    }
    Ok(locations
        .into_iter()
        .map(|raw| location(raw.get()))
        .collect())
}

fn location(raw: &str) -> Result<DevicePosition, Refusal> {
    let Object(feature) = serde_json::from_str::<Object<Feature<'_>>>(raw)
        .map_err(|_| Refusal::malformed("a location is not a GeoJSON Feature object"))?;
    let Object(geometry) = feature
        .geometry
        .ok_or_else(|| Refusal::malformed("a location has no geometry"))?;
    match &geometry.kind {
        Scalar::Null => {}
        Scalar::Str(kind) if kind == "Point" => {}
        _ => return Err(Refusal::malformed("geometry.type must be Point")),
    }
    let coordinates = geometry.coordinates;
    if coordinates.len < 2 {
        return Err(Refusal::malformed(
            "geometry.coordinates must be [longitude, latitude]",
        ));
    }
    let lng = match coordinates.lon.number() {
        Ok(Some(lng)) => longitude(lng, "geometry.coordinates[0]")?,
        _ => return Err(bad_longitude("geometry.coordinates[0]")),
    };
    let lat = match coordinates.lat.number() {
        Ok(Some(lat)) => latitude(lat, "geometry.coordinates[1]")?,
        _ => return Err(bad_latitude("geometry.coordinates[1]")),
    };
    let properties = feature.properties.map(|Object(p)| p).unwrap_or_default();
    let timestamp = match properties.timestamp.timestamp() {
        Ok(Some(timestamp)) => timestamp,
        Ok(None) => {
            return Err(Refusal::new(
                RefusalReason::BadTimestamp,
                "properties.timestamp is missing",
            ));
        }
        Err(()) => return Err(bad_timestamp("properties.timestamp")),
    };
    let raw_speed = properties
        .speed
        .number()
        .map_err(|()| bad_speed("properties.speed"))?;
    let raw_course = properties
        .course
        .number()
        .map_err(|()| bad_heading("properties.course"))?;
    Ok(DevicePosition {
        timestamp,
        lat,
        lng,
        speed_mph: speed(raw_speed, SpeedUnit::MetresPerSecond, "properties.speed")?,
        heading_deg: heading(raw_course, "properties.course")?,
        accuracy_m: accuracy(properties.horizontal_accuracy.telemetry()),
        altitude_m: altitude(properties.altitude.telemetry()),
        battery_percent: battery_fraction(properties.battery_level.telemetry()),
        charging: match properties.battery_state.as_str() {
            Some("charging" | "full") => Some(true),
            Some("unplugged") => Some(false),
            _ => None,
        },
    })
}

/// The token from `Authorization: Bearer <token>`; `None` when absent or of
/// another scheme (the caller then tries `?token=`).
pub fn bearer_token(authorization: Option<&str>) -> Option<&str> {
    let (scheme, token) = authorization?.trim().split_once(' ')?;
    let token = token.trim();
    (scheme.eq_ignore_ascii_case("bearer") && !token.is_empty()).then_some(token)
}

#[cfg(test)]
mod tests;
