use reqwest::StatusCode;
use serde_json::{Value, json};

use crate::helpers::{assert_error, load_body, spawn_app};

#[actix_web::test]
async fn create_returns_the_posted_load() {
    let app = spawn_app().await;
    let body = json!({
        "origin": {"city": "Dallas", "state": "tx", "zip": "75201", "address": "100 Main St"},
        "destination": {"city": "Atlanta", "state": "GA", "zip": "30301-1234"},
        "weight": 42000.5,
        "equipment_type": "refrigerated",
        "pickup_date": "2026-12-01T08:00:00Z",
        "delivery_date": "2026-12-03T17:00:00+00:00",
        "rate": 2450.75,
        "notes": "  Call before arrival  "
    });
    let (status, created) = app.post("/loads", body).await;
    assert_eq!(status, StatusCode::CREATED, "{created}");
    assert_eq!(created["success"], true);
    let load = &created["data"];
    let id = load["id"].as_str().unwrap();
    assert!(id.starts_with("load_") && id.len() == 31, "{id}");
    assert_eq!(load["status"], "posted");
    assert_eq!(
        load["origin"],
        json!({"city": "Dallas", "state": "TX", "zip": "75201", "address": "100 Main St",
               "lat": null, "lng": null, "radius_m": null})
    );
    assert_eq!(load["destination"]["zip"], "30301-1234");
    assert_eq!(load["weight"], 42000.5);
    assert_eq!(load["equipment_type"], "refrigerated");
    assert_eq!(load["pickup_date"], "2026-12-01T08:00:00Z");
    assert_eq!(load["delivery_date"], "2026-12-03T17:00:00Z");
    assert_eq!(load["rate"], 2450.75);
    assert_eq!(load["notes"], "Call before arrival");
    let created_at = load["created_at"].as_str().unwrap();
    assert!(created_at.ends_with('Z'), "{created_at}");

    let (status, fetched) = app.get(&format!("/loads/{id}")).await;
    assert_eq!(status, StatusCode::OK);
    let fetched = &fetched["data"];
    assert_eq!(fetched["id"], id);
    assert_eq!(fetched["created_at"], created_at);
    assert_eq!(fetched["carrier"], Value::Null);
    assert_eq!(
        fetched["tracking"],
        json!({"current_location": null, "eta": null, "last_update": null, "late_risk": false,
               "hours_of_service": null, "eta_basis": null})
    );
}

#[actix_web::test]
async fn the_minimal_create_request_of_the_spec_is_valid() {
    let app = spawn_app().await;
    let load = app.create_load(load_body("TX", "GA")).await;
    assert_eq!(load["status"], "posted");
    assert_eq!(load["pickup_date"], Value::Null);
    assert_eq!(load["rate"], Value::Null);
}

#[actix_web::test]
async fn unknown_or_malformed_load_ids_are_not_found() {
    let app = spawn_app().await;
    for id in [
        "load_01m7zsaxzk3pb3vfdnxzkmn1s1",
        "load_nope",
        "carrier_01m7zsaxzk3pb3vfdnxzkmn1s1",
        "%20",
    ] {
        let (status, body) = app.get(&format!("/loads/{id}")).await;
        let error = assert_error(status, &body, 404, "INVALID_LOAD");
        assert!(error["message"].as_str().unwrap().contains("not found"));
    }
}

#[actix_web::test]
async fn an_empty_account_lists_in_both_spec_shapes() {
    let app = spawn_app().await;
    let (status, body) = app.get("/loads").await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(
        body,
        json!({
            "success": true,
            "data": {"loads": [], "total": 0, "page": 1},
            "pagination": {"page": 1, "limit": 50, "total": 0}
        })
    );
}

fn ids(body: &Value) -> Vec<String> {
    body["data"]["loads"]
        .as_array()
        .unwrap()
        .iter()
        .map(|l| l["id"].as_str().unwrap().to_owned())
        .collect()
}

#[actix_web::test]
async fn lists_are_newest_first_and_paginate() {
    let app = spawn_app().await;
    let mut created = Vec::new();
    for _ in 0..7 {
        created.push(
            app.create_load(load_body("TX", "GA")).await["id"]
                .as_str()
                .unwrap()
                .to_owned(),
        );
    }
    created.reverse();
    let (_, all) = app.get("/loads").await;
    assert_eq!(ids(&all), created);

    let mut paged = Vec::new();
    for page in 1..=3 {
        let (status, body) = app.get(&format!("/loads?limit=3&page={page}")).await;
        assert_eq!(status, StatusCode::OK);
        assert_eq!(
            body["pagination"],
            json!({"page": page, "limit": 3, "total": 7})
        );
        assert_eq!(body["data"]["page"], page);
        assert_eq!(body["data"]["total"], 7);
        paged.extend(ids(&body));
    }
    assert_eq!(paged, created);

    let (status, beyond) = app.get("/loads?page=4&limit=3").await;
    assert_eq!(status, StatusCode::OK);
    assert!(ids(&beyond).is_empty());
    assert_eq!(beyond["data"]["total"], 7);

    let (_, max) = app.get("/loads?limit=100").await;
    assert_eq!(ids(&max).len(), 7);
    assert_eq!(max["pagination"]["limit"], 100);
}

#[actix_web::test]
async fn bad_list_parameters_are_refused() {
    let app = spawn_app().await;
    for (query, field) in [
        ("limit=101", "limit"),
        ("limit=0", "limit"),
        ("limit=-1", "limit"),
        ("limit=ten", "limit"),
        ("page=0", "page"),
        ("page=1.5", "page"),
        ("page=99999999999999999999", "page"),
        ("status=lost", "status"),
        ("origin_state=XX", "origin_state"),
        ("destination_state=Texas", "destination_state"),
        ("staus=posted", "staus"),
        ("page=1&page=2", "page"),
    ] {
        let (status, body) = app.get(&format!("/loads?{query}")).await;
        let error = assert_error(status, &body, 400, "INVALID_QUERY_PARAMETER");
        assert_eq!(error["details"]["field"], field, "{query}: {body}");
    }
}

#[actix_web::test]
async fn filters_combine_and_follow_status_changes() {
    let app = spawn_app().await;
    let tx_ga = app.create_load(load_body("TX", "GA")).await;
    let tx_ca = app.create_load(load_body("TX", "CA")).await;
    let ok_ga = app.create_load(load_body("OK", "GA")).await;
    let carrier = app.create_carrier("222222").await;
    let (status, _) = app
        .patch(
            &format!("/loads/{}/status", tx_ca["id"].as_str().unwrap()),
            json!({"status": "assigned", "carrier_id": carrier["id"]}),
        )
        .await;
    assert_eq!(status, StatusCode::OK);

    let id = |l: &Value| l["id"].as_str().unwrap().to_owned();
    for (query, expected) in [
        ("origin_state=TX", vec![id(&tx_ca), id(&tx_ga)]),
        ("origin_state=tx", vec![id(&tx_ca), id(&tx_ga)]),
        ("destination_state=GA", vec![id(&ok_ga), id(&tx_ga)]),
        ("status=posted", vec![id(&ok_ga), id(&tx_ga)]),
        ("status=assigned", vec![id(&tx_ca)]),
        ("status=posted&origin_state=TX", vec![id(&tx_ga)]),
        (
            "status=posted&origin_state=TX&destination_state=GA",
            vec![id(&tx_ga)],
        ),
        ("origin_state=OK&destination_state=CA", vec![]),
        ("status=delivered", vec![]),
    ] {
        let (status, body) = app.get(&format!("/loads?{query}")).await;
        assert_eq!(status, StatusCode::OK, "{query}");
        assert_eq!(ids(&body), expected, "{query}");
        assert_eq!(body["data"]["total"], expected.len(), "{query}");
    }
}

#[actix_web::test]
async fn acknowledged_loads_survive_a_restart() {
    let app = spawn_app().await;
    let load = app.create_load(load_body("TX", "GA")).await;
    let carrier = app.create_carrier("333333").await;
    let path = format!("/loads/{}/status", load["id"].as_str().unwrap());
    let (status, _) = app
        .patch(
            &path,
            json!({"status": "assigned", "carrier_id": carrier["id"]}),
        )
        .await;
    assert_eq!(status, StatusCode::OK);

    let app = app.restart().await;
    let (status, fetched) = app
        .get(&format!("/loads/{}", load["id"].as_str().unwrap()))
        .await;
    assert_eq!(status, StatusCode::OK, "{fetched}");
    assert_eq!(fetched["data"]["status"], "assigned");
    assert_eq!(fetched["data"]["carrier"]["id"], carrier["id"]);
    let (_, list) = app.get("/loads?status=assigned").await;
    assert_eq!(list["data"]["total"], 1);
}

/// One rule for ids in paths: a malformed id is the same 404 as an unknown one,
/// for every resource, and only after the body has been checked (a bad body to
/// a malformed or unknown id is a 400).
#[actix_web::test]
async fn malformed_path_ids_are_not_found_after_the_body_is_checked() {
    let app = spawn_app().await;
    for (path, code) in [
        ("/carriers/carrier_nope", "INVALID_CARRIER"),
        ("/loads/load_nope/tracking", "INVALID_LOAD"),
        ("/loads/load_nope/tracking/history", "INVALID_LOAD"),
        ("/webhooks/wh_nope", "WEBHOOK_NOT_FOUND"),
        ("/webhooks/wh_nope/deliveries", "WEBHOOK_NOT_FOUND"),
    ] {
        let (status, body) = app.get(path).await;
        assert_error(status, &body, 404, code);
    }
    let now = chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Millis, true);
    let fix = json!({"lat": 32.7, "lng": -96.8, "timestamp": now});
    let (status, body) = app.post("/loads/load_nope/tracking", fix).await;
    assert_error(status, &body, 404, "INVALID_LOAD");

    for id in ["load_nope", "load_01m7zsaxzk3pb3vfdnxzkmn1s1"] {
        let (status, body) = app
            .patch(&format!("/loads/{id}/status"), json!({"status": "flying"}))
            .await;
        assert_error(status, &body, 400, "VALIDATION_FAILED");
        let (status, body) = app
            .post(&format!("/loads/{id}/tracking"), json!({"lat": 91}))
            .await;
        assert_error(status, &body, 400, "VALIDATION_FAILED");
    }
}
