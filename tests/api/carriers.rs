use reqwest::StatusCode;
use serde_json::json;

use crate::helpers::{assert_error, carrier_body, spawn_app};

#[actix_web::test]
async fn create_get_and_list_carriers() {
    let app = spawn_app().await;
    let (status, created) = app.post("/carriers", carrier_body("123456")).await;
    assert_eq!(status, StatusCode::CREATED, "{created}");
    let carrier = &created["data"];
    let id = carrier["id"].as_str().unwrap();
    assert!(id.starts_with("carrier_"), "{id}");
    assert_eq!(carrier["name"], "Lone Star Hauling");
    assert_eq!(carrier["mc_number"], "123456");
    assert_eq!(carrier["dot_number"], "2233445");
    assert_eq!(
        carrier["contact"],
        json!({"email": "dispatch@lonestar.example", "phone": "+1 214-555-0100"})
    );
    assert_eq!(
        carrier["equipment_types"],
        json!(["dry_van", "refrigerated"])
    );
    assert_eq!(carrier["service_areas"], json!(["TX", "OK", "GA"]));

    let (status, fetched) = app.get(&format!("/carriers/{id}")).await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(&fetched["data"], carrier);

    let second = app.create_carrier("654321").await;
    let (status, list) = app.get("/carriers?limit=1").await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(list["data"]["carriers"][0]["id"], second["id"]);
    assert_eq!(
        list["pagination"],
        json!({"page": 1, "limit": 1, "total": 2})
    );
    let (_, page2) = app.get("/carriers?limit=1&page=2").await;
    assert_eq!(page2["data"]["carriers"][0]["id"], id);
    assert_eq!(page2["data"]["page"], 2);

    let (status, body) = app.get("/carriers?limit=500").await;
    assert_error(status, &body, 400, "INVALID_QUERY_PARAMETER");
}

#[actix_web::test]
async fn only_name_and_mc_number_are_required() {
    let app = spawn_app().await;
    let (status, created) = app
        .post(
            "/carriers",
            json!({"name": "Solo Trucking", "mc_number": "42"}),
        )
        .await;
    assert_eq!(status, StatusCode::CREATED, "{created}");
    assert_eq!(created["data"]["equipment_types"], json!([]));
    assert_eq!(
        created["data"]["contact"],
        json!({"email": null, "phone": null}),
        "every optional field present, null"
    );
    assert!(created["data"]["dot_number"].is_null());
}

#[actix_web::test]
async fn mc_numbers_are_unique_per_account() {
    let app = spawn_app().await;
    let first = app.create_carrier("777777").await;
    for same in ["777777", "0777777", " 777777 "] {
        let (status, body) = app.post("/carriers", carrier_body(same)).await;
        let error = assert_error(status, &body, 409, "DUPLICATE_CARRIER");
        assert_eq!(error["details"]["existing_carrier_id"], first["id"]);
    }
    let (_, list) = app.get("/carriers").await;
    assert_eq!(list["data"]["total"], 1);
}

#[actix_web::test]
async fn unknown_carriers_are_not_found() {
    let app = spawn_app().await;
    for id in [
        "carrier_01m7zsaxzk3pb3vfdnxzkmn1s1",
        "carrier_x",
        "load_01m7zsaxzk3pb3vfdnxzkmn1s1",
    ] {
        let (status, body) = app.get(&format!("/carriers/{id}")).await;
        assert_error(status, &body, 404, "INVALID_CARRIER");
    }
}
