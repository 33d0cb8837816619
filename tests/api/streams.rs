//! Live tracking streams (server-sent events) through the real server: what
//! they carry and to whom, resume, reset after a restart, refusals, heartbeats.
//! Where a stream must *not* see an event, the test posts one it must see
//! afterwards and checks that one comes first: no waiting for silence.

use std::time::{Duration, Instant};

use chrono::SecondsFormat;
use reqwest::StatusCode;
use serde_json::{Value, json};

use crate::event_stream::{EventStream, Frame};
use crate::helpers::{TestApp, assert_error, send, spawn_app, spawn_app_with};
use crate::tracking::{load_in, load_in_as};

/// A fix `seconds` before the server's clock, at a latitude that tells fixes apart.
fn fix(app: &TestApp, lat: f64, seconds: i64) -> Value {
    let at = app.clock.now() - chrono::Duration::seconds(seconds);
    json!({"lat": lat, "lng": -96.8, "timestamp": at.to_rfc3339_opts(SecondsFormat::Millis, true), "speed": 55.0})
}

async fn post_fix_as(app: &TestApp, key: &str, load: &str, fix: Value) -> StatusCode {
    let (status, body) = app
        .post_as(key, &format!("/loads/{load}/tracking"), fix)
        .await;
    assert!(status.is_success(), "{body}");
    status
}

async fn post_fix(app: &TestApp, load: &str, fix: Value) -> StatusCode {
    post_fix_as(app, &app.key, load, fix).await
}

/// Opens `path` (under `/v1`) as a stream, with `key` and extra headers.
async fn open_as(app: &TestApp, key: &str, path: &str, headers: &[(&str, &str)]) -> EventStream {
    let mut request = app.client.get(app.url(path)).bearer_auth(key);
    for (name, value) in headers {
        request = request.header(*name, *value);
    }
    EventStream::open(request.send().await.expect("the stream opens")).await
}

async fn open(app: &TestApp, path: &str) -> EventStream {
    open_as(app, &app.key, path, &[]).await
}

/// The next event, which must be a `tracking.updated` of `load` at `lat`.
async fn expect_fix(stream: &mut EventStream, load: &str, lat: f64) -> Frame {
    let frame = stream.event().await;
    assert_eq!(
        frame.event.as_deref(),
        Some("tracking.updated"),
        "{frame:?}"
    );
    let data = frame.json();
    assert_eq!(data["load_id"], load, "{data}");
    assert_eq!(data["position"]["lat"], lat, "{data}");
    frame
}

/// Posts a fix of `load` and returns its event, which must come next on `stream`.
async fn posted(
    app: &TestApp,
    stream: &mut EventStream,
    load: &str,
    lat: f64,
    seconds: i64,
) -> Frame {
    post_fix(app, load, fix(app, lat, seconds)).await;
    expect_fix(stream, load, lat).await
}

/// A server with a load in transit and a stream of its account.
async fn streaming() -> (TestApp, String, EventStream) {
    let app = spawn_app().await;
    let load = load_in(&app, "in_transit").await;
    let stream = open(&app, "/tracking/stream").await;
    (app, load, stream)
}

#[actix_web::test]
async fn the_account_stream_carries_each_stored_fix_in_order_with_increasing_ids() {
    let app = spawn_app().await;
    let load = load_in(&app, "in_transit").await;
    let response = app.get_response("/tracking/stream").await;
    assert_eq!(response.headers()["cache-control"], "no-cache");
    // Counted against the quota like any request.
    assert!(response.headers().contains_key("x-ratelimit-remaining"));
    assert!(response.headers().contains_key("x-request-id"));
    let mut stream = EventStream::open(response).await;

    assert_eq!(
        post_fix(&app, &load, fix(&app, 32.1, 30)).await,
        StatusCode::CREATED
    );
    // A duplicate is not stored, so not sent.
    assert_eq!(
        post_fix(&app, &load, fix(&app, 32.1, 30)).await,
        StatusCode::OK
    );
    let (status, batch) = app
        .post(
            "/tracking/batch",
            json!({"points": [
                {"load_id": load, "lat": 32.2, "lng": -96.8, "timestamp": fix(&app, 0.0, 20)["timestamp"]},
                {"load_id": load, "lat": 32.3, "lng": -96.8, "timestamp": fix(&app, 0.0, 10)["timestamp"]},
            ]}),
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{batch}");

    let mut last = 0;
    for lat in [32.1, 32.2, 32.3] {
        let frame = expect_fix(&mut stream, &load, lat).await;
        assert!(frame.number() > last, "{frame:?} after {last}");
        last = frame.number();
        let data = frame.json();
        assert_eq!(data["status"], "in_transit");
        assert!(data["eta"].is_string(), "{data}");
        assert!(data["position"]["timestamp"].is_string(), "{data}");
    }
}

#[actix_web::test]
async fn a_load_stream_sees_its_load_only_and_another_account_sees_nothing() {
    let app = spawn_app().await;
    let (first, second) = (
        load_in(&app, "assigned").await,
        load_in(&app, "assigned").await,
    );
    let (_, other_key) = app.new_account().await;
    let theirs = load_in_as(&app, &other_key, "assigned").await;
    let mut account = open(&app, "/tracking/stream").await;
    let mut only_first = open(&app, &format!("/loads/{first}/tracking/stream")).await;
    let mut other_account = open_as(&app, &other_key, "/tracking/stream", &[]).await;

    post_fix(&app, &second, fix(&app, 33.0, 20)).await;
    post_fix(&app, &first, fix(&app, 34.0, 20)).await;
    post_fix_as(&app, &other_key, &theirs, fix(&app, 35.0, 20)).await;

    expect_fix(&mut account, &second, 33.0).await;
    expect_fix(&mut account, &first, 34.0).await;
    expect_fix(&mut only_first, &first, 34.0).await;
    expect_fix(&mut other_account, &theirs, 35.0).await;
    // And nothing of the other account reached this one's streams.
    posted(&app, &mut account, &first, 36.0, 10).await;
    expect_fix(&mut only_first, &first, 36.0).await;
}

#[actix_web::test]
async fn resuming_replays_exactly_the_missed_events() {
    let (app, load, mut stream) = streaming().await;
    posted(&app, &mut stream, &load, 40.0, 60).await;
    let seen = posted(&app, &mut stream, &load, 40.1, 50).await.id.unwrap();
    drop(stream);

    for (n, lat) in [40.2, 40.3, 40.4].into_iter().enumerate() {
        post_fix(&app, &load, fix(&app, lat, 40 - 10 * n as i64)).await;
    }
    let mut resumed = open_as(
        &app,
        &app.key,
        "/tracking/stream",
        &[("Last-Event-ID", &seen)],
    )
    .await;
    expect_fix(&mut resumed, &load, 40.2).await;
    expect_fix(&mut resumed, &load, 40.3).await;
    let fourth = expect_fix(&mut resumed, &load, 40.4).await.id.unwrap();
    posted(&app, &mut resumed, &load, 40.5, 5).await;

    // Without EventSource: the id as a query parameter; a load's stream too.
    let mut by_query = open(
        &app,
        &format!("/loads/{load}/tracking/stream?last_event_id={fourth}"),
    )
    .await;
    expect_fix(&mut by_query, &load, 40.5).await;
    posted(&app, &mut by_query, &load, 40.6, 1).await;
    expect_fix(&mut resumed, &load, 40.6).await;
}

/// The next event, which must be `load`'s status change from `from` to `to`.
async fn expect_status(stream: &mut EventStream, load: &str, from: &str, to: &str) -> Frame {
    let frame = stream.event().await;
    assert_eq!(
        frame.event.as_deref(),
        Some("load.status_changed"),
        "{frame:?}"
    );
    let data = frame.json();
    assert_eq!(data["previous_status"], from, "{data}");
    assert_eq!(data["status"], to, "{data}");
    assert_eq!(data["load"]["id"], load, "{data}");
    assert_eq!(data["load"]["status"], to, "{data}");
    frame
}

#[actix_web::test]
async fn status_changes_reach_the_streams_of_their_load_and_resume_like_fixes() {
    let app = spawn_app().await;
    let load = load_in(&app, "in_transit").await;
    let other = load_in(&app, "in_transit").await;
    let mut account = open(&app, "/tracking/stream").await;
    let mut own = open(&app, &format!("/loads/{load}/tracking/stream")).await;
    let mut others = open(&app, &format!("/loads/{other}/tracking/stream")).await;
    let before = posted(&app, &mut account, &load, 43.0, 30)
        .await
        .id
        .unwrap();
    expect_fix(&mut own, &load, 43.0).await;

    let (code, body) = app
        .patch(
            &format!("/loads/{load}/status"),
            json!({"status": "delivered"}),
        )
        .await;
    assert_eq!(code, StatusCode::OK, "{body}");
    // Sent before the change is answered: a client that reads only its
    // stream learns of the delivery without polling.
    expect_status(&mut account, &load, "in_transit", "delivered").await;
    expect_status(&mut own, &load, "in_transit", "delivered").await;

    // Another load's stream hears nothing of it: its next event is its own fix.
    post_fix(&app, &other, fix(&app, 43.5, 20)).await;
    expect_fix(&mut others, &other, 43.5).await;
    expect_fix(&mut account, &other, 43.5).await;

    // Resumable like fixes: the change, then what followed it.
    let mut resumed = open_as(
        &app,
        &app.key,
        "/tracking/stream",
        &[("Last-Event-ID", &before)],
    )
    .await;
    expect_status(&mut resumed, &load, "in_transit", "delivered").await;
    expect_fix(&mut resumed, &other, 43.5).await;
}

#[actix_web::test]
async fn a_restart_ends_open_streams_promptly_and_their_ids_get_a_reset() {
    let (app, load, mut stream) = streaming().await;
    let seen = posted(&app, &mut stream, &load, 41.0, 30).await.id.unwrap();

    // The open stream must not hold the graceful shutdown for its 30 s.
    let stopping = Instant::now();
    let app = app.restart().await;
    assert!(
        stopping.elapsed() < Duration::from_secs(10),
        "{:?}",
        stopping.elapsed()
    );
    assert!(stream.frame().await.is_none(), "the stream ended");

    // Resume is per process: the old id is recognised as stale.
    let mut resumed = open_as(
        &app,
        &app.key,
        "/tracking/stream",
        &[("Last-Event-ID", &seen)],
    )
    .await;
    let reset = resumed.event().await;
    assert_eq!(reset.event.as_deref(), Some("reset"), "{reset:?}");
    assert_ne!(reset.id.as_deref(), Some(seen.as_str()));
    assert!(reset.json()["message"].is_string());
    let next = posted(&app, &mut resumed, &load, 41.1, 20).await;
    assert!(next.number() > reset.number());

    // An id the server never made, in the header: a reset too.
    let mut garbled = open_as(
        &app,
        &app.key,
        "/tracking/stream",
        &[("Last-Event-ID", "nonsense")],
    )
    .await;
    assert_eq!(garbled.event().await.event.as_deref(), Some("reset"));
}

#[actix_web::test]
async fn streams_need_a_read_key_and_a_load_of_the_account() {
    let app = spawn_app().await;
    let load = load_in(&app, "assigned").await;
    let stream = format!("/loads/{load}/tracking/stream");
    for path in ["/tracking/stream", stream.as_str()] {
        let (status, body) = send(app.client.get(app.url(path))).await;
        assert_error(status, &body, 401, "MISSING_API_KEY");
        let writer = app.new_key(&app.account_id, &["write"], None).await;
        let (status, body) = app.get_as(&writer, path).await;
        let error = assert_error(status, &body, 403, "INSUFFICIENT_PERMISSIONS");
        assert_eq!(error["details"]["required_permission"], "read");
        let (status, body) = app.get(&format!("{path}?last_event_id=nonsense")).await;
        let error = assert_error(status, &body, 400, "INVALID_QUERY_PARAMETER");
        assert_eq!(error["details"]["field"], "last_event_id");
        let (status, body) = app.get(&format!("{path}?since=1")).await;
        assert_error(status, &body, 400, "INVALID_QUERY_PARAMETER");
    }
    let (_, other_key) = app.new_account().await;
    let theirs = load_in_as(&app, &other_key, "assigned").await;
    for missing in [
        "load_01jd5ex0k3m2v8q4r6t9w1y3z5",
        "nonsense",
        theirs.as_str(),
    ] {
        let (status, body) = app.get(&format!("/loads/{missing}/tracking/stream")).await;
        assert_error(status, &body, 404, "INVALID_LOAD");
    }
}

#[actix_web::test]
async fn an_idle_stream_gets_heartbeats_and_is_counted_in_the_metrics() {
    let app = spawn_app_with(|s| s.live.heartbeat = Duration::from_millis(100)).await;
    let mut stream = open(&app, "/tracking/stream").await;
    let beat = stream.frame().await.unwrap();
    assert_eq!(beat.comment.as_deref(), Some("keep-alive"), "{beat:?}");
    assert_eq!(
        stream.frame().await.unwrap().comment.as_deref(),
        Some("keep-alive")
    );

    let page = reqwest::get(format!("{}/metrics", app.admin_base))
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    assert!(page.contains("freight_tracking_streams "), "{page}");
}

/// `key_…` of a token `frk_<suffix>_<secret>`.
fn key_id(token: &str) -> String {
    format!("key_{}", token.split('_').nth(1).unwrap())
}

/// The stream's last frame: `event` with `reason`, then the end, soon.
async fn expect_end(stream: &mut EventStream, event: &str, reason: &str) {
    let started = Instant::now();
    let last = stream.event().await;
    assert_eq!(last.event.as_deref(), Some(event), "{last:?}");
    assert_eq!(last.json()["reason"], reason, "{last:?}");
    assert!(stream.frame().await.is_none(), "nothing after {last:?}");
    assert!(
        started.elapsed() < Duration::from_secs(5),
        "ended within 5 s: {:?}",
        started.elapsed()
    );
}

/// A stream opened with a key ends when the key is revoked, expires, or its
/// account is disabled, with a last frame saying which; the stream of another
/// key of the account goes on.
#[actix_web::test]
async fn a_stream_ends_when_its_key_stops_working() {
    let app = spawn_app().await;
    let load = load_in(&app, "in_transit").await;
    let (revoked, expiring) = (
        app.new_key(&app.account_id, &["read"], None).await,
        app.new_key(
            &app.account_id,
            &["read"],
            Some((app.clock.now() + chrono::Duration::hours(1)).to_rfc3339()),
        )
        .await,
    );
    let mut by_revoked = open_as(&app, &revoked, "/tracking/stream", &[]).await;
    let mut by_expiring = open_as(
        &app,
        &expiring,
        &format!("/loads/{load}/tracking/stream"),
        &[],
    )
    .await;
    let mut by_first = open(&app, "/tracking/stream").await;
    post_fix(&app, &load, fix(&app, 32.1, 60)).await;
    for stream in [&mut by_revoked, &mut by_expiring, &mut by_first] {
        expect_fix(stream, &load, 32.1).await;
    }

    let (status, body) = app
        .admin(
            reqwest::Method::POST,
            &format!("/keys/{}/revoke", key_id(&revoked)),
            None,
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    expect_end(&mut by_revoked, "revoked", "key_revoked").await;

    // Expiry announces nothing: the stream's next check finds it.
    app.clock.advance(chrono::Duration::hours(2));
    expect_end(&mut by_expiring, "expired", "key_expired").await;

    // The first key's stream is untouched and goes on.
    post_fix(&app, &load, fix(&app, 32.2, 30)).await;
    expect_fix(&mut by_first, &load, 32.2).await;

    let (status, _) = app
        .admin(
            reqwest::Method::POST,
            &format!("/accounts/{}/disable", app.account_id),
            None,
        )
        .await;
    assert_eq!(status, StatusCode::OK);
    expect_end(&mut by_first, "revoked", "account_disabled").await;
}

/// An account holds its plan's number of streams open, API and dashboard
/// together; one more is a 429 in the envelope with Retry-After, and each
/// stream opened counts against the hourly quota.
#[actix_web::test]
async fn an_account_holds_at_most_its_plans_streams() {
    let app = spawn_app().await;
    let remaining = |response: &reqwest::Response| -> u64 {
        response.headers()["x-ratelimit-remaining"]
            .to_str()
            .unwrap()
            .parse()
            .unwrap()
    };
    let mut open_streams = Vec::new();
    let mut left = None;
    for _ in 0..10 {
        let response = app.get_response("/tracking/stream").await;
        assert_eq!(response.status(), StatusCode::OK);
        let now = remaining(&response);
        if let Some(before) = left {
            assert_eq!(now, before - 1, "a stream counts as a request");
        }
        left = Some(now);
        open_streams.push(EventStream::open(response).await);
    }
    let refused = app.get_response("/tracking/stream").await;
    assert_eq!(refused.headers()["retry-after"], "10");
    let (status, body) = (refused.status(), refused.json::<Value>().await.unwrap());
    let error = assert_error(status, &body, 429, "TOO_MANY_STREAMS");
    assert_eq!(error["details"]["limit"], 10);

    // Closing one makes room; another account has room of its own.
    open_streams.pop();
    let mut reopened = None;
    // Within a second: the server notices the client's close at once (not
    // at its next heartbeat, 15 s on).
    for _ in 0..50 {
        let response = app.get_response("/tracking/stream").await;
        if response.status() == StatusCode::OK {
            reopened = Some(EventStream::open(response).await);
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert!(reopened.is_some(), "a closed stream gives its place back");
    let (_, other) = app.new_account().await;
    let _theirs = open_as(&app, &other, "/tracking/stream", &[]).await;

    // Pro holds 50.
    let (status, _) = app
        .admin(
            reqwest::Method::PUT,
            &format!("/accounts/{}/plan", app.account_id),
            Some(json!({"plan": "pro"})),
        )
        .await;
    assert_eq!(status, StatusCode::OK);
    let eleventh = app.get_response("/tracking/stream").await;
    assert_eq!(eleventh.status(), StatusCode::OK);
}
