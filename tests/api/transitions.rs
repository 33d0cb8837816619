use reqwest::StatusCode;
use serde_json::{Value, json};

use crate::helpers::{TestApp, assert_error, load_body, spawn_app};

const STATUSES: [&str; 4] = ["posted", "assigned", "in_transit", "delivered"];
/// Every status, cancelled (reached from posted) too.
const ALL_STATUSES: [&str; 5] = ["posted", "assigned", "in_transit", "delivered", "cancelled"];

/// A load driven to `status` along the allowed path, and its carrier.
async fn load_in(app: &TestApp, status: &str, mc: &str) -> (String, String) {
    let load = app.create_load(load_body("TX", "GA")).await;
    let carrier = app.create_carrier(mc).await;
    let id = load["id"].as_str().unwrap().to_owned();
    let carrier_id = carrier["id"].as_str().unwrap().to_owned();
    let path: &[&str] = match status {
        "cancelled" => &["cancelled"],
        _ => {
            let steps = STATUSES.iter().position(|s| *s == status).unwrap();
            &["assigned", "in_transit", "delivered"][..steps]
        }
    };
    for next in path {
        let mut body = json!({"status": next});
        if *next == "assigned" {
            body["carrier_id"] = json!(carrier_id);
        }
        let (code, answer) = app.patch(&format!("/loads/{id}/status"), body).await;
        assert_eq!(code, StatusCode::OK, "{answer}");
    }
    (id, carrier_id)
}

#[actix_web::test]
async fn the_whole_lifecycle() {
    let app = spawn_app().await;
    let (id, carrier_id) = load_in(&app, "posted", "400001").await;
    let path = format!("/loads/{id}/status");

    let (status, assigned) = app
        .patch(
            &path,
            json!({"status": "assigned", "carrier_id": carrier_id, "notes": "booked by phone"}),
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{assigned}");
    assert_eq!(assigned["data"]["status"], "assigned");
    assert_eq!(
        assigned["data"]["carrier"],
        json!({"id": carrier_id, "name": "Lone Star Hauling", "mc_number": "400001"})
    );

    let (status, moving) = app
        .patch(
            &path,
            json!({"status": "in_transit", "location": {"lat": 32.7767, "lng": -96.797}}),
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{moving}");
    assert_eq!(moving["data"]["status"], "in_transit");
    assert_eq!(moving["data"]["carrier"]["id"], carrier_id.as_str());

    let (status, delivered) = app.patch(&path, json!({"status": "delivered"})).await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(delivered["data"]["status"], "delivered");

    let (_, fetched) = app.get(&format!("/loads/{id}")).await;
    let history: Vec<&str> = fetched["data"]["status_history"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["status"].as_str().unwrap())
        .collect();
    assert_eq!(history, STATUSES);
    assert_eq!(
        fetched["data"]["status_history"][1]["notes"],
        "booked by phone"
    );
    assert_eq!(
        fetched["data"]["status_history"][2]["location"],
        json!({"lat": 32.7767, "lng": -96.797})
    );
    assert_eq!(fetched["data"]["carrier"]["id"], carrier_id.as_str());
}

#[actix_web::test]
async fn every_refused_transition_names_the_way_forward_and_changes_nothing() {
    let app = spawn_app().await;
    let allowed: &[(&str, &str)] = &[
        ("posted", "assigned"),
        ("assigned", "in_transit"),
        ("assigned", "posted"),
        ("in_transit", "delivered"),
        ("posted", "cancelled"),
        ("assigned", "cancelled"),
    ];
    let mut mc = 500_000;
    for from in ALL_STATUSES {
        for to in ALL_STATUSES {
            if from == to || allowed.contains(&(from, to)) {
                continue;
            }
            mc += 1;
            let (id, carrier_id) = load_in(&app, from, &mc.to_string()).await;
            let (_, before) = app.get(&format!("/loads/{id}")).await;
            let mut body = json!({"status": to});
            if to == "assigned" {
                body["carrier_id"] = json!(carrier_id);
            }
            let (status, answer) = app.patch(&format!("/loads/{id}/status"), body).await;
            let error = assert_error(status, &answer, 409, "INVALID_STATUS_TRANSITION");
            assert_eq!(error["details"]["current_status"], from, "{from}->{to}");
            assert_eq!(error["details"]["requested_status"], to);
            let expected: Vec<&str> = allowed
                .iter()
                .filter(|(f, _)| *f == from)
                .map(|(_, t)| *t)
                .collect();
            assert_eq!(
                error["details"]["allowed_next"],
                json!(expected),
                "{from}->{to}"
            );
            let (_, after) = app.get(&format!("/loads/{id}")).await;
            assert_eq!(before, after, "{from}->{to} changed the load");
        }
    }
}

#[actix_web::test]
async fn repeating_the_current_status_is_an_idempotent_success() {
    let app = spawn_app().await;
    for (n, status) in STATUSES.iter().enumerate() {
        let (id, carrier_id) = load_in(&app, status, &format!("60000{n}")).await;
        let (_, before) = app.get(&format!("/loads/{id}")).await;
        let mut body = json!({"status": status});
        if *status == "assigned" {
            body["carrier_id"] = json!(carrier_id);
        }
        let (code, answer) = app.patch(&format!("/loads/{id}/status"), body).await;
        assert_eq!(code, StatusCode::OK, "{status}: {answer}");
        assert_eq!(answer["data"], before["data"], "{status}");
    }
}

#[actix_web::test]
async fn assignment_rules() {
    let app = spawn_app().await;
    let (id, carrier_id) = load_in(&app, "posted", "700001").await;
    let path = format!("/loads/{id}/status");

    let (status, body) = app.patch(&path, json!({"status": "assigned"})).await;
    let error = assert_error(status, &body, 400, "VALIDATION_FAILED");
    assert_eq!(error["details"]["field"], "carrier_id");

    let (status, body) = app
        .patch(
            &path,
            json!({"status": "assigned", "carrier_id": "carrier_01m7zsaxzk3pb3vfdnxzkmn1s1"}),
        )
        .await;
    assert_error(status, &body, 400, "UNKNOWN_CARRIER");

    let (status, body) = app
        .patch(&path, json!({"status": "assigned", "carrier_id": "Acme"}))
        .await;
    let error = assert_error(status, &body, 400, "VALIDATION_FAILED");
    assert_eq!(error["details"]["field"], "carrier_id");

    let (status, _) = app
        .patch(
            &path,
            json!({"status": "assigned", "carrier_id": carrier_id}),
        )
        .await;
    assert_eq!(status, StatusCode::OK);

    // Another carrier while assigned: refused, unassign first.
    let other = app.create_carrier("700002").await;
    let (status, body) = app
        .patch(
            &path,
            json!({"status": "assigned", "carrier_id": other["id"]}),
        )
        .await;
    let error = assert_error(status, &body, 409, "LOAD_ALREADY_ASSIGNED");
    assert_eq!(error["details"]["current_carrier_id"], carrier_id.as_str());

    // carrier_id only goes with assigned.
    let (status, body) = app
        .patch(
            &path,
            json!({"status": "in_transit", "carrier_id": carrier_id}),
        )
        .await;
    let error = assert_error(status, &body, 400, "VALIDATION_FAILED");
    assert_eq!(error["details"]["field"], "carrier_id");

    // Unassign clears the carrier, and the load can go to someone else.
    let (status, posted) = app.patch(&path, json!({"status": "posted"})).await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(posted["data"]["carrier"], Value::Null);
    let (status, reassigned) = app
        .patch(
            &path,
            json!({"status": "assigned", "carrier_id": other["id"]}),
        )
        .await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(reassigned["data"]["carrier"]["id"], other["id"]);
}

#[actix_web::test]
async fn concurrent_status_changes_apply_once() {
    let app = spawn_app().await;
    let (id, _) = load_in(&app, "assigned", "800001").await;
    let path = format!("/loads/{id}/status");
    let attempts = (0..8).map(|_| app.patch(&path, json!({"status": "in_transit"})));
    let results = futures_util::future::join_all(attempts).await;
    assert!(results.iter().all(|(s, _)| *s == StatusCode::OK));
    let (_, load) = app.get(&format!("/loads/{id}")).await;
    let moves = load["data"]["status_history"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["status"] == "in_transit")
        .count();
    assert_eq!(moves, 1, "{load}");
}
