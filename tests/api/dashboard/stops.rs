//! Loads of many stops in the dashboard: made with the new-load form (its
//! errors beside the stop's fields), listed on the load's page with their
//! ETAs and the hours-of-service clock, and named on the board.

use chrono::{DateTime, Duration, SecondsFormat, Utc};
use serde_json::{Value, json};

use super::*;

fn iso(at: DateTime<Utc>) -> String {
    at.to_rfc3339_opts(SecondsFormat::Secs, true)
}

/// The form's fields of a load from Dallas by Memphis (a drop pickup with a
/// window and references) to Atlanta; an empty row between is left out.
const THREE_STOPS: [(&str, &str); 20] = [
    ("origin.city", "Dallas"),
    ("origin.state", "TX"),
    ("origin.zip", "75201"),
    ("pickup_date", "2030-01-02T08:00"),
    ("origin.references", "po:PO-100"),
    ("stop_2.type", "delivery"),
    ("stop_2.handling", "live"),
    ("stop_3.type", "pickup"),
    ("stop_3.city", "Memphis"),
    ("stop_3.state", "TN"),
    ("stop_3.zip", "38103"),
    ("stop_3.window_start", "2030-01-03T08:00"),
    ("stop_3.window_end", "2030-01-03T12:00"),
    ("stop_3.handling", "drop"),
    ("stop_3.references", "bol:BOL-7, pickup number:PU-9"),
    ("destination.city", "Atlanta"),
    ("destination.state", "GA"),
    ("destination.zip", "30301"),
    ("weight", "42000"),
    ("equipment_type", "dry_van"),
];

#[actix_web::test]
async fn a_three_stop_load_made_with_the_form_reads_back_through_the_api() {
    let app = spawn_app().await;
    let mut browser = Browser::new(&app);
    browser.register("stops@example.com").await;
    let key = browser.generate_key().await;
    let form = browser.get("/dashboard/loads/new").await;
    // Rows for the stops between, and the script that adds and removes them.
    for shown in [
        "name=\"stop_2.city\"",
        "name=\"stop_5.references\"",
        "data-stop-row=\"2\"",
        "/dashboard/assets/load_form.js",
    ] {
        assert!(form.body.contains(shown), "{shown}: {}", form.body);
    }
    let created = browser
        .post_from("/dashboard/loads/new", "/dashboard/loads", &THREE_STOPS)
        .await;
    assert_eq!(created.status, StatusCode::SEE_OTHER, "{}", created.body);
    let id = created
        .location
        .unwrap()
        .strip_prefix("/dashboard/loads/")
        .unwrap()
        .to_owned();

    let (status, body) = app.get_as(&key, &format!("/loads/{id}")).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    let load = &body["data"];
    let stops = load["stops"].as_array().expect("stops");
    let cities: Vec<&str> = stops
        .iter()
        .map(|s| s["location"]["city"].as_str().unwrap())
        .collect();
    assert_eq!(cities, ["Dallas", "Memphis", "Atlanta"], "{load}");
    let types: Vec<&str> = stops.iter().map(|s| s["type"].as_str().unwrap()).collect();
    assert_eq!(types, ["pickup", "pickup", "delivery"]);
    assert_eq!(load["pickup_date"], "2030-01-02T08:00:00Z");
    assert_eq!(
        stops[0]["references"],
        json!([{"type": "po", "value": "PO-100"}])
    );
    assert_eq!(stops[1]["appointment"], "2030-01-03T08:00:00Z");
    assert_eq!(stops[1]["appointment_end"], "2030-01-03T12:00:00Z");
    assert_eq!(stops[1]["handling"], "drop");
    assert_eq!(
        stops[1]["references"],
        json!([{"type": "bol", "value": "BOL-7"}, {"type": "pickup_number", "value": "PU-9"}])
    );
    assert_eq!(stops[2]["location"]["state"], "GA");
    assert_eq!(stops[2]["handling"], "live");
}

#[actix_web::test]
async fn a_stop_fields_error_is_shown_beside_it() {
    let app = spawn_app().await;
    let mut browser = Browser::new(&app);
    browser.register("typo@example.com").await;
    let mut fields: Vec<(&str, &str)> = THREE_STOPS
        .iter()
        .copied()
        .filter(|(name, _)| !matches!(*name, "stop_3.zip" | "origin.references"))
        .collect();
    fields.extend([
        ("stop_3.zip", "3810"),
        ("origin.references", "xx:1"),
        ("destination.window_end", "2030-01-01T08:00"),
        ("delivery_date", "2030-01-04T08:00"),
    ]);
    let refused = browser
        .post_from("/dashboard/loads/new", "/dashboard/loads", &fields)
        .await;
    assert_eq!(refused.status, StatusCode::BAD_REQUEST, "{}", refused.body);
    let body = &refused.body;
    // The API's `stops[1].location.zip` is the row the user typed it in.
    for (id, name) in [
        ("f-stop_3-zip", "Stop 3 zip"),
        ("f-origin-references", "Origin references"),
        ("f-destination-window_end", "Destination window end"),
    ] {
        assert!(
            body.contains(&format!("<a href=\"#{id}\">{name}</a>")),
            "{name}: {body}"
        );
        assert!(
            body.contains(&format!("aria-describedby=\"{id}-error\"")),
            "{id} is not marked: {body}"
        );
        assert!(body.contains(&format!("id=\"{id}-error\"")), "{id}: {body}");
    }
    let zip_error = &body[body.find("id=\"f-stop_3-zip-error\"").unwrap()..];
    assert!(zip_error[..200].contains("5 digits"), "{zip_error}");
    assert!(body.contains("reference 1 (type) must be one of"), "{body}");
    assert!(body.contains("must not be before start"), "{body}");
    // What was typed is kept.
    assert!(body.contains("value=\"Memphis\""), "{body}");
    assert!(body.contains("value=\"3810\""));
    // Nothing was made.
    let list = browser.get("/dashboard/loads").await;
    assert!(!list.body.contains("Memphis"), "{}", list.body);
}

/// A load of three placed stops, assigned, its truck 60 km west of Dallas
/// heading east: its id.
async fn tracked_three_stops(app: &TestApp, key: &str) -> String {
    let now = app.clock.now();
    let body = json!({
        "weight": 42000, "equipment_type": "dry_van",
        "stops": [
            {"type": "pickup", "location": {"city": "Dallas", "state": "TX", "zip": "75201",
              "lat": 32.7767, "lng": -96.797}, "appointment": {"start": iso(now + Duration::hours(1))}},
            {"type": "pickup", "location": {"city": "Memphis", "state": "TN", "zip": "38103",
              "lat": 35.1495, "lng": -90.049},
             "appointment": {"start": iso(now + Duration::hours(10)), "end": iso(now + Duration::hours(14))},
             "handling": "drop", "references": [{"type": "po", "value": "PO-4471"}]},
            {"type": "delivery", "location": {"city": "Atlanta", "state": "GA", "zip": "30301",
              "lat": 33.749, "lng": -84.388}, "appointment": {"start": iso(now + Duration::hours(20))}},
        ]
    });
    let (status, load) = app.post_as(key, "/loads", body).await;
    assert_eq!(status, StatusCode::CREATED, "{load}");
    let id = load["data"]["id"].as_str().unwrap().to_owned();
    let (status, carrier) = app
        .post_as(key, "/carriers", crate::helpers::carrier_body("515151"))
        .await;
    assert_eq!(status, StatusCode::CREATED, "{carrier}");
    let (status, moved) = app
        .patch_as(
            key,
            &format!("/loads/{id}/status"),
            json!({"status": "assigned", "carrier_id": carrier["data"]["id"]}),
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{moved}");
    for (minutes, lng) in [(-20, -97.6), (-10, -97.5), (0, -97.4)] {
        let fix = json!({"lat": 32.78, "lng": lng, "speed": 58.0, "heading": 90.0,
            "timestamp": iso(now + Duration::minutes(minutes))});
        let (status, body) = app
            .post_as(key, &format!("/loads/{id}/tracking"), fix)
            .await;
        assert!(status.is_success(), "{body}");
    }
    id
}

#[actix_web::test]
async fn the_load_page_lists_every_stop_and_the_board_names_the_next() {
    let app = spawn_app().await;
    let mut browser = Browser::new(&app);
    browser.register("timeline@example.com").await;
    let key = browser.generate_key().await;
    let id = tracked_three_stops(&app, &key).await;

    let page = browser.get(&format!("/dashboard/loads/{id}")).await;
    assert_eq!(page.status, StatusCode::OK, "{}", page.body);
    let start = page.body.find("id=\"stops\"").expect("a stops card");
    let card = &page.body[start..start + page.body[start..].find("</section>").unwrap()];
    assert_eq!(card.matches("<li data-stop=").count(), 3, "{card}");
    for (sequence, shown) in [
        (1, "Pickup: Dallas, TX"),
        (2, "Pickup: Memphis, TN"),
        (3, "Delivery: Atlanta, GA"),
    ] {
        assert!(
            card.contains(&format!("<span class=\"seq\">{sequence}.</span>{shown}")),
            "{shown}: {card}"
        );
    }
    // The first stop is next; every stop ahead has an ETA; a window shows whole.
    assert!(card.contains("data-status=\"en_route\""), "{card}");
    assert_eq!(card.matches("data-field=\"eta\"").count(), 3, "{card}");
    assert!(card.contains(">Window<"), "{card}");
    assert!(card.contains("PO-4471"), "the account sees its references");
    for shown in ["Dwell", "Detention", "drop"] {
        assert!(card.contains(shown), "{shown}: {card}");
    }
    // The driver's clock, said to be inferred.
    let hos = &page.body[page
        .body
        .find("id=\"hours-of-service\"")
        .expect("the HOS clock")..];
    for shown in [
        "Inferred from GPS, not from an ELD",
        "data-field=\"hos-driving\"",
        "data-field=\"hos-window\"",
        "data-field=\"hos-since-break\"",
        "data-field=\"hos-next-rest\"",
        " of 11 h 00 min",
    ] {
        assert!(hos.contains(shown), "{shown}: {hos}");
    }
    assert!(page.body.contains("(3 stops)"), "the route says how many");

    // The board's list names the next stop and its ETA.
    let board = browser.get("/dashboard/board/loads.json").await;
    assert_eq!(board.status, StatusCode::OK, "{}", board.body);
    let board: Value = serde_json::from_str(&board.body).unwrap();
    let entry = &board["loads"][0];
    assert_eq!(entry["id"], id.as_str());
    let next = &entry["next_stop"];
    assert_eq!(next["sequence"], 1, "{entry}");
    assert_eq!(next["type"], "pickup");
    assert_eq!(next["city"], "Dallas");
    assert_eq!(next["state"], "TX");
    assert_eq!(next["status"], "en_route");
    assert!(next["eta"].is_string(), "{entry}");
    assert_eq!(entry["eta_stop_sequence"], 3, "the ETA is the delivery's");
    assert!(entry["eta"].is_string());
}
