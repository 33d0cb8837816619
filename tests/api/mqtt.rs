//! OwnTracks over MQTT through a real Mosquitto: a location published by a
//! device becomes a fix of its load; what is published while freight is down
//! is delivered and stored, once, when it is back; a message freight cannot
//! use (no such device, not JSON) is acknowledged and dropped, so it never
//! comes back.

use std::time::Duration;

use chrono::Utc;
use reqwest::StatusCode;
use serde_json::{Value, json};

use crate::broker::{Broker, location};
use crate::devices::attach;
use crate::helpers::{TestApp, eventually, spawn_app_with};
use crate::trackers::metric;
use crate::tracking::load_in;

const PATIENCE: Duration = Duration::from_secs(20);

fn with_broker(broker: &Broker) -> impl FnOnce(&mut freight::server::settings::Settings) + use<> {
    let url = broker.url();
    move |s| {
        s.mqtt.broker = Some(url.parse().unwrap());
    }
}

/// A device named `user/device` attached to a new in-transit load: the load.
async fn tracked(app: &TestApp, identifier: &str) -> (String, String) {
    let (status, body) = app
        .post(
            "/devices",
            json!({"name": "Phone", "identifier": identifier}),
        )
        .await;
    assert_eq!(status, StatusCode::CREATED, "{body}");
    let device = body["data"]["id"].as_str().unwrap().to_owned();
    let load = load_in(app, "in_transit").await;
    attach(app, &load, &device).await;
    (load, device)
}

async fn points(app: &TestApp, load: &str) -> Vec<Value> {
    let (status, body) = app
        .get(&format!("/loads/{load}/tracking/history?limit=1000"))
        .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    body["data"]["points"].as_array().expect("points").clone()
}

/// Waits until `load` has exactly `n` points (and fails on more).
async fn until_points(app: &TestApp, load: &str, n: usize) -> Vec<Value> {
    eventually(PATIENCE, &format!("{n} points"), || async {
        let found = points(app, load).await;
        assert!(found.len() <= n, "{} points, more than {n}", found.len());
        if found.len() == n {
            Ok(found)
        } else {
            Err(format!("{} points", found.len()))
        }
    })
    .await
}

/// Waits until freight is subscribed (so what is published now reaches it
/// or its session's queue).
async fn until_subscribed(app: &TestApp) {
    eventually(PATIENCE, "the MQTT subscription", || async {
        match metric(app, "freight_mqtt_connected ").await {
            1.0 => Ok(()),
            other => Err(format!("freight_mqtt_connected {other}")),
        }
    })
    .await;
}

async fn counted(app: &TestApp, outcome: &str) -> f64 {
    metric(
        app,
        &format!("freight_mqtt_messages_total{{outcome=\"{outcome}\"}} "),
    )
    .await
}

#[actix_web::test]
async fn a_location_published_to_the_broker_is_a_fix_of_the_devices_load() {
    let Some(broker) = Broker::start().await else {
        return;
    };
    let app = spawn_app_with(with_broker(&broker)).await;
    let (load, device) = tracked(&app, "alice/truck7").await;
    until_subscribed(&app).await;
    let tst = Utc::now().timestamp() - 60;
    broker
        .publish("owntracks/alice/truck7", &[location(tst, 32.7767, -96.797)])
        .await;
    let stored = until_points(&app, &load, 1).await;
    let point = &stored[0];
    assert_eq!(point["source"], "owntracks_mqtt", "{point}");
    let at = chrono::DateTime::parse_from_rfc3339(point["timestamp"].as_str().unwrap());
    assert_eq!(at.unwrap().timestamp(), tst, "{point}");
    let speed = point["speed"].as_f64().unwrap();
    assert!(
        (speed - 80.0 * 0.621_371).abs() < 0.01,
        "km/h become mph: {speed}"
    );
    let (_, shown) = app.get(&format!("/devices/{device}")).await;
    assert!(shown["data"]["last_seen_at"].is_string(), "{shown}");
    // A message without a position (the app's `lwt`, `transition`...)
    // stores nothing.
    broker
        .publish(
            "owntracks/alice/truck7",
            &[json!({"_type": "lwt", "tst": tst}).to_string()],
        )
        .await;
    broker
        .publish(
            "owntracks/alice/truck7",
            &[location(tst + 5, 32.78, -96.79)],
        )
        .await;
    until_points(&app, &load, 2).await;
}

#[actix_web::test]
async fn what_is_published_while_freight_is_down_is_stored_once_when_it_is_back() {
    let Some(broker) = Broker::start().await else {
        return;
    };
    let app = spawn_app_with(with_broker(&broker)).await;
    let (load, _) = tracked(&app, "bob/van1").await;
    until_subscribed(&app).await;
    let base = Utc::now().timestamp() - 3_600;
    broker
        .publish("owntracks/bob/van1", &[location(base, 33.0, -95.0)])
        .await;
    until_points(&app, &load, 1).await;

    // Stopped (the broker keeps its session), 100 messages published, started.
    let backlog: Vec<String> = (1..=100)
        .map(|i| location(base + i, 33.0 + i as f64 * 1e-4, -95.0))
        .collect();
    let app = app
        .restart_after(
            broker.publish("owntracks/bob/van1", &backlog),
            with_broker(&broker),
        )
        .await;
    let stored = until_points(&app, &load, 101).await;
    let mut seen: Vec<&str> = stored
        .iter()
        .map(|p| p["timestamp"].as_str().unwrap())
        .collect();
    seen.sort();
    seen.dedup();
    assert_eq!(seen.len(), 101, "each message stored once");

    // Started once more: nothing acknowledged comes back to be stored again.
    let app = app.restart_with(with_broker(&broker)).await;
    until_subscribed(&app).await;
    broker
        .publish("owntracks/bob/van1", &[location(base + 101, 33.1, -95.0)])
        .await;
    until_points(&app, &load, 102).await;
}

#[actix_web::test]
async fn messages_for_no_device_or_not_json_are_acknowledged_dropped_and_counted() {
    let Some(broker) = Broker::start().await else {
        return;
    };
    let app = spawn_app_with(with_broker(&broker)).await;
    let (load, _) = tracked(&app, "carol/reefer").await;
    until_subscribed(&app).await;
    let (unknown, malformed) = (
        counted(&app, "unknown_device").await,
        counted(&app, "malformed").await,
    );
    let tst = Utc::now().timestamp() - 120;
    broker
        .publish("owntracks/nobody/phone", &[location(tst, 30.0, -97.0)])
        .await;
    broker
        .publish(
            "owntracks/carol/reefer",
            &[
                r#"{"_type":"location","lat":30.1,"#.to_owned(),
                r#"{"_type":"location","lat":95.0,"lon":-97.0,"tst":1}"#.to_owned(),
                location(tst, 30.2, -97.1),
            ],
        )
        .await;
    until_points(&app, &load, 1).await;
    assert_eq!(counted(&app, "unknown_device").await - unknown, 1.0);
    assert_eq!(counted(&app, "malformed").await - malformed, 2.0);

    // Had they been left unacknowledged, the broker would deliver them again
    // to the next connection, before anything published after them.
    let app = app.restart_with(with_broker(&broker)).await;
    until_subscribed(&app).await;
    broker
        .publish("owntracks/carol/reefer", &[location(tst + 1, 30.3, -97.1)])
        .await;
    until_points(&app, &load, 2).await;
    assert_eq!(
        counted(&app, "unknown_device").await - unknown,
        1.0,
        "not delivered again"
    );
    assert_eq!(
        counted(&app, "malformed").await - malformed,
        2.0,
        "not delivered again"
    );
}
