//! Plans and quotas: exact headers while a Standard account drains its quota,
//! 429 at the boundary with Retry-After, accounts counted apart, plan changes at
//! once, and the window sliding on the server's clock.

use reqwest::{Method, StatusCode};
use serde_json::json;

use crate::helpers::{assert_error, spawn_app};

fn header(response: &reqwest::Response, name: &str) -> String {
    response
        .headers()
        .get(name)
        .unwrap_or_else(|| panic!("{name} missing"))
        .to_str()
        .unwrap()
        .to_owned()
}

#[actix_web::test]
async fn a_standard_account_drains_exactly_its_quota() {
    let app = spawn_app().await;
    let now = app.clock.now().timestamp();
    let minute_start = now - now.rem_euclid(60);
    let reset = minute_start + 3600;
    for n in 0..1000u32 {
        // Every kind of answer counts and carries the headers, errors included.
        let path = if n % 2 == 0 {
            "/loads"
        } else {
            "/loads/load_missing"
        };
        let response = app.get_response(path).await;
        assert!(response.status() == StatusCode::OK || response.status() == StatusCode::NOT_FOUND);
        assert_eq!(header(&response, "x-ratelimit-limit"), "1000");
        assert_eq!(
            header(&response, "x-ratelimit-remaining"),
            (999 - n).to_string()
        );
        assert_eq!(header(&response, "x-ratelimit-reset"), reset.to_string());
        assert_eq!(
            header(&response, "ratelimit-policy"),
            "\"hourly\";q=1000;w=3600"
        );
        assert_eq!(
            header(&response, "ratelimit"),
            format!("\"hourly\";r={};t={}", 999 - n, reset - now)
        );
    }
    let response = app
        .client
        .post(app.url("/loads"))
        .bearer_auth(&app.key)
        .json(&json!({}))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), StatusCode::TOO_MANY_REQUESTS);
    assert_eq!(header(&response, "retry-after"), (reset - now).to_string());
    assert_eq!(header(&response, "x-ratelimit-remaining"), "0");
    assert_eq!(header(&response, "x-ratelimit-reset"), reset.to_string());
    let body: serde_json::Value = response.json().await.unwrap();
    let error = assert_error(StatusCode::TOO_MANY_REQUESTS, &body, 429, "RATE_LIMITED");
    assert_eq!(error["details"]["limit"], 1000);
    // A refused request changed nothing and did not count.
    let (status, list) = app.get_as(&app.key, "/loads").await;
    assert_eq!(status, StatusCode::TOO_MANY_REQUESTS);
    assert_eq!(list["error"]["code"], "RATE_LIMITED");

    // Another account is counted apart.
    let (_, other) = app.new_account().await;
    let (status, _) = app.get_as(&other, "/loads").await;
    assert_eq!(status, StatusCode::OK);

    // Pro applies at once: 10,000 minus the 1,000 used.
    let (status, changed) = app
        .admin(
            Method::PUT,
            &format!("/accounts/{}/plan", app.account_id),
            Some(json!({"plan": "pro"})),
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{changed}");
    assert_eq!(changed["data"]["requests_per_hour"], 10000);
    let response = app.get_response("/loads").await;
    assert_eq!(response.status(), StatusCode::OK);
    assert_eq!(header(&response, "x-ratelimit-limit"), "10000");
    assert_eq!(header(&response, "x-ratelimit-remaining"), "8999");

    // Back to Standard: spent again; an hour later on the server's clock, all back.
    app.admin(
        Method::PUT,
        &format!("/accounts/{}/plan", app.account_id),
        Some(json!({"plan": "standard"})),
    )
    .await;
    let (status, _) = app.get_as(&app.key, "/loads").await;
    assert_eq!(status, StatusCode::TOO_MANY_REQUESTS);
    app.clock.advance(chrono::Duration::seconds(reset - now));
    let response = app.get_response("/loads").await;
    assert_eq!(response.status(), StatusCode::OK);
    assert_eq!(header(&response, "x-ratelimit-remaining"), "999");
}

#[actix_web::test]
async fn plan_changes_are_validated() {
    let app = spawn_app().await;
    let path = format!("/accounts/{}/plan", app.account_id);
    let (status, body) = app
        .admin(
            Method::PUT,
            &path,
            Some(json!({"plan": "pro", "requests_per_hour": 5})),
        )
        .await;
    assert_error(status, &body, 400, "VALIDATION_FAILED");
    let (status, body) = app
        .admin(Method::PUT, &path, Some(json!({"plan": "gold"})))
        .await;
    assert_eq!(status, StatusCode::BAD_REQUEST, "{body}");
    let (status, body) = app
        .admin(
            Method::PUT,
            &path,
            Some(json!({"plan": "enterprise", "requests_per_hour": 3})),
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    for remaining in ["2", "1", "0"] {
        let response = app.get_response("/loads").await;
        assert_eq!(header(&response, "x-ratelimit-limit"), "3");
        assert_eq!(header(&response, "x-ratelimit-remaining"), remaining);
    }
    let (status, _) = app.get_as(&app.key, "/loads").await;
    assert_eq!(status, StatusCode::TOO_MANY_REQUESTS);
}
