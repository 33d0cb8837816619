//! Operations: request ids, Prometheus metrics and probes on the admin listener.

use reqwest::StatusCode;
use serde_json::json;

use crate::helpers::{assert_media_type, load_body, spawn_app};

#[actix_web::test]
async fn every_response_carries_a_request_id() {
    let app = spawn_app().await;
    let generated = app.get_response("/loads").await;
    let id = generated.headers()["x-request-id"]
        .to_str()
        .unwrap()
        .to_owned();
    assert!(id.starts_with("req_") && id.len() > 20, "{id}");
    // A client's own id is echoed; a refusal carries one too.
    let echoed = app
        .client
        .get(app.url("/loads"))
        .header("X-Request-Id", "trace-abc-123")
        .send()
        .await
        .unwrap();
    assert_eq!(echoed.status(), StatusCode::UNAUTHORIZED);
    assert_eq!(echoed.headers()["x-request-id"], "trace-abc-123");
    // One that could not be logged safely is replaced.
    let replaced = app
        .client
        .get(app.url("/loads"))
        .bearer_auth(&app.key)
        .header("X-Request-Id", "has spaces in it")
        .send()
        .await
        .unwrap();
    let id = replaced.headers()["x-request-id"].to_str().unwrap();
    assert!(id.starts_with("req_"), "{id}");
}

#[actix_web::test]
async fn metrics_report_requests_gps_points_commits_actors_and_quotas() {
    let app = spawn_app().await;
    let load = app.create_load(load_body("TX", "GA")).await;
    let id = load["id"].as_str().unwrap();
    let carrier = app.create_carrier("777001").await;
    let (status, _) = app
        .patch(
            &format!("/loads/{id}/status"),
            json!({"status": "assigned", "carrier_id": carrier["id"]}),
        )
        .await;
    assert_eq!(status, StatusCode::OK);
    let fix = json!({"lat": 32.7, "lng": -96.8, "timestamp": chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Micros, true)});
    let (status, _) = app
        .post(&format!("/loads/{id}/tracking"), fix.clone())
        .await;
    assert_eq!(status, StatusCode::CREATED);
    let (status, _) = app.post(&format!("/loads/{id}/tracking"), fix).await;
    assert_eq!(status, StatusCode::OK, "the duplicate");
    // A 429, for the refusal counter.
    app.admin(
        reqwest::Method::PUT,
        &format!("/accounts/{}/plan", app.account_id),
        Some(json!({"plan": "enterprise", "requests_per_hour": 1})),
    )
    .await;
    let (status, _) = app.get("/loads").await;
    assert_eq!(status, StatusCode::TOO_MANY_REQUESTS);

    let page = reqwest::get(format!("{}/metrics", app.admin_base))
        .await
        .unwrap();
    assert_eq!(page.status(), StatusCode::OK);
    assert_media_type(&page, "text/plain");
    let text = page.text().await.unwrap();
    for expected in [
        "freight_http_requests_total{route=\"/v1/loads\",method=\"POST\",status=\"201\"}",
        "freight_http_request_duration_seconds_bucket{route=\"/v1/loads/{load_id}/tracking\",method=\"POST\",status=\"201\",le=",
        "freight_gps_points_total{outcome=\"stored\"}",
        "freight_gps_points_total{outcome=\"duplicate\"}",
        "freight_gps_commit_batch_points_bucket{le=",
        "freight_gps_commit_seconds_bucket{le=",
        "freight_resident_load_actors ",
        "freight_rate_limited_total ",
        "freight_webhook_backlog ",
    ] {
        assert!(text.contains(expected), "{expected} missing from:\n{text}");
    }

    // Liveness and readiness.
    for probe in ["/health", "/ready"] {
        let response = reqwest::get(format!("{}{probe}", app.admin_base))
            .await
            .unwrap();
        assert_eq!(response.status(), StatusCode::OK, "{probe}");
    }
}
