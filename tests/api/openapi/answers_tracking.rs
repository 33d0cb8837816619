//! The walk's later steps: tracking and the lifecycle, streams, the delivery
//! log, the quota, operations outside `/v1`, and a check that the checker bites.

use std::time::Duration;

use reqwest::{Method, StatusCode};
use serde_json::{Value, json};

use crate::event_stream::EventStream;
use crate::helpers::eventually;
use crate::receiver::Receiver;

use super::contract::*;
use super::*;

/// Fixes, batches, the live view and history, through the whole status lifecycle.
pub(super) async fn tracking_and_lifecycle(
    api: &Client<'_>,
    load_id: &str,
    idle_id: &str,
    carrier_id: &str,
) {
    let fix = json!({"lat": 32.7767, "lng": -96.797, "timestamp": at(api.app, 3), "speed": 55.5, "heading": 90});
    api.call("POST", "/v1/loads/{load_id}/tracking", &[load_id])
        .json(fix.clone())
        .expect(409)
        .await;
    let status = "/v1/loads/{load_id}/status";
    api.call("PATCH", status, &[load_id])
        .json(json!({"status": "delivered"}))
        .expect(409)
        .await;
    api.call("PATCH", status, &[load_id])
        .json(json!({"status": "assigned"}))
        .expect(400)
        .await;
    api.call("PATCH", status, &[load_id])
        .json(json!({"status": "assigned", "carrier_id": MISSING_CARRIER}))
        .expect(400)
        .await;
    api.call("PATCH", status, &[MISSING_LOAD])
        .json(json!({"status": "posted"}))
        .expect(404)
        .await;
    api.call("PATCH", status, &[load_id])
        .json(json!({"status": "assigned", "carrier_id": carrier_id}))
        .expect(200)
        .await;
    let tracking = "/v1/loads/{load_id}/tracking";
    let history = "/v1/loads/{load_id}/tracking/history";
    let mut stream = streams(api, load_id).await;
    api.call("POST", tracking, &[load_id])
        .json(fix.clone())
        .expect(201)
        .await;
    let update = stream.event().await;
    assert_eq!(update.event.as_deref(), Some("tracking.updated"));
    let schema = json!({"$ref": "#/components/schemas/TrackingUpdate"});
    api.contract
        .validate(&schema, &update.json(), "a tracking.updated event's data");
    api.call("POST", tracking, &[load_id])
        .json(fix)
        .expect(200)
        .await;
    api.call("POST", tracking, &[load_id])
        .json(json!({"lat": 95, "lng": -96.8, "timestamp": "2020-01-01T00:00:00Z", "load_id": load_id}))
        .expect(400)
        .await;
    api.call("POST", tracking, &[MISSING_LOAD])
        .json(json!({"lat": 32.8, "lng": -96.8, "timestamp": at(api.app, 1)}))
        .expect(404)
        .await;
    api.call("PATCH", status, &[load_id])
        .json(json!({"status": "in_transit", "location": {"lat": 32.78, "lng": -96.8}, "notes": "Picked up"}))
        .expect(200)
        .await;
    let batch = api
        .call("POST", "/v1/tracking/batch", &[])
        .json(json!({"points": [
            {"load_id": load_id, "lat": 32.9, "lng": -96.5, "timestamp": at(api.app, 2)},
            {"load_id": load_id, "lat": 32.9, "lng": -96.5, "timestamp": at(api.app, 2)},
            {"load_id": load_id, "lat": 33.0, "lng": -96.0, "timestamp": at(api.app, 1), "speed": 61, "heading": 75.5},
            {"load_id": idle_id, "lat": 33.0, "lng": -96.0, "timestamp": at(api.app, 1)},
            {"load_id": MISSING_LOAD, "lat": 33.0, "lng": -96.0, "timestamp": at(api.app, 1)},
            {"lat": "north", "extra": true},
            {"load_id": load_id, "lat": 91, "lng": 0, "timestamp": "yesterday"}
        ]}))
        .expect(200)
        .await;
    assert_eq!(batch["data"]["rejected"], 4, "{batch}");
    api.call("POST", "/v1/tracking/batch", &[])
        .json(json!({"points": []}))
        .expect(400)
        .await;
    api.call("POST", "/v1/tracking/batch", &[])
        .json(json!([]))
        .expect(400)
        .await;
    api.call("GET", tracking, &[load_id]).expect(200).await;
    api.call("GET", tracking, &[idle_id]).expect(200).await;
    api.call("GET", tracking, &[load_id])
        .query("points=1")
        .expect(200)
        .await;
    api.call("GET", tracking, &[load_id])
        .query("points=11")
        .expect(400)
        .await;
    api.call("GET", tracking, &[MISSING_LOAD]).expect(404).await;
    api.call("GET", "/v1/loads/{load_id}", &[load_id])
        .expect(200)
        .await;
    let page = api
        .call("GET", history, &[load_id])
        .query("limit=2")
        .expect(200)
        .await;
    let cursor = page["pagination"]["next_cursor"]
        .as_str()
        .unwrap()
        .to_owned();
    let last = api
        .call("GET", history, &[load_id])
        .query(&format!("limit=2&cursor={cursor}"))
        .expect(200)
        .await;
    assert!(last["pagination"]["next_cursor"].is_null(), "{last}");
    api.call("GET", history, &[load_id]).expect(200).await;
    api.call("GET", history, &[idle_id]).expect(200).await;
    api.call("GET", history, &[load_id])
        .query("from=2026-03-02T00:00:00Z&to=2026-03-01T00:00:00Z")
        .expect(400)
        .await;
    api.call("GET", history, &[MISSING_LOAD]).expect(404).await;
    api.call("PATCH", status, &[load_id])
        .json(json!({"status": "delivered"}))
        .expect(200)
        .await;
    api.call("GET", "/v1/loads/{load_id}", &[load_id])
        .expect(200)
        .await;
    api.call("GET", "/v1/loads", &[])
        .query("status=delivered")
        .expect(200)
        .await;
}

/// The live streams: opened, refused; returns an open stream of the load.
pub(super) async fn streams(api: &Client<'_>, load_id: &str) -> EventStream {
    let account = "/v1/tracking/stream";
    let load = "/v1/loads/{load_id}/tracking/stream";
    api.call("GET", account, &[]).expect(200).await;
    api.call("GET", load, &[load_id]).expect(200).await;
    api.call("GET", account, &[])
        .query("last_event_id=nope")
        .expect(400)
        .await;
    api.call("GET", load, &[MISSING_LOAD]).expect(404).await;
    api.call("GET", load, &[load_id]).key("").expect(401).await;
    let writer = api.app.new_key(&api.app.account_id, &["write"], None).await;
    api.call("GET", account, &[]).key(&writer).expect(403).await;
    let path = fill(load, &[load_id]);
    let response = api.app.get_response(&path["/v1".len()..]).await;
    EventStream::open(response).await
}

/// The delivery log once the events have gone out, a redelivery, and deletion.
pub(super) async fn delivery_log(api: &Client<'_>, receiver: &Receiver, hook_id: &str) {
    receiver.wait_for("events", |r| r.len() >= 5).await;
    let deliveries = "/v1/webhooks/{id}/deliveries";
    let log = eventually(
        Duration::from_secs(20),
        "every delivery delivered",
        || async {
            let log = api.call("GET", deliveries, &[hook_id]).expect(200).await;
            let entries = log["data"]["deliveries"].as_array().unwrap();
            match !entries.is_empty() && entries.iter().all(|d| d["status"] == "delivered") {
                true => Ok(log),
                false => Err(log.to_string()),
            }
        },
    )
    .await;
    api.call("GET", deliveries, &[hook_id])
        .query("limit=1")
        .expect(200)
        .await;
    api.call("GET", deliveries, &[MISSING_WEBHOOK])
        .expect(404)
        .await;
    let event = log["data"]["deliveries"][0]["id"]
        .as_str()
        .unwrap()
        .to_owned();
    let redeliver = "/v1/webhooks/{id}/deliveries/{delivery_id}/redeliver";
    api.call("POST", redeliver, &[hook_id, &event])
        .expect(202)
        .await;
    api.call("POST", redeliver, &[hook_id, MISSING_EVENT])
        .expect(404)
        .await;
    api.call("POST", redeliver, &[MISSING_WEBHOOK, &event])
        .expect(404)
        .await;
    api.call("PATCH", "/v1/webhooks/{id}", &[hook_id])
        .json(json!({"enabled": false}))
        .expect(200)
        .await;
    api.call("DELETE", "/v1/webhooks/{id}", &[hook_id])
        .expect(200)
        .await;
    api.call("DELETE", "/v1/webhooks/{id}", &[hook_id])
        .expect(404)
        .await;
}

/// A quota of one request an hour: the second is refused.
pub(super) async fn quota(api: &Client<'_>) {
    let (status, tiny) = api
        .app
        .admin(
            Method::POST,
            "/accounts",
            Some(json!({"name": "Tiny", "plan": "enterprise", "requests_per_hour": 1})),
        )
        .await;
    assert_eq!(status, StatusCode::CREATED, "{tiny}");
    let tiny_key = api
        .app
        .new_key(
            tiny["data"]["id"].as_str().unwrap(),
            &["read", "write"],
            None,
        )
        .await;
    api.call("GET", "/v1/loads", &[])
        .key(&tiny_key)
        .expect(200)
        .await;
    api.call("GET", "/v1/loads", &[])
        .key(&tiny_key)
        .expect(429)
        .await;
}

/// Refusals outside any operation (405, an unknown path) still use the error
/// envelope.
pub(super) async fn outside_operations(api: &Client<'_>) {
    let error = api.contract.resolve(&api.contract.doc["components"]["responses"]["BadRequest"])["content"]
        ["application/json"]["schema"]
        .clone();
    for (method, path, status) in [
        (Method::PUT, "/v1/loads", 405),
        (Method::DELETE, "/v1/openapi.json", 405),
        (Method::GET, "/v1/nowhere", 404),
    ] {
        let response = api
            .app
            .client
            .request(method.clone(), format!("{}{path}", root(api.app)))
            .bearer_auth(&api.app.key)
            .send()
            .await
            .unwrap();
        assert_eq!(response.status().as_u16(), status, "{method} {path}");
        let body: Value = response.json().await.unwrap();
        api.contract
            .validate(&error, &body, &format!("{method} {path}"));
    }
}

/// The checker itself bites: an undocumented or a missing field fails.
pub(super) async fn the_checker_bites(api: &Client<'_>, load_id: &str) {
    let loaded = api
        .call("GET", "/v1/loads/{load_id}", &[load_id])
        .expect(200)
        .await;
    let envelope = &api.contract.doc["paths"]["/v1/loads/{load_id}"]["get"]["responses"]["200"]["content"]
        ["application/json"]["schema"];
    let mut extra = loaded.clone();
    extra["data"]["surprise"] = json!(1);
    let mut missing = loaded.clone();
    missing["data"].as_object_mut().unwrap().remove("currency");
    for wrong in [extra, missing] {
        let mut schema = envelope.clone();
        close_objects(&mut schema);
        assert!(
            !schema_errors(&api.contract.components, &schema, &wrong)
                .unwrap()
                .is_empty()
        );
    }
}
