//! OwnTracks in HTTP mode (one JSON message a post, HTTP Basic credentials)
//! and in MQTT mode (the same messages, published to `owntracks/<user>/<device>`;
//! the device is named by its topic).
//!
//! Only `_type: "location"` carries a position; every other message
//! (`transition`, `waypoint`, `card`, `lwt`, `status`, `encrypted`, …) and a
//! zero-length body (the app sends those) is answered and stores nothing.
//! A location needs `lat`, `lon` and `tst`; `tst` is read like every device
//! time (Unix seconds, or milliseconds from 2^31), which for OwnTracks'
//! seconds changes nothing.

use base64::Engine;
use base64::engine::DecodePaddingMode;
use base64::engine::general_purpose::{GeneralPurpose, GeneralPurposeConfig};
use serde::Deserialize;

use super::json::{Scalar, from_body};
use super::units::SpeedUnit;
use super::{
    DevicePosition, Refusal, accuracy, altitude, bad_heading, bad_latitude, bad_longitude,
    bad_speed, bad_timestamp, battery_percent, heading, latitude, longitude, speed,
};

#[derive(Deserialize)]
struct Message<'a> {
    #[serde(rename = "_type", borrow, default)]
    kind: Scalar<'a>,
    #[serde(borrow, default)]
    lat: Scalar<'a>,
    #[serde(borrow, default)]
    lon: Scalar<'a>,
    #[serde(borrow, default)]
    tst: Scalar<'a>,
    #[serde(borrow, default)]
    vel: Scalar<'a>,
    #[serde(borrow, default)]
    cog: Scalar<'a>,
    #[serde(borrow, default)]
    acc: Scalar<'a>,
    #[serde(borrow, default)]
    alt: Scalar<'a>,
    #[serde(borrow, default)]
    batt: Scalar<'a>,
    #[serde(borrow, default)]
    bs: Scalar<'a>,
}

/// The position in an OwnTracks message, `None` for a message that carries
/// none (an empty body, another `_type`).
pub fn parse_owntracks(body: &[u8]) -> Result<Option<DevicePosition>, Refusal> {
    if body.trim_ascii().is_empty() {
        return Ok(None);
    }
    let message: Message<'_> = from_body(body, "the OwnTracks message")?;
    match &message.kind {
        Scalar::Str(kind) if kind == "location" => {}
        Scalar::Str(_) => return Ok(None),
        _ => {
            return Err(Refusal::malformed(
                "_type must be a string such as \"location\"",
            ));
        }
    }
    let required = |field: &str| Refusal::malformed(format!("a location needs {field}"));
    let lat = message.lat.number().map_err(|()| bad_latitude("lat"))?;
    let lat = latitude(lat.ok_or_else(|| required("lat"))?, "lat")?;
    let lng = message.lon.number().map_err(|()| bad_longitude("lon"))?;
    let lng = longitude(lng.ok_or_else(|| required("lon"))?, "lon")?;
    let timestamp = message.tst.timestamp().map_err(|()| bad_timestamp("tst"))?;
    let timestamp = timestamp.ok_or_else(|| required("tst"))?;
    let vel = message.vel.number().map_err(|()| bad_speed("vel"))?;
    let cog = message.cog.number().map_err(|()| bad_heading("cog"))?;
    Ok(Some(DevicePosition {
        timestamp,
        lat,
        lng,
        speed_mph: speed(vel, SpeedUnit::KilometresPerHour, "vel")?,
        heading_deg: heading(cog, "cog")?,
        accuracy_m: accuracy(message.acc.telemetry()),
        altitude_m: altitude(message.alt.telemetry()),
        battery_percent: battery_percent(message.batt.telemetry()),
        // 0 unknown, 1 unplugged, 2 charging, 3 full (and so still plugged in).
        charging: match message.bs.telemetry() {
            Some(1.0) => Some(false),
            Some(2.0 | 3.0) => Some(true),
            _ => None,
        },
    }))
}

/// The device an MQTT message is from: the `<user>/<device>` its topic ends
/// with (`owntracks/alice/truck7` → `alice/truck7`), the identifier the
/// device was given. `None` for a topic of fewer than three levels or with
/// an empty one.
pub fn topic_identifier(topic: &str) -> Option<&str> {
    let mut levels = topic.rsplitn(3, '/');
    let device = levels.next()?;
    let user = levels.next()?;
    levels.next()?;
    if device.is_empty() || user.is_empty() {
        return None;
    }
    Some(&topic[topic.len() - device.len() - user.len() - 1..])
}

/// Tolerates missing `=` padding, which some HTTP stacks drop.
const BASE64: GeneralPurpose = GeneralPurpose::new(
    &base64::alphabet::STANDARD,
    GeneralPurposeConfig::new().with_decode_padding_mode(DecodePaddingMode::Indifferent),
);

/// The device token from an `Authorization: Basic` header: the password, or
/// the user name when the password is empty (the app's settings accept
/// either way round). `None` when the header is absent or not Basic
/// credentials.
pub fn basic_auth_token(authorization: Option<&str>) -> Option<String> {
    let (scheme, credentials) = authorization?.trim().split_once(' ')?;
    if !scheme.eq_ignore_ascii_case("basic") {
        return None;
    }
    let decoded = BASE64.decode(credentials.trim()).ok()?;
    let text = String::from_utf8(decoded).ok()?;
    let (user, password) = text.split_once(':')?;
    let token = if password.is_empty() { user } else { password };
    (!token.is_empty()).then(|| token.to_owned())
}

#[cfg(test)]
mod tests {
    use chrono::{TimeZone, Utc};

    use super::*;

    fn close(actual: Option<f64>, expected: f64) {
        let actual = actual.expect("a value");
        assert!(
            (actual - expected).abs() < 1e-6,
            "{actual} is not {expected}"
        );
    }

    fn basic(credentials: &str) -> String {
        format!(
            "Basic {}",
            base64::engine::general_purpose::STANDARD.encode(credentials)
        )
    }

    #[test]
    fn a_topic_names_its_device_by_its_last_two_levels() {
        assert_eq!(
            topic_identifier("owntracks/alice/truck7"),
            Some("alice/truck7")
        );
        assert_eq!(topic_identifier("fleet/owntracks/a/b"), Some("a/b"));
        for bad in [
            "owntracks/alice",
            "alice",
            "owntracks//d",
            "owntracks/u/",
            "",
        ] {
            assert_eq!(topic_identifier(bad), None, "{bad}");
        }
    }

    #[test]
    fn location_message() {
        let body = br#"{"_type":"location","acc":12,"alt":150,"batt":88,"bs":2,"conn":"m",
            "created_at":1732690005,"lat":32.7767,"lon":-96.797,"m":1,"t":"u","tid":"tr",
            "tst":1732690000,"vac":3,"vel":90,"cog":270,"BSSID":"b0:39:56:aa:bb:cc","topic":"owntracks/u/d"}"#;
        let p = parse_owntracks(body).unwrap().expect("a position");
        assert_eq!(
            p.timestamp,
            Utc.with_ymd_and_hms(2024, 11, 27, 6, 46, 40).unwrap()
        );
        close(Some(p.lat), 32.7767);
        close(Some(p.lng), -96.797);
        // 90 km/h.
        close(p.speed_mph, 55.923_407_28);
        close(p.heading_deg, 270.0);
        close(p.accuracy_m, 12.0);
        close(p.altitude_m, 150.0);
        close(p.battery_percent, 88.0);
        assert_eq!(p.charging, Some(true));
    }

    #[test]
    fn a_minimal_location_has_only_the_required_fields() {
        let body = br#"{"_type":"location","lat":-33.8688,"lon":151.2093,"tst":1732690000,"bs":1}"#;
        let p = parse_owntracks(body).unwrap().expect("a position");
        close(Some(p.lat), -33.8688);
        close(Some(p.lng), 151.2093);
        assert_eq!(p.timestamp.timestamp(), 1_732_690_000);
        assert_eq!(p.speed_mph, None);
        assert_eq!(p.heading_deg, None);
        assert_eq!(p.accuracy_m, None);
        assert_eq!(p.battery_percent, None);
        assert_eq!(p.charging, Some(false));
        let full = br#"{"_type":"location","lat":1,"lon":2,"tst":1732690000,"bs":3,"cog":360}"#;
        let p = parse_owntracks(full).unwrap().expect("a position");
        assert_eq!(p.charging, Some(true));
        close(p.heading_deg, 0.0);
        let unknown = br#"{"_type":"location","lat":1,"lon":2,"tst":1732690000,"bs":0}"#;
        assert_eq!(
            parse_owntracks(unknown)
                .unwrap()
                .expect("a position")
                .charging,
            None
        );
    }

    #[test]
    fn other_messages_and_empty_bodies_carry_nothing() {
        for body in [
            &b""[..],
            b"  \n",
            br#"{"_type":"transition","event":"enter","desc":"Dock 4","lat":1,"lon":2,"tst":1732690000}"#,
            br#"{"_type":"waypoint","desc":"Dock 4","lat":1,"lon":2,"rad":100,"tst":1732690000}"#,
            br#"{"_type":"card","name":"Truck 12","face":"iVBORw0KGgo="}"#,
            br#"{"_type":"lwt","tst":1732690000}"#,
            br#"{"_type":"status","android":{"hib":1}}"#,
            br#"{"_type":"encrypted","data":"c2VjcmV0"}"#,
        ] {
            assert_eq!(parse_owntracks(body), Ok(None), "{}", String::from_utf8_lossy(body));
        }
    }

    #[test]
    fn broken_locations_are_refused() {
        let cases: [(&[u8], &str, &str); 9] = [
            (
                b"{\"_type\":\"location\",",
                "malformed",
                "OwnTracks message",
            ),
            (b"[1, 2]", "malformed", "OwnTracks message"),
            (
                br#"{"lat":1,"lon":2,"tst":1732690000}"#,
                "malformed",
                "_type",
            ),
            (
                br#"{"_type":"location","lon":2,"tst":1732690000}"#,
                "malformed",
                "lat",
            ),
            (
                br#"{"_type":"location","lat":1,"tst":1732690000}"#,
                "malformed",
                "lon",
            ),
            (
                br#"{"_type":"location","lat":1,"lon":2}"#,
                "malformed",
                "tst",
            ),
            (
                br#"{"_type":"location","lat":100,"lon":2,"tst":1732690000}"#,
                "bad_latitude",
                "lat",
            ),
            (
                br#"{"_type":"location","lat":1,"lon":2,"tst":"then"}"#,
                "bad_timestamp",
                "tst",
            ),
            (
                br#"{"_type":"location","lat":1,"lon":2,"tst":1732690000,"vel":"x"}"#,
                "bad_speed",
                "vel",
            ),
        ];
        for (body, reason, field) in cases {
            let err = parse_owntracks(body).unwrap_err();
            assert_eq!(err.reason(), reason, "{}", String::from_utf8_lossy(body));
            assert!(err.message().contains(field), "{}", err.message());
        }
    }

    #[test]
    fn basic_auth_token_is_the_password() {
        assert_eq!(
            basic_auth_token(Some(&basic("driver:frd_dev1"))),
            Some("frd_dev1".into())
        );
        // A colon in the password belongs to the password.
        assert_eq!(
            basic_auth_token(Some(&basic("u:frd:x"))),
            Some("frd:x".into())
        );
        assert_eq!(
            basic_auth_token(Some(&basic(":frd_dev1"))),
            Some("frd_dev1".into())
        );
        let lower = basic("driver:frd_dev1").replacen("Basic", "basic", 1);
        assert_eq!(basic_auth_token(Some(&lower)), Some("frd_dev1".into()));
    }

    #[test]
    fn basic_auth_token_is_the_user_when_the_password_is_empty() {
        assert_eq!(
            basic_auth_token(Some(&basic("frd_dev1:"))),
            Some("frd_dev1".into())
        );
        // "frd_dev1:" is "ZnJkX2RldjE6": no padding to lose; this one has some.
        let unpadded = basic("frd_dev12:").trim_end_matches('=').to_owned();
        assert_eq!(basic_auth_token(Some(&unpadded)), Some("frd_dev12".into()));
    }

    #[test]
    fn malformed_authorization_gives_no_token() {
        let not_utf8 = format!(
            "Basic {}",
            base64::engine::general_purpose::STANDARD.encode([0xff, b':', 0xfe])
        );
        for header in [
            None,
            Some(""),
            Some("Basic"),
            Some("Basic !!!not-base64!!!"),
            Some("Bearer frd_dev1"),
            Some(basic("no-colon-here").as_str()),
            Some(basic(":").as_str()),
            Some(not_utf8.as_str()),
        ] {
            assert_eq!(basic_auth_token(header), None, "{header:?}");
        }
    }
}
