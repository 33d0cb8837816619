//! Real answers match the document: the walk over every operation, and its
//! steps up to the webhooks.

use std::time::Duration;

use freight::domain::webhook::UrlPolicy;
use freight::webhooks::dispatcher::DispatchSettings;
use reqwest::StatusCode;
use serde_json::json;

use crate::helpers::{carrier_body, load_body, spawn_app_with};
use crate::receiver::Receiver;

use super::answers_tracking::*;
use super::contract::*;
use super::*;

/// A realistic run through every operation, successes and refusals, each answer
/// checked against the document.
#[actix_web::test]
pub(super) async fn real_answers_match_the_document() {
    let app = spawn_app_with(|s| {
        s.webhooks = DispatchSettings {
            url_policy: UrlPolicy {
                allow_http: true,
                allow_private: true,
            },
            tick: Duration::from_millis(20),
            ..DispatchSettings::default()
        }
    })
    .await;
    let contract = Contract::of(&app).await;
    let api = Client {
        app: &app,
        contract: &contract,
    };
    api.call("GET", "/v1/openapi.json", &[]).expect(200).await;
    api.call("GET", "/v1/docs", &[]).expect(200).await;
    keys(&api).await;
    let (load_id, idle_id) = loads(&api).await;
    idempotency(&api).await;
    let carrier_id = carriers(&api).await;
    // Subscribed before the load moves, so that there are deliveries to list.
    let receiver = Receiver::start(200).await;
    let hook_id = webhooks(&api, &receiver).await;
    tracking_and_lifecycle(&api, &load_id, &idle_id, &carrier_id).await;
    delivery_log(&api, &receiver, &hook_id).await;
    devices(&api).await;
    share_links(&api, &load_id).await;
    stops(&api).await;
    account_settings(&api).await;
    corrections(&api).await;
    quota(&api).await;
    outside_operations(&api).await;
    the_checker_bites(&api, &load_id).await;

    // Every operation was exercised, its success answer included.
    let seen = contract.seen.lock().unwrap();
    for (method, path) in documented(&contract.doc) {
        let statuses = seen.get(&(method.clone(), path.clone()));
        assert!(
            statuses.is_some_and(|s| s.iter().any(|s| (200..300).contains(s))),
            "{method} {path} was not exercised with success: {statuses:?}"
        );
    }
}

/// Loads and carriers corrected, a carrier deleted.
pub(super) async fn corrections(api: &Client<'_>) {
    let created = api
        .call("POST", "/v1/loads", &[])
        .json(crate::helpers::load_body("TX", "GA"))
        .expect(201)
        .await;
    let load = created["data"]["id"].as_str().unwrap().to_owned();
    api.call("PATCH", "/v1/loads/{load_id}", &[&load])
        .json(json!({"weight": 40500, "reference": "PO-CONTRACT", "notes": null}))
        .expect(200)
        .await;
    api.call("PATCH", "/v1/loads/{load_id}", &[&load])
        .json(json!({"weight": -1}))
        .expect(400)
        .await;
    api.call("PATCH", "/v1/loads/{load_id}", &["load_nope"])
        .json(json!({"weight": 1}))
        .expect(404)
        .await;
    let carrier = api
        .call("POST", "/v1/carriers", &[])
        .json(carrier_body("818181"))
        .expect(201)
        .await;
    let carrier = carrier["data"]["id"].as_str().unwrap().to_owned();
    api.call("PATCH", "/v1/carriers/{carrier_id}", &[&carrier])
        .json(json!({"contact": {"phone": "+1 214-555-0199"}}))
        .expect(200)
        .await;
    api.call("PATCH", "/v1/carriers/{carrier_id}", &[&carrier])
        .json(json!({"mc_number": "1"}))
        .expect(400)
        .await;
    api.call("DELETE", "/v1/carriers/{carrier_id}", &[&carrier])
        .expect(200)
        .await;
    api.call("DELETE", "/v1/carriers/{carrier_id}", &[&carrier])
        .expect(404)
        .await;
}

/// The account's stop settings: read, changed, refused.
pub(super) async fn account_settings(api: &Client<'_>) {
    let path = "/v1/account/settings";
    api.call("GET", path, &[]).expect(200).await;
    api.call("PATCH", path, &[])
        .json(json!({"late_after_minutes": 20}))
        .expect(200)
        .await;
    api.call("PATCH", path, &[])
        .json(json!({"early_before_minutes": 1441}))
        .expect(400)
        .await;
}

/// A load of three stops: made, one skipped, a stop that is not its refused,
/// the list edited, and loads found by a stop.
pub(super) async fn stops(api: &Client<'_>) {
    let place =
        |city: &str, state: &str, zip: &str| json!({"city": city, "state": state, "zip": zip});
    let created = api
        .call("POST", "/v1/loads", &[])
        .json(json!({
            "weight": 30000, "equipment_type": "dry_van", "team": true,
            "stops": [
                {"type": "pickup", "location": place("Dallas", "TX", "75201"),
                 "appointment": {"start": "2026-12-01T14:00:00Z", "end": "2026-12-01T16:00:00Z"},
                 "references": [{"type": "bol", "value": "BOL-1"}]},
                {"type": "delivery", "location": place("Shreveport", "LA", "71101"), "handling": "drop"},
                {"type": "delivery", "location": place("Atlanta", "GA", "30303"),
                 "contact": {"name": "Receiving", "phone": "+1 404-555-0199"}},
            ]
        }))
        .expect(201)
        .await;
    let load = created["data"]["id"].as_str().unwrap().to_owned();
    let got = api
        .call("GET", "/v1/loads/{load_id}", &[&load])
        .expect(200)
        .await;
    let stop = got["data"]["stops"][1]["id"].as_str().unwrap().to_owned();
    let skip = "/v1/loads/{load_id}/stops/{stop_id}/skip";
    api.call("POST", skip, &[&load, &stop]).expect(200).await;
    api.call("POST", skip, &[&load, "stop_nope"])
        .expect(404)
        .await;
    api.call("POST", skip, &["load_nope", &stop])
        .expect(404)
        .await;
    api.call("PATCH", "/v1/loads/{load_id}", &[&load])
        .json(json!({"stops": [{"type": "delivery", "location": place("Dallas", "TX", "75201")}]}))
        .expect(400)
        .await;
    api.call("GET", "/v1/loads", &[])
        .query("stop_state=LA&stop_zip=71101")
        .expect(200)
        .await;
}

/// Share links of a load: made, refused, listed, revoked.
pub(super) async fn share_links(api: &Client<'_>, load: &str) {
    let path = "/v1/loads/{load_id}/share-links";
    let created = api
        .call("POST", path, &[load])
        .json(json!({}))
        .expect(201)
        .await;
    let id = created["data"]["id"].as_str().unwrap().to_owned();
    api.call("POST", path, &[load])
        .json(json!({"expires_at": "2020-01-01T00:00:00Z"}))
        .expect(400)
        .await;
    api.call("POST", path, &["load_nope"])
        .json(json!({}))
        .expect(404)
        .await;
    api.call("GET", path, &[load]).expect(200).await;
    api.call(
        "DELETE",
        "/v1/loads/{load_id}/share-links/{link_id}",
        &[load, &id],
    )
    .expect(200)
    .await;
    api.call(
        "DELETE",
        "/v1/loads/{load_id}/share-links/{link_id}",
        &[load, "shl_nope"],
    )
    .expect(404)
    .await;
}

/// Devices, their loads, and what they post in each protocol.
pub(super) async fn devices(api: &Client<'_>) {
    let created = api
        .call("POST", "/v1/devices", &[])
        .json(json!({"name": "Truck 12"}))
        .expect(201)
        .await;
    let id = created["data"]["id"].as_str().unwrap().to_owned();
    let token = created["data"]["token"].as_str().unwrap().to_owned();
    api.call("POST", "/v1/devices", &[])
        .json(json!({"name": ""}))
        .expect(400)
        .await;
    api.call("GET", "/v1/devices", &[]).expect(200).await;
    api.call("GET", "/v1/devices/{device_id}", &[&id])
        .expect(200)
        .await;
    api.call("GET", "/v1/devices/{device_id}", &["dev_nope"])
        .expect(404)
        .await;
    api.call("PATCH", "/v1/devices/{device_id}", &[&id])
        .json(json!({"identifier": "356307042441013"}))
        .expect(200)
        .await;
    api.call("PATCH", "/v1/devices/{device_id}", &[&id])
        .json(json!({"identifier": "a/b/c"}))
        .expect(400)
        .await;
    let (load, _) = {
        let body = api
            .call("POST", "/v1/loads", &[])
            .json(crate::helpers::load_body("TX", "GA"))
            .expect(201)
            .await;
        (body["data"]["id"].as_str().unwrap().to_owned(), ())
    };
    let device_of = "/v1/loads/{load_id}/device";
    api.call("PUT", device_of, &[&load])
        .json(json!({"device_id": id}))
        .expect(200)
        .await;
    api.call("PUT", device_of, &[&load])
        .json(json!({"device_id": "dev_nope"}))
        .expect(400)
        .await;

    // What devices post (the load is posted: taken, not stored).
    let now = api.app.clock.now().timestamp();
    let query = format!("id={token}&lat=32.7&lon=-96.8&timestamp={now}&speed=20");
    api.call("GET", "/v1/ingest/osmand", &[])
        .query(&query)
        .expect(200)
        .await;
    api.call("POST", "/v1/ingest/osmand", &[])
        .query(&query)
        .expect(200)
        .await;
    api.call("POST", "/v1/ingest/osmand", &[])
        .query("id=frd_nope&lat=32.7&lon=-96.8")
        .expect(401)
        .await;
    api.call("GET", "/v1/ingest/osmand", &[])
        .query(&format!("id={token}&lat=99&lon=-96.8"))
        .expect(400)
        .await;
    let basic = format!(
        "Basic {}",
        base64::Engine::encode(
            &base64::engine::general_purpose::STANDARD,
            format!("driver:{token}")
        )
    );
    api.call("POST", "/v1/ingest/owntracks", &[])
        .header("authorization", &basic)
        .json(json!({"_type": "location", "lat": 32.7, "lon": -96.8, "tst": now, "vel": 80}))
        .expect(200)
        .await;
    api.call("POST", "/v1/ingest/overland", &[])
        .key(&token)
        .json(json!({"locations": [{"type": "Feature",
            "geometry": {"type": "Point", "coordinates": [-96.8, 32.7]},
            "properties": {"timestamp": at(api.app, 1), "speed": 10}}]}))
        .expect(200)
        .await;
    api.call("POST", "/v1/ingest/overland", &[])
        .key(&token)
        .raw("application/json", "not json")
        .expect(400)
        .await;

    api.call("DELETE", device_of, &[&load]).expect(200).await;
    api.call("DELETE", "/v1/devices/{device_id}", &[&id])
        .expect(200)
        .await;
    api.call("POST", "/v1/ingest/overland", &[])
        .key(&token)
        .json(json!({"locations": []}))
        .expect(401)
        .await;
}

/// Keys: working, missing, malformed, without the permission.
pub(super) async fn keys(api: &Client<'_>) {
    api.call("GET", "/v1/auth/verify", &[]).expect(200).await;
    api.call("GET", "/v1/auth/verify", &[])
        .key("")
        .expect(401)
        .await;
    api.call("GET", "/v1/auth/verify", &[])
        .key("frk_nonsense")
        .expect(401)
        .await;
    let (account, _) = api.app.new_account().await;
    let reader = api.app.new_key(&account, &["read"], None).await;
    api.call("GET", "/v1/auth/verify", &[])
        .key(&reader)
        .expect(200)
        .await;
    api.call("POST", "/v1/loads", &[])
        .key(&reader)
        .json(load_body("TX", "GA"))
        .expect(403)
        .await;
    api.call("GET", "/v1/auth/verify", &[])
        .query("x=1")
        .expect(400)
        .await;
}

/// Loads: created (a full one and a bare one), refused, listed, read; returns
/// the ids of the two.
pub(super) async fn loads(api: &Client<'_>) -> (String, String) {
    let mut full = load_body("TX", "GA");
    full["origin"]["address"] = json!("1200 Main St");
    full["pickup_date"] = json!("2026-03-02T08:00:00Z");
    full["delivery_date"] = json!("2026-03-03T17:00:00.250Z");
    full["rate"] = json!(1850.5);
    full["notes"] = json!("Dock 4");
    let load = api
        .call("POST", "/v1/loads", &[])
        .json(full)
        .expect(201)
        .await;
    let load_id = load["data"]["id"].as_str().unwrap().to_owned();
    let idle = api
        .call("POST", "/v1/loads", &[])
        .json(load_body("tx", "ok"))
        .expect(201)
        .await;
    let idle_id = idle["data"]["id"].as_str().unwrap().to_owned();
    api.call("POST", "/v1/loads", &[])
        .json(json!({"weight": -1, "bogus": 1}))
        .expect(400)
        .await;
    api.call("POST", "/v1/loads", &[])
        .raw("application/json", "{nope")
        .expect(400)
        .await;
    api.call("POST", "/v1/loads", &[])
        .raw("text/plain", "hello")
        .expect(415)
        .await;
    api.call("POST", "/v1/loads", &[])
        .raw("application/json", vec![b' '; 70 * 1024])
        .expect(413)
        .await;
    api.call("GET", "/v1/loads", &[]).expect(200).await;
    api.call("GET", "/v1/loads", &[])
        .query("page=1&limit=1&status=posted&origin_state=tx&destination_state=GA")
        .expect(200)
        .await;
    api.call("GET", "/v1/loads", &[])
        .query("staus=posted")
        .expect(400)
        .await;
    api.call("GET", "/v1/loads", &[])
        .query("limit=101")
        .expect(400)
        .await;
    api.call("GET", "/v1/loads/{load_id}", &[&load_id])
        .expect(200)
        .await;
    api.call("GET", "/v1/loads/{load_id}", &[MISSING_LOAD])
        .expect(404)
        .await;
    api.call("GET", "/v1/loads/{load_id}", &["nonsense"])
        .expect(404)
        .await;
    (load_id, idle_id)
}

/// A replayed answer, a reused key and a malformed key.
pub(super) async fn idempotency(api: &Client<'_>) {
    let (first_status, first) = api
        .call("POST", "/v1/loads", &[])
        .header("idempotency-key", "conformance-1")
        .json(load_body("CA", "NV"))
        .send()
        .await;
    assert_eq!(first_status, StatusCode::CREATED);
    let replay = api
        .call("POST", "/v1/loads", &[])
        .header("idempotency-key", "conformance-1")
        .json(load_body("CA", "NV"))
        .expect(201)
        .await;
    assert_eq!(replay, first);
    api.call("POST", "/v1/loads", &[])
        .header("idempotency-key", "conformance-1")
        .json(load_body("CA", "AZ"))
        .expect(422)
        .await;
    api.call("POST", "/v1/loads", &[])
        .header("idempotency-key", "has space")
        .json(load_body("CA", "AZ"))
        .expect(400)
        .await;
}

/// Carriers: created, a duplicate, refused, listed, read; returns one's id.
pub(super) async fn carriers(api: &Client<'_>) -> String {
    let carrier = api
        .call("POST", "/v1/carriers", &[])
        .json(carrier_body("0424242"))
        .expect(201)
        .await;
    let carrier_id = carrier["data"]["id"].as_str().unwrap().to_owned();
    api.call("POST", "/v1/carriers", &[])
        .json(json!({"name": "Bare Minimum", "mc_number": "77"}))
        .expect(201)
        .await;
    api.call("POST", "/v1/carriers", &[])
        .json(carrier_body("424242"))
        .expect(409)
        .await;
    api.call("POST", "/v1/carriers", &[])
        .json(json!({"name": " ", "mc_number": "MC-", "equipment_types": ["spaceship"]}))
        .expect(400)
        .await;
    api.call("GET", "/v1/carriers", &[]).expect(200).await;
    api.call("GET", "/v1/carriers", &[])
        .query("page=2&limit=1")
        .expect(200)
        .await;
    api.call("GET", "/v1/carriers/{carrier_id}", &[&carrier_id])
        .expect(200)
        .await;
    api.call("GET", "/v1/carriers/{carrier_id}", &[MISSING_CARRIER])
        .expect(404)
        .await;

    carrier_id
}

/// Subscriptions: created, refused, listed, read, changed, tested; returns the
/// id of one that sends to `receiver`.
pub(super) async fn webhooks(api: &Client<'_>, receiver: &Receiver) -> String {
    let hook = api
        .call("POST", "/v1/webhooks", &[])
        .json(json!({
            "url": format!("{}/hook", receiver.base),
            "events": ["load.assigned", "load.status_changed", "tracking.updated", "delivery.completed"],
            "secret": "a-very-secret-shared-key"
        }))
        .expect(201)
        .await;
    let hook_id = hook["data"]["id"].as_str().unwrap().to_owned();
    api.call("POST", "/v1/webhooks", &[])
        .json(json!({"url": "ftp://x", "events": [], "secret": "short"}))
        .expect(400)
        .await;
    api.call("GET", "/v1/webhooks", &[]).expect(200).await;
    api.call("GET", "/v1/webhooks/{id}", &[&hook_id])
        .expect(200)
        .await;
    api.call("GET", "/v1/webhooks/{id}", &[MISSING_WEBHOOK])
        .expect(404)
        .await;
    api.call("PATCH", "/v1/webhooks/{id}", &[&hook_id])
        .json(json!({"events": ["load.assigned", "load.status_changed", "tracking.updated", "delivery.completed", "load.created"]}))
        .expect(200)
        .await;
    api.call("PATCH", "/v1/webhooks/{id}", &[&hook_id])
        .json(json!({"secret": "x"}))
        .expect(400)
        .await;
    api.call("POST", "/v1/webhooks/{id}/test", &[&hook_id])
        .expect(200)
        .await;
    receiver.answer(500);
    api.call("POST", "/v1/webhooks/{id}/test", &[&hook_id])
        .expect(200)
        .await;
    receiver.answer(200);
    api.call("POST", "/v1/webhooks/{id}/test", &[MISSING_WEBHOOK])
        .expect(404)
        .await;

    hook_id
}
