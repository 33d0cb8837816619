//! Loads of many stops end to end: a four-stop trip driven by a device
//! (two pickups, two deliveries, jitter and a sparse stretch), every
//! milestone's signed event naming its stop, the automatic delivery, skips,
//! edits of pending stops and the refusal of a frozen one.

use std::collections::HashSet;
use std::time::Duration;

use chrono::{DateTime, Utc};
use reqwest::StatusCode;
use serde_json::{Value, json};

use crate::devices::{attach, device, ingest};
use crate::helpers::{TestApp, assert_error, error_fields, eventually};
use crate::receiver::verify;
use crate::stops::{PICKUP, assigned_load, fix, iso, once_status, post_fixes, stops};
use crate::webhooks::{SECRET, subscribed_app};

const M_PER_DEG: f64 = 111_195.0;
/// The stops lie every 20 km north of `PICKUP`.
const STEP_M: f64 = 20_000.0;

fn place(index: usize) -> Value {
    json!({
        "city": "Dallas", "state": "TX", "zip": "75201",
        "lat": PICKUP.0 + STEP_M * index as f64 / M_PER_DEG, "lng": PICKUP.1, "radius_m": 400,
    })
}

/// Two pickups then two deliveries, 20 km apart; the second pickup a drop
/// with references and a contact, the last delivery a window.
fn four_stops(start: DateTime<Utc>) -> Value {
    let at = |minutes: i64| iso(start + chrono::Duration::minutes(minutes));
    json!({
        "weight": 42000, "equipment_type": "dry_van",
        "stops": [
            {"type": "pickup", "location": place(0), "appointment": {"start": at(0)}},
            {"type": "pickup", "location": place(1), "appointment": {"start": at(60), "end": at(120)},
             "handling": "drop",
             "references": [{"type": "po", "value": "PO-1"}, {"type": "pickup_number", "value": "PU-9"}],
             "contact": {"name": "Dock 4", "phone": "+1 214-555-0101"}},
            {"type": "delivery", "location": place(2), "planned_dwell_minutes": 45},
            {"type": "delivery", "location": place(3), "appointment": {"start": at(200), "end": at(400)},
             "notes": "Ring at gate"},
        ]
    })
}

/// Where a device is `north_m` metres north of `PICKUP` at `minute`, as
/// OsmAnd sends it (speed in knots).
async fn osmand(
    app: &TestApp,
    token: &str,
    start: DateTime<Utc>,
    minute: i64,
    north_m: f64,
    mph: f64,
) {
    let at = (start + chrono::Duration::minutes(minute)).timestamp();
    let lat = PICKUP.0 + north_m / M_PER_DEG;
    let knots = mph / 1.150_779_448;
    let url = ingest(
        app,
        &format!(
            "osmand?id={token}&lat={lat}&lon={}&timestamp={at}&speed={knots}",
            PICKUP.1
        ),
    );
    let status = app.client.post(&url).send().await.unwrap().status();
    assert_eq!(status, StatusCode::OK, "minute {minute}");
}

/// Stopped at the stop `index` from `minute` for half an hour, jittering
/// at its fence (inside the 600 m departure radius), then gone north.
async fn visit(app: &TestApp, token: &str, start: DateTime<Utc>, index: usize, minute: i64) {
    let centre = STEP_M * index as f64;
    for (m, north, mph) in [
        (0, -3_000.0, 45.0),
        (3, -150.0, 3.0),
        (10, 450.0, 0.0),
        (12, 550.0, 0.0),
        (20, -100.0, 0.0),
        (31, 2_000.0, 40.0),
    ] {
        osmand(app, token, start, minute + m, centre + north, mph).await;
    }
}

async fn settings(app: &TestApp, body: Value) {
    let (status, got) = app.patch("/account/settings", body).await;
    assert_eq!(status, StatusCode::OK, "{got}");
}

#[actix_web::test]
async fn a_four_stop_trip_from_a_device_makes_every_milestone_and_delivers_itself() {
    let (app, receiver) = subscribed_app(&[
        "load.arrived",
        "load.departed",
        "load.stop_skipped",
        "delivery.completed",
    ])
    .await;
    settings(&app, json!({"auto_delivered": true})).await;
    let start = Utc::now() - chrono::Duration::hours(6);
    let (id, created) = assigned_load(&app, four_stops(start), "616161").await;
    // Derived from the first and last stops, as the two-stop fields were.
    assert_eq!(created["pickup_date"], iso(start));
    assert_eq!(
        created["delivery_date"],
        iso(start + chrono::Duration::minutes(200))
    );
    let planned = stops(&app, &id).await;
    let ids: Vec<String> = (0..4)
        .map(|i| planned[i]["id"].as_str().unwrap().to_owned())
        .collect();
    assert!(ids.iter().all(|s| s.starts_with("stop_")), "{planned}");
    assert_eq!(planned[1]["handling"], "drop");
    assert_eq!(planned[1]["references"][1]["value"], "PU-9");
    assert_eq!(planned[1]["contact"]["name"], "Dock 4");
    assert_eq!(planned[2]["planned_dwell_minutes"], 45);
    assert_eq!(
        planned[3]["appointment_end"],
        iso(start + chrono::Duration::minutes(400))
    );
    assert_eq!(
        planned[0]["status"], "en_route",
        "tracked: the first stop is next"
    );
    assert_eq!(planned[1]["status"], "scheduled");

    let (device_id, token, _) = device(&app, "Truck 12").await;
    attach(&app, &id, &device_id).await;
    visit(&app, &token, start, 0, 0).await;
    // Dense driving north to the second pickup.
    for minute in (35..58).step_by(2) {
        osmand(
            &app,
            &token,
            start,
            minute,
            2_000.0 + 800.0 * (minute - 35) as f64,
            30.0,
        )
        .await;
    }
    visit(&app, &token, start, 1, 60).await;
    // While the truck drives on, every stop ahead has an ETA and the
    // driver's clock shows.
    let (_, load) = app.get(&format!("/loads/{id}")).await;
    let data = &load["data"];
    assert!(data["stops"][2]["eta"].is_string(), "{data}");
    assert!(data["stops"][3]["eta"].is_string(), "{data}");
    assert!(data["stops"][0]["eta"].is_null());
    assert_eq!(
        data["tracking"]["eta"], data["stops"][2]["eta"],
        "the next delivery's"
    );
    assert!(
        data["tracking"]["hours_of_service"]["driving_minutes"].is_u64(),
        "{data}"
    );
    assert_eq!(data["tracking"]["eta_basis"], "account_setting");
    // A sparse stretch: one fix 10 km before the third stop, the next 10 km
    // past it an hour later (45 minutes left to stop there).
    osmand(&app, &token, start, 100, 2.0 * STEP_M - 10_000.0, 50.0).await;
    osmand(&app, &token, start, 160, 2.0 * STEP_M + 10_000.0, 50.0).await;
    visit(&app, &token, start, 3, 170).await;

    let delivered = once_status(&app, &id, "delivered").await;
    let history = delivered["data"]["status_history"].as_array().unwrap();
    assert_eq!(history.last().unwrap()["source"], "geofence");
    let after = &delivered["data"]["stops"];
    for (i, stop) in after.as_array().unwrap().iter().enumerate() {
        assert_eq!(stop["status"], "departed", "stop {i}: {stop}");
        assert_eq!(stop["sequence"], i + 1);
    }
    assert_eq!(after[2]["inferred"], true, "the sparse stretch's stop");
    assert_eq!(after[0]["inferred"], false);
    assert!(after[1]["dwell_minutes"].as_i64().unwrap() >= 15, "{after}");

    // Every milestone's signed event names its stop: id, place, type.
    let received = receiver
        .wait_for("8 milestones and the delivery", |r| {
            let ids: HashSet<_> = r.iter().map(|d| d.id.clone()).collect();
            ids.len() >= 9
        })
        .await;
    let mut seen = HashSet::new();
    let mut milestones = Vec::new();
    for delivery in &received {
        verify(SECRET, delivery).unwrap();
        if !seen.insert(delivery.id.clone()) {
            continue;
        }
        let data = &delivery.json["data"];
        match delivery.json["type"].as_str().unwrap() {
            kind @ ("load.arrived" | "load.departed") => {
                let sequence = data["stop_sequence"].as_u64().unwrap() as usize;
                assert_eq!(data["stop_id"], ids[sequence - 1].as_str(), "{data}");
                let kind_of_stop = if sequence <= 2 { "pickup" } else { "delivery" };
                assert_eq!(data["stop"], kind_of_stop, "{data}");
                milestones.push((kind.to_owned(), sequence));
            }
            "delivery.completed" => assert_eq!(data["load"]["status"], "delivered"),
            other => panic!("unexpected {other}: {data}"),
        }
    }
    milestones.sort();
    let mut expected: Vec<(String, usize)> = (1..=4)
        .flat_map(|s| {
            [
                ("load.arrived".to_owned(), s),
                ("load.departed".to_owned(), s),
            ]
        })
        .collect();
    expected.sort();
    assert_eq!(milestones, expected);
}

#[actix_web::test]
async fn stops_are_skipped_reordered_and_frozen_once_reached() {
    let (app, receiver) = subscribed_app(&["load.stop_skipped", "load.updated"]).await;
    let start = Utc::now() - chrono::Duration::hours(6);
    let (id, _) = assigned_load(&app, four_stops(start), "626262").await;
    let planned = stops(&app, &id).await;
    let ids: Vec<String> = (0..4)
        .map(|i| planned[i]["id"].as_str().unwrap().to_owned())
        .collect();
    let stop_body = |i: usize| {
        let mut body = json!({"id": ids[i], "type": planned[i]["type"], "location": place(i)});
        // The arrived-at stop goes back as it is.
        if i == 0 {
            body["appointment"] = json!({"start": iso(start)});
        }
        if i == 3 {
            body["appointment"] = json!({"start": iso(start + chrono::Duration::minutes(300))});
        }
        body
    };
    // Arrived at the first pickup: it is frozen from now on.
    post_fixes(&app, &id, &[fix(start, 0, PICKUP, -40.0, 0.0)]).await;

    // Pending stops reorder; the changed appointment keeps the first one.
    let reordered = json!({"stops": [stop_body(0), stop_body(2), stop_body(1), stop_body(3)]});
    let (status, body) = app.patch(&format!("/loads/{id}"), reordered).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    let now = &body["data"]["stops"];
    assert_eq!(now[1]["id"], ids[2].as_str());
    assert_eq!(now[2]["id"], ids[1].as_str());
    assert_eq!(
        now[3]["appointment"],
        iso(start + chrono::Duration::minutes(300))
    );
    assert_eq!(
        now[3]["original_appointment"]["start"],
        iso(start + chrono::Duration::minutes(200))
    );
    assert_eq!(
        body["data"]["delivery_date"],
        iso(start + chrono::Duration::minutes(300))
    );
    assert_eq!(now[0]["status"], "arrived");
    // Fields not sent are cleared: the list is the stops as they must be.
    assert_eq!(now[2]["references"], json!([]));

    // The frozen stop cannot move, change or go.
    for refused in [
        json!({"stops": [stop_body(1), stop_body(0), stop_body(2), stop_body(3)]}),
        json!({"stops": [stop_body(1), stop_body(2), stop_body(3)]}),
        json!({"stops": [{"id": ids[0], "type": "pickup", "location": place(3)}, stop_body(2), stop_body(3)]}),
    ] {
        let (status, body) = app.patch(&format!("/loads/{id}"), refused).await;
        let error = assert_error(status, &body, 409, "STOP_FROZEN");
        assert_eq!(error["details"]["stop_id"], ids[0].as_str());
    }
    let (status, body) = app
        .post(&format!("/loads/{id}/stops/{}/skip", ids[0]), json!({}))
        .await;
    assert_error(status, &body, 409, "STOP_FROZEN");
    // A stop the load does not have.
    let stranger = json!({"stops": [stop_body(0), {"id": "stop_01jd0000000000000000000000", "type": "delivery", "location": place(2)}, stop_body(3)]});
    let (status, body) = app.patch(&format!("/loads/{id}"), stranger).await;
    assert_eq!(
        assert_error(status, &body, 400, "VALIDATION_FAILED")["details"]["field"],
        "stops[1].id"
    );
    let (status, body) = app
        .post(
            &format!("/loads/{id}/stops/stop_01jd0000000000000000000000/skip"),
            json!({}),
        )
        .await;
    assert_error(status, &body, 404, "INVALID_STOP");

    // Skip the (now) third stop by hand: skipped, its event sent once.
    for _ in 0..2 {
        let (status, body) = app
            .post(&format!("/loads/{id}/stops/{}/skip", ids[1]), json!({}))
            .await;
        assert_eq!(status, StatusCode::OK, "{body}");
        assert_eq!(body["data"]["stops"][2]["status"], "skipped");
    }
    // Off the first pickup, then straight to the last stop, stopping there:
    // the second stop (never reached) is skipped by the truck.
    let last = (PICKUP.0 + 3.0 * STEP_M / M_PER_DEG, PICKUP.1);
    post_fixes(
        &app,
        &id,
        &[
            fix(start, 30, PICKUP, 2_000.0, 40.0),
            fix(start, 40, PICKUP, 15_000.0, 40.0),
            fix(start, 50, PICKUP, 28_000.0, 40.0),
            fix(start, 60, PICKUP, 40_000.0, 40.0),
            fix(start, 70, PICKUP, 52_000.0, 40.0),
            fix(start, 80, last, -100.0, 0.0),
            fix(start, 120, last, 3_000.0, 40.0),
        ],
    )
    .await;
    let after = stops(&app, &id).await;
    let statuses: Vec<&str> = (0..4)
        .map(|i| after[i]["status"].as_str().unwrap())
        .collect();
    assert_eq!(
        statuses,
        ["departed", "skipped", "skipped", "departed"],
        "{after}"
    );
    // Auto-delivered is off by default: the load stays in transit.
    let (_, load) = app.get(&format!("/loads/{id}")).await;
    assert_eq!(load["data"]["status"], "in_transit");

    let received = receiver
        .wait_for("two skips", |r| {
            r.iter()
                .filter(|d| d.json["type"] == "load.stop_skipped")
                .map(|d| d.id.clone())
                .collect::<HashSet<_>>()
                .len()
                >= 2
        })
        .await;
    let mut skips: Vec<(String, String)> = received
        .iter()
        .filter(|d| d.json["type"] == "load.stop_skipped")
        .map(|d| {
            verify(SECRET, d).unwrap();
            let data = &d.json["data"];
            (
                data["stop_id"].as_str().unwrap().to_owned(),
                data["source"].as_str().unwrap().to_owned(),
            )
        })
        .collect::<HashSet<_>>()
        .into_iter()
        .collect();
    skips.sort();
    let mut expected = vec![
        (ids[1].clone(), "api".to_owned()),
        (ids[2].clone(), "geofence".to_owned()),
    ];
    expected.sort();
    assert_eq!(skips, expected);
}

#[actix_web::test]
async fn stops_are_refused_with_the_two_stop_fields_or_out_of_shape() {
    let (app, _receiver) = subscribed_app(&["load.created"]).await;
    let start = Utc::now();
    let mut both = four_stops(start);
    both["origin"] = json!({"city": "Dallas", "state": "TX", "zip": "75201"});
    both["delivery_date"] = json!(iso(start));
    let (status, body) = app.post("/loads", both).await;
    let error = assert_error(status, &body, 400, "VALIDATION_FAILED");
    assert_eq!(error_fields(&error), ["origin", "delivery_date"], "{error}");

    let mut backwards = four_stops(start);
    backwards["stops"][0]["type"] = json!("delivery");
    backwards["stops"][1]["appointment"]["end"] = json!(iso(start - chrono::Duration::hours(1)));
    backwards["stops"][2]["location"]["zip"] = json!("7520");
    backwards["stops"][3]["references"] = json!([{"type": "waybill", "value": "X"}]);
    let (status, body) = app.post("/loads", backwards).await;
    let error = assert_error(status, &body, 400, "VALIDATION_FAILED");
    let fields: HashSet<String> = error_fields(&error).into_iter().collect();
    for field in [
        "stops[1].appointment.end",
        "stops[2].location.zip",
        "stops[3].references[0].type",
    ] {
        assert!(fields.contains(field), "{field} in {error}");
    }
    let mut one = four_stops(start);
    one["stops"] = json!([one["stops"][0]]);
    let (status, body) = app.post("/loads", one).await;
    assert_eq!(
        assert_error(status, &body, 400, "VALIDATION_FAILED")["details"]["field"],
        "stops"
    );
    let mut first_delivers = four_stops(start);
    first_delivers["stops"][0]["type"] = json!("delivery");
    let (status, body) = app.post("/loads", first_delivers).await;
    assert_eq!(
        assert_error(status, &body, 400, "VALIDATION_FAILED")["details"]["field"],
        "stops[0].type"
    );
    // Nothing was made.
    let (_, list) = app.get("/loads").await;
    assert_eq!(list["data"]["total"], 0, "{list}");
}

#[actix_web::test]
async fn once_five_loads_are_delivered_the_eta_drives_at_their_speed() {
    let (app, _receiver) = subscribed_app(&["load.created"]).await;
    let start = Utc::now() - chrono::Duration::hours(5);
    // Five loads Dallas → Atlanta, each with fixes moving at 40 mph, delivered.
    for n in 0..5 {
        let body = crate::helpers::load_body("TX", "GA");
        let (id, _) = assigned_load(&app, body, &format!("70{n:04}")).await;
        let (status, moved) = app
            .patch(
                &format!("/loads/{id}/status"),
                json!({"status": "in_transit"}),
            )
            .await;
        assert_eq!(status, StatusCode::OK, "{moved}");
        let fixes: Vec<Value> = (0..4)
            .map(|m| fix(start, 10 * m, (33.0, -95.0), 10_700.0 * m as f64, 40.0))
            .collect();
        post_fixes(&app, &id, &fixes).await;
        let (status, done) = app
            .patch(
                &format!("/loads/{id}/status"),
                json!({"status": "delivered"}),
            )
            .await;
        assert_eq!(status, StatusCode::OK, "{done}");
    }
    let (id, _) = assigned_load(&app, crate::helpers::load_body("TX", "GA"), "709999").await;
    let next = std::sync::atomic::AtomicI64::new(60);
    let basis = eventually(Duration::from_secs(10), "the lane's own speed", || async {
        let minute = next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        post_fixes(&app, &id, &[fix(start, minute, (33.0, -95.0), 0.0, 55.0)]).await;
        let (_, load) = app.get(&format!("/loads/{id}/tracking")).await;
        let (_, full) = app.get(&format!("/loads/{id}")).await;
        let speed = load["data"]["eta_details"]["assumed_speed_mph"].clone();
        match full["data"]["tracking"]["eta_basis"].as_str() {
            Some("lane_history") => Ok(speed),
            other => Err(format!("{other:?} at {speed}")),
        }
    })
    .await;
    assert_eq!(basis, json!(40.0));
}
