//! Hostile and mistaken input: every refusal is a 4xx in the envelope, names the
//! field, and changes nothing.

use reqwest::StatusCode;
use serde_json::{Value, json};

use crate::helpers::{assert_error, carrier_body, load_body, send, spawn_app};

/// `load_body` with `pointer` (a JSON pointer) replaced by `value` (or removed for null).
fn load_with(pointer: &str, value: Value) -> Value {
    let mut body = load_body("TX", "GA");
    edit(&mut body, pointer, value);
    body
}

fn edit(body: &mut Value, pointer: &str, value: Value) {
    let (parent, key) = pointer.rsplit_once('/').unwrap();
    let target = body.pointer_mut(parent).unwrap().as_object_mut().unwrap();
    if value.is_null() {
        target.remove(key);
    } else {
        target.insert(key.to_owned(), value);
    }
}

#[actix_web::test]
async fn bad_loads_are_refused_field_by_field() {
    let app = spawn_app().await;
    let long = "x".repeat(2001);
    let cases: Vec<(Value, &str)> = vec![
        (load_with("/origin", Value::Null), "origin"),
        (load_with("/destination", Value::Null), "destination"),
        (load_with("/weight", Value::Null), "weight"),
        (load_with("/equipment_type", Value::Null), "equipment_type"),
        (load_with("/origin/city", Value::Null), "origin.city"),
        (load_with("/origin/city", json!("   ")), "origin.city"),
        (
            load_with("/origin/city", json!("x".repeat(101))),
            "origin.city",
        ),
        (load_with("/origin/state", json!("XX")), "origin.state"),
        (load_with("/origin/state", json!("Texas")), "origin.state"),
        (
            load_with("/destination/state", json!(12)),
            "destination.state",
        ),
        (load_with("/origin/zip", json!("7520")), "origin.zip"),
        (
            load_with("/destination/zip", json!("ABCDE")),
            "destination.zip",
        ),
        (load_with("/weight", json!(0)), "weight"),
        (load_with("/weight", json!(-10)), "weight"),
        (load_with("/weight", json!(1e9)), "weight"),
        (load_with("/weight", json!("heavy")), "weight"),
        (load_with("/origin/city", json!("\u{200b}")), "origin.city"),
        // Found by a black-box probe: characters that render as nothing.
        (
            load_with("/origin/city", json!("Dal\u{2028}las")),
            "origin.city",
        ),
        (load_with("/origin/city", json!("\u{3164}")), "origin.city"),
        (load_with("/notes", json!("ok\u{E0041}\u{E007F}")), "notes"),
        (
            load_with("/destination/city", json!("At\u{034F}lanta")),
            "destination.city",
        ),
        // Offsets docs/api-guide.md refuses (Conventions, timestamps), and a leap second.
        (
            load_with("/pickup_date", json!("2026-12-01T08:00:00-00:00")),
            "pickup_date",
        ),
        (
            load_with("/pickup_date", json!("2026-12-01T08:00:00\u{2212}05:00")),
            "pickup_date",
        ),
        (
            load_with("/pickup_date", json!("2026-12-31T23:59:60Z")),
            "pickup_date",
        ),
        (
            load_with("/equipment_type", json!("spaceship")),
            "equipment_type",
        ),
        (
            load_with("/equipment_type", json!(["dry_van"])),
            "equipment_type",
        ),
        (load_with("/pickup_date", json!("tomorrow")), "pickup_date"),
        (
            load_with("/pickup_date", json!("2026-12-01")),
            "pickup_date",
        ),
        (
            load_with("/pickup_date", json!("2026-12-01T08:00:00+02:00")),
            "pickup_date",
        ),
        (
            load_with("/delivery_date", json!("2026-13-01T08:00:00Z")),
            "delivery_date",
        ),
        (
            {
                let mut b = load_with("/pickup_date", json!("2026-12-05T08:00:00Z"));
                edit(&mut b, "/delivery_date", json!("2026-12-01T08:00:00Z"));
                b
            },
            "delivery_date",
        ),
        (load_with("/rate", json!(-1)), "rate"),
        (load_with("/rate", json!(10.001)), "rate"),
        (load_with("/rate", json!("1000")), "rate"),
        (load_with("/notes", json!(long)), "notes"),
        (load_with("/notes", json!(5)), "notes"),
        (load_with("/status", json!("delivered")), "status"),
        (load_with("/origin/country", json!("US")), "origin.country"),
        (json!([]), "body"),
        (json!("load"), "body"),
    ];
    for (body, field) in cases {
        let (status, answer) = app.post("/loads", body.clone()).await;
        let error = assert_error(status, &answer, 400, "VALIDATION_FAILED");
        assert_eq!(error["details"]["field"], field, "{body} -> {answer}");
        let listed: Vec<&str> = error["details"]["errors"]
            .as_array()
            .unwrap()
            .iter()
            .map(|e| e["field"].as_str().unwrap())
            .collect();
        assert!(listed.contains(&field), "{answer}");
    }
    let (_, list) = app.get("/loads").await;
    assert_eq!(list["data"]["total"], 0, "a refused request created a load");
}

#[actix_web::test]
async fn every_problem_is_reported_at_once() {
    let app = spawn_app().await;
    let (status, answer) = app
        .post(
            "/loads",
            json!({"origin": {"city": "Dallas", "state": "ZZ", "zip": "1"}, "weight": -1}),
        )
        .await;
    let error = assert_error(status, &answer, 400, "VALIDATION_FAILED");
    let fields: Vec<&str> = error["details"]["errors"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["field"].as_str().unwrap())
        .collect();
    assert_eq!(
        fields,
        [
            "origin.state",
            "origin.zip",
            "destination",
            "weight",
            "equipment_type"
        ]
    );
}

/// Fields serde refuses (unknown ones, wrong types) are listed with the rest,
/// in the API's words, not serde's.
#[actix_web::test]
async fn wrong_types_and_unknown_fields_are_listed_with_every_other_problem() {
    let app = spawn_app().await;
    let (status, answer) = app
        .post(
            "/loads",
            json!({
                "origin": {"city": "Dallas", "state": "ZZ", "zip": 75201},
                "weight": "42000",
                "equipment_type": "spaceship",
                "colour": "red",
                "pickup_date": "tomorrow",
            }),
        )
        .await;
    let error = assert_error(status, &answer, 400, "VALIDATION_FAILED");
    let errors: Vec<(String, String)> = error["details"]["errors"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| {
            let text = |k: &str| e[k].as_str().unwrap().to_owned();
            (text("field"), text("message"))
        })
        .collect();
    let message = |field: &str| {
        errors
            .iter()
            .find(|(f, _)| f == field)
            .unwrap_or_else(|| panic!("{field} not listed: {errors:?}"))
            .1
            .clone()
    };
    assert_eq!(message("weight"), "must be a number");
    assert_eq!(message("origin.zip"), "must be a string");
    assert_eq!(message("colour"), "is not a field of this request");
    for field in [
        "origin.state",
        "destination",
        "equipment_type",
        "pickup_date",
    ] {
        message(field);
    }
    assert_eq!(errors.len(), 7, "each once: {errors:?}");
    let (_, list) = app.get("/loads").await;
    assert_eq!(list["data"]["total"], 0);
}

#[actix_web::test]
async fn malformed_bodies_are_refused() {
    let app = spawn_app().await;
    let raw = |body: &'static str, content_type: &'static str| {
        app.client
            .post(app.url("/loads"))
            .bearer_auth(&app.key)
            .header("content-type", content_type)
            .body(body)
    };
    let (status, body) = send(raw("{\"origin\": ", "application/json")).await;
    assert_error(status, &body, 400, "MALFORMED_JSON");
    let (status, body) = send(raw("", "application/json")).await;
    assert_error(status, &body, 400, "MALFORMED_JSON");
    let (status, body) = send(raw("{} {}", "application/json")).await;
    assert_error(status, &body, 400, "MALFORMED_JSON");
    let (status, body) = send(raw(
        r#"{"origin":{"city":"Dallas","state":"TX","zip":"75201"},"destination":{"city":"Atlanta","state":"GA","zip":"30301"},"weight":1e400,"equipment_type":"dry_van"}"#,
        "application/json",
    ))
    .await;
    let error = assert_error(status, &body, 400, "VALIDATION_FAILED");
    assert_eq!(error["details"]["field"], "weight");
    let (status, body) = send(raw("origin=Dallas", "application/x-www-form-urlencoded")).await;
    assert_error(status, &body, 415, "UNSUPPORTED_MEDIA_TYPE");
    let (status, body) = send(
        app.client
            .post(app.url("/loads"))
            .bearer_auth(&app.key)
            .body("{}"),
    )
    .await;
    assert_error(status, &body, 415, "UNSUPPORTED_MEDIA_TYPE");

    let mut huge = load_body("TX", "GA");
    huge["notes"] = json!("x".repeat(200_000));
    let (status, body) = app.post("/loads", huge).await;
    assert_error(status, &body, 413, "PAYLOAD_TOO_LARGE");

    let (_, list) = app.get("/loads").await;
    assert_eq!(list["data"]["total"], 0);
}

#[actix_web::test]
async fn bad_carriers_are_refused_field_by_field() {
    let app = spawn_app().await;
    let with = |pointer: &str, value: Value| {
        let mut body = carrier_body("123456");
        edit(&mut body, pointer, value);
        body
    };
    let cases: Vec<(Value, &str)> = vec![
        (with("/name", Value::Null), "name"),
        (with("/name", json!("")), "name"),
        (with("/mc_number", Value::Null), "mc_number"),
        (with("/mc_number", json!("MC-12345x")), "mc_number"),
        (with("/mc_number", json!(123456)), "mc_number"),
        (with("/mc_number", json!("12345678901")), "mc_number"),
        (with("/dot_number", json!("12a4")), "dot_number"),
        (
            with("/contact/email", json!("not-an-email")),
            "contact.email",
        ),
        (with("/contact/phone", json!("call me")), "contact.phone"),
        (with("/contact/fax", json!("555")), "contact.fax"),
        (
            with("/equipment_types", json!(["dry_van", "hovercraft"])),
            "equipment_types[1]",
        ),
        (
            with("/equipment_types", json!("dry_van")),
            "equipment_types",
        ),
        (
            with("/service_areas", json!(["TX", "ZZ"])),
            "service_areas[1]",
        ),
        (
            with("/service_areas", json!(vec!["TX"; 201])),
            "service_areas",
        ),
    ];
    for (body, field) in cases {
        let (status, answer) = app.post("/carriers", body.clone()).await;
        let error = assert_error(status, &answer, 400, "VALIDATION_FAILED");
        assert_eq!(error["details"]["field"], field, "{body} -> {answer}");
    }
    let (_, list) = app.get("/carriers").await;
    assert_eq!(list["data"]["total"], 0);
}

#[actix_web::test]
async fn bad_status_changes_are_refused() {
    let app = spawn_app().await;
    let load = app.create_load(load_body("TX", "GA")).await;
    let path = format!("/loads/{}/status", load["id"].as_str().unwrap());
    let cases: Vec<(Value, &str)> = vec![
        (json!({}), "status"),
        (json!({"status": "lost"}), "status"),
        (json!({"status": "POSTED"}), "status"),
        (json!({"status": 1}), "status"),
        (
            json!({"status": "posted", "location": {"lat": 91, "lng": 0}}),
            "location.lat",
        ),
        (
            json!({"status": "posted", "location": {"lat": 0, "lng": -181}}),
            "location.lng",
        ),
        (
            json!({"status": "posted", "location": {"lat": 0}}),
            "location.lng",
        ),
        (
            json!({"status": "posted", "location": "Dallas"}),
            "location",
        ),
        (json!({"status": "posted", "eta": "soon"}), "eta"),
    ];
    for (body, field) in cases {
        let (status, answer) = app.patch(&path, body.clone()).await;
        let error = assert_error(status, &answer, 400, "VALIDATION_FAILED");
        assert_eq!(error["details"]["field"], field, "{body} -> {answer}");
    }
    let (_, after) = app
        .get(&format!("/loads/{}", load["id"].as_str().unwrap()))
        .await;
    assert_eq!(after["data"]["status_history"].as_array().unwrap().len(), 1);

    let (status, answer) = app
        .patch(
            "/loads/load_01m7zsaxzk3pb3vfdnxzkmn1s1/status",
            json!({"status": "assigned"}),
        )
        .await;
    assert_error(status, &answer, 404, "INVALID_LOAD");
}

#[actix_web::test]
async fn body_limit_is_configurable() {
    let app = crate::helpers::spawn_app_with(|s| s.body_limit = 512).await;
    let mut body = load_body("TX", "GA");
    body["notes"] = json!("x".repeat(600));
    let (status, answer) = app.post("/loads", body).await;
    let error = assert_error(status, &answer, 413, "PAYLOAD_TOO_LARGE");
    assert_eq!(error["details"]["limit_bytes"], 512);
    assert_eq!(
        app.post("/loads", load_body("TX", "GA")).await.0,
        StatusCode::CREATED
    );
}

#[actix_web::test]
async fn query_parameters_are_refused_where_none_are_taken() {
    let app = spawn_app().await;
    let (status, body) = app.post("/loads?dry_run=1", load_body("TX", "GA")).await;
    let error = assert_error(status, &body, 400, "INVALID_QUERY_PARAMETER");
    assert_eq!(error["details"]["field"], "dry_run");
    let (_, list) = app.get("/loads").await;
    assert_eq!(list["data"]["total"], 0);

    let many: Vec<String> = (0..5000).map(|i| format!("p{i}=1")).collect();
    let (status, body) = app.get(&format!("/loads?{}", many.join("&"))).await;
    assert_error(status, &body, 400, "INVALID_QUERY_PARAMETER");
}
