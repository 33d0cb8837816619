//! Every API request gets an id (the client's `X-Request-Id` if it is sane, else
//! a new one), returned in `X-Request-Id` and carried by every log line of the
//! request; and is counted and timed by route, method and status for `/metrics`.
//! Every answer also gets the transport headers: `X-Content-Type-Options:
//! nosniff`, and `Strict-Transport-Security` when it goes out over HTTPS.

use std::cell::RefCell;
use std::collections::HashMap;
use std::time::{Duration, Instant};

use actix_web::ResponseError;
use actix_web::body::{EitherBody, MessageBody};
use actix_web::dev::{ServiceRequest, ServiceResponse};
use actix_web::http::header::{HeaderName, HeaderValue};
use actix_web::http::{Method, StatusCode};
use actix_web::middleware::Next;
use bytes::{Bytes, BytesMut};
use metrics::{Counter, Histogram};

use crate::api::auth::{header_refusal, plain_http_refusal};
use crate::server::unread_body::UnreadBody;
use crate::telemetry::{RouteId, with_request_id};

pub const REQUEST_ID: &str = "x-request-id";
const REQUEST_ID_HEADER: HeaderName = HeaderName::from_static(REQUEST_ID);
pub const REQUESTS_METRIC: &str = "freight_http_requests_total";
/// Browsers that reached this listener over HTTPS keep to HTTPS for a year,
/// so a later `http://` link or a downgrading network cannot strip TLS.
const STRICT_TRANSPORT_SECURITY: (HeaderName, HeaderValue) = (
    HeaderName::from_static("strict-transport-security"),
    HeaderValue::from_static("max-age=31536000"),
);
/// Every answer is of the type it says; a browser must not guess another
/// (a JSON error read as HTML, say).
pub const NO_SNIFF: (HeaderName, HeaderValue) = (
    HeaderName::from_static("x-content-type-options"),
    HeaderValue::from_static("nosniff"),
);
pub const LATENCY_METRIC: &str = "freight_http_request_duration_seconds";

/// A client's id is kept if it is 1–128 visible ASCII characters, so it can be
/// logged and echoed safely; anything else is replaced.
fn request_id(req: &ServiceRequest) -> Bytes {
    req.headers()
        .get(&REQUEST_ID_HEADER)
        .map(HeaderValue::as_bytes)
        .filter(|v| !v.is_empty() && v.len() <= 128 && v.iter().all(u8::is_ascii_graphic))
        .map_or_else(new_request_id, Bytes::copy_from_slice)
}

/// `req_` + this process's random tag + a counter: unique without a lock or a
/// clock read on the hot path (a fresh tag per start keeps restarts apart).
/// Written straight into one buffer, no `format!`: this runs for nearly every
/// request.
fn new_request_id() -> Bytes {
    use std::sync::OnceLock;
    use std::sync::atomic::{AtomicU64, Ordering};

    const PREFIX: &[u8] = b"req_";
    static TAG: OnceLock<String> = OnceLock::new();
    static NEXT: AtomicU64 = AtomicU64::new(0);
    let tag = TAG.get_or_init(|| {
        let suffix = crate::domain::ids::new_suffix();
        suffix[suffix.len() - 8..].to_owned()
    });
    let mut id = BytesMut::with_capacity(PREFIX.len() + tag.len() + 16);
    id.extend_from_slice(PREFIX);
    id.extend_from_slice(tag.as_bytes());
    push_counter(NEXT.fetch_add(1, Ordering::Relaxed), &mut id);
    id.freeze()
}

/// `counter` in lower-case hex, zero-padded to 12 digits, as `{:012x}` writes
/// it (wider only past 2^48 requests).
fn push_counter(counter: u64, out: &mut BytesMut) {
    const HEX: &[u8; 16] = b"0123456789abcdef";
    let mut digits = [0u8; 16];
    for (n, digit) in digits.iter_mut().enumerate() {
        *digit = HEX[((counter >> (60 - 4 * n)) & 0xf) as usize];
    }
    let leading_zeros = (counter.leading_zeros() / 4).min(4) as usize;
    out.extend_from_slice(&digits[leading_zeros..]);
}

/// The method as a metric label; methods outside HTTP's usual set share one
/// label, so a client cannot mint label values.
fn method_label(method: &Method) -> &'static str {
    match *method {
        Method::GET => "GET",
        Method::POST => "POST",
        Method::PATCH => "PATCH",
        Method::PUT => "PUT",
        Method::DELETE => "DELETE",
        Method::HEAD => "HEAD",
        Method::OPTIONS => "OPTIONS",
        _ => "other",
    }
}

/// The request counter and latency histogram of one (route, method, status).
struct Instruments {
    requests: Counter,
    latency: Histogram,
}

impl Instruments {
    fn new(route: String, method: &'static str, status: StatusCode) -> Self {
        let status = status.as_str().to_owned();
        Instruments {
            requests: metrics::counter!(REQUESTS_METRIC, "route" => route.clone(), "method" => method, "status" => status.clone()),
            latency: metrics::histogram!(LATENCY_METRIC, "route" => route, "method" => method, "status" => status),
        }
    }
}

thread_local! {
    /// The instruments of the routes the `resources!` macro declares, by route,
    /// method and status, looked up once per worker thread: building a metric
    /// key and finding it in the recorder's registry on every request cost more
    /// than the rest of the bookkeeping together.
    static INSTRUMENTS: RefCell<HashMap<(&'static str, &'static str, u16), Instruments, foldhash::fast::FixedState>> =
        RefCell::new(HashMap::with_hasher(foldhash::fast::FixedState::default()));
}

/// Counts and times one answer under its route's pattern (`/v1/loads/{load_id}`),
/// never the path, so labels stay bounded.
fn record(response: &ServiceResponse<impl MessageBody>, method: &'static str, elapsed: Duration) {
    let status = response.status();
    let request = response.request();
    let pattern = || {
        request
            .match_pattern()
            .unwrap_or_else(|| "unmatched".to_owned())
    };
    let Some(route) = request.app_data::<RouteId>() else {
        // Pages outside the API's resources (the dashboard's): the slow way.
        let instruments = Instruments::new(pattern(), method, status);
        instruments.requests.increment(1);
        instruments.latency.record(elapsed.as_secs_f64());
        return;
    };
    let key = (route.0, method, status.as_u16());
    INSTRUMENTS.with_borrow_mut(|known| {
        let instruments = known
            .entry(key)
            .or_insert_with(|| Instruments::new(pattern(), method, status));
        instruments.requests.increment(1);
        instruments.latency.record(elapsed.as_secs_f64());
    });
}

/// Outermost middleware of the API listener: refuses plain HTTP, gives the
/// request its id (in `X-Request-Id` and in every log line of its handling),
/// and counts and times every answer, refusals included.
pub async fn observe<B: MessageBody + 'static>(
    mut req: ServiceRequest,
    next: Next<B>,
) -> Result<ServiceResponse<EitherBody<B>>, actix_web::Error> {
    let started = Instant::now();
    super::idle_poll::activity(started);
    // What a refusal leaves of the body is read before the answer goes out.
    let unread = UnreadBody::watch(&mut req);
    // Bytes: shared by the task-local and the header without a copy.
    let id = request_id(&req);
    let method = method_label(req.method());
    let plain_http = plain_http_refusal(&req);
    // Only an answer the client received over TLS may pin HTTPS: browsers
    // ignore the header on plain HTTP, and a refusal of plain HTTP is that.
    let over_https = plain_http.is_none();
    let mut response = match plain_http.or_else(|| header_refusal(&req)) {
        Some(refusal) => req
            .into_response(refusal.error_response())
            .map_into_right_body(),
        // The middlewares inside answer refusals (401, 429, ...) as responses,
        // not errors, so they are counted and carry the id too.
        None => match with_request_id(id.clone(), next.call(req)).await {
            Ok(response) => response.map_into_left_body(),
            Err(error) => {
                tracing::error!(request_id = %String::from_utf8_lossy(&id), %error, "request failed without a response");
                return Err(error);
            }
        },
    };
    if let Some(unread) = unread {
        unread.drain().await;
    }
    let elapsed = started.elapsed();
    super::idle_poll::activity(started + elapsed);
    record(&response, method, elapsed);
    let status = response.status();
    // One line per answer: an error for a 5xx, else for debugging only.
    macro_rules! answered {
        ($level:ident) => {
            tracing::$level!(
                request_id = %String::from_utf8_lossy(&id),
                method,
                path = response.request().path(),
                status = status.as_u16(),
                elapsed_ms = elapsed.as_millis() as u64,
                "request answered"
            )
        };
    }
    if status.is_server_error() {
        answered!(error);
    } else {
        answered!(debug);
    }
    let headers = response.headers_mut();
    if let Ok(value) = HeaderValue::from_maybe_shared(id) {
        headers.insert(REQUEST_ID_HEADER, value);
    }
    headers.insert(NO_SNIFF.0, NO_SNIFF.1);
    if over_https {
        headers.insert(STRICT_TRANSPORT_SECURITY.0, STRICT_TRANSPORT_SECURITY.1);
    }
    Ok(response)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counter_is_written_as_format_writes_it() {
        for counter in [0, 1, 0xabc, (1 << 48) - 1, 1 << 48, u64::MAX] {
            let mut out = BytesMut::new();
            push_counter(counter, &mut out);
            assert_eq!(&out[..], format!("{counter:012x}").as_bytes(), "{counter}");
        }
    }

    #[test]
    fn new_ids_are_distinct_and_header_safe() {
        let (a, b) = (new_request_id(), new_request_id());
        assert_ne!(a, b);
        for id in [a, b] {
            assert!(id.starts_with(b"req_") && id.len() == 4 + 8 + 12, "{id:?}");
            assert!(HeaderValue::from_maybe_shared(id).is_ok());
        }
    }
}
