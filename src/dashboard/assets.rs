//! The dashboard's static files, compiled into the binary: nothing to install,
//! nothing fetched from elsewhere (the machine running it may be offline).

use actix_web::http::header;
use actix_web::{HttpResponse, web};

use super::errors::PageError;

/// (name, content type, bytes). The board's map is `us-states.json`, derived
/// from the npm package us-atlas (ISC; `LICENSE-us-atlas.txt`, served beside
/// it); with the operator's tiles, the maps are drawn by Leaflet 1.9.4 (BSD-2;
/// `LICENSE-leaflet.txt`). `assets/README.md` says where each came from.
const ASSETS: [(&str, &str, &[u8]); 13] = [
    (
        "favicon.svg",
        "image/svg+xml",
        include_bytes!("assets/favicon.svg"),
    ),
    ("dashboard.css", CSS, include_bytes!("assets/dashboard.css")),
    ("dashboard.js", JS, include_bytes!("assets/dashboard.js")),
    ("board.css", CSS, include_bytes!("assets/board.css")),
    ("board.js", JS, include_bytes!("assets/board.js")),
    ("track.js", JS, include_bytes!("assets/track.js")),
    ("load_map.js", JS, include_bytes!("assets/load_map.js")),
    ("load_form.js", JS, include_bytes!("assets/load_form.js")),
    ("leaflet.js", JS, include_bytes!("assets/leaflet.js")),
    ("leaflet.css", CSS, include_bytes!("assets/leaflet.css")),
    (
        "LICENSE-leaflet.txt",
        "text/plain; charset=utf-8",
        include_bytes!("assets/LICENSE-leaflet.txt"),
    ),
    (
        "us-states.json",
        "application/json",
        include_bytes!("assets/us-states.json"),
    ),
    (
        "LICENSE-us-atlas.txt",
        "text/plain; charset=utf-8",
        include_bytes!("assets/LICENSE-us-atlas.txt"),
    ),
];

const CSS: &str = "text/css; charset=utf-8";
const JS: &str = "text/javascript; charset=utf-8";

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
