//! The OsmAnd protocol as Traccar serves it: Traccar Client 7 (query string,
//! empty body), Traccar Client 10 (form body), the OsmAnd app and GPSLogger
//! (GET with a URL template), and Traccar Client 9's JSON body
//! ([`super::traccar`]).
//!
//! Decisions beyond the text:
//! - Where parameters come from: the query string; the body too when it is
//!   a form (`application/x-www-form-urlencoded`), or, when the query is
//!   empty, any non-JSON body (Traccar's rule). Reading both when both are
//!   present means a URL carrying `?id=` in front of a form carrying the
//!   position never silently drops the position.
//! - A non-empty body declared `application/json` (or `…+json`) is Traccar
//!   Client 9's, whatever the query holds; the query then only supplies the
//!   token when the body has none (see [`super::traccar`]).
//! - A parameter given twice, or under two aliases (`id`/`deviceid`,
//!   `bearing`/`heading`, `location` beside `lat`/`lon`), is accepted when
//!   the values agree and refused as `conflicting_parameter` when they do not:
//!   neither "first wins" nor "last wins" is what the sender meant.
//! - An empty value (`speed=`, an app leaving a placeholder blank) is absent.
//! - `hdop` becomes `accuracy_m` when `accuracy` is absent: the OsmAnd app
//!   fills `{3}` ("hdop") with Android's horizontal accuracy in metres.
//! - A heartbeat (neither `lat` nor `lon` nor `location`) carries only its
//!   token: other parameters are not checked.

use std::borrow::Cow;

use chrono::{DateTime, Utc};

use super::units::SpeedUnit;
use super::{
    DevicePosition, Parsed, Protocol, Refusal, RefusalReason, accuracy, altitude, bad_heading,
    bad_latitude, bad_longitude, bad_speed, bad_timestamp, battery_percent, finite_number, flag,
    form, heading, latitude, longitude, speed, time, traccar,
};

/// What one request to the OsmAnd endpoint carried.
#[derive(Debug, Clone, PartialEq)]
pub struct OsmAndRequest {
    /// The device token, as sent: the caller authenticates it.
    pub token: String,
    pub parsed: Parsed,
    /// [`Protocol::OsmAnd`], or [`Protocol::TraccarJson`] for a JSON body.
    pub protocol: Protocol,
}

/// Parses one request to the OsmAnd endpoint. `query` is the raw query string
/// (without `?`), `content_type` the header as sent, `now` the time given to a
/// position that carries none.
pub fn parse_osmand(
    query: &str,
    content_type: Option<&str>,
    body: &[u8],
    now: DateTime<Utc>,
) -> Result<OsmAndRequest, Refusal> {
    let media = content_type.map(media_type);
    let has_body = !body.trim_ascii().is_empty();
    if has_body && media.as_deref().is_some_and(is_json) {
        return traccar::parse(query, body, now);
    }
    let mut params = Params::default();
    params.collect(query.as_bytes())?;
    let body_is_form = media.as_deref() == Some("application/x-www-form-urlencoded");
    let query_is_empty = form::raw_pairs(query.as_bytes()).next().is_none();
    if has_body && (body_is_form || query_is_empty) {
        params.collect(body)?;
    }
    params.finish(now)
}

/// The media type without parameters, lower-cased (`Application/JSON; charset=utf-8`).
fn media_type(header: &str) -> Cow<'_, str> {
    let essence = header.split(';').next().unwrap_or("").trim();
    if essence.bytes().any(|b| b.is_ascii_uppercase()) {
        Cow::Owned(essence.to_ascii_lowercase())
    } else {
        Cow::Borrowed(essence)
    }
}

fn is_json(media: &str) -> bool {
    media == "application/json" || media.ends_with("+json")
}

/// A parameter's value and the name it came under (for messages).
type Slot<'a> = Option<(&'static str, Cow<'a, str>)>;

#[derive(Default)]
struct Params<'a> {
    token: Slot<'a>,
    lat: Slot<'a>,
    lon: Slot<'a>,
    location: Slot<'a>,
    timestamp: Slot<'a>,
    speed: Slot<'a>,
    speed_unit: Slot<'a>,
    heading: Slot<'a>,
    altitude: Slot<'a>,
    accuracy: Slot<'a>,
    hdop: Slot<'a>,
    batt: Slot<'a>,
    charge: Slot<'a>,
}

impl<'a> Params<'a> {
    fn collect(&mut self, input: &'a [u8]) -> Result<(), Refusal> {
        for (raw_key, raw_value) in form::raw_pairs(input) {
            let key = form::decode(raw_key);
            let (slot, name) = match key.as_ref() {
                "id" => (&mut self.token, "id"),
                "deviceid" => (&mut self.token, "deviceid"),
                "lat" => (&mut self.lat, "lat"),
                "lon" => (&mut self.lon, "lon"),
                "location" => (&mut self.location, "location"),
                "timestamp" => (&mut self.timestamp, "timestamp"),
                "speed" => (&mut self.speed, "speed"),
                "speed_unit" => (&mut self.speed_unit, "speed_unit"),
                "bearing" => (&mut self.heading, "bearing"),
                "heading" => (&mut self.heading, "heading"),
                "altitude" => (&mut self.altitude, "altitude"),
                "accuracy" => (&mut self.accuracy, "accuracy"),
                "hdop" => (&mut self.hdop, "hdop"),
                "batt" => (&mut self.batt, "batt"),
                "charge" => (&mut self.charge, "charge"),
                _ => continue,
            };
            let value = form::decode(raw_value);
            if value.trim().is_empty() {
                continue;
            }
            match slot {
                None => *slot = Some((name, value)),
                Some((_, existing)) if *existing == value => {}
                Some((first, _)) => return Err(conflict(first, name)),
            }
        }
        Ok(())
    }

    fn finish(mut self, now: DateTime<Utc>) -> Result<OsmAndRequest, Refusal> {
        let token = match self.token.take() {
            Some((_, token)) => token.into_owned(),
            None => {
                return Err(Refusal::new(
                    RefusalReason::MissingToken,
                    "the device token is missing: send it as id (or deviceid)",
                ));
            }
        };
        let parsed = match self.coordinates()? {
            None => Parsed::Heartbeat,
            Some((lat, lng)) => Parsed::Position(self.position(lat, lng, now)?),
        };
        Ok(OsmAndRequest {
            token,
            parsed,
            protocol: Protocol::OsmAnd,
        })
    }

    fn coordinates(&self) -> Result<Option<(f64, f64)>, Refusal> {
        let lat = number(&self.lat, bad_latitude)?;
        let lon = number(&self.lon, bad_longitude)?;
        let pair = match (&self.location, lat, lon) {
            (None, None, None) => return Ok(None),
            (None, Some(lat), Some(lon)) => (lat, lon),
            (None, Some(_), None) => return Err(Refusal::malformed("lat was sent without lon")),
            (None, None, Some(_)) => return Err(Refusal::malformed("lon was sent without lat")),
            (Some((_, location)), lat, lon) => {
                let pair = split_location(location)?;
                if lat.is_some_and(|lat| lat != pair.0) || lon.is_some_and(|lon| lon != pair.1) {
                    return Err(conflict("location", "lat/lon"));
                }
                pair
            }
        };
        Ok(Some((
            latitude(pair.0, name_or(&self.lat, "location"))?,
            longitude(pair.1, name_or(&self.lon, "location"))?,
        )))
    }

    fn position(&self, lat: f64, lng: f64, now: DateTime<Utc>) -> Result<DevicePosition, Refusal> {
        let timestamp = match &self.timestamp {
            None => now,
            Some((name, raw)) => time::parse(raw).map_err(|()| bad_timestamp(name))?,
        };
        let unit = match &self.speed_unit {
            None => SpeedUnit::Knots,
            Some((_, raw)) => SpeedUnit::from_param(raw).ok_or_else(|| {
                Refusal::new(
                    RefusalReason::BadSpeedUnit,
                    "speed_unit must be one of kn, mps, kmh, mph",
                )
            })?,
        };
        let speed_mph = speed(number(&self.speed, bad_speed)?, unit, "speed")?;
        let heading_raw = number(&self.heading, bad_heading)?;
        let heading_deg = heading(heading_raw, name_or(&self.heading, "bearing"))?;
        let accuracy_m = accuracy(telemetry(&self.accuracy)).or(accuracy(telemetry(&self.hdop)));
        Ok(DevicePosition {
            timestamp,
            lat,
            lng,
            speed_mph,
            heading_deg,
            accuracy_m,
            altitude_m: altitude(telemetry(&self.altitude)),
            battery_percent: battery_percent(telemetry(&self.batt)),
            charging: self.charge.as_ref().and_then(|(_, raw)| flag(raw)),
        })
    }
}

/// A number parameter; `refuse` builds the refusal from the parameter's name.
fn number(slot: &Slot<'_>, refuse: fn(&str) -> Refusal) -> Result<Option<f64>, Refusal> {
    match slot {
        None => Ok(None),
        Some((name, raw)) => finite_number(raw).map(Some).map_err(|()| refuse(name)),
    }
}

fn telemetry(slot: &Slot<'_>) -> Option<f64> {
    slot.as_ref().and_then(|(_, raw)| finite_number(raw).ok())
}

fn split_location(raw: &str) -> Result<(f64, f64), Refusal> {
    let malformed = || Refusal::malformed("location must be lat,lon in decimal degrees");
    let (lat, lon) = raw.split_once(',').ok_or_else(malformed)?;
    if lon.contains(',') {
        return Err(malformed());
    }
    let lat = finite_number(lat).map_err(|()| bad_latitude("location"))?;
    let lon = finite_number(lon).map_err(|()| bad_longitude("location"))?;
    Ok((lat, lon))
}

/// The name a value came under, for messages.
fn name_or<'s>(slot: &'s Slot<'_>, default: &'s str) -> &'s str {
    slot.as_ref().map_or(default, |(name, _)| name)
}

pub(crate) fn conflict(first: &str, second: &str) -> Refusal {
    let message = if first == second {
        format!("{first} is given twice with different values")
    } else {
        format!("{first} and {second} are both given, with different values")
    };
    Refusal::new(RefusalReason::ConflictingParameter, message)
}

#[cfg(test)]
mod tests;
