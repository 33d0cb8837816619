use chrono::{Duration, Utc};
use reqwest::{Method, StatusCode};
use serde_json::json;

use crate::helpers::{assert_error, carrier_body, load_body, send, spawn_app};

#[actix_web::test]
async fn verify_reports_identity_and_permissions() {
    let app = spawn_app().await;
    let (status, body) = app.get("/auth/verify").await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(body["success"], true);
    assert_eq!(body["data"]["authenticated"], true);
    assert_eq!(body["data"]["user_id"], app.account_id.as_str());
    assert_eq!(body["data"]["permissions"], json!(["read", "write"]));

    let read_only = app.new_key(&app.account_id, &["read"], None).await;
    let (_, body) = app.get_as(&read_only, "/auth/verify").await;
    assert_eq!(body["data"]["permissions"], json!(["read"]));

    // Verification is for any working key, whatever it may do.
    let write_only = app.new_key(&app.account_id, &["write"], None).await;
    let (status, body) = app.get_as(&write_only, "/auth/verify").await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(body["data"]["permissions"], json!(["write"]));
    assert_eq!(body["data"]["expires_at"], json!(null), "{body}");

    let (status, body) = app.get("/auth/verify?verbose=1").await;
    let error = assert_error(status, &body, 400, "INVALID_QUERY_PARAMETER");
    assert_eq!(error["details"]["field"], "verbose");
}

#[actix_web::test]
async fn missing_and_malformed_keys_are_told_apart() {
    let app = spawn_app().await;
    let response = app.client.get(app.url("/loads")).send().await.unwrap();
    assert_eq!(
        response.headers()["www-authenticate"].to_str().unwrap(),
        "Bearer realm=\"freight\""
    );
    let (status, body) = send(app.client.get(app.url("/loads"))).await;
    assert_error(status, &body, 401, "MISSING_API_KEY");

    let basic = app
        .client
        .get(app.url("/loads"))
        .header("Authorization", "Basic dXNlcjpwYXNz");
    let (status, body) = send(basic).await;
    assert_error(status, &body, 401, "MALFORMED_API_KEY");

    for bad in [
        "not-a-key",
        "frk_",
        "frk_123_abc",
        &app.key[..app.key.len() - 1],
    ] {
        let (status, body) = app.get_as(bad, "/loads").await;
        assert_error(status, &body, 401, "MALFORMED_API_KEY");
    }
    let empty = app
        .client
        .get(app.url("/loads"))
        .header("Authorization", "Bearer ");
    let (status, body) = send(empty).await;
    assert_error(status, &body, 401, "MISSING_API_KEY");
}

#[actix_web::test]
async fn repeated_keys_and_oversized_headers_are_refused_in_the_envelope() {
    let app = spawn_app().await;
    // Two Authorization headers (the second a key that would also work) are
    // refused: a proxy and this service might each honour a different one.
    let mut twice = reqwest::header::HeaderMap::new();
    let bearer = format!("Bearer {}", app.key);
    twice.append("authorization", bearer.parse().unwrap());
    twice.append("authorization", bearer.parse().unwrap());
    let (status, body) = send(app.client.get(app.url("/loads")).headers(twice)).await;
    let error = assert_error(status, &body, 400, "DUPLICATE_HEADER");
    assert_eq!(error["details"]["header"], "authorization");

    let mut keys = reqwest::header::HeaderMap::new();
    keys.append("idempotency-key", "a".parse().unwrap());
    keys.append("idempotency-key", "b".parse().unwrap());
    let request = app
        .client
        .post(app.url("/carriers"))
        .bearer_auth(&app.key)
        .headers(keys)
        .json(&carrier_body("987650"));
    let (status, body) = send(request).await;
    assert_error(status, &body, 400, "DUPLICATE_HEADER");
    let (_, carriers) = app.get("/carriers").await;
    assert_eq!(carriers["data"]["total"], 0, "nothing was created");

    // 20 KB of headers: over the 16 KiB limit, answered in the envelope.
    let big = "x".repeat(20 * 1024);
    let request = app
        .client
        .get(app.url("/loads"))
        .bearer_auth(&app.key)
        .header("x-padding", big.as_str());
    let (status, body) = send(request).await;
    let error = assert_error(status, &body, 431, "HEADERS_TOO_LARGE");
    assert_eq!(error["details"]["limit_bytes"], 16 * 1024);
    // Just under the limit passes.
    let request = app
        .client
        .get(app.url("/loads"))
        .bearer_auth(&app.key)
        .header("x-padding", "x".repeat(15 * 1024).as_str());
    let (status, _) = send(request).await;
    assert_eq!(status, 200);
}

#[actix_web::test]
async fn unknown_and_forged_keys_are_refused() {
    let app = spawn_app().await;
    // Right shape, unknown key id.
    let unknown = format!("frk_01m7zsaxzk3pb3vfdnxzkmn1s1_{}", "ab".repeat(32));
    let (status, body) = app.get_as(&unknown, "/loads").await;
    assert_error(status, &body, 401, "INVALID_API_KEY");
    // Real key id, wrong secret.
    let forged = format!("{}{}", &app.key[..app.key.len() - 64], "cd".repeat(32));
    let (status, body) = app.get_as(&forged, "/loads").await;
    assert_error(status, &body, 401, "INVALID_API_KEY");
}

#[actix_web::test]
async fn a_revoked_key_stops_working_at_once() {
    let app = spawn_app().await;
    let key = app.new_key(&app.account_id, &["read", "write"], None).await;
    assert_eq!(app.get_as(&key, "/loads").await.0, StatusCode::OK);
    let key_id = format!("key_{}", key.split('_').nth(1).unwrap());
    let (status, body) = app
        .admin(Method::POST, &format!("/keys/{key_id}/revoke"), None)
        .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert!(body["data"]["revoked_at"].is_string());
    let (status, body) = app.get_as(&key, "/loads").await;
    assert_error(status, &body, 401, "REVOKED_API_KEY");
    // The bootstrap key of the same account is unaffected.
    assert_eq!(app.get("/loads").await.0, StatusCode::OK);
}

#[actix_web::test]
async fn a_key_expires_on_the_server_clock() {
    let app = spawn_app().await;
    let expires =
        (Utc::now() + Duration::hours(1)).to_rfc3339_opts(chrono::SecondsFormat::Micros, true);
    let key = app
        .new_key(&app.account_id, &["read"], Some(expires.clone()))
        .await;
    assert_eq!(app.get_as(&key, "/loads").await.0, StatusCode::OK);
    let (_, verified) = app.get_as(&key, "/auth/verify").await;
    let at = |v: &serde_json::Value| {
        chrono::DateTime::parse_from_rfc3339(v.as_str().unwrap_or_else(|| panic!("{v}"))).unwrap()
    };
    assert_eq!(at(&verified["data"]["expires_at"]), at(&json!(expires)));
    app.clock.advance(Duration::minutes(61));
    let (status, body) = app.get_as(&key, "/loads").await;
    assert_error(status, &body, 401, "EXPIRED_API_KEY");
    // It says when, and where a new key is made.
    let details = &body["error"]["details"];
    assert_eq!(at(&details["expired_at"]), at(&json!(expires)), "{body}");
    assert_eq!(details["new_key_at"], "/dashboard/settings/api-keys");
}

#[actix_web::test]
async fn keys_cannot_be_created_already_expired() {
    let app = spawn_app().await;
    let past =
        (Utc::now() - Duration::hours(1)).to_rfc3339_opts(chrono::SecondsFormat::Micros, true);
    let (status, body) = app
        .admin(
            Method::POST,
            "/keys",
            Some(
                json!({"account_id": app.account_id, "permissions": ["read"], "expires_at": past}),
            ),
        )
        .await;
    let error = assert_error(status, &body, 400, "VALIDATION_FAILED");
    assert_eq!(error["details"]["field"], "expires_at");
    let (status, body) = app
        .admin(
            Method::POST,
            "/keys",
            Some(json!({"account_id": app.account_id, "permissions": ["admin"]})),
        )
        .await;
    let error = assert_error(status, &body, 400, "VALIDATION_FAILED");
    assert_eq!(error["details"]["field"], "permissions[0]");
}

#[actix_web::test]
async fn permissions_gate_reads_and_writes() {
    let app = spawn_app().await;
    let read_only = app.new_key(&app.account_id, &["read"], None).await;
    let write_only = app.new_key(&app.account_id, &["write"], None).await;

    let (status, body) = app
        .post_as(&read_only, "/loads", load_body("TX", "GA"))
        .await;
    let error = assert_error(status, &body, 403, "INSUFFICIENT_PERMISSIONS");
    assert_eq!(error["details"]["required_permission"], "write");
    let (status, body) = app.post_as(&read_only, "/carriers", json!({})).await;
    assert_error(status, &body, 403, "INSUFFICIENT_PERMISSIONS");

    let (status, body) = app.get_as(&write_only, "/loads").await;
    let error = assert_error(status, &body, 403, "INSUFFICIENT_PERMISSIONS");
    assert_eq!(error["details"]["required_permission"], "read");

    let (status, created) = app
        .post_as(&write_only, "/loads", load_body("TX", "GA"))
        .await;
    assert_eq!(status, StatusCode::CREATED, "{created}");
    // The refused write changed nothing: exactly one load exists.
    let (_, list) = app.get_as(&read_only, "/loads").await;
    assert_eq!(list["data"]["total"], 1);
}

#[actix_web::test]
async fn accounts_are_isolated() {
    let app = spawn_app().await;
    let load = app.create_load(load_body("TX", "GA")).await;
    let carrier = app.create_carrier("111111").await;
    let load_id = load["id"].as_str().unwrap();
    let carrier_id = carrier["id"].as_str().unwrap();

    let (_, other_key) = app.new_account().await;
    let (status, body) = app.get_as(&other_key, &format!("/loads/{load_id}")).await;
    assert_error(status, &body, 404, "INVALID_LOAD");
    let (status, body) = app
        .get_as(&other_key, &format!("/carriers/{carrier_id}"))
        .await;
    assert_error(status, &body, 404, "INVALID_CARRIER");
    let (status, body) = app
        .patch_as(
            &other_key,
            &format!("/loads/{load_id}/status"),
            json!({"status": "assigned", "carrier_id": carrier_id}),
        )
        .await;
    assert_error(status, &body, 404, "INVALID_LOAD");
    let (_, list) = app.get_as(&other_key, "/loads").await;
    assert_eq!(list["data"]["total"], 0);
    let (_, list) = app.get_as(&other_key, "/carriers").await;
    assert_eq!(list["data"]["total"], 0);

    // The other account cannot assign our carrier to its own load either.
    let (status, theirs) = app
        .post_as(&other_key, "/loads", load_body("TX", "GA"))
        .await;
    assert_eq!(status, StatusCode::CREATED);
    let their_id = theirs["data"]["id"].as_str().unwrap();
    let (status, body) = app
        .patch_as(
            &other_key,
            &format!("/loads/{their_id}/status"),
            json!({"status": "assigned", "carrier_id": carrier_id}),
        )
        .await;
    let error = assert_error(status, &body, 400, "UNKNOWN_CARRIER");
    assert_eq!(error["details"]["field"], "carrier_id");
    // The same MC number may be registered by another account.
    let (status, _) = app
        .post_as(
            &other_key,
            "/carriers",
            crate::helpers::carrier_body("111111"),
        )
        .await;
    assert_eq!(status, StatusCode::CREATED);
    // Our load is untouched.
    let (_, ours) = app.get(&format!("/loads/{load_id}")).await;
    assert_eq!(ours["data"]["status"], "posted");
}

/// Requests of one keep-alive connection (the test client keeps its
/// connection and sends one request at a time): what the connection's last
/// request authenticated with is reused only for the same key and only until
/// a key or its account changes, so each request is still judged on its own.
#[actix_web::test]
async fn one_connection_is_judged_request_by_request() {
    let app = spawn_app().await;
    let read_only = app.new_key(&app.account_id, &["read"], None).await;
    for _ in 0..2 {
        assert_eq!(app.get_as(&read_only, "/loads").await.0, StatusCode::OK);
        let (status, body) = app
            .post_as(&read_only, "/loads", load_body("TX", "GA"))
            .await;
        assert_error(status, &body, 403, "INSUFFICIENT_PERMISSIONS");
        let (status, body) = app.post("/loads", load_body("TX", "GA")).await;
        assert_eq!(status, StatusCode::CREATED, "{body}");
    }
    // The answers' quota headers follow a plan change at once.
    let limit = |response: &reqwest::Response| response.headers()["x-ratelimit-limit"].clone();
    let before = app.get_response("/loads").await;
    app.admin(
        Method::PUT,
        &format!("/accounts/{}/plan", app.account_id),
        Some(json!({"plan": "enterprise", "requests_per_hour": 123456})),
    )
    .await;
    let after = app.get_response("/loads").await;
    assert_ne!(limit(&before), limit(&after));
    assert_eq!(limit(&after), "123456");
    let policy = &after.headers()["ratelimit-policy"];
    assert_eq!(policy, "\"hourly\";q=123456;w=3600");
    // A disabled account's keys stop at the next request.
    let (status, _) = app
        .admin(
            Method::POST,
            &format!("/accounts/{}/disable", app.account_id),
            None,
        )
        .await;
    assert_eq!(status, StatusCode::OK);
    for key in [read_only.as_str(), app.key.as_str()] {
        let (status, body) = app.get_as(key, "/loads").await;
        assert_error(status, &body, 403, "ACCOUNT_DISABLED");
    }
}
