//! Putting mistakes right: a load's fields corrected (`PATCH /v1/loads/{id}`,
//! with `load.updated`), loads cancelled before pickup, references that find a
//! load, carriers changed and deleted, MC numbers however they are written, a
//! duplicate fix answered with what is stored, and the list's filters.

use reqwest::StatusCode;
use serde_json::{Value, json};

use crate::helpers::{TestApp, assert_error, load_body, spawn_app};
use crate::receiver::verify;
use crate::webhooks::{SECRET, subscribed_app};

async fn assign(app: &TestApp, load: &str, mc: &str) -> String {
    let carrier = app.create_carrier(mc).await;
    let (status, body) = app
        .patch(
            &format!("/loads/{load}/status"),
            json!({"status": "assigned", "carrier_id": carrier["id"]}),
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    carrier["id"].as_str().unwrap().to_owned()
}

async fn set_status(app: &TestApp, load: &str, status: &str) -> (StatusCode, Value) {
    app.patch(&format!("/loads/{load}/status"), json!({"status": status}))
        .await
}

fn id_of(load: &Value) -> String {
    load["id"].as_str().unwrap().to_owned()
}

#[actix_web::test]
async fn a_load_is_corrected_field_by_field_and_says_what_changed() {
    let (app, receiver) = subscribed_app(&["load.updated"]).await;
    let mut body = load_body("TX", "GA");
    body["notes"] = json!("Dock 4");
    body["rate"] = json!(1850.5);
    let load = id_of(&app.create_load(body).await);
    let path = format!("/loads/{load}");

    // Nothing changed: nothing written, nothing sent.
    let (status, same) = app.patch(&path, json!({"weight": 42000})).await;
    assert_eq!(status, StatusCode::OK, "{same}");
    assert_eq!(same["data"]["updated_at"], same["data"]["created_at"]);

    // A posted load's route may change; null clears an optional field.
    let (status, changed) = app
        .patch(
            &path,
            json!({"weight": 40500, "notes": null, "reference": " PO-44172 ",
                   "destination": {"city": "Macon", "state": "ga", "zip": "31201"}}),
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{changed}");
    let data = &changed["data"];
    assert_eq!(data["weight"], 40500.0);
    assert_eq!(data["notes"], Value::Null);
    assert_eq!(data["rate"], 1850.5, "untouched");
    assert_eq!(data["reference"], "PO-44172");
    assert_eq!(data["destination"]["city"], "Macon");
    assert_eq!(data["destination"]["state"], "GA");
    assert!(data["stops"].is_array(), "answered as GET shows it");
    let sent = receiver.wait_for("load.updated", |r| !r.is_empty()).await;
    verify(SECRET, &sent[0]).unwrap();
    assert_eq!(sent[0].json["type"], "load.updated");
    assert_eq!(
        sent[0].json["data"]["changed"],
        json!(["destination", "weight", "notes", "reference"])
    );
    assert_eq!(sent[0].json["data"]["load"]["weight"], 40500.0);
    assert_eq!(receiver.received().len(), 1, "the no-op sent nothing");

    // Checked as on create; a refusal changes nothing.
    let (status, refused) = app
        .patch(
            &path,
            json!({"weight": 0, "equipment_type": "spaceship", "origin": null, "rate": 1.001}),
        )
        .await;
    assert_error(status, &refused, 400, "VALIDATION_FAILED");
    let fields: Vec<&str> = refused["error"]["details"]["errors"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["field"].as_str().unwrap())
        .collect();
    assert_eq!(fields, ["origin", "weight", "equipment_type", "rate"]);
    let (status, refused) = app.patch(&path, json!({"tonnage": 3})).await;
    assert_error(status, &refused, 400, "VALIDATION_FAILED");
    // An array is not a body that sends nothing; a field named twice is named.
    let (status, refused) = app.patch(&path, json!([])).await;
    assert_error(status, &refused, 400, "VALIDATION_FAILED");
    assert_eq!(refused["error"]["details"]["field"], "body");
    let (status, refused) = crate::helpers::send(
        app.client
            .patch(app.url(&path))
            .bearer_auth(&app.key)
            .header("content-type", "application/json")
            .body(r#"{"weight": 1, "weight": 2}"#),
    )
    .await;
    assert_error(status, &refused, 400, "VALIDATION_FAILED");
    assert!(
        !refused["error"]["details"]["errors"]
            .as_array()
            .unwrap()
            .is_empty(),
        "{refused}"
    );
    let (status, dates) = app
        .patch(
            &path,
            json!({"pickup_date": "2026-12-02T10:00:00Z", "delivery_date": "2026-12-01T10:00:00Z"}),
        )
        .await;
    assert_error(status, &dates, 400, "VALIDATION_FAILED");
    let (_, after) = app.get(&path).await;
    assert_eq!(after["data"]["weight"], 40500.0);
    assert_eq!(after["data"]["pickup_date"], Value::Null);

    // Assigned: the route is fixed, the rest is not.
    assign(&app, &load, "700001").await;
    let (status, refused) = app
        .patch(
            &path,
            json!({"origin": {"city": "Austin", "state": "TX", "zip": "78701"}, "weight": 1}),
        )
        .await;
    assert_error(status, &refused, 409, "LOAD_NOT_EDITABLE");
    assert_eq!(refused["error"]["details"]["current_status"], "assigned");
    assert_eq!(refused["error"]["details"]["fields"], json!(["origin"]));
    let (status, body) = app
        .patch(&path, json!({"delivery_date": "2026-12-05T17:00:00Z"}))
        .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(
        body["data"]["stops"][1]["appointment"],
        "2026-12-05T17:00:00Z"
    );
    // A pickup moved past the stored delivery is named as the pickup: the
    // delivery date is not what this request got wrong.
    let (status, refused) = app
        .patch(&path, json!({"pickup_date": "2026-12-06T08:00:00Z"}))
        .await;
    let error = assert_error(status, &refused, 400, "VALIDATION_FAILED");
    assert_eq!(error["details"]["field"], "pickup_date", "{refused}");

    // Delivered: final.
    assert_eq!(
        set_status(&app, &load, "in_transit").await.0,
        StatusCode::OK
    );
    assert_eq!(set_status(&app, &load, "delivered").await.0, StatusCode::OK);
    let (status, refused) = app.patch(&path, json!({"notes": "late"})).await;
    assert_error(status, &refused, 409, "LOAD_NOT_EDITABLE");
    assert_eq!(refused["error"]["details"]["fields"], json!(["notes"]));

    // Another account's load is not found.
    let (_, other_key) = app.new_account().await;
    let (status, body) = app.patch_as(&other_key, &path, json!({"weight": 1})).await;
    assert_error(status, &body, 404, "INVALID_LOAD");
}

#[actix_web::test]
async fn a_reference_is_unique_in_an_account_finds_its_load_and_is_freed_when_changed() {
    let app = spawn_app().await;
    let mut body = load_body("TX", "GA");
    body["reference"] = json!("BOL-9001");
    let first = id_of(&app.create_load(body.clone()).await);

    let (status, taken) = app.post("/loads", body.clone()).await;
    assert_error(status, &taken, 409, "REFERENCE_TAKEN");
    assert_eq!(taken["error"]["details"]["load_id"], first.as_str());
    for bad in [json!(""), json!("two\nlines"), json!("x".repeat(65))] {
        let mut refused = body.clone();
        refused["reference"] = bad;
        let (status, error) = app.post("/loads", refused).await;
        assert_error(status, &error, 400, "VALIDATION_FAILED");
    }

    let (status, found) = app.get("/loads?reference=BOL-9001").await;
    assert_eq!(status, StatusCode::OK, "{found}");
    assert_eq!(found["data"]["loads"][0]["id"], first.as_str());
    assert_eq!(found["pagination"]["total"], 1);
    let (_, none) = app.get("/loads?reference=BOL-9002").await;
    assert_eq!(none["pagination"]["total"], 0);

    // Another account may use the same number.
    let (_, other_key) = app.new_account().await;
    let (status, theirs) = app.post_as(&other_key, "/loads", body.clone()).await;
    assert_eq!(status, StatusCode::CREATED, "{theirs}");

    // Moving the first load to another reference frees the old one; taking a
    // reference another load has is refused.
    let second = id_of(&app.create_load(load_body("OK", "GA")).await);
    let (status, refused) = app
        .patch(
            &format!("/loads/{second}"),
            json!({"reference": "BOL-9001"}),
        )
        .await;
    assert_error(status, &refused, 409, "REFERENCE_TAKEN");
    let (status, moved) = app
        .patch(
            &format!("/loads/{first}"),
            json!({"reference": "BOL-9001-A"}),
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{moved}");
    let (status, now_second) = app
        .patch(
            &format!("/loads/{second}"),
            json!({"reference": "BOL-9001"}),
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{now_second}");
    let (_, found) = app.get("/loads?reference=BOL-9001").await;
    assert_eq!(found["data"]["loads"][0]["id"], second.as_str());

    // Kept across a restart.
    let app = app.restart().await;
    let (status, taken) = app.post("/loads", body).await;
    assert_error(status, &taken, 409, "REFERENCE_TAKEN");
    assert_eq!(taken["error"]["details"]["load_id"], second.as_str());
}

#[actix_web::test]
async fn a_load_is_cancelled_before_pickup_only_and_then_takes_no_fixes() {
    let (app, receiver) = subscribed_app(&["load.status_changed"]).await;
    let posted = id_of(&app.create_load(load_body("TX", "GA")).await);
    let (status, cancelled) = app
        .patch(
            &format!("/loads/{posted}/status"),
            json!({"status": "cancelled", "notes": "Shipper withdrew the order"}),
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{cancelled}");
    let history = cancelled["data"]["status_history"].as_array().unwrap();
    assert_eq!(
        history.last().unwrap()["notes"],
        "Shipper withdrew the order"
    );
    let sent = receiver
        .wait_for("load.status_changed", |r| !r.is_empty())
        .await;
    assert_eq!(sent[0].json["data"]["status"], "cancelled");
    assert_eq!(sent[0].json["data"]["previous_status"], "posted");

    // Final: no move, no correction.
    let (status, refused) = set_status(&app, &posted, "posted").await;
    assert_error(status, &refused, 409, "INVALID_STATUS_TRANSITION");
    assert_eq!(refused["error"]["details"]["allowed_next"], json!([]));
    assert!(
        refused["error"]["message"]
            .as_str()
            .unwrap()
            .contains("none (cancelled is final)"),
        "{refused}"
    );
    let (status, refused) = app
        .patch(&format!("/loads/{posted}"), json!({"weight": 1000}))
        .await;
    assert_error(status, &refused, 409, "LOAD_NOT_EDITABLE");

    // Assigned: cancelled keeps its carrier and takes no fixes.
    let assigned = id_of(&app.create_load(load_body("TX", "GA")).await);
    assign(&app, &assigned, "700002").await;
    let (status, body) = set_status(&app, &assigned, "cancelled").await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert!(body["data"]["carrier"]["id"].is_string(), "{body}");
    let at = chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Secs, true);
    let fix = json!({"lat": 32.7, "lng": -96.8, "timestamp": at});
    let (status, refused) = app.post(&format!("/loads/{assigned}/tracking"), fix).await;
    assert_error(status, &refused, 409, "LOAD_NOT_TRACKABLE");
    assert_eq!(refused["error"]["details"]["current_status"], "cancelled");

    // In transit: too late.
    let moving = id_of(&app.create_load(load_body("TX", "GA")).await);
    assign(&app, &moving, "700003").await;
    assert_eq!(
        set_status(&app, &moving, "in_transit").await.0,
        StatusCode::OK
    );
    let (status, refused) = set_status(&app, &moving, "cancelled").await;
    assert_error(status, &refused, 409, "INVALID_STATUS_TRANSITION");
    assert_eq!(refused["error"]["details"]["current_status"], "in_transit");

    let (_, listed) = app.get("/loads?status=cancelled").await;
    assert_eq!(listed["pagination"]["total"], 2, "{listed}");
}

#[actix_web::test]
async fn carriers_are_changed_and_deleted_once_nothing_rides_with_them() {
    let app = spawn_app().await;
    // MC numbers as people write them are one number.
    let mut body = crate::helpers::carrier_body("1");
    body["mc_number"] = json!("MC-778812");
    let (status, carrier) = app.post("/carriers", body.clone()).await;
    assert_eq!(status, StatusCode::CREATED, "{carrier}");
    assert_eq!(carrier["data"]["mc_number"], "778812");
    let id = carrier["data"]["id"].as_str().unwrap().to_owned();
    body["mc_number"] = json!("MC 0778812");
    let (status, again) = app.post("/carriers", body.clone()).await;
    assert_error(status, &again, 409, "DUPLICATE_CARRIER");

    let path = format!("/carriers/{id}");
    let (status, changed) = app
        .patch(
            &path,
            json!({"name": "Lone Star Hauling LLC", "contact": {"phone": "+1 214-555-0199"},
                   "service_areas": ["tx", "AL"], "dot_number": null}),
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{changed}");
    let data = &changed["data"];
    assert_eq!(data["name"], "Lone Star Hauling LLC");
    assert_eq!(data["contact"]["phone"], "+1 214-555-0199");
    assert_eq!(
        data["contact"]["email"], "dispatch@lonestar.example",
        "the part not sent stays"
    );
    assert_eq!(data["service_areas"], json!(["TX", "AL"]));
    assert_eq!(data["dot_number"], Value::Null);
    assert_eq!(data["mc_number"], "778812");
    let (status, refused) = app.patch(&path, json!({"mc_number": "1"})).await;
    assert_error(status, &refused, 400, "VALIDATION_FAILED");
    assert_eq!(refused["error"]["details"]["field"], "mc_number");
    let (status, refused) = app
        .patch(&path, json!({"contact": {"email": "nope"}}))
        .await;
    assert_error(status, &refused, 400, "VALIDATION_FAILED");
    // Null empties no list and no contact: `[]` does, and a part's own null.
    for null in [json!({"equipment_types": null}), json!({"contact": null})] {
        let (status, refused) = app.patch(&path, null).await;
        assert_error(status, &refused, 400, "VALIDATION_FAILED");
    }

    // Refused while a load rides with it; deleted once it is unassigned.
    let load = id_of(&app.create_load(load_body("TX", "GA")).await);
    let (status, moved) = app
        .patch(
            &format!("/loads/{load}/status"),
            json!({"status": "assigned", "carrier_id": id}),
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{moved}");
    let (status, refused) = app.delete(&path).await;
    assert_error(status, &refused, 409, "CARRIER_HAS_ACTIVE_LOADS");
    assert_eq!(refused["error"]["details"]["load_ids"], json!([load]));
    assert_eq!(set_status(&app, &load, "posted").await.0, StatusCode::OK);
    let (status, deleted) = app.delete(&path).await;
    assert_eq!(status, StatusCode::OK, "{deleted}");
    assert_eq!(deleted["data"], json!({"id": id, "deleted": true}));
    let (status, gone) = app.get(&path).await;
    assert_error(status, &gone, 404, "INVALID_CARRIER");
    let (status, gone) = app.delete(&path).await;
    assert_error(status, &gone, 404, "INVALID_CARRIER");
    let (_, list) = app.get("/carriers").await;
    assert_eq!(list["pagination"]["total"], 0, "{list}");
    // The number is free again.
    let (status, again) = app.post("/carriers", body).await;
    assert_eq!(status, StatusCode::CREATED, "{again}");
}

#[actix_web::test]
async fn a_duplicate_fix_answers_with_the_fix_stored_first() {
    let app = spawn_app().await;
    let load = id_of(&app.create_load(load_body("TX", "GA")).await);
    assign(&app, &load, "700004").await;
    let at = (chrono::Utc::now() - chrono::Duration::minutes(1))
        .to_rfc3339_opts(chrono::SecondsFormat::Micros, true);
    let path = format!("/loads/{load}/tracking");
    let first = json!({"lat": 32.7, "lng": -96.8, "timestamp": at, "speed": 50});
    let (status, _) = app.post(&path, first).await;
    assert_eq!(status, StatusCode::CREATED);
    let (status, again) = app
        .post(
            &path,
            json!({"lat": 40.0, "lng": -90.0, "timestamp": at, "speed": 5}),
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{again}");
    assert_eq!(again["data"]["duplicate"], true);
    assert_eq!(again["data"]["lat"], 32.7);
    assert_eq!(again["data"]["lng"], -96.8);
    assert_eq!(again["data"]["speed"], 50.0);
}

#[actix_web::test]
async fn loads_are_found_by_carrier_equipment_pickup_time_and_a_prefix() {
    let app = spawn_app().await;
    let make = |city: &str, equipment: &str, pickup: &str, reference: &str| {
        let mut body = load_body("TX", "GA");
        body["origin"]["city"] = json!(city);
        body["equipment_type"] = json!(equipment);
        body["pickup_date"] = json!(pickup);
        body["reference"] = json!(reference);
        body
    };
    let dallas = id_of(
        &app.create_load(make("Dallas", "dry_van", "2026-12-01T08:00:00Z", "PO-100"))
            .await,
    );
    let houston = id_of(
        &app.create_load(make("Houston", "flatbed", "2026-12-03T08:00:00Z", "PO-200"))
            .await,
    );
    let denton = id_of(
        &app.create_load(make("Denton", "dry_van", "2026-12-05T08:00:00Z", "BOL-7"))
            .await,
    );
    let carrier = assign(&app, &houston, "700005").await;

    let ids = |body: &Value| -> Vec<String> {
        body["data"]["loads"]
            .as_array()
            .unwrap_or_else(|| panic!("{body}"))
            .iter()
            .map(|l| l["id"].as_str().unwrap().to_owned())
            .collect()
    };
    let list = |query: String| {
        let app = &app;
        async move {
            let (status, body) = app.get(&format!("/loads?{query}")).await;
            assert_eq!(status, StatusCode::OK, "{query}: {body}");
            body
        }
    };
    assert_eq!(
        ids(&list(format!("carrier_id={carrier}")).await),
        [houston.as_str()]
    );
    assert_eq!(
        ids(&list("equipment_type=dry_van".into()).await),
        [denton.as_str(), dallas.as_str()]
    );
    assert_eq!(
        ids(&list("pickup_from=2026-12-02T00:00:00Z&pickup_to=2026-12-05T08:00:00Z".into()).await),
        [denton.as_str(), houston.as_str()]
    );
    assert_eq!(
        ids(&list("q=d".into()).await),
        [denton.as_str(), dallas.as_str()]
    );
    assert_eq!(
        ids(&list("q=po-".into()).await),
        [houston.as_str(), dallas.as_str()]
    );
    let paged = list("q=po&limit=1&page=2".into()).await;
    assert_eq!(ids(&paged), [dallas.as_str()]);
    assert_eq!(paged["pagination"]["total"], 2);
    assert_eq!(
        ids(&list("q=atlanta&status=assigned".into()).await),
        [houston.as_str()]
    );

    let (status, refused) = app.get("/loads?colour=red").await;
    assert_error(status, &refused, 400, "INVALID_QUERY_PARAMETER");
    let allowed = refused["error"]["details"]["allowed"].as_array().unwrap();
    assert!(allowed.contains(&json!("reference")) && allowed.contains(&json!("q")));
    assert!(
        refused["error"]["message"]
            .as_str()
            .unwrap()
            .contains("carrier_id"),
        "{refused}"
    );
    for bad in [
        "carrier_id=nope",
        "equipment_type=spaceship",
        "pickup_from=yesterday",
        "q=",
    ] {
        let (status, body) = app.get(&format!("/loads?{bad}")).await;
        assert_error(status, &body, 400, "INVALID_QUERY_PARAMETER");
    }
}

/// A carrier deleted while a load is being assigned to it: one of the two
/// wins, never both (a load assigned to a carrier that no longer exists).
#[actix_web::test]
async fn a_deletion_racing_an_assignment_never_leaves_a_load_with_a_deleted_carrier() {
    let app = spawn_app().await;
    let mut outcomes = std::collections::BTreeMap::new();
    for round in 0..24 {
        let carrier = id_of(&app.create_carrier(&format!("55{round:04}")).await);
        let load = id_of(&app.create_load(load_body("TX", "GA")).await);
        let assign_path = format!("/loads/{load}/status");
        let assignment = json!({"status": "assigned", "carrier_id": carrier});
        let carrier_path = format!("/carriers/{carrier}");
        // The deletion starts a little later each round, to land in
        // different parts of the assignment (a jitter, not a wait for anything).
        let later = std::time::Duration::from_micros(150 * round);
        let ((assigned, answer), (deleted, _)) =
            tokio::join!(app.patch(&assign_path, assignment), async {
                tokio::time::sleep(later).await;
                app.delete(&carrier_path).await
            },);
        assert!(
            !(assigned.is_success() && deleted.is_success()),
            "round {round}: both the assignment and the deletion succeeded: {answer}"
        );
        let (_, stored) = app.get(&format!("/loads/{load}")).await;
        if stored["data"]["status"] == "assigned" {
            let (status, still) = app.get(&carrier_path).await;
            assert_eq!(status, StatusCode::OK, "round {round}: {still}");
        }
        *outcomes
            .entry((assigned.as_u16(), deleted.as_u16()))
            .or_insert(0) += 1;
    }
    eprintln!("(assignment, deletion) answers: {outcomes:?}");
}
