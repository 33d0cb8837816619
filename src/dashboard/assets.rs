//! The dashboard's static files, compiled into the binary: nothing to install,
//! nothing fetched from elsewhere (the machine running it may be offline).

use actix_web::http::header;
use actix_web::{HttpResponse, web};

use super::page::PageError;

/// (name, content type, bytes)
const ASSETS: [(&str, &str, &[u8]); 2] = [
    (
        "dashboard.css",
        "text/css; charset=utf-8",
        include_bytes!("assets/dashboard.css"),
    ),
    (
        "dashboard.js",
        "text/javascript; charset=utf-8",
        include_bytes!("assets/dashboard.js"),
    ),
];

pub async fn serve(name: web::Path<String>) -> Result<HttpResponse, PageError> {
    let (_, content_type, bytes) = ASSETS
        .iter()
        .find(|(n, _, _)| *n == name.as_str())
        .ok_or(PageError::NotFound)?;
    Ok(HttpResponse::Ok()
        .insert_header((header::CONTENT_TYPE, *content_type))
        .insert_header((header::CACHE_CONTROL, "public, max-age=300"))
        .insert_header(("x-content-type-options", "nosniff"))
        .body(*bytes))
}
