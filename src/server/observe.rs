//! Every API request gets an id (the client's `X-Request-Id` if it is sane, else
//! a new one), returned in `X-Request-Id` and carried by every log line of the
//! request; and is counted and timed by route and status for `/metrics`.

use std::time::Instant;

use actix_web::body::MessageBody;
use actix_web::dev::{ServiceRequest, ServiceResponse};
use actix_web::http::header::{HeaderName, HeaderValue};
use actix_web::middleware::Next;
use tracing::Instrument;

pub const REQUEST_ID: &str = "x-request-id";
pub const REQUESTS_METRIC: &str = "freight_http_requests_total";
pub const LATENCY_METRIC: &str = "freight_http_request_duration_seconds";

/// A client's id is kept if it is 1–128 visible ASCII characters, so it can be
/// logged and echoed safely; anything else is replaced.
fn request_id(req: &ServiceRequest) -> String {
    req.headers()
        .get(REQUEST_ID)
        .and_then(|v| v.to_str().ok())
        .filter(|v| !v.is_empty() && v.len() <= 128 && v.bytes().all(|b| b.is_ascii_graphic()))
        .map(str::to_owned)
        .unwrap_or_else(new_request_id)
}

/// `req_` + this process's random tag + a counter: unique without a lock or a
/// clock read on the hot path (a fresh tag per start keeps restarts apart).
fn new_request_id() -> String {
    use std::sync::OnceLock;
    use std::sync::atomic::{AtomicU64, Ordering};

    static TAG: OnceLock<String> = OnceLock::new();
    static NEXT: AtomicU64 = AtomicU64::new(0);
    let tag = TAG.get_or_init(|| {
        let suffix = crate::domain::ids::new_suffix();
        suffix[suffix.len() - 8..].to_owned()
    });
    format!("req_{tag}{:012x}", NEXT.fetch_add(1, Ordering::Relaxed))
}

/// Label values without an allocation for the usual methods and statuses.
fn method_label(method: &actix_web::http::Method) -> std::borrow::Cow<'static, str> {
    use actix_web::http::Method;
    match *method {
        Method::GET => "GET".into(),
        Method::POST => "POST".into(),
        Method::PATCH => "PATCH".into(),
        Method::PUT => "PUT".into(),
        Method::DELETE => "DELETE".into(),
        Method::HEAD => "HEAD".into(),
        Method::OPTIONS => "OPTIONS".into(),
        ref other => other.as_str().to_owned().into(),
    }
}

fn status_label(status: actix_web::http::StatusCode) -> std::borrow::Cow<'static, str> {
    match status.as_u16() {
        200 => "200".into(),
        201 => "201".into(),
        202 => "202".into(),
        204 => "204".into(),
        400 => "400".into(),
        401 => "401".into(),
        403 => "403".into(),
        404 => "404".into(),
        409 => "409".into(),
        429 => "429".into(),
        other => other.to_string().into(),
    }
}

pub async fn observe(
    req: ServiceRequest,
    next: Next<impl MessageBody>,
) -> Result<ServiceResponse<impl MessageBody>, actix_web::Error> {
    let started = Instant::now();
    let id = request_id(&req);
    let method = req.method().clone();
    let span = tracing::info_span!("request", request_id = %id, %method, path = %req.path());
    // The middlewares inside answer refusals (401, 429, ...) as responses, not
    // errors, so they are counted and carry the id too.
    let mut response = match next.call(req).instrument(span.clone()).await {
        Ok(response) => response,
        Err(error) => {
            span.in_scope(|| tracing::error!(%error, "request failed without a response"));
            return Err(error);
        }
    };
    let status = response.status();
    // The route's pattern (`/v1/loads/{load_id}`), not the path: bounded labels.
    let route = response
        .request()
        .match_pattern()
        .unwrap_or_else(|| "unmatched".to_owned());
    let elapsed = started.elapsed();
    let (method_label, status_label) = (method_label(&method), status_label(status));
    metrics::counter!(REQUESTS_METRIC, "route" => route.clone(), "method" => method_label.clone(), "status" => status_label.clone())
        .increment(1);
    metrics::histogram!(LATENCY_METRIC, "route" => route, "method" => method_label, "status" => status_label)
        .record(elapsed.as_secs_f64());
    span.in_scope(|| {
        if status.is_server_error() {
            tracing::error!(
                status = status.as_u16(),
                elapsed_ms = elapsed.as_millis() as u64,
                "request answered"
            );
        } else {
            tracing::debug!(
                status = status.as_u16(),
                elapsed_ms = elapsed.as_millis() as u64,
                "request answered"
            );
        }
    });
    if let Ok(value) = HeaderValue::from_str(&id) {
        response
            .headers_mut()
            .insert(HeaderName::from_static(REQUEST_ID), value);
    }
    Ok(response)
}
