//! Hostile input, generated: whatever a client sends as a request body, parsing
//! and validating it never panics and ends in the answer's body type or a 4xx
//! (never a 5xx); timestamps and text that pass keep the rules they passed.

use actix_web::ResponseError;
use proptest::prelude::*;
use serde_json::{Map, Value, json};

use super::carrier::NewCarrierInput;
use super::load::{NewLoadInput, StatusChangeInput};
use super::tracking::FixInput;
use crate::api::error::ApiError;
use crate::api::extract::parse_json;
use crate::domain::validation::{ValidationErrors, text};
use crate::domain::{timestamp, validation};

/// Any JSON value, nested a few levels, with the strings clients get wrong.
fn any_json() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<i64>().prop_map(|n| json!(n)),
        any::<f64>().prop_map(|f| json!(f)),
        ".*".prop_map(Value::String),
        prop_oneof![
            Just("2026-11-24T07:08:09Z"),
            Just("2026-11-24T07:08:60Z"),
            Just("2026-11-24T07:08:09-00:00"),
            Just("2026-11-24T07:08:09\u{2212}05:00"),
            Just("\u{3164}"),
            Just("TX"),
            Just("75201"),
            Just("dry_van"),
            Just("assigned"),
            Just("load_01jd5ex0k3m2v8q4r6t9w1y3z5"),
        ]
        .prop_map(|s| Value::String(s.into())),
    ];
    leaf.prop_recursive(3, 24, 6, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..6).prop_map(Value::Array),
            prop::collection::vec(
                (
                    prop_oneof![
                        "[a-z_]{1,12}",
                        Just("lat".to_owned()),
                        Just("timestamp".to_owned()),
                        Just("origin".to_owned()),
                        Just("status".to_owned()),
                        Just("weight".to_owned()),
                    ],
                    inner
                ),
                0..8
            )
            .prop_map(|fields| Value::Object(fields.into_iter().collect::<Map<_, _>>())),
        ]
    })
}

/// A valid body with one field (maybe nested) replaced by anything.
fn mutated(valid: Value) -> impl Strategy<Value = Value> {
    let paths = leaf_paths(&valid);
    (prop::sample::select(paths), any_json()).prop_map(move |(path, value)| {
        let mut body = valid.clone();
        if let Some(slot) = body.pointer_mut(&path) {
            *slot = value;
        }
        body
    })
}

fn leaf_paths(value: &Value) -> Vec<String> {
    let mut out = vec![String::new()];
    if let Value::Object(fields) = value {
        for (key, inner) in fields {
            for rest in leaf_paths(inner) {
                out.push(format!("/{key}{rest}"));
            }
        }
    }
    out
}

fn valid_load() -> Value {
    json!({"origin": {"city": "Dallas", "state": "TX", "zip": "75201"},
           "destination": {"city": "Atlanta", "state": "GA", "zip": "30301"},
           "weight": 42000, "equipment_type": "dry_van", "rate": 1850.5, "notes": "call ahead"})
}

fn valid_carrier() -> Value {
    json!({"name": "Lone Star Hauling", "mc_number": "123456", "dot_number": "2233445",
           "contact": {"email": "d@lonestar.example", "phone": "+1 214-555-0100"},
           "equipment_types": ["dry_van"], "service_areas": ["TX"]})
}

fn valid_fix() -> Value {
    json!({"lat": 32.7, "lng": -96.8, "timestamp": "2026-11-24T07:00:00Z", "speed": 50, "heading": 90})
}

/// Parses a body as the handler does: a refusal must be a 4xx.
fn parse<T: crate::api::extract::BodyInput>(body: &[u8]) -> Option<T> {
    match parse_json::<T>(body) {
        Ok(input) => Some(input),
        Err(error) => {
            assert_client_error(&error);
            None
        }
    }
}

fn assert_client_error(error: &ApiError) {
    let status = error.status_code();
    assert!(
        status.is_client_error(),
        "{status} for a client's body: {error:?}"
    );
}

fn assert_validation(result: Result<impl Sized, ValidationErrors>) {
    if let Err(errors) = result {
        assert_client_error(&ApiError::from(errors));
    }
}

fn check_all(body: &[u8]) {
    if let Some(input) = parse::<NewLoadInput>(body) {
        assert_validation(input.validate());
    }
    if let Some(input) = parse::<NewCarrierInput>(body) {
        assert_validation(input.validate());
    }
    if let Some(input) = parse::<StatusChangeInput>(body) {
        assert_validation(input.validate());
    }
    if let Some(input) = parse::<FixInput>(body) {
        let mut errors = ValidationErrors::default();
        let fix = input.validate("", chrono::Utc::now(), &mut errors);
        // The handlers take the fix with `expect` once no error was recorded.
        assert!(fix.is_some() || !errors.is_empty(), "no fix and no reason");
        if !errors.is_empty() {
            assert_client_error(&ApiError::from(errors));
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

    #[test]
    fn any_bytes_are_refused_with_a_4xx_or_parsed(body in prop::collection::vec(any::<u8>(), 0..256)) {
        check_all(&body);
    }

    #[test]
    fn any_json_is_refused_with_a_4xx_or_valid(body in any_json()) {
        check_all(body.to_string().as_bytes());
    }

    #[test]
    fn a_valid_load_with_any_field_changed_never_fails_the_server(body in mutated(valid_load())) {
        check_all(body.to_string().as_bytes());
    }

    #[test]
    fn a_valid_carrier_with_any_field_changed_never_fails_the_server(body in mutated(valid_carrier())) {
        check_all(body.to_string().as_bytes());
    }

    #[test]
    fn a_valid_fix_with_any_field_changed_never_fails_the_server(body in mutated(valid_fix())) {
        check_all(body.to_string().as_bytes());
    }

    #[test]
    fn a_timestamp_that_passes_reads_back_as_itself(
        raw in prop_oneof![
            ".{0,40}",
            // Mostly well-formed, so that many pass and the round trip is tried.
            "20[0-9]{2}-[01][0-9]-[0-3][0-9]T[0-2][0-9]:[0-6][0-9]:[0-6][0-9](\\.[0-9]{1,9})?(Z|z|[+-]0[0-1]:00)",
        ]
    ) {
        if let Ok(at) = timestamp::parse_utc(&raw) {
            let written = timestamp::format(&at);
            prop_assert!(written.is_ascii() && written.ends_with('Z'), "{written}");
            prop_assert_eq!(timestamp::parse_utc(&written), Ok(at));
        }
    }

    #[test]
    fn text_that_passes_keeps_its_rules(raw in ".{0,60}", max in 1usize..40) {
        if let Ok(kept) = text(raw, max, false) {
            prop_assert!(!kept.is_empty());
            prop_assert!(kept.chars().count() <= max);
            prop_assert_eq!(kept.trim(), kept.as_str());
            prop_assert!(validation::text(kept.clone(), max, false).is_ok(), "idempotent");
        }
    }
}
