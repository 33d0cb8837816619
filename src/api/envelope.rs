//! Success envelopes: `{"success": true, "data": ...}`, and for lists the shape
//! DESIGN.md fixes, which satisfies both shapes the spec shows:
//! `{"success": true, "data": {"<items>": [...], "total", "page"}, "pagination": {"page", "limit", "total"}}`.

use actix_web::HttpResponse;
use actix_web::http::StatusCode;
use serde::Serialize;
use serde_json::{Map, Value, json};

/// A success answer: `{"success": true, "data": ...}`.
#[derive(Serialize, utoipa::ToSchema)]
pub struct Envelope<T> {
    #[schema(schema_with = crate::views::schema::always_true)]
    success: bool,
    data: T,
}

pub fn ok<T: Serialize>(data: T) -> HttpResponse {
    with_status(StatusCode::OK, data)
}

pub fn created<T: Serialize>(data: T) -> HttpResponse {
    with_status(StatusCode::CREATED, data)
}

fn with_status<T: Serialize>(status: StatusCode, data: T) -> HttpResponse {
    HttpResponse::build(status).json(Envelope {
        success: true,
        data,
    })
}

/// A success answer's body, written ahead (to be kept and sent many times with
/// [`ok_body`]).
pub fn body<T: Serialize>(data: T) -> Result<bytes::Bytes, serde_json::Error> {
    serde_json::to_vec(&Envelope {
        success: true,
        data,
    })
    .map(bytes::Bytes::from)
}

/// A 200 answer with a body from [`body`].
pub fn ok_body(body: bytes::Bytes) -> HttpResponse {
    HttpResponse::Ok()
        .content_type(actix_web::http::header::ContentType::json())
        .body(body)
}

/// The page a list response describes.
#[derive(Debug, Clone, Copy)]
pub struct PageInfo {
    pub page: u64,
    pub limit: u32,
    pub total: u64,
}

pub fn list<T: Serialize>(items_name: &str, items: Vec<T>, info: PageInfo) -> HttpResponse {
    HttpResponse::Ok().json(list_value(items_name, items, info))
}

/// The list envelope as a value, for endpoints that add to `pagination`.
pub fn list_value<T: Serialize>(items_name: &str, items: Vec<T>, info: PageInfo) -> Value {
    let mut data = Map::new();
    data.insert(items_name.to_owned(), json!(items));
    data.insert("total".into(), json!(info.total));
    data.insert("page".into(), json!(info.page));
    json!({
        "success": true,
        "data": Value::Object(data),
        "pagination": {"page": info.page, "limit": info.limit, "total": info.total},
    })
}
