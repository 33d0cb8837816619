//! A load's tracking history: paged by cursor within a time range.

use chrono::Duration;
use reqwest::StatusCode;
use serde_json::{Value, json};

use crate::helpers::{assert_error, spawn_app};
use crate::tracking::{at, fix, history, load_in, timestamps};

#[actix_web::test]
async fn history_pages_by_cursor_within_a_time_range() {
    let app = spawn_app().await;
    let id = load_in(&app, "in_transit").await;
    let t0 = app.clock.now() - Duration::hours(1);
    let fixes: Vec<Value> = (0..25)
        .map(|i| {
            let mut f = fix(33.0, -95.0, t0 + Duration::minutes(i));
            f["load_id"] = json!(id);
            f
        })
        .collect();
    let (status, body) = app.post("/tracking/batch", json!({"points": fixes})).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(body["data"]["accepted"], 25);

    let from = at(t0 + Duration::minutes(5));
    let to = at(t0 + Duration::minutes(19));
    let mut query = format!("from={from}&to={to}&limit=6");
    let mut seen = Vec::new();
    for page in 1..=3 {
        let body = history(&app, &id, &query).await;
        assert_eq!(body["data"]["total"], 15);
        assert_eq!(body["data"]["page"], page);
        seen.extend(timestamps(&body));
        match body["pagination"]["next_cursor"].as_str() {
            Some(cursor) => query = format!("from={from}&to={to}&limit=6&cursor={cursor}"),
            None => assert_eq!(page, 3),
        }
    }
    // 15 fixes in pages of 5: the third page is full and the last one.
    let mut query = format!("from={from}&to={to}&limit=5");
    for page in 1..=3 {
        let body = history(&app, &id, &query).await;
        match body["pagination"]["next_cursor"].as_str() {
            Some(cursor) => query = format!("from={from}&to={to}&limit=5&cursor={cursor}"),
            None => assert_eq!(page, 3, "{body}"),
        }
        if page == 3 {
            assert_eq!(body["pagination"]["next_cursor"], Value::Null, "{body}");
        }
    }
    let expected: Vec<String> = (5..=19)
        .rev()
        .map(|m| at(t0 + Duration::minutes(m)).replace(".000", ""))
        .collect();
    assert_eq!(seen, expected);

    for (query, field) in [
        ("limit=0", "limit"),
        ("limit=1001", "limit"),
        ("from=yesterday", "from"),
        ("cursor=abc", "cursor"),
        (&format!("from={to}&to={from}") as &str, "to"),
        ("page=2", "page"),
    ] {
        let (status, body) = app
            .get(&format!("/loads/{id}/tracking/history?{query}"))
            .await;
        let error = assert_error(status, &body, 400, "INVALID_QUERY_PARAMETER");
        assert_eq!(error["details"]["field"], field, "{query}");
    }
    // A page number is answered with what to send instead.
    let (_, body) = app
        .get(&format!("/loads/{id}/tracking/history?page=2"))
        .await;
    let message = body["error"]["message"].as_str().unwrap();
    assert!(message.contains("next_cursor as cursor"), "{body}");
    let (status, body) = app.get(&format!("/loads/{id}/tracking?points=11")).await;
    assert_error(status, &body, 400, "INVALID_QUERY_PARAMETER");
    let (_, live) = app.get(&format!("/loads/{id}/tracking?points=3")).await;
    assert_eq!(live["data"]["points"].as_array().unwrap().len(), 3);
}
