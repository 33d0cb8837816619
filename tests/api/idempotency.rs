//! `Idempotency-Key`: replay of the first answer without doing the work twice,
//! refusal of a reused key, per-account keys, 24-hour retention, concurrency.

use reqwest::StatusCode;
use serde_json::{Value, json};

use crate::helpers::{TestApp, assert_error, load_body, spawn_app};

async fn post_with_key(
    app: &TestApp,
    api_key: &str,
    idempotency_key: &str,
    path: &str,
    body: &Value,
) -> (StatusCode, Value, Option<String>) {
    let response = app
        .client
        .post(app.url(path))
        .bearer_auth(api_key)
        .header("Idempotency-Key", idempotency_key)
        .json(body)
        .send()
        .await
        .unwrap();
    let status = response.status();
    let replayed = response
        .headers()
        .get("idempotent-replayed")
        .map(|v| v.to_str().unwrap().to_owned());
    (status, response.json().await.unwrap(), replayed)
}

async fn total_loads(app: &TestApp, key: &str) -> u64 {
    let (status, list) = app.get_as(key, "/loads").await;
    assert_eq!(status, StatusCode::OK);
    list["pagination"]["total"]
        .as_u64()
        .or_else(|| list["data"]["total"].as_u64())
        .expect("a total")
}

#[actix_web::test]
async fn a_retry_gets_the_first_answer_and_creates_nothing() {
    let app = spawn_app().await;
    let body = load_body("TX", "GA");
    let (status, first, replayed) = post_with_key(&app, &app.key, "order-1", "/loads", &body).await;
    assert_eq!(status, StatusCode::CREATED, "{first}");
    assert_eq!(replayed.as_deref(), Some("false"));
    let (status, again, replayed) = post_with_key(&app, &app.key, "order-1", "/loads", &body).await;
    assert_eq!(status, StatusCode::CREATED);
    assert_eq!(replayed.as_deref(), Some("true"));
    assert_eq!(again, first, "the very same answer, same load id");
    assert_eq!(total_loads(&app, &app.key).await, 1);

    // The same key with another body, or on another endpoint, is refused.
    let other = load_body("CA", "NV");
    let (status, refused, _) = post_with_key(&app, &app.key, "order-1", "/loads", &other).await;
    assert_error(status, &refused, 422, "IDEMPOTENCY_KEY_REUSED");
    let (status, refused, _) = post_with_key(
        &app,
        &app.key,
        "order-1",
        "/carriers",
        &json!({"name": "X"}),
    )
    .await;
    assert_error(status, &refused, 422, "IDEMPOTENCY_KEY_REUSED");
    assert_eq!(total_loads(&app, &app.key).await, 1);

    // Keys belong to an account: another account's "order-1" is its own.
    let (_, other_key) = app.new_account().await;
    let (status, theirs, replayed) =
        post_with_key(&app, &other_key, "order-1", "/loads", &body).await;
    assert_eq!(status, StatusCode::CREATED);
    assert_eq!(replayed.as_deref(), Some("false"));
    assert_ne!(theirs["data"]["id"], first["data"]["id"]);

    // Kept 24 hours: after that the key starts afresh.
    app.clock.advance(chrono::Duration::hours(24));
    let (status, fresh, replayed) =
        post_with_key(&app, &app.key, "order-1", "/loads", &other).await;
    assert_eq!(status, StatusCode::CREATED, "{fresh}");
    assert_eq!(replayed.as_deref(), Some("false"));
    assert_eq!(total_loads(&app, &app.key).await, 2);
}

#[actix_web::test]
async fn a_refusal_is_replayed_too_and_bad_keys_are_refused() {
    let app = spawn_app().await;
    let bad = json!({"origin": "nowhere"});
    let (status, first, _) = post_with_key(&app, &app.key, "k-400", "/loads", &bad).await;
    assert_eq!(status, StatusCode::BAD_REQUEST, "{first}");
    let (status, again, replayed) = post_with_key(&app, &app.key, "k-400", "/loads", &bad).await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    assert_eq!(replayed.as_deref(), Some("true"));
    assert_eq!(again, first);

    for key in ["has space", &"k".repeat(256)] {
        let (status, body, _) =
            post_with_key(&app, &app.key, key, "/loads", &load_body("TX", "GA")).await;
        let error = assert_error(status, &body, 400, "INVALID_IDEMPOTENCY_KEY");
        assert!(
            error["message"]
                .as_str()
                .unwrap()
                .contains("Idempotency-Key")
        );
    }
    // An oversized body is refused before any key is claimed.
    let huge = json!({"notes": "x".repeat(2 * 1024 * 1024)});
    let (status, body, _) = post_with_key(&app, &app.key, "k-big", "/loads", &huge).await;
    assert_error(status, &body, 413, "PAYLOAD_TOO_LARGE");
    assert_eq!(total_loads(&app, &app.key).await, 0);
}

#[actix_web::test]
async fn concurrent_requests_with_one_key_create_one_load() {
    let app = spawn_app().await;
    let body = load_body("TX", "GA");
    let attempts = (0..8).map(|_| post_with_key(&app, &app.key, "same", "/loads", &body));
    let answers = futures_util::future::join_all(attempts).await;
    let mut ids = std::collections::HashSet::new();
    for (status, answer, _) in &answers {
        match status.as_u16() {
            201 => {
                ids.insert(answer["data"]["id"].as_str().unwrap().to_owned());
            }
            409 => assert_eq!(answer["error"]["code"], "IDEMPOTENCY_KEY_IN_USE"),
            other => panic!("unexpected {other}: {answer}"),
        }
    }
    assert_eq!(ids.len(), 1, "every 201 names the same load");
    assert_eq!(total_loads(&app, &app.key).await, 1);
}

/// A correction is a write like any other: a retry with its key gets the first
/// answer (even after a later change), another body with the key is refused.
#[actix_web::test]
async fn a_patch_retried_with_its_key_is_not_applied_again() {
    let app = spawn_app().await;
    let load = app.create_load(crate::helpers::load_body("TX", "GA")).await;
    let path = app.url(&format!("/loads/{}", load["id"].as_str().unwrap()));
    let patch = |key: &'static str, weight: u32| {
        crate::helpers::send(
            app.client
                .patch(path.clone())
                .bearer_auth(&app.key)
                .header("idempotency-key", key)
                .json(&serde_json::json!({"weight": weight})),
        )
    };
    let (status, first) = patch("fix-weight-1", 1000).await;
    assert_eq!(status, reqwest::StatusCode::OK, "{first}");
    let (status, _) = patch("fix-weight-2", 2000).await;
    assert_eq!(status, reqwest::StatusCode::OK);
    // The retry of the first gets its answer, and the load keeps 2,000.
    let (status, replayed) = patch("fix-weight-1", 1000).await;
    assert_eq!(status, reqwest::StatusCode::OK);
    assert_eq!(replayed["data"]["weight"], 1000.0);
    let (_, now) = app
        .get(&format!("/loads/{}", load["id"].as_str().unwrap()))
        .await;
    assert_eq!(now["data"]["weight"], 2000.0, "not applied again");
    let (status, reused) = patch("fix-weight-1", 3000).await;
    crate::helpers::assert_error(status, &reused, 422, "IDEMPOTENCY_KEY_REUSED");
}

/// A method the API does not route gets its 405 with a key too (the key is
/// not taken), and the key stays free for a real request.
#[actix_web::test]
async fn a_key_on_a_method_that_is_not_routed_is_not_taken() {
    let app = spawn_app().await;
    let (status, body) = crate::helpers::send(
        app.client
            .put(app.url("/carriers"))
            .bearer_auth(&app.key)
            .header("idempotency-key", "one-key")
            .json(&crate::helpers::carrier_body("424242")),
    )
    .await;
    crate::helpers::assert_error(status, &body, 405, "METHOD_NOT_ALLOWED");
    let (status, body) = crate::helpers::send(
        app.client
            .post(app.url("/carriers"))
            .bearer_auth(&app.key)
            .header("idempotency-key", "one-key")
            .json(&crate::helpers::carrier_body("424242")),
    )
    .await;
    assert_eq!(status, reqwest::StatusCode::CREATED, "{body}");
}
