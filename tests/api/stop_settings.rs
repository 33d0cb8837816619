//! Stops as the account sets them up and searches them: the account's stop
//! settings (on-time window, free time, keeping a load assigned at the
//! pickup), and loads found by the stop their truck is at and by late risk.

use chrono::Utc;
use reqwest::StatusCode;
use serde_json::{Value, json};

use crate::helpers::assert_error;
use crate::stops::{PICKUP, assigned_load, fix, iso, post_fixes, stops};

#[actix_web::test]
async fn account_settings_judge_arrivals_set_free_time_and_can_keep_a_load_assigned() {
    let app = crate::helpers::spawn_app().await;
    let (status, body) = app.get("/account/settings").await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(
        body["data"],
        json!({"late_after_minutes": 15, "early_before_minutes": 60,
               "detention_free_minutes": 120, "auto_in_transit": true,
               "auto_delivered": false, "driving_mph": 50.0, "road_circuity": 1.2})
    );

    // Refusals change nothing, and name every field.
    let (status, body) = app
        .patch(
            "/account/settings",
            json!({"late_after_minutes": -1, "early_before_minutes": 2.5,
                   "detention_free_minutes": 1441}),
        )
        .await;
    assert_error(status, &body, 400, "VALIDATION_FAILED");
    let fields: Vec<&str> = body["error"]["details"]["errors"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["field"].as_str().unwrap())
        .collect();
    assert_eq!(
        fields,
        [
            "late_after_minutes",
            "early_before_minutes",
            "detention_free_minutes"
        ]
    );
    for refused in [
        json!({}),
        json!({"auto_in_transit": "no"}),
        json!({"late": 5}),
    ] {
        let (status, body) = app.patch("/account/settings", refused).await;
        assert_eq!(status, StatusCode::BAD_REQUEST, "{body}");
    }
    // A number sent as a string is that field's one problem.
    let (status, body) = app
        .patch("/account/settings", json!({"late_after_minutes": "15"}))
        .await;
    let error = assert_error(status, &body, 400, "VALIDATION_FAILED");
    let fields: Vec<&str> = error["details"]["errors"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["field"].as_str().unwrap())
        .collect();
    assert_eq!(fields, ["late_after_minutes"], "{body}");
    let (_, unchanged) = app.get("/account/settings").await;
    assert_eq!(unchanged["data"]["late_after_minutes"], 15);

    // Only what is sent changes.
    let (status, body) = app
        .patch(
            "/account/settings",
            json!({"late_after_minutes": 0, "detention_free_minutes": 45,
                   "auto_in_transit": false}),
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(
        body["data"],
        json!({"late_after_minutes": 0, "early_before_minutes": 60,
               "detention_free_minutes": 45, "auto_in_transit": false,
               "auto_delivered": false, "driving_mph": 50.0, "road_circuity": 1.2})
    );

    // A load created without its own free time takes the account's.
    let start = Utc::now() - chrono::Duration::hours(2);
    let mut body = crate::helpers::load_body("TX", "GA");
    body["origin"]["lat"] = json!(PICKUP.0);
    body["origin"]["lng"] = json!(PICKUP.1);
    body["origin"]["radius_m"] = json!(400);
    // The truck arrives 3 minutes after the appointment: late at 0 minutes.
    body["pickup_date"] = json!(iso(start + chrono::Duration::minutes(7)));
    let (id, load) = assigned_load(&app, body, "515151").await;
    assert_eq!(load["detention_free_minutes"], 45);
    post_fixes(
        &app,
        &id,
        &[
            fix(start, 0, PICKUP, -8_000.0, 45.0),
            fix(start, 10, PICKUP, -30.0, 0.0),
            fix(start, 40, PICKUP, 5_000.0, 55.0),
        ],
    )
    .await;
    let after = stops(&app, &id).await;
    assert_eq!(after[0]["arrival_status"], "late", "{after}");
    assert_eq!(after[0]["deviation_minutes"], 3);
    assert!(after[0]["departed_at"].is_string(), "{after}");

    // With the automatic move off, the load stays assigned: unassigning it
    // (allowed only from `assigned`) still works.
    let (status, body) = app
        .patch(&format!("/loads/{id}/status"), json!({"status": "posted"}))
        .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    let (_, loaded) = app.get(&format!("/loads/{id}")).await;
    let history = loaded["data"]["status_history"].as_array().unwrap();
    assert!(
        history.iter().all(|entry| entry["source"] != "geofence"),
        "{history:?}"
    );

    // A read-only key reads the settings but cannot change them.
    let reader = app.new_key(&app.account_id, &["read"], None).await;
    let (status, _) = app.get_as(&reader, "/account/settings").await;
    assert_eq!(status, StatusCode::OK);
    let (status, body) = app
        .patch_as(
            &reader,
            "/account/settings",
            json!({"late_after_minutes": 5}),
        )
        .await;
    assert_error(status, &body, 403, "INSUFFICIENT_PERMISSIONS");
}

#[actix_web::test]
async fn loads_are_found_by_the_stop_their_truck_is_at_and_by_late_risk() {
    let app = crate::helpers::spawn_app().await;
    let start = app.clock.now() - chrono::Duration::hours(1);
    let at_pickup_body = || {
        let mut body = crate::helpers::load_body("TX", "GA");
        body["origin"]["lat"] = json!(PICKUP.0);
        body["origin"]["lng"] = json!(PICKUP.1);
        body
    };
    // Parked at its pickup, no delivery appointment.
    let (parked, _) = assigned_load(&app, at_pickup_body(), "600001").await;
    post_fixes(
        &app,
        &parked,
        &[
            fix(start, 0, PICKUP, -5_000.0, 40.0),
            fix(start, 20, PICKUP, 10.0, 0.0),
        ],
    )
    .await;
    // Left the pickup, 700 miles from Atlanta, due there in an hour: late.
    let mut late_body = at_pickup_body();
    late_body["delivery_date"] = json!(iso(app.clock.now() + chrono::Duration::hours(1)));
    let (late, _) = assigned_load(&app, late_body, "600002").await;
    post_fixes(
        &app,
        &late,
        &[
            fix(start, 0, PICKUP, 0.0, 0.0),
            fix(start, 10, PICKUP, 20.0, 0.0),
            fix(start, 40, PICKUP, 30_000.0, 60.0),
        ],
    )
    .await;
    // Assigned, never seen; and a posted load.
    let (quiet, _) = assigned_load(&app, at_pickup_body(), "600003").await;
    app.create_load(at_pickup_body()).await;

    let ids = |body: &Value| -> Vec<String> {
        body["data"]["loads"]
            .as_array()
            .or_else(|| body["data"].as_array())
            .unwrap_or_else(|| panic!("a list: {body}"))
            .iter()
            .map(|l| l["id"].as_str().unwrap().to_owned())
            .collect()
    };
    let list = |query: &'static str| {
        let app = &app;
        async move {
            let (status, body) = app.get(&format!("/loads?{query}")).await;
            assert_eq!(status, StatusCode::OK, "{query}: {body}");
            body
        }
    };
    assert_eq!(ids(&list("at_stop=pickup").await), [parked.as_str()]);
    assert!(ids(&list("at_stop=delivery").await).is_empty());
    let late_ones = list("late_risk=true").await;
    assert_eq!(ids(&late_ones), [late.as_str()], "{late_ones}");
    // Newest first, and paged like any list.
    assert_eq!(
        ids(&list("late_risk=false").await),
        [quiet.as_str(), parked.as_str()]
    );
    let paged = list("late_risk=false&limit=1&page=2").await;
    assert_eq!(ids(&paged), [parked.as_str()]);
    assert_eq!(paged["pagination"]["total"], 2, "{paged}");
    // They combine with the other filters.
    assert!(ids(&list("late_risk=false&status=in_transit").await).is_empty());
    assert!(ids(&list("at_stop=pickup&status=posted").await).is_empty());
    assert_eq!(
        ids(&list("at_stop=pickup&late_risk=false&origin_state=TX").await),
        [parked.as_str()]
    );

    for refused in ["late_risk=yes", "at_stop=dock", "at_stop="] {
        let (status, body) = app.get(&format!("/loads?{refused}")).await;
        assert_error(status, &body, 400, "INVALID_QUERY_PARAMETER");
    }
}
