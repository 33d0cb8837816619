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
        .unwrap_or_else(|| format!("req_{}", crate::domain::ids::new_suffix()))
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
    let labels = [
        ("route", route),
        ("method", method.to_string()),
        ("status", status.as_u16().to_string()),
    ];
    metrics::counter!(REQUESTS_METRIC, &labels).increment(1);
    metrics::histogram!(LATENCY_METRIC, &labels).record(elapsed.as_secs_f64());
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
