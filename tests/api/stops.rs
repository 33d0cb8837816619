//! Stops end to end: a scripted trip's fixes make arrival and departure
//! milestones, signed webhooks, the automatic move to in transit, and the
//! load's `stops`, which survive a restart.

use std::time::Duration;

use chrono::{DateTime, SecondsFormat, Utc};
use reqwest::StatusCode;
use serde_json::{Value, json};

use crate::helpers::{TestApp, assert_error, eventually};
use crate::receiver::{Receiver, verify, verify_at};
use crate::webhooks::{SECRET, subscribe, subscribed_app, webhook_app, webhook_settings};

/// The pickup's facility, given by coordinates with a 400 m arrival radius.
pub(crate) const PICKUP: (f64, f64) = (32.7767, -96.797);
const M_PER_DEG: f64 = 111_195.0;

pub(crate) fn iso(at: DateTime<Utc>) -> String {
    at.to_rfc3339_opts(SecondsFormat::Secs, true)
}

/// A fix `minute` minutes after `start`, `north_m` metres north of `(lat, lng)`.
pub(crate) fn fix(
    start: DateTime<Utc>,
    minute: i64,
    at: (f64, f64),
    north_m: f64,
    mph: f64,
) -> Value {
    json!({
        "lat": at.0 + north_m / M_PER_DEG,
        "lng": at.1,
        "timestamp": iso(start + chrono::Duration::minutes(minute)),
        "speed": mph,
    })
}

pub(crate) async fn post_fixes(app: &TestApp, load: &str, fixes: &[Value]) {
    for fix in fixes {
        let (status, body) = app
            .post(&format!("/loads/{load}/tracking"), fix.clone())
            .await;
        assert!(status.is_success(), "{status}: {body}");
    }
}

/// Creates the load `body` describes and assigns it to a new carrier of MC
/// number `mc`: its id, and the load as created.
pub(crate) async fn assigned_load(app: &TestApp, body: Value, mc: &str) -> (String, Value) {
    let load = app.create_load(body).await;
    let id = load["id"].as_str().unwrap().to_owned();
    let carrier = app.create_carrier(mc).await;
    let (status, moved) = app
        .patch(
            &format!("/loads/{id}/status"),
            json!({"status": "assigned", "carrier_id": carrier["id"]}),
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{moved}");
    (id, load)
}

/// The load (`GET /v1/loads/{id}`'s body) once its status is `status`,
/// waiting up to 10 s for a move made after a commit.
pub(crate) async fn once_status(app: &TestApp, load: &str, status: &str) -> Value {
    eventually(Duration::from_secs(10), status, || async {
        let (_, body) = app.get(&format!("/loads/{load}")).await;
        match body["data"]["status"].as_str() {
            Some(now) if now == status => Ok(body),
            other => Err(format!("{other:?}")),
        }
    })
    .await
}

pub(crate) async fn stops(app: &TestApp, load: &str) -> Value {
    let (status, body) = app.get(&format!("/loads/{load}")).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    body["data"]["stops"].clone()
}

#[actix_web::test]
async fn a_trip_arrives_leaves_goes_in_transit_by_itself_and_arrives_again() {
    let app = webhook_app().await;
    let receiver = Receiver::start(200).await;
    let events = ["load.arrived", "load.departed", "load.status_changed"];
    subscribe(
        &app,
        &app.key,
        &format!("{}/hooks", receiver.base),
        &events,
        SECRET,
    )
    .await;

    let start = Utc::now() - chrono::Duration::hours(4);
    let pickup_appointment = start + chrono::Duration::minutes(30);
    let mut body = crate::helpers::load_body("TX", "GA");
    body["origin"]["lat"] = json!(PICKUP.0);
    body["origin"]["lng"] = json!(PICKUP.1);
    body["origin"]["radius_m"] = json!(400);
    body["destination"]["zip"] = json!("30303");
    body["pickup_date"] = json!(iso(pickup_appointment));
    let (id, _) = assigned_load(&app, body, "424242").await;

    let before = stops(&app, &id).await;
    assert_eq!(before[0]["type"], "pickup");
    assert_eq!(before[0]["location"]["placed_by"], "coordinates");
    // Whole metres, as the load's own `radius_m`.
    assert_eq!(before[0]["location"]["radius_m"], json!(400));
    assert_eq!(before[0]["location"]["departure_radius_m"], json!(600));
    assert_eq!(before[0]["arrived_at"], Value::Null);
    assert_eq!(before[1]["location"]["placed_by"], "zip");
    assert_eq!(before[1]["location"]["radius_m"], 3000.0);
    let delivery = (
        before[1]["location"]["lat"].as_f64().unwrap(),
        before[1]["location"]["lng"].as_f64().unwrap(),
    );

    // Approach, a first fix inside while rolling, stopped, jitter at the
    // fence (outside 400 m, inside 600 m), then gone.
    post_fixes(
        &app,
        &id,
        &[
            fix(start, 0, PICKUP, -8_000.0, 45.0),
            fix(start, 50, PICKUP, -350.0, 9.0),
            fix(start, 51, PICKUP, -40.0, 0.0),
            fix(start, 80, PICKUP, 450.0, 0.0),
            fix(start, 81, PICKUP, 550.0, 0.0),
            fix(start, 82, PICKUP, 380.0, 0.0),
            fix(start, 120, PICKUP, 900.0, 12.0),
            fix(start, 130, PICKUP, 12_000.0, 60.0),
        ],
    )
    .await;
    let loaded = once_status(&app, &id, "in_transit").await;
    let history = loaded["data"]["status_history"].as_array().unwrap();
    let last = history.last().unwrap();
    assert_eq!(last["status"], "in_transit");
    assert_eq!(last["source"], "geofence", "{last}");
    assert_eq!(history[0]["source"], "api");
    let pickup = &loaded["data"]["stops"][0];
    let minute = |m: i64| iso(start + chrono::Duration::minutes(m));
    assert_eq!(pickup["arrived_at"], minute(50), "{pickup}");
    assert_eq!(pickup["departed_at"], minute(120), "{pickup}");
    assert_eq!(pickup["inferred"], false);
    assert_eq!(
        pickup["arrival_status"], "late",
        "50 minutes after a 30-minute appointment"
    );
    assert_eq!(pickup["deviation_minutes"], 20);
    assert_eq!(pickup["dwell_minutes"], 70);
    assert_eq!(
        pickup["detention_minutes"], 0,
        "within the free 120 minutes"
    );
    assert_eq!(loaded["data"]["stops"][1]["arrived_at"], Value::Null);

    // At the delivery: an arrival, and no automatic delivery.
    post_fixes(
        &app,
        &id,
        &[
            fix(start, 200, delivery, -9_000.0, 55.0),
            fix(start, 210, delivery, -200.0, 2.0),
        ],
    )
    .await;
    let after = stops(&app, &id).await;
    assert_eq!(after[1]["arrived_at"], minute(210), "{after}");
    assert_eq!(
        after[1]["arrival_status"],
        Value::Null,
        "no delivery appointment"
    );

    let received = receiver
        .wait_for("two arrivals, a departure and the move", |r| {
            let kinds: Vec<_> = r.iter().map(|d| d.json["type"].clone()).collect();
            kinds.iter().filter(|k| *k == "load.arrived").count() >= 2
                && kinds.contains(&json!("load.departed"))
                && r.iter().any(|d| d.json["data"]["status"] == "in_transit")
        })
        .await;
    let mut arrived = Vec::new();
    let mut moves = Vec::new();
    for delivery in &received {
        verify(SECRET, delivery).unwrap();
        let data = &delivery.json["data"];
        match delivery.json["type"].as_str() {
            Some("load.arrived") => arrived.push(data.clone()),
            Some("load.departed") => {
                assert_eq!(data["stop"], "pickup");
                assert_eq!(data["at"], minute(120));
                assert_eq!(data["inferred"], false);
            }
            Some("load.status_changed") => moves.push(data["status"].clone()),
            other => panic!("unexpected {other:?}"),
        }
    }
    moves.dedup();
    assert_eq!(moves, ["assigned", "in_transit"]);
    arrived.sort_by_key(|d| d["at"].as_str().unwrap().to_owned());
    arrived.dedup();
    assert_eq!(arrived.len(), 2, "each arrival once: {arrived:?}");
    assert_eq!(arrived[0]["load_id"], id.as_str());
    assert_eq!(arrived[0]["stop"], "pickup");
    assert_eq!(arrived[0]["arrival_status"], "late");
    assert_eq!(arrived[0]["deviation_minutes"], 20);
    assert_eq!(arrived[1]["stop"], "delivery");

    // A restart keeps every milestone; a late fix and more fixes at the
    // delivery change nothing already known.
    let app = app.restart().await;
    assert_eq!(
        after_without_clock(&stops(&app, &id).await),
        after_without_clock(&after)
    );
    post_fixes(
        &app,
        &id,
        &[
            fix(start, 100, PICKUP, 0.0, 0.0),
            fix(start, 215, delivery, 0.0, 0.0),
        ],
    )
    .await;
    let again = stops(&app, &id).await;
    assert_eq!(again[0]["departed_at"], minute(120));
    assert_eq!(again[1]["arrived_at"], minute(210));
}

/// The stops without the fields that count minutes up to now.
fn after_without_clock(stops: &Value) -> Value {
    let mut stops = stops.clone();
    stops[1]["dwell_minutes"] = Value::Null;
    stops[1]["detention_minutes"] = Value::Null;
    stops
}

#[actix_web::test]
async fn a_stop_takes_coordinates_in_pairs_and_a_radius_in_range() {
    let app = crate::helpers::spawn_app().await;
    for (origin, field) in [
        (json!({"lat": 32.7}), "origin.lng"),
        (json!({"lng": -96.8}), "origin.lat"),
        (json!({"lat": 95.0, "lng": -96.8}), "origin.lat"),
        (json!({"radius_m": 10}), "origin.radius_m"),
        (json!({"radius_m": 10_001}), "origin.radius_m"),
        (json!({"radius_m": 250.5}), "origin.radius_m"),
    ] {
        let mut body = crate::helpers::load_body("TX", "GA");
        for (key, value) in origin.as_object().unwrap() {
            body["origin"][key] = value.clone();
        }
        let (status, answer) = app.post("/loads", body).await;
        assert_error(status, &answer, 400, "VALIDATION_FAILED");
        assert!(answer.to_string().contains(field), "{field}: {answer}");
    }
    let (_, list) = app.get("/loads").await;
    assert_eq!(
        list["data"]["loads"].as_array().map(Vec::len),
        Some(0),
        "{list}"
    );
}

#[actix_web::test]
async fn detention_starts_from_the_timer_with_no_fix_even_after_a_restart() {
    let app = webhook_app().await;
    let receiver = Receiver::start(200).await;
    let events = ["load.detention_started"];
    subscribe(
        &app,
        &app.key,
        &format!("{}/hooks", receiver.base),
        &events,
        SECRET,
    )
    .await;
    let mut body = crate::helpers::load_body("TX", "GA");
    body["origin"]["lat"] = json!(PICKUP.0);
    body["origin"]["lng"] = json!(PICKUP.1);
    body["detention_free_minutes"] = json!(30);
    let (id, load) = assigned_load(&app, body, "434343").await;
    assert_eq!(load["detention_free_minutes"], 30);
    let start = app.clock.now() - chrono::Duration::minutes(20);
    post_fixes(
        &app,
        &id,
        &[
            fix(start, 0, PICKUP, -6_000.0, 40.0),
            fix(start, 10, PICKUP, 30.0, 0.0), // arrived 10 minutes ago
        ],
    )
    .await;
    let arrived = stops(&app, &id).await;
    assert_eq!(
        arrived[0]["arrived_at"],
        iso(start + chrono::Duration::minutes(10))
    );
    assert_eq!(arrived[0]["detention_minutes"], 0);

    // A restart between the arrival and the end of the free time, then time
    // passes with no fix at all.
    let app = app.restart_with(|s| s.webhooks = webhook_settings()).await;
    let mut stream = crate::event_stream::load_stream(&app, &id).await;
    app.clock.advance(chrono::Duration::minutes(25));
    let received = receiver
        .wait_for("load.detention_started", |r| !r.is_empty())
        .await;
    // The load's stream hears of it too, with the webhook's data.
    let frame = stream.event().await;
    assert_eq!(
        frame.event.as_deref(),
        Some("load.detention_started"),
        "{frame:?}"
    );
    let streamed: Value = serde_json::from_str(frame.data.as_deref().unwrap()).unwrap();
    // The webhook's `data` also numbers the event among the load's.
    let mut sent = received[0].json["data"].clone();
    sent.as_object_mut().unwrap().remove("sequence");
    assert_eq!(streamed, sent);
    verify_at(SECRET, &received[0], app.clock.now()).unwrap();
    let data = &received[0].json["data"];
    assert_eq!(received[0].json["type"], "load.detention_started");
    assert_eq!(data["load_id"], id.as_str());
    assert_eq!(data["stop"], "pickup");
    assert_eq!(data["since"], iso(start + chrono::Duration::minutes(40)));
    assert_eq!(data["free_minutes"], 30);
    let now = stops(&app, &id).await;
    assert_eq!(now[0]["detention_minutes"], 5, "{now}");
    assert_eq!(data["stop_id"], now[0]["id"], "named by its stop");
    assert_eq!(data["stop_sequence"], 1);

    // Sent once: later fixes at the stop and more time send nothing again.
    post_fixes(&app, &id, &[fix(start, 44, PICKUP, 20.0, 0.0)]).await;
    app.clock.advance(chrono::Duration::minutes(60));
    tokio::time::sleep(Duration::from_millis(2_500)).await;
    let again: Vec<_> = receiver
        .received()
        .into_iter()
        .map(|d| d.id)
        .collect::<std::collections::HashSet<_>>()
        .into_iter()
        .collect();
    assert_eq!(again.len(), 1, "one detention event");
}

#[actix_web::test]
async fn late_risk_and_eta_changes_follow_the_trucks_progress() {
    let (app, receiver) = subscribed_app(&["load.eta_changed"]).await;
    let appointment = app.clock.now() + chrono::Duration::hours(1);
    let mut body = crate::helpers::load_body("TX", "GA");
    body["destination"]["zip"] = json!("30303");
    body["delivery_date"] = json!(iso(appointment));
    let (id, _) = assigned_load(&app, body, "454545").await;
    let delivery = (
        stops(&app, &id).await[1]["location"]["lat"]
            .as_f64()
            .unwrap(),
        stops(&app, &id).await[1]["location"]["lng"]
            .as_f64()
            .unwrap(),
    );
    let start = app.clock.now() - chrono::Duration::hours(3);

    // At the pickup in Dallas, 700-odd miles out, an hour before the
    // appointment: at risk. (The pickup, reached, has no ETA of its own.)
    post_fixes(&app, &id, &[fix(start, 0, PICKUP, 0.0, 0.0)]).await;
    let (_, got) = app.get(&format!("/loads/{id}")).await;
    assert_eq!(got["data"]["tracking"]["late_risk"], true, "{got}");
    // Two minutes on, still there: the ETA has hardly moved, nothing to send.
    post_fixes(&app, &id, &[fix(start, 2, PICKUP, 300.0, 0.0)]).await;
    // Then near Atlanta: the ETA moves by hours and the risk is gone.
    post_fixes(&app, &id, &[fix(start, 30, delivery, -20_000.0, 50.0)]).await;
    let (_, got) = app.get(&format!("/loads/{id}")).await;
    assert_eq!(got["data"]["tracking"]["late_risk"], false, "{got}");

    let received = receiver
        .wait_for("two ETA changes", |r| {
            r.iter()
                .map(|d| d.id.clone())
                .collect::<std::collections::HashSet<_>>()
                .len()
                >= 2
        })
        .await;
    let mut changes: Vec<Value> = Vec::new();
    for delivery in &received {
        verify(SECRET, delivery).unwrap();
        assert_eq!(delivery.json["type"], "load.eta_changed");
        if !changes.contains(&delivery.json["data"]) {
            changes.push(delivery.json["data"].clone());
        }
    }
    changes.sort_by_key(|c| c["previous_eta"].is_string());
    assert_eq!(changes.len(), 2, "{changes:?}");
    assert_eq!(changes[0]["load_id"], id.as_str());
    assert_eq!(changes[0]["stop"], "delivery");
    assert_eq!(changes[0]["stop_sequence"], 2);
    assert_eq!(changes[1]["stop_id"], changes[0]["stop_id"]);
    assert_eq!(changes[0]["previous_eta"], Value::Null);
    assert_eq!(changes[0]["late_risk"], true);
    assert_eq!(changes[0]["appointment"], iso(appointment));
    assert_eq!(changes[1]["previous_eta"], changes[0]["eta"]);
    assert_eq!(changes[1]["late_risk"], false);
}

#[actix_web::test]
async fn a_loads_stream_carries_its_milestones_beside_its_fixes() {
    let app = crate::helpers::spawn_app().await;
    let mut body = crate::helpers::load_body("TX", "GA");
    body["origin"]["lat"] = json!(PICKUP.0);
    body["origin"]["lng"] = json!(PICKUP.1);
    let (id, _) = assigned_load(&app, body, "464646").await;
    let mut stream = crate::event_stream::load_stream(&app, &id).await;
    let start = app.clock.now() - chrono::Duration::minutes(30);
    post_fixes(&app, &id, &[fix(start, 0, PICKUP, 0.0, 0.0)]).await;
    let first = stream.event().await;
    assert_eq!(first.event.as_deref(), Some("tracking.updated"));
    let arrived = stream.event().await;
    assert_eq!(
        arrived.event.as_deref(),
        Some("load.arrived"),
        "{arrived:?}"
    );
    let data: Value = serde_json::from_str(arrived.data.as_deref().unwrap()).unwrap();
    assert_eq!(data["stop"], "pickup");
    assert_eq!(data["at"], iso(start));
    assert!(arrived.id.is_some(), "resumable like the fixes");
}

/// A delivery given with its facility's coordinates is what the ETA aims at,
/// not its ZIP's centroid (a few hundred metres off can be the whole trip's
/// last mile).
#[actix_web::test]
async fn the_eta_aims_at_the_deliverys_own_coordinates() {
    let app = crate::helpers::spawn_app().await;
    let mut body = crate::helpers::load_body("TX", "GA");
    body["destination"]["zip"] = json!("30303");
    body["destination"]["lat"] = json!(33.749);
    body["destination"]["lng"] = json!(-84.388);
    let load = app.create_load(body).await;
    let id = load["id"].as_str().unwrap().to_owned();
    let carrier = app.create_carrier("881122").await;
    let (status, moved) = app
        .patch(
            &format!("/loads/{id}/status"),
            json!({"status": "assigned", "carrier_id": carrier["id"]}),
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{moved}");
    // Picked up: the ETA aims past the pickup, at the delivery.
    let (status, moved) = app
        .patch(
            &format!("/loads/{id}/status"),
            json!({"status": "in_transit"}),
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{moved}");
    // Ten metres or so from the dock.
    let now = app.clock.now();
    let (status, posted) = app
        .post(
            &format!("/loads/{id}/tracking"),
            crate::tracking::fix(33.7491, -84.3881, now - chrono::Duration::minutes(1)),
        )
        .await;
    assert!(status.is_success(), "{posted}");
    let (_, live) = app.get(&format!("/loads/{id}/tracking")).await;
    let remaining = live["data"]["eta_details"]["remaining_miles"]
        .as_f64()
        .unwrap();
    assert!(remaining < 0.05, "{remaining} miles left at the dock");
}
