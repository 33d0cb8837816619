//! Every API request gets an id (the client's `X-Request-Id` if it is sane, else
//! a new one), returned in `X-Request-Id` and carried by every log line of the
//! request; and is counted and timed by route, method and status for `/metrics`.

use std::cell::RefCell;
use std::collections::HashMap;
use std::time::{Duration, Instant};

use actix_web::ResponseError;
use actix_web::body::{EitherBody, MessageBody};
use actix_web::dev::{ServiceRequest, ServiceResponse};
use actix_web::http::header::{HeaderName, HeaderValue};
use actix_web::http::{Method, StatusCode};
use actix_web::middleware::Next;
use metrics::{Counter, Histogram};

use crate::api::auth::{header_refusal, plain_http_refusal};
use crate::server::unread_body::UnreadBody;
use crate::telemetry::{RouteId, with_request_id};

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
    // What a refusal leaves of the body is read before the answer goes out.
    let unread = UnreadBody::watch(&mut req);
    // Bytes: shared by the task-local and the header without a copy.
    let id = bytes::Bytes::from(request_id(&req));
    let method = method_label(req.method());
    let mut response = match plain_http_refusal(&req).or_else(|| header_refusal(&req)) {
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
    if let Ok(value) = HeaderValue::from_maybe_shared(id) {
        response
            .headers_mut()
            .insert(HeaderName::from_static(REQUEST_ID), value);
    }
    Ok(response)
}
