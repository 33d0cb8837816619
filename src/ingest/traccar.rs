//! The JSON body Traccar Client 9 posts to the OsmAnd endpoint (the
//! background-geolocation plugin's location record).
//!
//! The token is the body's `device_id`, or `id`/`deviceid` in the query when
//! the body has none; when both are present they must agree
//! (`conflicting_parameter`), for the same reason repeated parameters must.
//! A body without `location`, without `coords`, or with neither latitude nor
//! longitude is a heartbeat. One location per post: a `location` array
//! (the plugin's batch mode, which Traccar Client does not enable) is
//! malformed.

use chrono::{DateTime, Utc};
use serde::Deserialize;

use super::json::{Object, Scalar, from_body};
use super::osmand::{OsmAndRequest, conflict};
use super::units::SpeedUnit;
use super::{
    DevicePosition, Parsed, Protocol, Refusal, RefusalReason, accuracy, altitude, bad_heading,
    bad_latitude, bad_longitude, bad_speed, bad_timestamp, battery_fraction, form, heading,
    latitude, longitude, speed,
};

#[derive(Deserialize)]
struct Body<'a> {
    #[serde(borrow, default)]
    location: Option<Object<Location<'a>>>,
    #[serde(borrow, default)]
    device_id: Scalar<'a>,
}

#[derive(Deserialize)]
struct Location<'a> {
    #[serde(borrow, default)]
    timestamp: Scalar<'a>,
    #[serde(borrow, default)]
    coords: Option<Object<Coords<'a>>>,
    #[serde(borrow, default)]
    battery: Option<Object<Battery<'a>>>,
}

#[derive(Deserialize)]
struct Coords<'a> {
    #[serde(borrow, default)]
    latitude: Scalar<'a>,
    #[serde(borrow, default)]
    longitude: Scalar<'a>,
    #[serde(borrow, default)]
    speed: Scalar<'a>,
    #[serde(borrow, default)]
    heading: Scalar<'a>,
    #[serde(borrow, default)]
    accuracy: Scalar<'a>,
    #[serde(borrow, default)]
    altitude: Scalar<'a>,
}

#[derive(Deserialize)]
struct Battery<'a> {
    #[serde(borrow, default)]
    level: Scalar<'a>,
    #[serde(borrow, default)]
    is_charging: Scalar<'a>,
}

pub(crate) fn parse(
    query: &str,
    body: &[u8],
    now: DateTime<Utc>,
) -> Result<OsmAndRequest, Refusal> {
    let body: Body<'_> = from_body(body, "the JSON body")?;
    let token = token(query, &body.device_id)?;
    let parsed = match body.location {
        None => Parsed::Heartbeat,
        Some(Object(location)) => match location_position(location, now)? {
            None => Parsed::Heartbeat,
            Some(position) => Parsed::Position(position),
        },
    };
    Ok(OsmAndRequest {
        token,
        parsed,
        protocol: Protocol::TraccarJson,
    })
}

fn token(query: &str, device_id: &Scalar<'_>) -> Result<String, Refusal> {
    let from_body = match device_id {
        Scalar::Null => None,
        Scalar::Str(s) if s.is_empty() => None,
        Scalar::Str(s) => Some(s.to_string()),
        Scalar::Int(i) => Some(i.to_string()),
        _ => return Err(Refusal::malformed("device_id must be a string")),
    };
    let mut from_query: Option<(&'static str, String)> = None;
    for (raw_key, raw_value) in form::raw_pairs(query.as_bytes()) {
        let name = match form::decode(raw_key).as_ref() {
            "id" => "id",
            "deviceid" => "deviceid",
            _ => continue,
        };
        let value = form::decode(raw_value);
        if value.is_empty() {
            continue;
        }
        match &from_query {
            None => from_query = Some((name, value.into_owned())),
            Some((_, existing)) if *existing == value => {}
            Some((first, _)) => return Err(conflict(first, name)),
        }
    }
    match (from_body, from_query) {
        (Some(body), Some((_, query))) if body != query => Err(conflict("device_id", "id")),
        (Some(token), _) | (None, Some((_, token))) => Ok(token),
        (None, None) => Err(Refusal::new(
            RefusalReason::MissingToken,
            "the device token is missing: send it as device_id",
        )),
    }
}

fn location_position(
    location: Location<'_>,
    now: DateTime<Utc>,
) -> Result<Option<DevicePosition>, Refusal> {
    let Some(Object(coords)) = location.coords else {
        return Ok(None);
    };
    let lat = coords
        .latitude
        .number()
        .map_err(|()| bad_latitude("coords.latitude"))?;
    let lng = coords
        .longitude
        .number()
        .map_err(|()| bad_longitude("coords.longitude"))?;
    let (lat, lng) = match (lat, lng) {
        (None, None) => return Ok(None),
        (Some(lat), Some(lng)) => (
            latitude(lat, "coords.latitude")?,
            longitude(lng, "coords.longitude")?,
        ),
        _ => {
            return Err(Refusal::malformed(
                "coords must hold both latitude and longitude",
            ));
        }
    };
    let timestamp = location
        .timestamp
        .timestamp()
        .map_err(|()| bad_timestamp("location.timestamp"))?
        .unwrap_or(now);
    let raw_speed = coords
        .speed
        .number()
        .map_err(|()| bad_speed("coords.speed"))?;
    let raw_heading = coords
        .heading
        .number()
        .map_err(|()| bad_heading("coords.heading"))?;
    let (level, charging) = location.battery.map_or((None, None), |b| {
        (b.0.level.telemetry(), b.0.is_charging.flag())
    });
    Ok(Some(DevicePosition {
        timestamp,
        lat,
        lng,
        speed_mph: speed(raw_speed, SpeedUnit::MetresPerSecond, "coords.speed")?,
        heading_deg: heading(raw_heading, "coords.heading")?,
        accuracy_m: accuracy(coords.accuracy.telemetry()),
        altitude_m: altitude(coords.altitude.telemetry()),
        battery_percent: battery_fraction(level),
        charging,
    }))
}

#[cfg(test)]
mod tests {
    use chrono::TimeZone;

    use super::*;
    use crate::ingest::parse_osmand;

    const JSON: Option<&str> = Some("application/json");

    fn position_of(request: OsmAndRequest) -> DevicePosition {
        match request.parsed {
            Parsed::Position(position) => position,
            Parsed::Heartbeat => panic!("a position, not a heartbeat: {request:?}"),
        }
    }

    fn now() -> DateTime<Utc> {
        Utc.with_ymd_and_hms(2024, 11, 27, 7, 0, 0).unwrap()
    }

    fn close(actual: Option<f64>, expected: f64) {
        let actual = actual.expect("a value");
        assert!(
            (actual - expected).abs() < 1e-6,
            "{actual} is not {expected}"
        );
    }

    /// As Traccar Client 9 sends it, with the plugin's extra fields.
    const CLIENT_9: &str = r#"{
        "location": {
            "event": "motionchange",
            "is_moving": true,
            "uuid": "8a1c4f6e-3d1b-4a53-9a0b-0f6e1c2d3b4a",
            "timestamp": "2024-11-27T06:46:40.123Z",
            "odometer": 15234.5,
            "coords": {
                "latitude": 32.7767, "longitude": -96.797, "accuracy": 4.8,
                "speed": 12.5, "speed_accuracy": 0.5, "heading": 92.3,
                "heading_accuracy": 10, "altitude": 150.2, "altitude_accuracy": 3,
                "ellipsoidal_altitude": 120.1, "floor": null
            },
            "activity": {"type": "in_vehicle", "confidence": 100},
            "battery": {"is_charging": false, "level": 0.88},
            "extras": {},
            "_": "&id=frd_dev1&lat=32.7767&lon=-96.797&timestamp=2024-11-27T06:46:40.123Z&"
        },
        "device_id": "frd_dev1"
    }"#;

    #[test]
    fn traccar_client_9_location() {
        let request = parse_osmand("", JSON, CLIENT_9.as_bytes(), now()).unwrap();
        assert_eq!(request.protocol, Protocol::TraccarJson);
        assert_eq!(request.protocol.as_str(), "traccar");
        assert_eq!(request.token, "frd_dev1");
        let Parsed::Position(p) = request.parsed else {
            panic!("a position: {request:?}")
        };
        assert_eq!(p.timestamp.timestamp(), 1_732_690_000);
        assert_eq!(p.timestamp.timestamp_subsec_millis(), 123);
        close(Some(p.lat), 32.7767);
        close(Some(p.lng), -96.797);
        // 12.5 m/s.
        close(p.speed_mph, 27.961_703_65);
        close(p.heading_deg, 92.3);
        close(p.accuracy_m, 4.8);
        close(p.altitude_m, 150.2);
        close(p.battery_percent, 88.0);
        assert_eq!(p.charging, Some(false));
    }

    #[test]
    fn unknown_speed_and_heading_are_none() {
        let body = r#"{"device_id": "frd_dev1", "location": {
            "timestamp": "2024-11-27T06:46:40Z",
            "coords": {"latitude": 32.77, "longitude": -96.79, "speed": -1, "heading": -1,
                       "accuracy": 65, "altitude": 0},
            "battery": {"level": -1, "is_charging": true}}}"#;
        let request = parse_osmand("", JSON, body.as_bytes(), now()).unwrap();
        let Parsed::Position(p) = request.parsed else {
            panic!("a position: {request:?}")
        };
        assert_eq!(p.speed_mph, None);
        assert_eq!(p.heading_deg, None);
        assert_eq!(p.battery_percent, None);
        assert_eq!(p.charging, Some(true));
        close(p.accuracy_m, 65.0);
        close(p.altitude_m, 0.0);
        close(Some(p.lat), 32.77);
    }

    #[test]
    fn content_type_parameters_and_case_are_ignored() {
        let request = parse_osmand(
            "",
            Some("Application/JSON; charset=utf-8"),
            CLIENT_9.as_bytes(),
            now(),
        )
        .unwrap();
        assert_eq!(request.protocol, Protocol::TraccarJson);
        assert_eq!(request.token, "frd_dev1");
    }

    #[test]
    fn missing_timestamp_is_now_and_missing_location_is_a_heartbeat() {
        let body = r#"{"device_id": "frd_dev1",
            "location": {"coords": {"latitude": 1.5, "longitude": 2.5}}}"#;
        let request = parse_osmand("", JSON, body.as_bytes(), now()).unwrap();
        let Parsed::Position(p) = request.parsed else {
            panic!("a position: {request:?}")
        };
        assert_eq!(p.timestamp, now());
        close(Some(p.lng), 2.5);
        let blank = r#"{"device_id": "frd_dev1", "location": {"timestamp": "",
            "coords": {"latitude": 1.5, "longitude": 2.5}}}"#;
        let request = parse_osmand("", JSON, blank.as_bytes(), now()).unwrap();
        assert_eq!(position_of(request).timestamp, now());

        for body in [
            r#"{"device_id": "frd_dev1"}"#,
            r#"{"device_id": "frd_dev1", "location": null}"#,
            r#"{"device_id": "frd_dev1", "location": {"is_moving": false}}"#,
            r#"{"device_id": "frd_dev1", "location": {"coords": {"speed": 0}}}"#,
        ] {
            let request = parse_osmand("", JSON, body.as_bytes(), now()).unwrap();
            assert_eq!(request.parsed, Parsed::Heartbeat, "{body}");
            assert_eq!(request.token, "frd_dev1");
        }
    }

    #[test]
    fn token_from_the_query_when_the_body_has_none() {
        let body = r#"{"location": {"coords": {"latitude": 1.5, "longitude": 2.5}}}"#;
        let request = parse_osmand("id=frd_q", JSON, body.as_bytes(), now()).unwrap();
        assert_eq!(request.token, "frd_q");
        let agreeing = parse_osmand("deviceid=frd_dev1", JSON, CLIENT_9.as_bytes(), now());
        assert_eq!(agreeing.unwrap().token, "frd_dev1");
        let err = parse_osmand("id=frd_other", JSON, CLIENT_9.as_bytes(), now()).unwrap_err();
        assert_eq!(err.reason(), "conflicting_parameter");
        assert!(err.message().contains("device_id"), "{}", err.message());
        assert!(!err.message().contains("frd_"), "{}", err.message());
        let err = parse_osmand("", JSON, body.as_bytes(), now()).unwrap_err();
        assert_eq!(err.reason(), "missing_token");
    }

    #[test]
    fn refusals_name_the_field() {
        let cases = [
            (
                r#"{"device_id": "d", "location": {"coords": {"latitude": 95, "longitude": 1}}}"#,
                "bad_latitude",
                "coords.latitude",
            ),
            (
                r#"{"device_id": "d", "location": {"coords": {"latitude": "north", "longitude": 1}}}"#,
                "bad_latitude",
                "coords.latitude",
            ),
            (
                r#"{"device_id": "d", "location": {"coords": {"latitude": 1, "longitude": 181}}}"#,
                "bad_longitude",
                "coords.longitude",
            ),
            (
                r#"{"device_id": "d", "location": {"coords": {"latitude": 1}}}"#,
                "malformed",
                "longitude",
            ),
            (
                r#"{"device_id": "d", "location": {"timestamp": "soon",
                "coords": {"latitude": 1, "longitude": 1}}}"#,
                "bad_timestamp",
                "location.timestamp",
            ),
            (
                r#"{"device_id": "d", "location": {
                "coords": {"latitude": 1, "longitude": 1, "speed": "fast"}}}"#,
                "bad_speed",
                "coords.speed",
            ),
            (
                r#"{"device_id": "d", "location": {
                "coords": {"latitude": 1, "longitude": 1, "heading": true}}}"#,
                "bad_heading",
                "coords.heading",
            ),
            (
                r#"{"device_id": "d", "location": [{"coords": {}}]}"#,
                "malformed",
                "JSON body",
            ),
            (
                r#"{"device_id": "d", "location": "#,
                "malformed",
                "JSON body",
            ),
            (r#"{"device_id": {"id": "d"}}"#, "malformed", "device_id"),
        ];
        for (body, reason, field) in cases {
            let err = parse_osmand("", JSON, body.as_bytes(), now()).unwrap_err();
            assert_eq!(err.reason(), reason, "{body}");
            assert!(err.message().contains(field), "{body}: {}", err.message());
        }
    }
}
