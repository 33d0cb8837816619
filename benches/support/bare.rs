//! The bare reference handler the GPS benches compare freight with: actix-web
//! over the same TLS, parsing the same bodies, doing nothing else. Used in
//! process by `gps_ingest` and standalone by `bare_handler` (for wrk).

use actix_web::{HttpResponse, web};
use freight::api::input::tracking::FixInput;
use serde_json::json;

/// The routes, at the paths freight serves them.
pub fn configure(cfg: &mut web::ServiceConfig) {
    cfg.route("/v1/loads/{id}/tracking", web::post().to(ingest))
        .route("/v1/loads/{id}/tracking", web::get().to(read))
        .route("/v1/tracking/batch", web::post().to(batch));
}

/// Parses the same body as the real endpoint and does nothing else.
async fn ingest(_: web::Path<String>, body: web::Json<FixInput>) -> HttpResponse {
    let _ = body.into_inner();
    HttpResponse::Created().json(json!({"success": true}))
}

async fn read(_: web::Path<String>) -> HttpResponse {
    HttpResponse::Ok().json(json!({"success": true, "data": {"lat": 33.0, "lng": -95.0}}))
}

#[derive(serde::Deserialize)]
struct Batch {
    #[allow(dead_code)]
    points: Vec<FixInput>,
}

async fn batch(body: web::Bytes) -> HttpResponse {
    let _: Batch = serde_json::from_slice(&body).expect("valid batch");
    HttpResponse::Ok().json(json!({"success": true}))
}
