use chrono::TimeZone;

use super::*;

const FORM: Option<&str> = Some("application/x-www-form-urlencoded");

fn now() -> DateTime<Utc> {
    Utc.with_ymd_and_hms(2024, 11, 27, 7, 0, 0).unwrap()
}

fn at(h: u32, mi: u32, s: u32) -> DateTime<Utc> {
    Utc.with_ymd_and_hms(2024, 11, 27, h, mi, s).unwrap()
}

fn close(actual: Option<f64>, expected: f64) {
    let actual = actual.expect("a value");
    assert!(
        (actual - expected).abs() < 1e-6,
        "{actual} is not {expected}"
    );
}

fn position(query: &str) -> DevicePosition {
    position_of(parse_osmand(query, None, b"", now()).unwrap())
}

fn position_of(request: OsmAndRequest) -> DevicePosition {
    match request.parsed {
        Parsed::Position(position) => position,
        Parsed::Heartbeat => panic!("a position, not a heartbeat: {request:?}"),
    }
}

fn refusal(query: &str) -> Refusal {
    parse_osmand(query, None, b"", now()).unwrap_err()
}

#[test]
fn traccar_client_7_query_with_an_empty_body() {
    let query = "id=frd_dev1&timestamp=1732690000&lat=32.77&lon=-96.79&speed=20.5\
                 &bearing=92&altitude=150&accuracy=5&batt=88";
    let request = parse_osmand(query, FORM, b"", now()).unwrap();
    assert_eq!(request.token, "frd_dev1");
    assert_eq!(request.protocol, Protocol::OsmAnd);
    assert_eq!(request.protocol.as_str(), "osmand");
    let p = position_of(request);
    assert_eq!(p.timestamp, at(6, 46, 40));
    close(Some(p.lat), 32.77);
    close(Some(p.lng), -96.79);
    // 20.5 knots.
    close(p.speed_mph, 23.590_978_684);
    close(p.heading_deg, 92.0);
    close(p.altitude_m, 150.0);
    close(p.accuracy_m, 5.0);
    close(p.battery_percent, 88.0);
    assert_eq!(p.charging, None);
}

#[test]
fn traccar_client_10_form_body() {
    let body = b"id=frd_dev1&lat=32.7767&lon=-96.797&timestamp=1732690000&accuracy=4.8\
                 &altitude=150.2&speed=10.8&bearing=270.5&batt=76.0&charge=true&motion=true\
                 &odometer=15234.5&valid=true";
    let request = parse_osmand("", FORM, body, now()).unwrap();
    assert_eq!(request.token, "frd_dev1");
    assert_eq!(request.protocol, Protocol::OsmAnd);
    let p = position_of(request);
    assert_eq!(p.timestamp, at(6, 46, 40));
    close(Some(p.lat), 32.7767);
    close(Some(p.lng), -96.797);
    close(p.speed_mph, 12.428_418_038_4);
    close(p.heading_deg, 270.5);
    close(p.accuracy_m, 4.8);
    close(p.altitude_m, 150.2);
    close(p.battery_percent, 76.0);
    assert_eq!(p.charging, Some(true));
}

#[test]
fn traccar_client_10_heartbeat_has_no_coordinates() {
    let body = b"id=frd_dev1&timestamp=1732690000&batt=76.0&charge=false";
    let request = parse_osmand("", FORM, body, now()).unwrap();
    assert_eq!(request.token, "frd_dev1");
    assert_eq!(request.parsed, Parsed::Heartbeat);
    let bare = parse_osmand("id=frd_dev1", None, b"", now()).unwrap();
    assert_eq!(bare.parsed, Parsed::Heartbeat);
    // A heartbeat's other parameters are not checked.
    let odd = parse_osmand("id=frd_dev1&timestamp=soon&speed_unit=x", None, b"", now()).unwrap();
    assert_eq!(odd.parsed, Parsed::Heartbeat);
}

#[test]
fn a_body_without_a_content_type_is_read_as_a_form_when_the_query_is_empty() {
    let request = parse_osmand("", None, b"id=frd_dev1&lat=1.25&lon=2.5", now()).unwrap();
    let p = position_of(request);
    close(Some(p.lat), 1.25);
    close(Some(p.lng), 2.5);
    assert_eq!(p.timestamp, now());
    // A query of empty pieces has no parameters.
    let request = parse_osmand("&", None, b"id=frd_dev1&lat=1.25&lon=2.5", now());
    close(Some(position_of(request.unwrap()).lat), 1.25);
    let text = parse_osmand("", Some("text/plain"), b"id=frd_dev1&lat=1&lon=2", now());
    close(Some(position_of(text.unwrap()).lng), 2.0);
}

#[test]
fn query_and_form_body_are_read_together() {
    let request = parse_osmand("id=frd_dev1", FORM, b"lat=1.25&lon=2.5&speed=10", now());
    let p = position_of(request.unwrap());
    close(Some(p.lat), 1.25);
    close(p.speed_mph, 11.507_794_48);
    // With a query, a body that is not declared a form is not read.
    let request = parse_osmand("id=frd_dev1", Some("text/plain"), b"lat=1&lon=2", now());
    assert_eq!(request.unwrap().parsed, Parsed::Heartbeat);
    // And the two must agree on what they both carry.
    let err = parse_osmand("id=frd_dev1&lat=1", FORM, b"lat=2&lon=2", now()).unwrap_err();
    assert_eq!(err.reason(), "conflicting_parameter");
}

#[test]
fn json_content_type_with_an_empty_body_reads_the_query() {
    let request = parse_osmand(
        "id=frd_dev1&lat=1&lon=2",
        Some("application/json"),
        b"",
        now(),
    );
    let request = request.unwrap();
    assert_eq!(request.protocol, Protocol::OsmAnd);
    close(Some(position_of(request).lat), 1.0);
}

#[test]
fn osmand_app_template_with_milliseconds_and_metres_per_second() {
    // lat={0}&lon={1}&timestamp={2}&hdop={3}&altitude={4}&speed={5}&bearing={6}
    let query = "id=frd_dev1&lat=32.7767&lon=-96.797&timestamp=1732690000123&hdop=6.0\
                 &altitude=150.2&speed=12.5&bearing=92.3&speed_unit=mps";
    let p = position(query);
    assert_eq!(p.timestamp.timestamp(), 1_732_690_000);
    assert_eq!(p.timestamp.timestamp_subsec_millis(), 123);
    close(p.speed_mph, 27.961_703_65);
    close(p.heading_deg, 92.3);
    // hdop stands in for a missing accuracy, and only then.
    close(p.accuracy_m, 6.0);
    close(position(&format!("{query}&accuracy=3")).accuracy_m, 3.0);
}

#[test]
fn gpslogger_custom_url() {
    // ?id=<token>&lat=%LAT&lon=%LON&timestamp=%TIMESTAMP&speed=%SPD&speed_unit=mps
    let query = "id=frd_dev1&lat=32.776700&lon=-96.797000&timestamp=1732690000\
                 &speed=26.8224&speed_unit=mps&dir=180.0&acc=8.0&batt=55";
    let p = position(query);
    assert_eq!(p.timestamp, at(6, 46, 40));
    close(p.speed_mph, 60.0);
    close(p.battery_percent, 55.0);
    // `dir` and `acc` are GPSLogger's names, not the protocol's: ignored.
    assert_eq!(p.heading_deg, None);
    assert_eq!(p.accuracy_m, None);

    // %TIME: ISO 8601, percent-encoded or not.
    for time in ["2024-11-27T06:46:40.000Z", "2024-11-27T06%3A46%3A40.000Z"] {
        let query =
            format!("id=frd_dev1&lat=32.7767&lon=-96.797&timestamp={time}&speed=0&speed_unit=mps");
        let p = position(&query);
        assert_eq!(p.timestamp, at(6, 46, 40), "{time}");
        close(p.speed_mph, 0.0);
    }
}

#[test]
fn every_timestamp_form() {
    let cases = [
        ("1732690000", at(6, 46, 40)),
        ("1732690000000", at(6, 46, 40)),
        ("2024-11-27T06:46:40Z", at(6, 46, 40)),
        ("2024-11-27T08:46:40%2B02:00", at(6, 46, 40)),
        // An unencoded `+` arrives as a space.
        ("2024-11-27T08:46:40+02:00", at(6, 46, 40)),
        ("2024-11-27T06:46:40", at(6, 46, 40)),
        ("2024-11-27%2006:46:40", at(6, 46, 40)),
        ("2024-11-27+06:46:40", at(6, 46, 40)),
    ];
    for (raw, expected) in cases {
        let p = position(&format!("id=d&lat=1&lon=2&timestamp={raw}"));
        assert_eq!(p.timestamp, expected, "{raw}");
    }
    assert_eq!(position("id=d&lat=1&lon=2").timestamp, now());
    assert_eq!(position("id=d&lat=1&lon=2&timestamp=").timestamp, now());
}

#[test]
fn location_parameter() {
    for query in ["id=d&location=32.77,-96.79", "id=d&location=32.77%2C-96.79"] {
        let p = position(query);
        close(Some(p.lat), 32.77);
        close(Some(p.lng), -96.79);
    }
    let agreeing = position("id=d&location=32.77,-96.79&lat=32.77");
    close(Some(agreeing.lat), 32.77);
    assert_eq!(
        refusal("id=d&location=32.77,-96.79&lat=10").reason(),
        "conflicting_parameter"
    );
    assert_eq!(refusal("id=d&location=32.77").reason(), "malformed");
    assert_eq!(refusal("id=d&location=1,2,3").reason(), "malformed");
    assert_eq!(refusal("id=d&location=north,2").reason(), "bad_latitude");
    assert_eq!(refusal("id=d&location=1,east").reason(), "bad_longitude");
    assert_eq!(refusal("id=d&location=91,2").reason(), "bad_latitude");
}

#[test]
fn speed_units() {
    close(
        position("id=d&lat=1&lon=2&speed=10").speed_mph,
        11.507_794_48,
    );
    close(
        position("id=d&lat=1&lon=2&speed=10&speed_unit=kn").speed_mph,
        11.507_794_48,
    );
    close(
        position("id=d&lat=1&lon=2&speed=10&speed_unit=mps").speed_mph,
        22.369_362_92,
    );
    close(
        position("id=d&lat=1&lon=2&speed=100&speed_unit=kmh").speed_mph,
        62.137_119_2,
    );
    close(
        position("id=d&lat=1&lon=2&speed=55&speed_unit=mph").speed_mph,
        55.0,
    );
    let err = refusal("id=d&lat=1&lon=2&speed=10&speed_unit=furlongs");
    assert_eq!(err.reason(), "bad_speed_unit");
    assert!(err.message().contains("speed_unit"), "{}", err.message());
}

#[test]
fn negative_speed_and_bearing_are_unknown_and_headings_fold() {
    let p = position("id=d&lat=1&lon=2&speed=-1&bearing=-1");
    assert_eq!(p.speed_mph, None);
    assert_eq!(p.heading_deg, None);
    close(position("id=d&lat=1&lon=2&bearing=360").heading_deg, 0.0);
    close(position("id=d&lat=1&lon=2&heading=370.5").heading_deg, 10.5);
    close(
        position("id=d&lat=1&lon=2&heading=45&bearing=45").heading_deg,
        45.0,
    );
}

#[test]
fn percent_encoded_values() {
    let request = parse_osmand(
        "id=frd%5Fdev%2B1&lat=%2B32.77&lon=%2D96.79&speed=1%2E5",
        None,
        b"",
        now(),
    )
    .unwrap();
    assert_eq!(request.token, "frd_dev+1");
    let p = position_of(request);
    close(Some(p.lat), 32.77);
    close(Some(p.lng), -96.79);
    close(p.speed_mph, 1.726_169_172);
    // An unencoded `+` before a number is a space, and spaces are trimmed.
    close(Some(position("id=d&lat=+32.77&lon=2").lat), 32.77);
}

#[test]
fn telemetry_that_does_not_parse_is_dropped() {
    let p = position("id=d&lat=1&lon=2&altitude=high&accuracy=-3&batt=140&charge=maybe");
    assert_eq!(p.altitude_m, None);
    assert_eq!(p.accuracy_m, None);
    assert_eq!(p.battery_percent, None);
    assert_eq!(p.charging, None);
    assert_eq!(position("id=d&lat=1&lon=2&charge=1").charging, Some(true));
    assert_eq!(position("id=d&lat=1&lon=2&charge=0").charging, Some(false));
    assert_eq!(
        position("id=d&lat=1&lon=2&charge=false").charging,
        Some(false)
    );
}

#[test]
fn bad_fields_are_refused_with_their_reason() {
    let cases = [
        ("id=d&lat=abc&lon=2", "bad_latitude", "lat"),
        ("id=d&lat=91&lon=2", "bad_latitude", "lat"),
        ("id=d&lat=NaN&lon=2", "bad_latitude", "lat"),
        ("id=d&lat=-90.5&lon=2", "bad_latitude", "lat"),
        ("id=d&lat=1&lon=-181", "bad_longitude", "lon"),
        ("id=d&lat=1&lon=inf", "bad_longitude", "lon"),
        (
            "id=d&lat=1&lon=2&timestamp=yesterday",
            "bad_timestamp",
            "timestamp",
        ),
        (
            "id=d&lat=1&lon=2&timestamp=2024-13-40T00:00:00Z",
            "bad_timestamp",
            "timestamp",
        ),
        (
            "id=d&lat=1&lon=2&timestamp=-5",
            "bad_timestamp",
            "timestamp",
        ),
        ("id=d&lat=1&lon=2&speed=fast", "bad_speed", "speed"),
        ("id=d&lat=1&lon=2&speed=inf", "bad_speed", "speed"),
        ("id=d&lat=1&lon=2&bearing=north", "bad_heading", "bearing"),
        ("id=d&lat=1&lon=2&heading=NaN", "bad_heading", "heading"),
        ("id=d&lat=1", "malformed", "lon"),
        ("id=d&lon=1", "malformed", "lat"),
    ];
    for (query, reason, field) in cases {
        let err = refusal(query);
        assert_eq!(err.reason(), reason, "{query}");
        assert!(err.message().contains(field), "{query}: {}", err.message());
    }
}

#[test]
fn the_token_is_required() {
    for query in ["lat=1&lon=2", "id=&lat=1&lon=2", "", "deviceid="] {
        let err = refusal(query);
        assert_eq!(err.reason(), "missing_token", "{query}");
        assert_eq!(err.kind(), RefusalReason::MissingToken);
    }
    let request = parse_osmand("deviceid=frd_dev1&lat=1&lon=2", None, b"", now()).unwrap();
    assert_eq!(request.token, "frd_dev1");
}

#[test]
fn repeated_parameters_must_agree() {
    let agreeing = parse_osmand(
        "id=frd_a&deviceid=frd_a&lat=1&lat=1&lon=2",
        None,
        b"",
        now(),
    );
    let agreeing = agreeing.unwrap();
    assert_eq!(agreeing.token, "frd_a");
    close(Some(position_of(agreeing).lat), 1.0);
    let cases = [
        ("id=frd_a&deviceid=frd_b", "id and deviceid"),
        ("id=frd_a&id=frd_b", "id is given twice"),
        ("id=d&lat=1&lat=2&lon=2", "lat is given twice"),
        (
            "id=d&lat=1&lon=2&bearing=10&heading=20",
            "bearing and heading",
        ),
    ];
    for (query, message) in cases {
        let err = refusal(query);
        assert_eq!(err.reason(), "conflicting_parameter", "{query}");
        assert!(
            err.message().contains(message),
            "{query}: {}",
            err.message()
        );
        assert!(
            !err.message().contains("frd_"),
            "a token in {}",
            err.message()
        );
    }
}

#[test]
fn unknown_keys_are_ignored() {
    let query = "id=d&lat=1&lon=2&driverUniqueId=42&alarm=sos&valid=true&weird%ZZkey=%zz&=x&flag";
    let p = position(query);
    close(Some(p.lat), 1.0);
    close(Some(p.lng), 2.0);
}
