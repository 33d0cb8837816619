//! The public API documentation: `GET /v1/openapi.json` and the reference page
//! `GET /v1/docs` with its assets under `/v1/docs/`. No key, no quota: these are
//! registered outside the `/v1` scope and its middlewares.

use actix_web::HttpResponse;
use actix_web::http::header::{self, ContentType};

use crate::openapi::ui;

/// The page's static files; not operations of the API, so not in the document.
pub const ASSET_PREFIX: &str = "/v1/docs/";

/// The document changes only with the binary; clients revalidate (cheap) rather
/// than keep a stale copy across an upgrade.
const REVALIDATE: &str = "no-cache";
/// Assets change only with the binary too; their URLs carry no version, so they
/// are kept a day, not forever.
const ONE_DAY: &str = "public, max-age=86400";

resources! {
    "/v1/openapi.json" => [GET => openapi_json],
    "/v1/docs" => [GET => docs_page],
    "/v1/docs/swagger-ui.css" => [GET => css],
    "/v1/docs/swagger-ui-bundle.js" => [GET => bundle_js],
    "/v1/docs/swagger-initializer.js" => [GET => initializer_js],
}

/// The OpenAPI 3.1 document of this API.
///
/// Generated from the code; needs no API key.
#[utoipa::path(
    get,
    path = "/v1/openapi.json",
    operation_id = "get_openapi_document",
    tag = "documentation",
    responses(
        (status = 200, description = "The OpenAPI 3.1 document.", content_type = "application/json",
         body = Object),
    ),
)]
pub(crate) async fn openapi_json() -> HttpResponse {
    HttpResponse::Ok()
        .content_type(ContentType::json())
        .insert_header((header::CACHE_CONTROL, REVALIDATE))
        .body(crate::openapi::json().to_string())
}

/// The interactive API reference (Swagger UI).
///
/// Works offline: its scripts and styles are served by this service. Needs no API key.
#[utoipa::path(
    get,
    path = "/v1/docs",
    operation_id = "get_api_reference_page",
    tag = "documentation",
    responses(
        (status = 200, description = "An HTML page.", content_type = "text/html", body = String),
    ),
)]
pub(crate) async fn docs_page() -> HttpResponse {
    HttpResponse::Ok()
        .content_type(ContentType::html())
        .insert_header((header::CACHE_CONTROL, REVALIDATE))
        .insert_header((header::CONTENT_SECURITY_POLICY, ui::CONTENT_SECURITY_POLICY))
        .insert_header((header::X_CONTENT_TYPE_OPTIONS, "nosniff"))
        .body(ui::INDEX_HTML)
}

async fn css() -> HttpResponse {
    asset("text/css; charset=utf-8", ui::CSS)
}

async fn bundle_js() -> HttpResponse {
    asset("text/javascript; charset=utf-8", ui::BUNDLE_JS)
}

async fn initializer_js() -> HttpResponse {
    asset(
        "text/javascript; charset=utf-8",
        ui::INITIALIZER_JS.as_bytes(),
    )
}

fn asset(content_type: &'static str, bytes: &'static [u8]) -> HttpResponse {
    HttpResponse::Ok()
        .insert_header((header::CONTENT_TYPE, content_type))
        .insert_header((header::CACHE_CONTROL, ONE_DAY))
        .insert_header((header::X_CONTENT_TYPE_OPTIONS, "nosniff"))
        .body(bytes)
}
