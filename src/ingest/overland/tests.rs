use chrono::{TimeZone, Utc};

use super::*;

fn close(actual: Option<f64>, expected: f64) {
    let actual = actual.expect("a value");
    assert!(
        (actual - expected).abs() < 1e-6,
        "{actual} is not {expected}"
    );
}

/// A location as Overland writes it, with the fields it adds.
fn feature(lon: &str, lat: &str, timestamp: &str) -> String {
    format!(
        r#"{{"type":"Feature","geometry":{{"type":"Point","coordinates":[{lon},{lat}]}},
        "properties":{{"timestamp":"{timestamp}","altitude":150,"speed":4,
        "horizontal_accuracy":30,"vertical_accuracy":-1,"motion":["driving","stationary"],
        "pauses":false,"activity":"other_navigation","desired_accuracy":100,"deferred":1000,
        "significant_change":"disabled","locations_in_payload":3,"battery_state":"charging",
        "battery_level":0.89,"device_id":"truck12","wifi":""}}}}"#
    )
}

fn batch(features: &[String]) -> String {
    format!(
        r#"{{"locations":[{}],"current":{{"type":"Feature"}},"trip":{{"distance":1200}}}}"#,
        features.join(",")
    )
}

#[test]
fn a_bad_location_among_good_ones_is_skipped_alone() {
    let body = batch(&[
        feature("-96.797", "32.7767", "2024-11-27T06:46:40Z"),
        feature("-96.797", "95.0", "2024-11-27T06:46:50Z"),
        feature("-96.7965", "32.7771", "2024-11-27T00:47:00-0600"),
    ]);
    let results = parse_overland(body.as_bytes()).unwrap();
    assert_eq!(results.len(), 3);

    let first = results[0].as_ref().unwrap();
    assert_eq!(
        first.timestamp,
        Utc.with_ymd_and_hms(2024, 11, 27, 6, 46, 40).unwrap()
    );
    close(Some(first.lat), 32.7767);
    close(Some(first.lng), -96.797);
    // 4 m/s.
    close(first.speed_mph, 8.947_745_168);
    assert_eq!(first.heading_deg, None);
    close(first.accuracy_m, 30.0);
    close(first.altitude_m, 150.0);
    close(first.battery_percent, 89.0);
    assert_eq!(first.charging, Some(true));

    let bad = results[1].as_ref().unwrap_err();
    assert_eq!(bad.reason(), "bad_latitude");
    assert!(
        bad.message().contains("coordinates[1]"),
        "{}",
        bad.message()
    );

    let third = results[2].as_ref().unwrap();
    // Overland writes offsets without a colon.
    assert_eq!(
        third.timestamp,
        Utc.with_ymd_and_hms(2024, 11, 27, 6, 47, 0).unwrap()
    );
    close(Some(third.lng), -96.7965);
}

#[test]
fn unknown_speed_and_course_and_battery_states() {
    let body = br#"{"locations":[
        {"type":"Feature","geometry":{"type":"Point","coordinates":[2.5,1.5]},
         "properties":{"timestamp":"2024-11-27T06:46:40Z","speed":-1,"course":-1,
                       "battery_state":"unplugged","battery_level":-1}},
        {"type":"Feature","geometry":{"type":"Point","coordinates":[2.5,1.5,120.0]},
         "properties":{"timestamp":"2024-11-27T06:46:40Z","speed":0,"course":360,
                       "battery_state":"full"}},
        {"geometry":{"coordinates":["2.5","1.5"]},
         "properties":{"timestamp":"2024-11-27T06:46:40Z","course":181.5,"battery_state":"unknown"}}
    ]}"#;
    let results = parse_overland(body).unwrap();
    let p = results[0].as_ref().unwrap();
    assert_eq!(p.speed_mph, None);
    assert_eq!(p.heading_deg, None);
    assert_eq!(p.battery_percent, None);
    assert_eq!(p.charging, Some(false));
    let p = results[1].as_ref().unwrap();
    close(p.speed_mph, 0.0);
    close(p.heading_deg, 0.0);
    assert_eq!(p.charging, Some(true));
    // A third coordinate is allowed by GeoJSON and ignored.
    close(Some(p.lat), 1.5);
    let p = results[2].as_ref().unwrap();
    close(Some(p.lng), 2.5);
    close(p.heading_deg, 181.5);
    assert_eq!(p.charging, None);
}

#[test]
fn each_broken_location_has_its_reason() {
    let ts = r#""properties":{"timestamp":"2024-11-27T06:46:40Z"}"#;
    let cases = [
        ("42".to_owned(), "malformed", "Feature"),
        // serde would fill a struct from an array by position; not here.
        (r#"[{"type":"Point","coordinates":[1,2]},{"timestamp":"2024-11-27T06:46:40Z"}]"#.to_owned(),
            "malformed", "Feature"),
        (format!(r#"{{{ts}}}"#), "malformed", "geometry"),
        (format!(r#"{{"geometry":{{"type":"LineString","coordinates":[[1,2],[3,4]]}},{ts}}}"#), "malformed", "Point"),
        (format!(r#"{{"geometry":{{"type":"Point","coordinates":[1]}},{ts}}}"#), "malformed", "coordinates"),
        (format!(r#"{{"geometry":{{"type":"Point","coordinates":{{"lon":1}}}},{ts}}}"#), "malformed", "Feature"),
        (format!(r#"{{"geometry":{{"type":"Point","coordinates":["west",1]}},{ts}}}"#), "bad_longitude", "coordinates[0]"),
        (format!(r#"{{"geometry":{{"type":"Point","coordinates":[200,1]}},{ts}}}"#), "bad_longitude", "coordinates[0]"),
        (format!(r#"{{"geometry":{{"type":"Point","coordinates":[1,null]}},{ts}}}"#), "bad_latitude", "coordinates[1]"),
        (r#"{"geometry":{"type":"Point","coordinates":[1,2]}}"#.to_owned(), "bad_timestamp", "properties.timestamp"),
        (r#"{"geometry":{"type":"Point","coordinates":[1,2]},"properties":{"timestamp":"later"}}"#.to_owned(),
            "bad_timestamp", "properties.timestamp"),
        (r#"{"geometry":{"type":"Point","coordinates":[1,2]},"properties":{"timestamp":"2024-11-27T06:46:40Z","speed":"fast"}}"#.to_owned(),
            "bad_speed", "properties.speed"),
        (r#"{"geometry":{"type":"Point","coordinates":[1,2]},"properties":{"timestamp":"2024-11-27T06:46:40Z","course":[90]}}"#.to_owned(),
            "bad_heading", "properties.course"),
    ];
    let features: Vec<String> = cases.iter().map(|(f, _, _)| f.clone()).collect();
    let results = parse_overland(batch(&features).as_bytes()).unwrap();
    assert_eq!(results.len(), cases.len());
    for (result, (feature, reason, field)) in results.iter().zip(&cases) {
        let err = result.as_ref().unwrap_err();
        assert_eq!(err.reason(), *reason, "{feature}");
        assert!(
            err.message().contains(field),
            "{feature}: {}",
            err.message()
        );
    }
}

#[test]
fn a_thousand_locations_pass_and_one_more_is_refused() {
    let one = feature("-96.797", "32.7767", "2024-11-27T06:46:40Z");
    let full = batch(&vec![one.clone(); MAX_OVERLAND_LOCATIONS]);
    let results = parse_overland(full.as_bytes()).unwrap();
    assert_eq!(results.len(), 1_000);
    close(Some(results[999].as_ref().unwrap().lat), 32.7767);

    let over = batch(&vec![one; MAX_OVERLAND_LOCATIONS + 1]);
    let err = parse_overland(over.as_bytes()).unwrap_err();
    assert_eq!(err.reason(), "too_many_locations");
    assert_eq!(err.kind(), RefusalReason::TooManyLocations);
    assert!(err.message().contains("1001"), "{}", err.message());
}

#[test]
fn only_the_batch_shape_refuses_the_batch() {
    let cases: [(&[u8], &str); 6] = [
        (b"", "not valid JSON"),
        (b"{\"locations\": [", "not valid JSON"),
        (b"locations=1", "not valid JSON"),
        (b"{\"current\": {}}", "no locations"),
        (
            b"{\"locations\": {\"type\": \"Feature\"}}",
            "locations must be an array",
        ),
        (b"[{\"type\": \"Feature\"}]", "JSON object"),
    ];
    for (body, message) in cases {
        let err = parse_overland(body).unwrap_err();
        assert_eq!(
            err.reason(),
            "malformed",
            "{}",
            String::from_utf8_lossy(body)
        );
        assert!(err.message().contains(message), "{}", err.message());
    }
    assert_eq!(parse_overland(b"{\"locations\": []}").unwrap().len(), 0);
}

#[test]
fn bearer_tokens() {
    assert_eq!(bearer_token(Some("Bearer frd_dev1")), Some("frd_dev1"));
    assert_eq!(bearer_token(Some("bearer  frd_dev1 ")), Some("frd_dev1"));
    assert_eq!(bearer_token(Some("Basic ZnJkOg==")), None);
    assert_eq!(bearer_token(Some("Bearer ")), None);
    assert_eq!(bearer_token(Some("frd_dev1")), None);
    assert_eq!(bearer_token(None), None);
}
