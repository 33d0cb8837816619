//! The tenancy sweep: every operation that names a resource, driven by another
//! account with this account's ids. Each answer is a 404 (never the resource,
//! never a 5xx), and afterwards this account's resources are exactly as before.

use reqwest::Method;
use serde_json::{Value, json};

use crate::helpers::{TestApp, first_delivery, load_body, send, spawn_app_with_local_webhooks};

/// This account's view of everything it owns, to compare before and after.
async fn snapshot(app: &TestApp, ids: &Ids) -> Vec<Value> {
    let mut seen = Vec::new();
    for path in [
        format!("/loads/{}", ids.load),
        format!("/loads/{}/tracking/history", ids.load),
        format!("/carriers/{}", ids.carrier),
        format!("/webhooks/{}", ids.webhook),
        format!("/webhooks/{}/deliveries", ids.webhook),
        format!("/devices/{}", ids.device),
        "/loads".to_owned(),
        "/carriers".to_owned(),
        "/webhooks".to_owned(),
    ] {
        let (status, body) = app.get(&path).await;
        assert_eq!(status, 200, "{path}: {body}");
        seen.push(body["data"].clone());
    }
    seen
}

struct Ids {
    load: String,
    carrier: String,
    webhook: String,
    delivery: String,
    device: String,
}

#[actix_web::test]
async fn another_account_reaches_nothing_of_this_one_by_any_route() {
    let receiver = crate::receiver::Receiver::start(200).await;
    let app = spawn_app_with_local_webhooks().await;
    // This account: a webhook that got one delivery, a carrier, an assigned load
    // with a fix.
    let (status, hook) = app
        .post(
            "/webhooks",
            json!({"url": format!("{}/hook", receiver.base), "events": ["load.created", "load.status_changed"],
                   "secret": "tenancy-secret-0123456789"}),
        )
        .await;
    assert_eq!(status, 201, "{hook}");
    let webhook = hook["data"]["id"].as_str().unwrap().to_owned();
    let carrier = app.create_carrier("424242").await["id"]
        .as_str()
        .unwrap()
        .to_owned();
    let load = app.create_load(load_body("TX", "GA")).await["id"]
        .as_str()
        .unwrap()
        .to_owned();
    let (status, _) = app
        .patch(
            &format!("/loads/{load}/status"),
            json!({"status": "assigned", "carrier_id": carrier}),
        )
        .await;
    assert_eq!(status, 200);
    let fix_at = (app.clock.now() - chrono::Duration::minutes(1))
        .to_rfc3339_opts(chrono::SecondsFormat::Millis, true);
    let (status, _) = app
        .post(
            &format!("/loads/{load}/tracking"),
            json!({"lat": 32.8, "lng": -96.8, "timestamp": fix_at}),
        )
        .await;
    assert_eq!(status, 201);
    receiver
        .wait_for("the first deliveries", |received| received.len() >= 2)
        .await;
    let delivery = first_delivery(&app, &webhook).await;
    let (status, device) = app.post("/devices", json!({"name": "Truck 12"})).await;
    assert_eq!(status, 201, "{device}");
    let device = device["data"]["id"].as_str().unwrap().to_owned();
    let (status, _) = crate::helpers::send(
        app.client
            .put(app.url(&format!("/loads/{load}/device")))
            .bearer_auth(&app.key)
            .json(&json!({"device_id": device})),
    )
    .await;
    assert_eq!(status, 200);
    let ids = Ids {
        load,
        carrier,
        webhook,
        delivery,
        device,
    };
    let before = snapshot(&app, &ids).await;

    // The other account, with a read+write key, and a carrier of its own.
    let (_, other) = app.new_account().await;
    let (_, theirs) = app
        .post_as(&other, "/carriers", crate::helpers::carrier_body("999999"))
        .await;
    let their_carrier = theirs["data"]["id"].as_str().unwrap().to_owned();
    let (_, theirs) = app
        .post_as(&other, "/devices", json!({"name": "Theirs"}))
        .await;
    let their_device = theirs["data"]["id"].as_str().unwrap().to_owned();

    let mut swept = 0;
    for (method, path) in freight::routes::all_routes() {
        if !path.contains('{') {
            continue;
        }
        let url_path = path
            .replace("{load_id}", &ids.load)
            .replace("{carrier_id}", &ids.carrier)
            .replace("{delivery_id}", &ids.delivery)
            .replace("{device_id}", &ids.device)
            .replace("{id}", &ids.webhook);
        let url_path = url_path.strip_prefix("/v1").unwrap_or(&url_path);
        let body = match (method, path.as_str()) {
            ("PATCH", p) if p.ends_with("/status") => {
                Some(json!({"status": "in_transit", "carrier_id": their_carrier}))
            }
            ("POST", p) if p.ends_with("/tracking") => {
                Some(json!({"lat": 33.0, "lng": -97.0, "timestamp": fix_at}))
            }
            // A valid body for each, so that only the account is wrong.
            ("PATCH", p) if p.ends_with("/loads/{load_id}") => Some(json!({"weight": 1000})),
            ("PATCH", p) if p.ends_with("/carriers/{carrier_id}") => {
                Some(json!({"name": "Theirs now"}))
            }
            ("PATCH", p) if p.ends_with("/devices/{device_id}") => {
                Some(json!({"name": "Theirs now"}))
            }
            ("PATCH", _) => Some(json!({"enabled": false})),
            ("PUT", _) => Some(json!({"device_id": their_device})),
            ("POST", _) => Some(json!({})),
            _ => None,
        };
        let method: Method = method.parse().unwrap();
        let mut request = app
            .client
            .request(method.clone(), app.url(url_path))
            .bearer_auth(&other);
        if let Some(body) = body {
            request = request.json(&body);
        }
        let response = request.send().await.unwrap();
        let status = response.status();
        let text = response.text().await.unwrap();
        assert_eq!(
            status, 404,
            "{method} {url_path} as another account: {text}"
        );
        for id in [&ids.load, &ids.carrier, &ids.webhook, &ids.delivery] {
            assert!(
                !text.contains(id.as_str()),
                "{method} {url_path} leaked {id}: {text}"
            );
        }
        swept += 1;
    }
    assert!(swept >= 12, "only {swept} operations were swept");

    // Lists of the other account show nothing of this one.
    for path in ["/loads", "/carriers", "/webhooks"] {
        let (status, body) = send(app.client.get(app.url(path)).bearer_auth(&other)).await;
        assert_eq!(status, 200);
        let text = body.to_string();
        for id in [&ids.load, &ids.carrier, &ids.webhook] {
            assert!(!text.contains(id.as_str()), "{path} leaked {id}: {text}");
        }
    }
    // A batch naming this account's load stores nothing for it.
    let (status, batch) = send(
        app.client
            .post(app.url("/tracking/batch"))
            .bearer_auth(&other)
            .json(&json!({"points": [{"load_id": ids.load, "lat": 33.0, "lng": -97.0, "timestamp": fix_at}]})),
    )
    .await;
    assert_eq!(status, 200, "{batch}");
    assert_eq!(batch["data"]["results"][0]["status"], "rejected", "{batch}");
    assert_eq!(
        batch["data"]["results"][0]["error"]["code"], "INVALID_LOAD",
        "{batch}"
    );

    assert_eq!(
        snapshot(&app, &ids).await,
        before,
        "nothing of this account changed"
    );
}
