//! GPS tracking through the real server.

use chrono::{DateTime, Duration, SecondsFormat, Utc};
use reqwest::StatusCode;
use serde_json::{Value, json};

use crate::helpers::{TestApp, assert_error, carrier_body, load_body, spawn_app};

/// A load in `status` (posted, assigned or in_transit or delivered), heading to Atlanta.
pub async fn load_in(app: &TestApp, status: &str) -> String {
    load_in_as(app, &app.key, status).await
}

/// [`load_in`] of the account of `key`.
pub async fn load_in_as(app: &TestApp, key: &str, status: &str) -> String {
    let (code, load) = app.post_as(key, "/loads", load_body("TX", "GA")).await;
    assert_eq!(code, StatusCode::CREATED, "{load}");
    let id = load["data"]["id"].as_str().unwrap().to_owned();
    if status == "posted" {
        return id;
    }
    let mc = format!("{}", 100_000 + rand_suffix(&id));
    let (code, carrier) = app.post_as(key, "/carriers", carrier_body(&mc)).await;
    assert_eq!(code, StatusCode::CREATED, "{carrier}");
    let carrier = &carrier["data"];
    let path = format!("/loads/{id}/status");
    let mut steps = vec![json!({"status": "assigned", "carrier_id": carrier["id"]})];
    if status == "in_transit" || status == "delivered" {
        steps.push(json!({"status": "in_transit"}));
    }
    if status == "delivered" {
        steps.push(json!({"status": "delivered"}));
    }
    for step in steps {
        let (code, body) = app.patch_as(key, &path, step).await;
        assert_eq!(code, StatusCode::OK, "{body}");
    }
    id
}

/// A number that differs between loads, for unique MC numbers.
fn rand_suffix(id: &str) -> u32 {
    id.bytes()
        .fold(0u32, |h, b| h.wrapping_mul(31).wrapping_add(u32::from(b)))
        % 800_000
}

pub(crate) fn at(t: DateTime<Utc>) -> String {
    t.to_rfc3339_opts(SecondsFormat::Millis, true)
}

pub(crate) fn fix(lat: f64, lng: f64, t: DateTime<Utc>) -> Value {
    json!({"lat": lat, "lng": lng, "timestamp": at(t), "speed": 60.0, "heading": 90.0})
}

pub(crate) async fn history(app: &TestApp, id: &str, query: &str) -> Value {
    let (status, body) = app
        .get(&format!("/loads/{id}/tracking/history?{query}"))
        .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    body
}

pub(crate) fn timestamps(body: &Value) -> Vec<String> {
    body["data"]["points"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["timestamp"].as_str().unwrap().to_owned())
        .collect()
}

#[actix_web::test]
async fn a_fix_is_recorded_and_read_back_with_city_and_eta() {
    let app = spawn_app().await;
    let id = load_in(&app, "in_transit").await;
    let now = app.clock.now();
    // Near Dallas, heading to Atlanta (30301).
    let (status, body) = app
        .post(
            &format!("/loads/{id}/tracking"),
            fix(32.7767, -96.797, now - Duration::minutes(1)),
        )
        .await;
    assert_eq!(status, StatusCode::CREATED, "{body}");
    assert_eq!(body["data"]["duplicate"], false);
    assert_eq!(body["data"]["load_id"], id.as_str());

    let (status, live) = app.get(&format!("/loads/{id}/tracking")).await;
    assert_eq!(status, StatusCode::OK, "{live}");
    let live = &live["data"];
    assert_eq!(live["status"], "in_transit");
    assert_eq!(live["current_location"]["lat"], 32.7767);
    assert_eq!(live["current_location"]["state"], "TX");
    assert_eq!(live["current_location"]["city"], "Dallas");
    assert_eq!(live["speed"], 60.0);
    assert_eq!(live["heading"], 90.0);
    assert_eq!(
        live["last_update"],
        at(now - Duration::minutes(1)).replace(".000", "")
    );
    let remaining = live["eta_details"]["remaining_miles"].as_f64().unwrap();
    assert!((800.0..950.0).contains(&remaining), "{remaining}");
    let eta = DateTime::parse_from_rfc3339(live["eta"].as_str().unwrap()).unwrap();
    let hours =
        (eta.with_timezone(&Utc) - (now - Duration::minutes(1))).num_minutes() as f64 / 60.0;
    // In transit: the pickup is behind. At the account's 50 mph, a fresh
    // driver takes a 30-minute break at 8 hours of driving and a 10-hour
    // rest at 11 (some 17 hours of driving in all).
    assert!(
        (hours - (remaining / 50.0 + 10.5)).abs() < 0.05,
        "{hours} h for {remaining} mi at 50 mph with a break and a rest"
    );
    assert_eq!(live["points"].as_array().unwrap().len(), 1);

    let (_, load) = app.get(&format!("/loads/{id}")).await;
    let tracking = &load["data"]["tracking"];
    assert_eq!(tracking["current_location"]["city"], "Dallas");
    assert_eq!(tracking["eta"], live["eta"]);
    assert_eq!(tracking["last_update"], live["last_update"]);

    // Speeds and headings come back exactly as sent.
    let (_, odd) = app
        .post(
            &format!("/loads/{id}/tracking"),
            json!({"lat": 32.78, "lng": -96.8, "timestamp": at(now - Duration::minutes(2)), "speed": 55.3, "heading": 12.7}),
        )
        .await;
    assert_eq!(odd["data"]["speed"], 55.3);
    let (_, stored) = app
        .get(&format!(
            "/loads/{id}/tracking/history?limit=1&to={}",
            at(now - Duration::minutes(2))
        ))
        .await;
    assert_eq!(
        stored["data"]["points"][0]["speed"], 55.3,
        "speeds come back exactly as sent"
    );
    assert_eq!(stored["data"]["points"][0]["heading"], 12.7);
}

#[actix_web::test]
async fn duplicates_are_stored_once_and_late_fixes_do_not_move_the_latest() {
    let app = spawn_app().await;
    let id = load_in(&app, "assigned").await;
    let path = format!("/loads/{id}/tracking");
    let t0 = app.clock.now() - Duration::minutes(30);
    for (minutes, lat) in [(10, 33.0), (20, 33.5), (5, 32.5)] {
        let (status, body) = app
            .post(&path, fix(lat, -95.0, t0 + Duration::minutes(minutes)))
            .await;
        assert_eq!(status, StatusCode::CREATED, "{body}");
    }
    // Same timestamp again, even with another position: a duplicate, the first kept.
    let (status, body) = app
        .post(&path, fix(40.0, -80.0, t0 + Duration::minutes(20)))
        .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(body["data"]["duplicate"], true);

    let (_, live) = app.get(&path).await;
    assert_eq!(
        live["data"]["current_location"]["lat"], 33.5,
        "the newest fix is the latest"
    );
    let lats: Vec<f64> = live["data"]["points"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["lat"].as_f64().unwrap())
        .collect();
    assert_eq!(lats, [33.5, 33.0, 32.5]);

    let all = history(&app, &id, "").await;
    assert_eq!(all["data"]["total"], 3);
    assert_eq!(
        timestamps(&all),
        [20, 10, 5].map(|m| at(t0 + Duration::minutes(m)).replace(".000", ""))
    );
}

#[actix_web::test]
async fn bad_fixes_are_refused_and_change_nothing() {
    let app = spawn_app().await;
    let id = load_in(&app, "in_transit").await;
    let path = format!("/loads/{id}/tracking");
    let now = app.clock.now();
    let good = fix(33.0, -95.0, now);
    let with = |field: &str, value: Value| {
        let mut body = good.clone();
        if value.is_null() {
            body.as_object_mut().unwrap().remove(field);
        } else {
            body[field] = value;
        }
        body
    };
    let cases = [
        (with("lat", json!(90.5)), "lat"),
        (with("lat", json!(-91)), "lat"),
        (with("lat", Value::Null), "lat"),
        (with("lat", json!("33")), "lat"),
        (with("lng", json!(180.01)), "lng"),
        (with("lng", json!(-181)), "lng"),
        (
            with("timestamp", json!(at(now + Duration::minutes(6)))),
            "timestamp",
        ),
        (
            with("timestamp", json!(at(now - Duration::days(31)))),
            "timestamp",
        ),
        (
            with("timestamp", json!("2026-01-01T00:00:00+01:00")),
            "timestamp",
        ),
        (with("timestamp", json!("now")), "timestamp"),
        (with("timestamp", Value::Null), "timestamp"),
        (with("speed", json!(-0.1)), "speed"),
        (with("speed", json!(250)), "speed"),
        (with("heading", json!(360.5)), "heading"),
        (with("heading", json!(-1)), "heading"),
        (with("altitude", json!(100)), "altitude"),
        (with("load_id", json!(id)), "load_id"),
    ];
    for (body, field) in cases {
        let (status, answer) = app.post(&path, body.clone()).await;
        let error = assert_error(status, &answer, 400, "VALIDATION_FAILED");
        assert_eq!(error["details"]["field"], field, "{body}");
    }
    // A fix up to five minutes ahead (device clock skew) is fine; no speed/heading is fine.
    let (status, _) = app
        .post(
            &path,
            with("timestamp", json!(at(now + Duration::minutes(4)))),
        )
        .await;
    assert_eq!(status, StatusCode::CREATED);
    let (status, _) = app
        .post(
            &path,
            json!({"lat": 33.1, "lng": -95.1, "timestamp": at(now - Duration::seconds(5))}),
        )
        .await;
    assert_eq!(status, StatusCode::CREATED);
    assert_eq!(history(&app, &id, "").await["data"]["total"], 2);
}

#[actix_web::test]
async fn only_assigned_and_in_transit_loads_take_fixes() {
    let app = spawn_app().await;
    let now = app.clock.now();
    for status in ["posted", "delivered"] {
        let id = load_in(&app, status).await;
        let (code, body) = app
            .post(&format!("/loads/{id}/tracking"), fix(33.0, -95.0, now))
            .await;
        let error = assert_error(code, &body, 409, "LOAD_NOT_TRACKABLE");
        assert_eq!(error["details"]["current_status"], status);
        assert_eq!(history(&app, &id, "").await["data"]["total"], 0);
    }
    let (code, body) = app
        .post(
            "/loads/load_01m7zsaxzk3pb3vfdnxzkmn1s1/tracking",
            fix(33.0, -95.0, now),
        )
        .await;
    assert_error(code, &body, 404, "INVALID_LOAD");

    // Another account's load is not found, for writes and reads alike.
    let id = load_in(&app, "assigned").await;
    let (_, other) = app.new_account().await;
    let (code, body) = app
        .post_as(
            &other,
            &format!("/loads/{id}/tracking"),
            fix(33.0, -95.0, now),
        )
        .await;
    assert_error(code, &body, 404, "INVALID_LOAD");
    let (code, body) = app.get_as(&other, &format!("/loads/{id}/tracking")).await;
    assert_error(code, &body, 404, "INVALID_LOAD");
    let (code, body) = app
        .get_as(&other, &format!("/loads/{id}/tracking/history"))
        .await;
    assert_error(code, &body, 404, "INVALID_LOAD");
}

#[actix_web::test]
async fn concurrent_fixes_to_one_load_are_all_stored_once() {
    let app = spawn_app().await;
    let id = load_in(&app, "in_transit").await;
    let path = format!("/loads/{id}/tracking");
    let start = app.clock.now() - Duration::hours(2);
    // 16 connections, 25 fixes each, interleaved timestamps.
    let clients: Vec<reqwest::Client> = (0..16)
        .map(|_| crate::helpers::https_client(app.data_dir.path()))
        .collect();
    let posts = clients.iter().enumerate().map(|(c, client)| {
        let (path, key, url) = (path.clone(), app.key.clone(), app.url(""));
        async move {
            for i in 0..25 {
                let t = start + Duration::seconds((i * 16 + c) as i64);
                let response = client
                    .post(format!("{url}{path}"))
                    .bearer_auth(&key)
                    .json(&fix(33.0 + i as f64 * 0.001, -95.0, t))
                    .send()
                    .await
                    .unwrap();
                assert_eq!(response.status(), StatusCode::CREATED);
            }
        }
    });
    futures_util::future::join_all(posts).await;
    let all = history(&app, &id, "limit=1000").await;
    assert_eq!(all["data"]["total"], 400);
    let stamps = timestamps(&all);
    let mut sorted = stamps.clone();
    sorted.sort();
    sorted.dedup();
    sorted.reverse();
    assert_eq!(stamps, sorted, "newest first, no repeats");
    let (_, live) = app.get(&path).await;
    assert_eq!(live["data"]["last_update"], stamps[0].as_str());
}

#[actix_web::test]
async fn bulk_ingest_answers_per_point_and_never_half_applies() {
    let app = spawn_app().await;
    let moving = load_in(&app, "in_transit").await;
    let other_moving = load_in(&app, "assigned").await;
    let posted = load_in(&app, "posted").await;
    let now = app.clock.now();
    let point = |load: &str, minutes: i64| {
        let mut f = fix(33.0, -95.0, now - Duration::minutes(minutes));
        f["load_id"] = json!(load);
        f
    };
    let points = json!({"points": [
        point(&moving, 10),                                   // 0 created
        point(&other_moving, 10),                             // 1 created
        point(&moving, 10),                                   // 2 duplicate of 0
        point(&posted, 10),                                   // 3 not trackable
        point("load_01m7zsaxzk3pb3vfdnxzkmn1s1", 10),         // 4 unknown load
        {"load_id": moving, "lat": "north", "lng": -95.0, "timestamp": at(now)}, // 5 bad type
        {"lat": 33.0, "lng": -95.0, "timestamp": at(now)},    // 6 no load_id
        point(&moving, 9),                                    // 7 created
        {"load_id": moving, "lat": 33.0, "lng": -95.0, "timestamp": at(now), "extra": 1}, // 8 unknown field
        point("load_nope", 10),                               // 9 malformed id: not found
    ]});
    // A number no double holds sinks only its own point, put first.
    let body = serde_json::to_string(&points).unwrap().replacen(
        r#"{"points":["#,
        r#"{"points":[{"load_id":"x","lat":1e400,"lng":0,"timestamp":"2026-01-01T00:00:00Z"},"#,
        1,
    );
    let response = app
        .client
        .post(app.url("/tracking/batch"))
        .bearer_auth(&app.key)
        .header("content-type", "application/json")
        .body(body)
        .send()
        .await
        .unwrap();
    let status = response.status();
    let body: Value = response.json().await.unwrap();
    assert_eq!(status, StatusCode::OK, "{body}");
    let data = &body["data"];
    assert_eq!(
        (
            data["accepted"].clone(),
            data["duplicates"].clone(),
            data["rejected"].clone()
        ),
        (json!(3), json!(1), json!(7))
    );
    let mut results = data["results"].as_array().unwrap().clone();
    let overflow = results.remove(0);
    assert_eq!(overflow["status"], "rejected");
    assert_eq!(overflow["error"]["details"]["field"], "lat");
    for r in &mut results {
        r["index"] = json!(r["index"].as_u64().unwrap() - 1);
    }
    let statuses: Vec<&str> = results
        .iter()
        .map(|r| r["status"].as_str().unwrap())
        .collect();
    assert_eq!(
        statuses,
        [
            "created",
            "created",
            "duplicate",
            "rejected",
            "rejected",
            "rejected",
            "rejected",
            "created",
            "rejected",
            "rejected"
        ]
    );
    for (i, r) in results.iter().enumerate() {
        assert_eq!(r["index"], i);
    }
    assert_eq!(results[3]["error"]["code"], "LOAD_NOT_TRACKABLE");
    assert_eq!(results[4]["error"]["code"], "INVALID_LOAD");
    assert_eq!(results[5]["error"]["details"]["field"], "lat");
    assert_eq!(results[6]["error"]["details"]["field"], "load_id");
    assert_eq!(results[8]["error"]["details"]["field"], "extra");
    assert_eq!(
        results[9]["error"]["code"], "INVALID_LOAD",
        "as a path's would be"
    );

    assert_eq!(history(&app, &moving, "").await["data"]["total"], 2);
    assert_eq!(history(&app, &other_moving, "").await["data"]["total"], 1);
    assert_eq!(history(&app, &posted, "").await["data"]["total"], 0);

    // The envelope itself must be right.
    let too_many: Vec<Value> = (0..1001).map(|i| point(&moving, 100 + i)).collect();
    for bad in [
        json!({"points": []}),
        json!({"points": too_many}),
        json!({}),
        json!([]),
        json!({"points": {}}),
    ] {
        let (status, body) = app.post("/tracking/batch", bad).await;
        assert_error(status, &body, 400, "VALIDATION_FAILED");
    }
    assert_eq!(history(&app, &moving, "").await["data"]["total"], 2);
}

#[actix_web::test]
async fn the_latest_position_survives_a_restart() {
    let app = spawn_app().await;
    let id = load_in(&app, "in_transit").await;
    let t = app.clock.now() - Duration::minutes(3);
    let (status, _) = app
        .post(&format!("/loads/{id}/tracking"), fix(34.0, -90.0, t))
        .await;
    assert_eq!(status, StatusCode::CREATED);
    let app = app.restart().await;
    let (status, live) = app.get(&format!("/loads/{id}/tracking")).await;
    assert_eq!(status, StatusCode::OK, "{live}");
    assert_eq!(live["data"]["current_location"]["lat"], 34.0);
    assert_eq!(live["data"]["status"], "in_transit");
    let (status, _) = app
        .post(
            &format!("/loads/{id}/tracking"),
            fix(34.1, -90.0, t + Duration::minutes(1)),
        )
        .await;
    assert_eq!(status, StatusCode::CREATED);
}

/// GPS ingest beyond what storage absorbs: with a commit queue of one
/// submission, bursts of 64 concurrent fixes overflow it. The overflow is
/// answered at once with 503 and `Retry-After` in the error envelope (nothing
/// held, so memory stays bounded by the queue), and exactly the acknowledged
/// fixes are stored.
#[actix_web::test]
async fn ingest_beyond_the_commit_queue_is_shed_with_retry_after() {
    let app = crate::helpers::spawn_app_with(|s| s.gps_queue = 1).await;
    let id = load_in(&app, "in_transit").await;
    let url = app.url(&format!("/loads/{id}/tracking"));
    let clients: Vec<reqwest::Client> = (0..64)
        .map(|_| crate::helpers::https_client(app.data_dir.path()))
        .collect();
    let start = app.clock.now() - Duration::hours(3);
    let (mut stored, mut shed) = (0u32, 0u32);
    for round in 0..20i64 {
        let posts = clients.iter().enumerate().map(|(c, client)| {
            let t = start + Duration::milliseconds(round * 64 + c as i64);
            client
                .post(&url)
                .bearer_auth(&app.key)
                .json(&fix(33.0, -95.0, t))
                .send()
        });
        for response in futures_util::future::join_all(posts).await {
            let response = response.expect("every request is answered");
            match response.status() {
                StatusCode::CREATED => stored += 1,
                StatusCode::SERVICE_UNAVAILABLE => {
                    shed += 1;
                    assert_eq!(response.headers()["retry-after"], "1");
                    let body: Value = response.json().await.unwrap();
                    assert_eq!(body["success"], false);
                    assert_eq!(body["error"]["code"], "SERVICE_UNAVAILABLE");
                }
                other => panic!("unexpected {other}"),
            }
        }
        if shed > 0 && stored > 0 && round >= 2 {
            break;
        }
    }
    assert!(shed > 0, "64 at once never overflowed a queue of one");
    assert!(stored > 0, "nothing got through");
    let all = history(&app, &id, "limit=1000").await;
    assert_eq!(
        all["data"]["total"], stored,
        "exactly the acknowledged fixes are stored"
    );
}
