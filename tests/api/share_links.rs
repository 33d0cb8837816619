//! Share links: made, listed and revoked through the API; their public page
//! and JSON show the shipment and nothing of the account; revoked and
//! expired links answer 410; other accounts cannot touch them.

use reqwest::StatusCode;
use serde_json::{Value, json};

use crate::helpers::{TestApp, assert_error, send, spawn_app};
use crate::tracking::load_in;

/// The path of a link's URL (the test's client talks to the server itself).
fn path_of(url: &str) -> String {
    let at = url.find("/track/").expect("a /track/ URL");
    url[at..].to_owned()
}

async fn public(app: &TestApp, path: &str) -> reqwest::Response {
    app.client
        .get(format!("{}{path}", app.base.trim_end_matches("/v1")))
        .send()
        .await
        .unwrap()
}

#[actix_web::test]
async fn a_share_link_shows_the_shipment_and_nothing_else_until_revoked_or_expired() {
    let app = spawn_app().await;
    let load = load_in(&app, "in_transit").await;
    let (status, fix) = app
        .post(
            &format!("/loads/{load}/tracking"),
            json!({"lat": 33.0, "lng": -95.6, "timestamp": chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Secs, true), "speed": 61.0}),
        )
        .await;
    assert!(status.is_success(), "{fix}");

    let (status, created) = app
        .post(&format!("/loads/{load}/share-links"), json!({}))
        .await;
    assert_eq!(status, StatusCode::CREATED, "{created}");
    let link = &created["data"];
    assert!(link["id"].as_str().unwrap().starts_with("shl_"));
    let url = link["url"].as_str().unwrap();
    assert!(
        url.starts_with("https://") && url.contains("/track/"),
        "{url}"
    );
    let page = path_of(url);

    // The JSON: the route, status, position and stops; no carrier, rate,
    // notes, weight, or any id.
    let response = public(&app, &format!("{page}.json")).await;
    assert_eq!(response.status(), StatusCode::OK);
    assert_eq!(response.headers()["referrer-policy"], "no-referrer");
    assert!(
        response.headers()["x-robots-tag"]
            .to_str()
            .unwrap()
            .contains("noindex")
    );
    let data: Value = response.json().await.unwrap();
    assert_eq!(data["status"], "in_transit");
    assert_eq!(data["origin"], json!({"city": "Dallas", "state": "TX"}));
    assert_eq!(data["position"]["lat"], 33.0);
    assert!(data["eta"].is_string(), "{data}");
    assert_eq!(data["stops"].as_array().map(Vec::len), Some(2));
    let text = data.to_string();
    for secret in [
        load.as_str(),
        "carrier",
        "rate",
        "notes",
        "weight",
        "acct_",
        "Lone Star",
        "dispatch@",
        "account",
    ] {
        assert!(!text.contains(secret), "{secret} shows: {text}");
    }
    // The page: HTML with the same facts, under the dashboard's CSP.
    let response = public(&app, &page).await;
    assert_eq!(response.status(), StatusCode::OK);
    assert!(
        response.headers()["content-security-policy"]
            .to_str()
            .unwrap()
            .contains("default-src 'self'")
    );
    let html = response.text().await.unwrap();
    assert!(html.contains("Dallas, TX → Atlanta, GA"), "{html}");
    assert!(html.contains("noindex"));
    assert!(!html.contains(&load), "the load id shows");

    // Listed (without its URL); another account can neither list nor revoke it.
    let (_, listed) = app.get(&format!("/loads/{load}/share-links")).await;
    assert_eq!(listed["data"]["share_links"][0]["id"], link["id"]);
    assert_eq!(listed["data"]["share_links"][0]["active"], true);
    assert!(listed["data"]["share_links"][0].get("url").is_none());
    let (_, other) = app.new_account().await;
    let (status, body) = app
        .get_as(&other, &format!("/loads/{load}/share-links"))
        .await;
    assert_error(status, &body, 404, "INVALID_LOAD");
    let revoke = format!("/loads/{load}/share-links/{}", link["id"].as_str().unwrap());
    let (status, body) = send(app.client.delete(app.url(&revoke)).bearer_auth(&other)).await;
    assert_error(status, &body, 404, "INVALID_LOAD");
    assert_eq!(
        public(&app, &format!("{page}.json")).await.status(),
        StatusCode::OK
    );

    // Revoked: 410 at once, page and JSON.
    let (status, body) = send(app.client.delete(app.url(&revoke)).bearer_auth(&app.key)).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(body["data"]["revoked"], true);
    assert_eq!(
        public(&app, &format!("{page}.json")).await.status(),
        StatusCode::GONE
    );
    let gone = public(&app, &page).await;
    assert_eq!(gone.status(), StatusCode::GONE);
    assert!(gone.text().await.unwrap().contains("revoked"));

    // Expired: 410 once its time is past.
    let soon = (app.clock.now() + chrono::Duration::hours(1))
        .to_rfc3339_opts(chrono::SecondsFormat::Secs, true);
    let (status, created) = app
        .post(
            &format!("/loads/{load}/share-links"),
            json!({"expires_at": soon}),
        )
        .await;
    assert_eq!(status, StatusCode::CREATED, "{created}");
    let page = path_of(created["data"]["url"].as_str().unwrap());
    assert_eq!(
        public(&app, &format!("{page}.json")).await.status(),
        StatusCode::OK
    );
    app.clock.advance(chrono::Duration::minutes(61));
    assert_eq!(
        public(&app, &format!("{page}.json")).await.status(),
        StatusCode::GONE
    );

    // Unknown tokens are 404; bad expiries are 400 and make nothing.
    assert_eq!(
        public(&app, &format!("/track/{}.json", "0".repeat(64)))
            .await
            .status(),
        StatusCode::NOT_FOUND
    );
    for expires_at in ["yesterday", "2020-01-01T00:00:00Z", "2099-01-01T00:00:00Z"] {
        let (status, body) = app
            .post(
                &format!("/loads/{load}/share-links"),
                json!({"expires_at": expires_at}),
            )
            .await;
        assert_error(status, &body, 400, "VALIDATION_FAILED");
    }
    let (_, listed) = app.get(&format!("/loads/{load}/share-links")).await;
    assert_eq!(
        listed["data"]["share_links"].as_array().map(Vec::len),
        Some(2)
    );
}

/// Once the truck has arrived at the delivery, the load's tracking and its
/// public page stop estimating: no ETA, no late risk, but when it arrived in
/// the stop's local time and how late; the ETA aimed at the delivery's own
/// coordinates, and says so; public stop positions are rounded.
#[actix_web::test]
async fn after_arrival_the_page_says_when_and_how_late_instead_of_an_eta() {
    use chrono::{Duration, SecondsFormat};
    let app = spawn_app().await;
    let iso = |at: chrono::DateTime<chrono::Utc>| at.to_rfc3339_opts(SecondsFormat::Secs, true);
    let start = app.clock.now() - Duration::hours(3);
    let appointment = start + Duration::minutes(90);
    let delivery = (33.748_123, -84.387_456);
    let mut body = crate::helpers::load_body("TX", "GA");
    body["destination"]["lat"] = json!(delivery.0);
    body["destination"]["lng"] = json!(delivery.1);
    body["destination"]["radius_m"] = json!(400);
    body["delivery_date"] = json!(iso(appointment));
    let load = app.create_load(body).await;
    let id = load["id"].as_str().unwrap().to_owned();
    let carrier = app.create_carrier("616161").await;
    let (status, moved) = app
        .patch(
            &format!("/loads/{id}/status"),
            json!({"status": "assigned", "carrier_id": carrier["id"]}),
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{moved}");
    let fix = |minute: i64, south_m: f64, mph: f64| {
        json!({"lat": delivery.0 - south_m / 111_195.0, "lng": delivery.1,
            "timestamp": iso(start + Duration::minutes(minute)), "speed": mph})
    };

    // Far out, past the appointment already: at risk, aiming at the coordinates.
    let (status, body) = app
        .post(&format!("/loads/{id}/tracking"), fix(0, 300_000.0, 60.0))
        .await;
    assert!(status.is_success(), "{body}");
    let (_, tracking) = app.get(&format!("/loads/{id}/tracking")).await;
    let method = tracking["data"]["eta_details"]["method"].as_str().unwrap();
    assert!(method.contains("delivery's own coordinates"), "{method}");
    let (_, got) = app.get(&format!("/loads/{id}")).await;
    assert_eq!(got["data"]["tracking"]["late_risk"], true, "{got}");
    let (status, created) = app
        .post(&format!("/loads/{id}/share-links"), json!({}))
        .await;
    assert_eq!(status, StatusCode::CREATED, "{created}");
    let page = path_of(created["data"]["url"].as_str().unwrap());

    // Arrived 30 minutes after the appointment.
    for (minute, south_m, mph) in [(110, 9_000.0, 55.0), (120, 200.0, 2.0)] {
        let (status, body) = app
            .post(&format!("/loads/{id}/tracking"), fix(minute, south_m, mph))
            .await;
        assert!(status.is_success(), "{body}");
    }
    let (_, got) = app.get(&format!("/loads/{id}")).await;
    assert_eq!(got["data"]["tracking"]["late_risk"], false, "{got}");
    assert_eq!(got["data"]["tracking"]["eta"], Value::Null, "{got}");

    let data: Value = public(&app, &format!("{page}.json"))
        .await
        .json()
        .await
        .unwrap();
    assert_eq!(data["eta"], Value::Null, "{data}");
    assert_eq!(data["late_risk"], false);
    let arrival = data["arrival"].as_str().unwrap();
    assert!(
        arrival.starts_with("Arrived ") && arrival.ends_with("(30 min late)"),
        "{arrival}"
    );
    assert!(
        arrival.contains(" EST ") || arrival.contains(" EDT "),
        "Atlanta's time: {arrival}"
    );
    let stop = &data["stops"][1];
    assert_eq!(stop["arrival_status"], "late");
    assert_eq!(stop["deviation_minutes"], 30);
    assert_eq!(stop["lat"], 33.75, "rounded to about a kilometre: {stop}");
    assert_eq!(stop["lng"], -84.39);

    let html = public(&app, &page).await.text().await.unwrap();
    assert!(html.contains(arrival), "{html}");
    assert!(!html.contains("Estimated arrival"), "{html}");
    assert!(!html.contains("At risk of arriving late"), "{html}");
}

#[actix_web::test]
async fn a_share_link_needs_no_body() {
    let app = spawn_app().await;
    let load = app.create_load(crate::helpers::load_body("TX", "GA")).await;
    let load = load["id"].as_str().unwrap();
    // Every field is optional, so no body at all is `{}`; a body that is
    // sent must still be JSON.
    let path = format!("/loads/{load}/share-links");
    let (status, bare) = send(
        app.client
            .post(app.url(&path))
            .bearer_auth(&app.key)
            .header("content-length", "0"),
    )
    .await;
    assert_eq!(status, StatusCode::CREATED, "{bare}");
    let (status, refused) = send(
        app.client
            .post(app.url(&path))
            .bearer_auth(&app.key)
            .body("expires_at=tomorrow"),
    )
    .await;
    assert_error(status, &refused, 415, "UNSUPPORTED_MEDIA_TYPE");
    assert!(
        bare["data"]["url"].as_str().unwrap().contains("/track/"),
        "{bare}"
    );
}

/// A load of three stops: the public JSON and page show every stop's city,
/// state, window, status and ETA, in order, and none of the stops'
/// references, contacts or notes.
#[actix_web::test]
async fn a_share_link_shows_every_stop_and_none_of_their_references_or_contacts() {
    use chrono::{Duration, SecondsFormat};
    let app = spawn_app().await;
    let now = app.clock.now();
    let iso = |at: chrono::DateTime<chrono::Utc>| at.to_rfc3339_opts(SecondsFormat::Secs, true);
    let secrets = json!({
        "references": [{"type": "po", "value": "PO-SECRET-881"}],
        "contact": {"name": "Dock Sam", "phone": "+1 901-555-0199", "email": "dock@shipper.example"},
        "notes": "Gate code 4411",
    });
    let stop = |kind: &str, city: &str, state: &str, zip: &str, at: (f64, f64), hours: i64| {
        let mut stop = json!({"type": kind,
            "location": {"city": city, "state": state, "zip": zip, "lat": at.0, "lng": at.1},
            "appointment": {"start": iso(now + Duration::hours(hours)),
                "end": iso(now + Duration::hours(hours + 3))}});
        stop.as_object_mut()
            .unwrap()
            .extend(secrets.as_object().unwrap().clone());
        stop
    };
    let body = json!({
        "weight": 42000, "equipment_type": "dry_van",
        "stops": [
            stop("pickup", "Dallas", "TX", "75201", (32.7767, -96.797), 1),
            stop("delivery", "Memphis", "TN", "38103", (35.1495, -90.049), 10),
            stop("delivery", "Atlanta", "GA", "30301", (33.749, -84.388), 20),
        ]
    });
    let load = app.create_load(body).await;
    let id = load["id"].as_str().unwrap().to_owned();
    let carrier = app.create_carrier("727272").await;
    let (status, moved) = app
        .patch(
            &format!("/loads/{id}/status"),
            json!({"status": "assigned", "carrier_id": carrier["id"]}),
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{moved}");
    let fix = json!({"lat": 32.78, "lng": -97.4, "speed": 58.0, "timestamp": iso(now)});
    let (status, body) = app.post(&format!("/loads/{id}/tracking"), fix).await;
    assert!(status.is_success(), "{body}");
    let (status, created) = app
        .post(&format!("/loads/{id}/share-links"), json!({}))
        .await;
    assert_eq!(status, StatusCode::CREATED, "{created}");
    let page = path_of(created["data"]["url"].as_str().unwrap());

    let data: Value = public(&app, &format!("{page}.json"))
        .await
        .json()
        .await
        .unwrap();
    let stops = data["stops"].as_array().expect("stops");
    assert_eq!(stops.len(), 3, "{data}");
    let expected = [
        (1, "pickup", "Dallas", "TX", "en_route"),
        (2, "delivery", "Memphis", "TN", "scheduled"),
        (3, "delivery", "Atlanta", "GA", "scheduled"),
    ];
    for (stop, (sequence, kind, city, state, status)) in stops.iter().zip(expected) {
        assert_eq!(stop["sequence"], sequence, "{stop}");
        assert_eq!(stop["type"], kind);
        assert_eq!(stop["place"], json!({"city": city, "state": state}));
        assert_eq!(stop["status"], status);
        assert!(stop["appointment"].is_string() && stop["appointment_end"].is_string());
        assert!(
            stop["eta"].is_string(),
            "every stop ahead has an ETA: {stop}"
        );
    }
    let text = data.to_string();
    for secret in [
        "PO-SECRET-881",
        "Dock Sam",
        "555-0199",
        "dock@shipper",
        "Gate code",
        "references",
        "contact",
        "75201",
    ] {
        assert!(!text.contains(secret), "{secret} shows: {text}");
    }

    let html = public(&app, &page).await.text().await.unwrap();
    for shown in [
        "1.</span>Pickup: Dallas, TX",
        "2.</span>Delivery: Memphis, TN",
        "3.</span>Delivery: Atlanta, GA",
        "data-field=\"stop-2-eta\"",
        "data-field=\"stop-3-status\">scheduled<",
        ">Window<",
    ] {
        assert!(html.contains(shown), "{shown}: {html}");
    }
    for secret in [
        "PO-SECRET-881",
        "Dock Sam",
        "555-0199",
        "dock@shipper",
        "Gate code",
    ] {
        assert!(!html.contains(secret), "{secret} shows on the page");
    }
}
