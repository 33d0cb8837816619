//! Devices and what they post, as real apps send it: Traccar Client (7's
//! query, 9's JSON, 10's form), the OsmAnd app, GPSLogger, OwnTracks and
//! Overland, each landing on the loads the device is attached to.

use base64::Engine;
use chrono::{SecondsFormat, Utc};
use reqwest::StatusCode;
use serde_json::{Value, json};

use crate::helpers::{TestApp, assert_error, send, spawn_app};
use crate::tracking::load_in;

/// A new device: its id and token.
pub async fn device(app: &TestApp, name: &str) -> (String, String, Value) {
    let (status, body) = app.post("/devices", json!({"name": name})).await;
    assert_eq!(status, StatusCode::CREATED, "{body}");
    let data = body["data"].clone();
    (
        data["id"].as_str().unwrap().to_owned(),
        data["token"].as_str().unwrap().to_owned(),
        data,
    )
}

pub async fn attach(app: &TestApp, load: &str, device: &str) {
    let (status, body) = send(
        app.client
            .put(app.url(&format!("/loads/{load}/device")))
            .bearer_auth(&app.key)
            .json(&json!({"device_id": device})),
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{body}");
}

/// The load's latest stored position: `lat`, `speed` (mph), `heading`.
async fn latest(app: &TestApp, load: &str) -> Value {
    let (status, body) = app.get(&format!("/loads/{load}/tracking")).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    let data = &body["data"];
    json!({"lat": data["current_location"]["lat"], "speed": data["speed"], "heading": data["heading"]})
}

async fn history_len(app: &TestApp, load: &str) -> usize {
    let (_, body) = app.get(&format!("/loads/{load}/tracking/history")).await;
    body["data"]["points"].as_array().map_or(0, Vec::len)
}

/// Each stored fix's `source`, newest first.
async fn sources(app: &TestApp, load: &str) -> Vec<String> {
    let (_, body) = app.get(&format!("/loads/{load}/tracking/history")).await;
    body["data"]["points"]
        .as_array()
        .expect("points")
        .iter()
        .map(|point| point["source"].as_str().expect("a source").to_owned())
        .collect()
}

pub fn ingest(app: &TestApp, path_and_query: &str) -> String {
    format!(
        "https://localhost:{}/v1/ingest/{path_and_query}",
        app.api_port
    )
}

fn close(a: &Value, b: f64) {
    let a = a.as_f64().unwrap_or_else(|| panic!("a number, not {a}"));
    assert!((a - b).abs() < 1e-3, "{a} != {b}");
}

#[actix_web::test]
async fn devices_are_made_attached_and_revoked_and_tokens_stay_in_their_lane() {
    let app = spawn_app().await;
    let (id, token, created) = device(&app, "Truck 12").await;
    assert!(token.starts_with("frd_"), "{token}");
    assert_eq!(created["last_seen_at"], Value::Null);
    let traccar = &created["ingest"]["traccar_client"];
    assert_eq!(traccar["identifier"], token.as_str());
    assert!(
        traccar["url"]
            .as_str()
            .unwrap()
            .ends_with("/v1/ingest/osmand")
    );
    assert_eq!(created["ingest"]["owntracks"]["password"], token.as_str());

    let load = load_in(&app, "in_transit").await;
    attach(&app, &load, &id).await;
    let (_, shown) = app.get(&format!("/loads/{load}")).await;
    assert_eq!(shown["data"]["device"]["id"], id.as_str(), "{shown}");
    assert_eq!(shown["data"]["device"]["name"], "Truck 12");
    let (_, listed) = app.get("/devices").await;
    assert_eq!(listed["data"]["devices"][0]["loads"], json!([load]));
    assert_eq!(listed["data"]["total"], 1);

    // The device token is refused everywhere but ingest, and an account key at ingest.
    for path in ["/loads", "/devices", "/auth/verify", "/tracking/stream"] {
        let (status, body) = app.get_as(&token, path).await;
        assert_error(status, &body, 401, "DEVICE_TOKEN_NOT_ACCEPTED");
    }
    let (status, body) = app
        .post_as(&token, &format!("/loads/{load}/tracking"), json!({}))
        .await;
    assert_error(status, &body, 401, "DEVICE_TOKEN_NOT_ACCEPTED");
    let (status, body) = send(app.client.get(ingest(
        &app,
        &format!("osmand?id={}&lat=32.7&lon=-96.8", app.key),
    )))
    .await;
    assert_error(status, &body, 401, "INVALID_DEVICE_TOKEN");

    // Another account sees none of it.
    let (_, other) = app.new_account().await;
    let (status, body) = app.get_as(&other, &format!("/devices/{id}")).await;
    assert_error(status, &body, 404, "DEVICE_NOT_FOUND");
    let (status, body) = send(
        app.client
            .put(app.url(&format!("/loads/{load}/device")))
            .bearer_auth(&other)
            .json(&json!({"device_id": id})),
    )
    .await;
    assert_error(status, &body, 404, "INVALID_LOAD");
    // Our device named in their attachment is no device of theirs.
    let their_load = crate::tracking::load_in_as(&app, &other, "posted").await;
    let (status, body) = send(
        app.client
            .put(app.url(&format!("/loads/{their_load}/device")))
            .bearer_auth(&other)
            .json(&json!({"device_id": id})),
    )
    .await;
    let error = assert_error(status, &body, 400, "UNKNOWN_DEVICE");
    assert_eq!(error["details"]["field"], "device_id");

    // Revoked: the token stops working at once; the positions stay.
    let at = Utc::now().timestamp() - 60;
    let url = ingest(
        &app,
        &format!("osmand?id={token}&lat=32.7&lon=-96.8&timestamp={at}"),
    );
    assert_eq!(
        app.client.post(&url).send().await.unwrap().status(),
        StatusCode::OK
    );
    let (status, _) = send(
        app.client
            .delete(app.url(&format!("/devices/{id}")))
            .bearer_auth(&app.key),
    )
    .await;
    assert_eq!(status, StatusCode::OK);
    let (status, body) = send(app.client.post(&url)).await;
    assert_error(status, &body, 401, "INVALID_DEVICE_TOKEN");
    assert_eq!(history_len(&app, &load).await, 1);
    let (_, shown) = app.get(&format!("/loads/{load}")).await;
    assert_eq!(shown["data"]["device"], Value::Null, "{shown}");
}

/// A device token opens nothing but ingest: every route the API serves
/// refuses it (the route table, swept).
#[actix_web::test]
async fn a_device_token_is_refused_on_every_other_route() {
    let app = spawn_app().await;
    let (_, token, _) = device(&app, "Truck 2").await;
    let mut swept = 0;
    for (method, path) in freight::routes::all_routes() {
        if !path.starts_with("/v1/") || path.starts_with("/v1/ingest/") {
            continue;
        }
        if path == "/v1/openapi.json" || path.starts_with("/v1/docs") {
            continue;
        }
        let path = path
            .replace("{load_id}", "load_01jd5ex0k3m2v8q4r6t9w1y3z5")
            .replace("{carrier_id}", "carrier_01jd5ex0k3m2v8q4r6t9w1y3z5")
            .replace("{device_id}", "dev_01jd5ex0k3m2v8q4r6t9w1y3z5")
            .replace("{id}", "wh_01jd5ex0k3m2v8q4r6t9w1y3z5")
            .replace("{delivery_id}", "evt_01jd5ex0k3m2v8q4r6t9w1y3z5");
        let url = format!("https://localhost:{}{path}", app.api_port);
        let request = app
            .client
            .request(reqwest::Method::from_bytes(method.as_bytes()).unwrap(), url)
            .bearer_auth(&token)
            .json(&json!({}));
        let (status, body) = send(request).await;
        assert_error(status, &body, 401, "DEVICE_TOKEN_NOT_ACCEPTED");
        swept += 1;
    }
    assert!(swept >= 25, "the sweep covered the API ({swept} routes)");
    // The dashboard takes no token at all.
    let response = app
        .client
        .get(format!(
            "https://localhost:{}/dashboard/loads",
            app.api_port
        ))
        .bearer_auth(&token)
        .send()
        .await
        .unwrap();
    assert!(
        response.url().path().starts_with("/dashboard/login"),
        "to the sign-in page: {}",
        response.url()
    );
}

#[actix_web::test]
async fn every_traccar_and_osmand_shape_lands_on_the_load() {
    let app = spawn_app().await;
    let (id, token, _) = device(&app, "Truck 7").await;
    let load = load_in(&app, "in_transit").await;
    attach(&app, &load, &id).await;
    let now = Utc::now().timestamp();

    // Traccar Client 7: POST, the query string, an empty body; knots.
    let response = app
        .client
        .post(ingest(&app, &format!(
            "osmand?id={token}&timestamp={}&lat=32.1&lon=-96.1&speed=20&bearing=92&altitude=150&accuracy=5&batt=88",
            now - 500
        )))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), StatusCode::OK);
    assert_eq!(response.text().await.unwrap(), "", "an empty body");
    let position = latest(&app, &load).await;
    close(&position["lat"], 32.1);
    close(&position["speed"], 20.0 * 1.150_779_448);
    close(&position["heading"], 92.0);

    // The OsmAnd app: GET, milliseconds, m/s.
    let url = ingest(
        &app,
        &format!(
            "osmand?id={token}&lat=32.2&lon=-96.2&timestamp={}&hdop=1.2&altitude=150&speed=10&bearing=45&speed_unit=mps",
            (now - 400) * 1000
        ),
    );
    assert_eq!(
        app.client.get(url).send().await.unwrap().status(),
        StatusCode::OK
    );
    let position = latest(&app, &load).await;
    close(&position["lat"], 32.2);
    close(&position["speed"], 10.0 * 2.236_936_292);

    // Traccar Client 10: a form body, the query empty.
    let form = format!(
        "id={token}&lat=32.3&lon=-96.3&timestamp={}&speed=0&bearing=0",
        now - 300
    );
    let status = app
        .client
        .post(ingest(&app, "osmand"))
        .header("content-type", "application/x-www-form-urlencoded")
        .body(form)
        .send()
        .await
        .unwrap()
        .status();
    assert_eq!(status, StatusCode::OK);
    close(&latest(&app, &load).await["lat"], 32.3);

    // Traccar Client 9: JSON, m/s, -1 for unknown.
    let at = chrono::DateTime::from_timestamp(now - 200, 0).unwrap();
    let body = json!({"location": {
        "timestamp": at.to_rfc3339_opts(SecondsFormat::Millis, true),
        "coords": {"latitude": 32.4, "longitude": -96.4, "speed": -1, "heading": -1, "accuracy": 8, "altitude": 140},
        "battery": {"level": 0.81, "is_charging": false}, "is_moving": true
    }, "device_id": token});
    let status = app
        .client
        .post(ingest(&app, "osmand"))
        .json(&body)
        .send()
        .await
        .unwrap()
        .status();
    assert_eq!(status, StatusCode::OK);
    let position = latest(&app, &load).await;
    close(&position["lat"], 32.4);
    assert_eq!(position["speed"], Value::Null, "unknown speed: {position}");

    // GPSLogger: ISO time, m/s.
    let at = chrono::DateTime::from_timestamp(now - 100, 0).unwrap();
    let url = ingest(
        &app,
        &format!(
            "osmand?id={token}&lat=32.5&lon=-96.5&timestamp={}&speed=5&bearing=180&accuracy=4&batt=50&speed_unit=mps",
            at.to_rfc3339_opts(SecondsFormat::Secs, true)
        ),
    );
    assert_eq!(
        app.client.get(url).send().await.unwrap().status(),
        StatusCode::OK
    );
    close(&latest(&app, &load).await["lat"], 32.5);
    assert_eq!(history_len(&app, &load).await, 5);

    // A repeat is taken (200) and stored once; a heartbeat only moves last_seen_at.
    let url = ingest(
        &app,
        &format!(
            "osmand?id={token}&lat=32.5&lon=-96.5&timestamp={}",
            now - 100
        ),
    );
    assert_eq!(
        app.client.get(&url).send().await.unwrap().status(),
        StatusCode::OK
    );
    let heartbeat = ingest(&app, &format!("osmand?id={token}&batt=40"));
    assert_eq!(
        app.client.get(heartbeat).send().await.unwrap().status(),
        StatusCode::OK
    );
    assert_eq!(history_len(&app, &load).await, 5);
    let (_, shown) = app.get(&format!("/devices/{id}")).await;
    assert!(shown["data"]["last_seen_at"].is_string(), "{shown}");

    // Refusals, in the envelope, change nothing.
    for (query, status) in [
        (format!("osmand?id={token}&lat=95&lon=-96.5"), 400),
        (
            format!("osmand?id={token}&lat=32&lon=-96.5&timestamp=yesterday"),
            400,
        ),
        ("osmand?lat=32&lon=-96.5".to_owned(), 401),
        ("osmand?id=frd_nonsense&lat=32&lon=-96.5".to_owned(), 401),
    ] {
        let (got, body) = send(app.client.get(ingest(&app, &query))).await;
        assert_eq!(got.as_u16(), status, "{query}: {body}");
        assert_eq!(body["success"], false);
    }
    assert_eq!(
        sources(&app, &load).await,
        ["osmand", "traccar", "osmand", "osmand", "osmand"],
        "each stored fix records the protocol it came by"
    );
}

#[actix_web::test]
async fn owntracks_and_overland_land_on_the_load_with_their_answers() {
    let app = spawn_app().await;
    let (id, token, _) = device(&app, "Phone").await;
    let load = load_in(&app, "assigned").await;
    attach(&app, &load, &id).await;
    let now = Utc::now().timestamp();

    // OwnTracks: Basic auth, any user and the token as password, or the token as user.
    let basic = |user: &str, password: &str| {
        format!(
            "Basic {}",
            base64::engine::general_purpose::STANDARD.encode(format!("{user}:{password}"))
        )
    };
    let location = json!({"_type": "location", "lat": 33.1, "lon": -97.1, "tst": now - 90, "vel": 100, "cog": 270, "acc": 10, "batt": 77});
    for authorization in [basic("driver", &token), basic(&token, "")] {
        let response = app
            .client
            .post(ingest(&app, "owntracks"))
            .header("authorization", authorization)
            .json(&location)
            .send()
            .await
            .unwrap();
        assert_eq!(response.status(), StatusCode::OK);
        assert_eq!(response.json::<Value>().await.unwrap(), json!([]));
    }
    let position = latest(&app, &load).await;
    close(&position["lat"], 33.1);
    close(&position["speed"], 100.0 * 0.621_371_192);
    assert_eq!(
        history_len(&app, &load).await,
        1,
        "the second was a duplicate"
    );
    // Other message types and empty bodies store nothing.
    for body in [
        json!({"_type": "transition", "event": "enter"}).to_string(),
        String::new(),
    ] {
        let response = app
            .client
            .post(ingest(&app, "owntracks"))
            .header("authorization", basic("driver", &token))
            .header("content-type", "application/json")
            .body(body)
            .send()
            .await
            .unwrap();
        assert_eq!(response.status(), StatusCode::OK);
    }
    let (status, body) = send(
        app.client
            .post(ingest(&app, "owntracks"))
            .header("authorization", basic("driver", "wrong"))
            .json(&location),
    )
    .await;
    assert_error(status, &body, 401, "INVALID_DEVICE_TOKEN");

    // Overland: a batch with one location the rules refuse, skipped.
    let feature = |lat: f64, seconds_ago: i64, speed: f64| {
        let at = chrono::DateTime::from_timestamp(now - seconds_ago, 0).unwrap();
        json!({"type": "Feature", "geometry": {"type": "Point", "coordinates": [-97.2, lat]},
               "properties": {"timestamp": at.to_rfc3339_opts(SecondsFormat::Secs, true),
                              "speed": speed, "course": 90, "horizontal_accuracy": 5, "battery_level": 0.5}})
    };
    let batch = json!({"locations": [feature(33.2, 60, 10.0), feature(33.3, 30, 500.0), feature(33.4, 20, 12.0)]});
    let response = app
        .client
        .post(ingest(&app, &format!("overland?token={token}")))
        .json(&batch)
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), StatusCode::OK);
    assert_eq!(
        response.json::<Value>().await.unwrap(),
        json!({"result": "ok"})
    );
    let position = latest(&app, &load).await;
    close(&position["lat"], 33.4);
    assert_eq!(
        history_len(&app, &load).await,
        3,
        "the 500 m/s location was skipped"
    );
    let (status, _) = send(
        app.client
            .post(ingest(&app, "overland"))
            .bearer_auth(&token)
            .json(&json!({"locations": [feature(33.5, 10, 1.0)]})),
    )
    .await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(
        sources(&app, &load).await,
        ["overland", "overland", "overland", "owntracks"]
    );
}

#[actix_web::test]
async fn a_device_feeds_every_attached_load_that_takes_fixes() {
    let app = spawn_app().await;
    let (id, token, _) = device(&app, "Truck 9").await;
    let (first, second, done) = (
        load_in(&app, "in_transit").await,
        load_in(&app, "assigned").await,
        load_in(&app, "delivered").await,
    );
    for load in [&first, &second, &done] {
        attach(&app, load, &id).await;
    }
    let at = Utc::now().timestamp() - 30;
    let url = ingest(
        &app,
        &format!("osmand?id={token}&lat=34.1&lon=-98.1&timestamp={at}"),
    );
    assert_eq!(
        app.client.post(&url).send().await.unwrap().status(),
        StatusCode::OK
    );
    assert_eq!(history_len(&app, &first).await, 1);
    assert_eq!(history_len(&app, &second).await, 1);
    assert_eq!(
        history_len(&app, &done).await,
        0,
        "a delivered load takes no fixes"
    );

    // Detached, or attached nowhere: taken (200), not stored.
    for load in [&first, &second, &done] {
        let (status, _) = send(
            app.client
                .delete(app.url(&format!("/loads/{load}/device")))
                .bearer_auth(&app.key),
        )
        .await;
        assert_eq!(status, StatusCode::OK);
    }
    let url = ingest(
        &app,
        &format!("osmand?id={token}&lat=34.2&lon=-98.2&timestamp={}", at + 10),
    );
    assert_eq!(
        app.client.post(&url).send().await.unwrap().status(),
        StatusCode::OK
    );
    assert_eq!(history_len(&app, &first).await, 1);

    // A load has one device: attaching another replaces it.
    let (other, other_token, _) = device(&app, "Truck 10").await;
    attach(&app, &first, &id).await;
    attach(&app, &first, &other).await;
    let url = ingest(
        &app,
        &format!("osmand?id={token}&lat=34.3&lon=-98.3&timestamp={}", at + 20),
    );
    app.client.post(&url).send().await.unwrap();
    assert_eq!(
        history_len(&app, &first).await,
        1,
        "the first device no longer feeds it"
    );
    let url = ingest(
        &app,
        &format!(
            "osmand?id={other_token}&lat=34.4&lon=-98.4&timestamp={}",
            at + 25
        ),
    );
    app.client.post(&url).send().await.unwrap();
    assert_eq!(history_len(&app, &first).await, 2);
}
