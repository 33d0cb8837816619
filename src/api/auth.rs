//! Authentication middleware for `/v1`, and the `Principal` extractor handlers use.
//!
//! It runs before routing and before any extractor, so an unauthenticated request
//! is refused with 401 (and a request without the permission its method needs with
//! 403) whatever else is wrong with it, and no body is read for it. GET and HEAD
//! need the `read` permission; every other method needs `write`.

use std::future::{Ready, ready};

use actix_web::body::{BoxBody, EitherBody, MessageBody};
use actix_web::dev::{Payload, ServiceRequest, ServiceResponse};
use actix_web::http::header::{HeaderMap, HeaderName, HeaderValue};
use actix_web::http::{Method, StatusCode, header};
use actix_web::middleware::Next;
use actix_web::{FromRequest, HttpMessage, HttpRequest, ResponseError, web};

use super::error::ApiError;
use super::idempotency::idempotent_posts;
use crate::domain::account::PlanKind;
use crate::domain::api_key::Permission;
use crate::services::Services;
use crate::services::auth::{ConnectionAuth, Principal};
use crate::services::rate_limits::{Quota, WINDOW_SECONDS};

pub const RATE_LIMITED_METRIC: &str = "freight_rate_limited_total";

/// How the API listener knows a request came over TLS.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TransportPolicy {
    /// The listener terminates TLS itself; plain HTTP never reaches the app.
    DirectTls,
    /// A TLS-terminating proxy forwards plain HTTP; `X-Forwarded-Proto` must say https.
    TrustForwardedProto,
}

/// `GET /v1/auth/verify` answers for any valid key: its purpose is to say what
/// the key may do, so it cannot demand a permission itself.
const PERMISSION_FREE_PATHS: &[&str] = &["/v1/auth/verify"];

/// The refusal of a request that did not arrive over TLS, if it did not (checked
/// app-wide, before routing, by the outermost middleware).
pub fn plain_http_refusal(req: &ServiceRequest) -> Option<ApiError> {
    let policy = req
        .app_data::<web::Data<TransportPolicy>>()
        .map_or(TransportPolicy::DirectTls, |p| *p.get_ref());
    if policy == TransportPolicy::DirectTls {
        return None;
    }
    // A proxy appends the scheme it saw; the last value is the trusted one, the
    // earlier ones may have come from the client.
    let proto = req
        .headers()
        .get_all("x-forwarded-proto")
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(','))
        .last()
        .map(|v| v.trim().to_ascii_lowercase());
    (proto.as_deref() != Some("https")).then(|| {
        ApiError::new(
            StatusCode::BAD_REQUEST,
            "HTTPS_REQUIRED",
            "this API is served over HTTPS only; use an https:// URL",
        )
    })
}

/// Request heads larger than this (header names and values, as sent) are
/// refused with 431 in the error envelope. Heads over 128 KiB, or with more
/// than 96 headers, never reach the application: the HTTP layer refuses them
/// with a bare 431 and closes the connection.
pub const MAX_HEADER_BYTES: usize = 16 * 1024;

/// Headers a request may carry once at most: a second one would be ignored by
/// one reader and honoured by another (a proxy and this service).
const SINGLE_HEADERS: [header::HeaderName; 2] = [
    header::AUTHORIZATION,
    header::HeaderName::from_static("idempotency-key"),
];

/// The refusal of a request whose headers are too large or repeat one that
/// must appear once (checked app-wide, before routing).
pub fn header_refusal(req: &ServiceRequest) -> Option<ApiError> {
    let headers = req.headers();
    let size: usize = headers
        .iter()
        .map(|(name, value)| name.as_str().len() + value.len() + 4)
        .sum();
    if size > MAX_HEADER_BYTES {
        return Some(
            ApiError::new(
                StatusCode::REQUEST_HEADER_FIELDS_TOO_LARGE,
                "HEADERS_TOO_LARGE",
                format!(
                    "the request headers take {size} bytes; at most {MAX_HEADER_BYTES} are accepted"
                ),
            )
            .with_details(serde_json::json!({ "limit_bytes": MAX_HEADER_BYTES })),
        );
    }
    SINGLE_HEADERS.iter().find_map(|name| {
        (headers.get_all(name).nth(1).is_some()).then(|| {
            ApiError::new(
                StatusCode::BAD_REQUEST,
                "DUPLICATE_HEADER",
                format!("the {name} header may be sent once only"),
            )
            .with_details(serde_json::json!({ "header": name.as_str() }))
        })
    })
}

/// Authenticates, then counts the request against its account's quota: refused
/// with 429 when the quota is spent, and every answer carries the quota headers.
pub async fn authenticate<B: MessageBody + 'static>(
    req: ServiceRequest,
    next: Next<B>,
) -> Result<ServiceResponse<EitherBody<EitherBody<B, BoxBody>>>, actix_web::Error> {
    let services = req
        .app_data::<web::Data<Services>>()
        .expect("Services are registered as app data")
        .clone();
    let needed = if PERMISSION_FREE_PATHS.contains(&req.path()) {
        None
    } else if matches!(*req.method(), Method::GET | Method::HEAD) {
        Some(Permission::Read)
    } else {
        Some(Permission::Write)
    };
    let authorization = req
        .headers()
        .get(header::AUTHORIZATION)
        .map(|v| v.to_str().unwrap_or("\u{0}"));
    // Refusals are answered here (not raised as errors) so the outer middleware
    // sees, counts and labels them like any other response.
    let connection = req.conn_data::<ConnectionAuth>();
    let principal = match services
        .auth
        .authenticate_on(connection, authorization, needed)
        .await
    {
        Ok(principal) => principal,
        Err(error) => {
            let response = ApiError::from(error).error_response();
            return Ok(req.into_response(response).map_into_right_body());
        }
    };
    // Forwarded by another instance, which counted it and kept its key.
    if super::forward::is_internal(&req) {
        req.extensions_mut().insert(principal);
        let response = next.call(req).await?;
        return Ok(response.map_into_left_body().map_into_left_body());
    }
    let quota = services.rate_limits.check(
        principal.account_id(),
        principal.account.requests_per_hour(),
    );
    if !quota.allowed {
        metrics::counter!(RATE_LIMITED_METRIC).increment(1);
        let retry_after = quota.retry_after.unwrap_or(1);
        let refusal = quota_refusal(principal.account.plan, quota.limit, retry_after);
        let mut response = refusal.error_response();
        add_quota_headers(response.headers_mut(), &quota);
        return Ok(req.into_response(response).map_into_right_body());
    }
    req.extensions_mut().insert(principal.clone());
    // Idempotency keys run inside authentication (they are per account), called
    // from here rather than as a middleware of their own: a layer costs every
    // request a boxed future for what most requests skip with two checks.
    let mut response = idempotent_posts(req, next, &principal).await?;
    add_quota_headers(response.headers_mut(), &quota);
    Ok(response.map_into_left_body())
}

/// The 429 of a used-up hourly quota: it names the plan, the plan above it
/// and where to change plans, so the reader knows what to do besides wait.
fn quota_refusal(plan: PlanKind, limit: u32, retry_after: u64) -> ApiError {
    let next = plan.next();
    let upgrade = match next {
        Some((next, Some(quota))) => format!(
            ", or move to the {} plan ({} requests an hour) on the plan page, /dashboard/plan",
            next.title(),
            thousands(quota)
        ),
        Some((next, None)) => format!(
            ", or ask the operator for the {} plan (a quota agreed with you); plans: /dashboard/plan",
            next.title()
        ),
        None => ", or ask the operator to raise the account's quota".to_owned(),
    };
    ApiError::new(
        StatusCode::TOO_MANY_REQUESTS,
        "RATE_LIMITED",
        format!(
            "this account has used its {} requests per hour on the {} plan; retry in {retry_after} s{upgrade}",
            thousands(limit),
            plan.title()
        ),
    )
    .with_details(serde_json::json!({
        "limit": limit,
        "window_seconds": WINDOW_SECONDS,
        "retry_after_seconds": retry_after,
        "plan": plan.as_str(),
        "next_plan": next.map(|(plan, quota)| serde_json::json!({
            "plan": plan.as_str(),
            "requests_per_hour": quota,
        })),
        "plan_page": "/dashboard/plan",
    }))
    .with_header("retry-after", retry_after.to_string())
}

/// 10000 as "10,000".
fn thousands(n: u32) -> String {
    let digits = n.to_string();
    let mut out = String::with_capacity(digits.len() + digits.len() / 3);
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// The quota as `X-RateLimit-*` (GitHub's widely known trio: limit, remaining,
/// reset as Unix seconds) and as the IETF draft's `RateLimit-Policy` and
/// `RateLimit` fields (remaining `r` and seconds to reset `t`).
fn add_quota_headers(headers: &mut HeaderMap, quota: &Quota) {
    // On every answer, so it is worth the care: the names are constants (a
    // `from_static` call at run time parses its name each time), the map grows
    // once for all five, and the numbers are written as digits straight into
    // the values, never through `format!`.
    const LIMIT: HeaderName = HeaderName::from_static("x-ratelimit-limit");
    const REMAINING: HeaderName = HeaderName::from_static("x-ratelimit-remaining");
    const RESET: HeaderName = HeaderName::from_static("x-ratelimit-reset");
    const POLICY: HeaderName = HeaderName::from_static("ratelimit-policy");
    const STATE: HeaderName = HeaderName::from_static("ratelimit");
    headers.reserve(5);
    let (limit, policy) = limit_headers(quota.limit);
    headers.insert(LIMIT, limit);
    headers.insert(REMAINING, HeaderValue::from(quota.remaining));
    headers.insert(RESET, HeaderValue::from(quota.reset));
    let policy = Some(policy);
    let state = structured_field(
        "\"hourly\";r=",
        quota.remaining.into(),
        ";t=",
        quota.reset_in(),
    );
    for (name, value) in [(POLICY, policy), (STATE, state)] {
        if let Some(value) = value {
            headers.insert(name, value);
        }
    }
}

/// `X-RateLimit-Limit` and `RateLimit-Policy` for `limit`: the same on every
/// answer to an account, so each worker builds them once per limit it meets
/// last and clones them after (a reference count, no formatting).
fn limit_headers(limit: u32) -> (HeaderValue, HeaderValue) {
    use std::cell::RefCell;
    thread_local! {
        static LAST: RefCell<Option<(u32, HeaderValue, HeaderValue)>> = const { RefCell::new(None) };
    }
    LAST.with_borrow_mut(|last| match last {
        Some((known, value, policy)) if *known == limit => (value.clone(), policy.clone()),
        _ => {
            let policy = structured_field("\"hourly\";q=", limit.into(), ";w=", WINDOW_SECONDS)
                .expect("digits and this module's literals make a valid value");
            let built = (HeaderValue::from(limit), policy);
            *last = Some((limit, built.0.clone(), built.1.clone()));
            built
        }
    })
}

/// `<first><a><second><b>`, the shape of both structured quota fields (always
/// a valid value: the texts are this module's literals, the numbers digits).
fn structured_field(first: &str, a: i64, second: &str, b: i64) -> Option<HeaderValue> {
    let mut digits = itoa::Buffer::new();
    let mut value = bytes::BytesMut::with_capacity(48);
    value.extend_from_slice(first.as_bytes());
    value.extend_from_slice(digits.format(a).as_bytes());
    value.extend_from_slice(second.as_bytes());
    value.extend_from_slice(digits.format(b).as_bytes());
    HeaderValue::from_maybe_shared(value.freeze()).ok()
}

impl FromRequest for Principal {
    type Error = ApiError;
    type Future = Ready<Result<Self, ApiError>>;

    fn from_request(req: &HttpRequest, _: &mut Payload) -> Self::Future {
        ready(req.extensions().get::<Principal>().cloned().ok_or_else(|| {
            tracing::error!(request_id = %crate::telemetry::request_id(), path = %req.path(), "route is outside the authentication middleware");
            ApiError::new(
                StatusCode::INTERNAL_SERVER_ERROR,
                "INTERNAL_ERROR",
                "an internal error occurred; it has been logged",
            )
        }))
    }
}
