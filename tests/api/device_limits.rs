//! What one device may cost: its own allowance of positions (never the
//! account's API quota), the loads it may feed at once, the positions it sent
//! that were taken but not stored, and a token checked before a body is read.

use chrono::{Duration, SecondsFormat};
use freight::domain::device::DeviceLimits;
use reqwest::StatusCode;
use serde_json::{Value, json};

use crate::devices::{attach, device, ingest};
use crate::helpers::{TestApp, assert_error, send, spawn_app, spawn_app_with};
use crate::tracking::load_in;

fn remaining(response: &reqwest::Response) -> u64 {
    response.headers()["x-ratelimit-remaining"]
        .to_str()
        .unwrap()
        .parse()
        .unwrap()
}

async fn shown(app: &TestApp, id: &str) -> Value {
    let (status, body) = app.get(&format!("/devices/{id}")).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    body["data"].clone()
}

/// A phone's heartbeats use the device's own allowance (60 at once, then one
/// a second), not the account's hourly quota, which the shipper's own key
/// keeps whole.
#[actix_web::test]
async fn a_device_has_its_own_allowance_and_leaves_the_api_quota_alone() {
    let app = spawn_app_with(|s| s.devices = DeviceLimits::default()).await;
    let (id, token, _) = device(&app, "Driver's phone").await;
    let before = remaining(&app.get_response("/devices").await);
    let url = ingest(&app, &format!("osmand?id={token}&batt=50"));
    for n in 0..60 {
        let status = app.client.get(&url).send().await.unwrap().status();
        assert_eq!(status, StatusCode::OK, "heartbeat {n}");
    }
    let refused = app.client.get(&url).send().await.unwrap();
    assert_eq!(refused.status(), StatusCode::TOO_MANY_REQUESTS);
    assert_eq!(refused.headers()["retry-after"], "1");
    let body: Value = refused.json().await.unwrap();
    let error = assert_error(StatusCode::TOO_MANY_REQUESTS, &body, 429, "RATE_LIMITED");
    assert_eq!(error["details"]["scope"], "device", "{body}");
    assert_eq!(error["details"]["burst"], 60);

    // The account's quota moved by this one request only.
    let after = remaining(&app.get_response("/devices").await);
    assert_eq!(after, before - 1, "device posts are not API requests");
    let data = shown(&app, &id).await;
    assert_eq!(data["allowance"]["positions_per_second"], 1.0, "{data}");
    assert_eq!(data["allowance"]["burst"], 60);
    assert_eq!(data["allowance"]["max_loads"], 10);
    assert_eq!(data["allowance"]["available"], 0);

    // One second later, one more.
    app.clock.advance(Duration::seconds(1));
    assert_eq!(
        app.client.get(&url).send().await.unwrap().status(),
        StatusCode::OK
    );
    assert_eq!(
        app.client.get(&url).send().await.unwrap().status(),
        StatusCode::TOO_MANY_REQUESTS
    );
}

/// A 429 of the account's quota names the plan and the next plan's limit.
#[actix_web::test]
async fn the_quota_refusal_names_the_plan_and_the_next_one() {
    let app = spawn_app().await;
    let left = remaining(&app.get_response("/devices").await);
    for _ in 0..left {
        app.get_response("/devices").await;
    }
    let (status, body) = app.get("/devices").await;
    let error = assert_error(status, &body, 429, "RATE_LIMITED");
    let message = error["message"].as_str().unwrap();
    assert!(message.contains("Standard plan"), "{message}");
    assert!(message.contains("Pro"), "{message}");
    assert!(message.contains("10,000"), "{message}");
    assert!(message.contains("/dashboard/plan"), "{message}");
    assert_eq!(error["details"]["plan"], "standard");
    assert_eq!(error["details"]["next_plan"]["requests_per_hour"], 10_000);
}

/// One device feeds at most `max_loads` loads at once (409 past it); a
/// delivered load frees its place. Each position counts once per load fed.
#[actix_web::test]
async fn a_device_feeds_a_bounded_number_of_loads_each_counted() {
    let app = spawn_app_with(|s| {
        s.devices = DeviceLimits {
            max_loads: 2,
            ..DeviceLimits::default()
        }
    })
    .await;
    let (id, token, _) = device(&app, "Truck 7").await;
    let loads = [
        load_in(&app, "in_transit").await,
        load_in(&app, "in_transit").await,
        load_in(&app, "in_transit").await,
    ];
    attach(&app, &loads[0], &id).await;
    attach(&app, &loads[1], &id).await;
    attach(&app, &loads[1], &id).await; // again: not a further load
    let put = |load: &str| {
        app.client
            .put(app.url(&format!("/loads/{load}/device")))
            .bearer_auth(&app.key)
            .json(&json!({"device_id": id}))
    };
    let (status, body) = send(put(&loads[2])).await;
    let error = assert_error(status, &body, 409, "DEVICE_LOAD_LIMIT");
    assert_eq!(error["details"]["limit"], 2);
    assert_eq!(error["details"]["load_ids"], json!([loads[0], loads[1]]));

    // Three positions, each a fix of both loads: six of the 60.
    let now = app.clock.now();
    let features: Vec<Value> = (1..=3)
        .map(|n| {
            let at = now - Duration::minutes(10 - n);
            json!({"type": "Feature",
                "geometry": {"type": "Point", "coordinates": [-96.8, 32.7 + n as f64 / 100.0]},
                "properties": {"timestamp": at.to_rfc3339_opts(SecondsFormat::Secs, true)}})
        })
        .collect();
    let (status, body) = send(
        app.client
            .post(ingest(&app, &format!("overland?token={token}")))
            .json(&json!({"locations": features})),
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(shown(&app, &id).await["allowance"]["available"], 54);

    let (status, body) = app
        .patch(
            &format!("/loads/{}/status", loads[0]),
            json!({"status": "delivered"}),
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    attach(&app, &loads[2], &id).await;
}

/// Positions answered as taken but not stored are shown on the device, by
/// reason: a clock an hour ahead, one 40 days old, and one whose only load
/// was delivered.
#[actix_web::test]
async fn ignored_positions_are_shown_on_the_device_with_their_reason() {
    let app = spawn_app().await;
    let (id, token, _) = device(&app, "Phone").await;
    let load = load_in(&app, "in_transit").await;
    attach(&app, &load, &id).await;
    let data = shown(&app, &id).await;
    assert_eq!(
        data["ignored_positions"]["last_reason"],
        Value::Null,
        "{data}"
    );
    assert_eq!(data["ignored_positions"]["counts"], json!({}));
    let now = app.clock.now();
    let post = |at: chrono::DateTime<chrono::Utc>| {
        let url = ingest(
            &app,
            &format!(
                "osmand?id={token}&lat=32.7&lon=-96.8&timestamp={}",
                at.timestamp()
            ),
        );
        app.client.post(url).send()
    };
    for at in [now + Duration::hours(1), now - Duration::days(40)] {
        assert_eq!(post(at).await.unwrap().status(), StatusCode::OK);
    }
    let data = shown(&app, &id).await;
    let ignored = &data["ignored_positions"];
    assert_eq!(ignored["last_reason"], "too_old", "{data}");
    assert_eq!(
        ignored["counts"],
        json!({"future_timestamp": 1, "too_old": 1})
    );
    assert!(ignored["last_at"].is_string());

    let (status, body) = app
        .patch(
            &format!("/loads/{load}/status"),
            json!({"status": "delivered"}),
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(
        post(now - Duration::minutes(1)).await.unwrap().status(),
        StatusCode::OK
    );
    let ignored = shown(&app, &id).await["ignored_positions"].clone();
    assert_eq!(ignored["last_reason"], "no_active_load", "{ignored}");
    assert_eq!(ignored["counts"]["no_active_load"], 1);
}

/// Where the protocol carries the token outside the body, a post without a
/// good one is refused without its body being waited for: a client that
/// declares a megabyte and sends nothing hears 401, not a held connection.
#[actix_web::test]
async fn an_ingest_post_without_a_token_is_refused_before_its_body() {
    let app = spawn_app().await;
    for path in [
        "/v1/ingest/overland",
        "/v1/ingest/overland?token=frd_nope",
        "/v1/ingest/owntracks",
        "/v1/ingest/osmand?id=frd_nope",
    ] {
        let head = format!(
            "POST {path} HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\n\
             Content-Length: 1000000\r\n\r\n"
        );
        let answer = tokio::time::timeout(
            std::time::Duration::from_secs(8),
            crate::transport::write_all_then_read(&app, &head, b""),
        )
        .await
        .unwrap_or_else(|_| panic!("{path}: no answer while the body was not sent"));
        let line = answer.unwrap_or_else(|why| panic!("{path}: {why}"));
        assert!(line.starts_with("HTTP/1.1 401 "), "{path}: {line}");
    }
}

/// Devices are listed newest first, as every list of the API is.
#[actix_web::test]
async fn devices_are_listed_newest_first() {
    let app = spawn_app().await;
    for name in ["Truck 1", "Truck 2", "Truck 3"] {
        device(&app, name).await;
        app.clock.advance(Duration::seconds(1));
    }
    let (status, listed) = app.get("/devices").await;
    assert_eq!(status, StatusCode::OK, "{listed}");
    let names: Vec<&str> = listed["data"]["devices"]
        .as_array()
        .unwrap()
        .iter()
        .map(|d| d["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["Truck 3", "Truck 2", "Truck 1"], "{listed}");
}
