//! `Idempotency-Key` on every write (POST, PATCH, PUT, DELETE): a retry with
//! the same key and the same request (method, path, query, body) gets
//! the first answer again (status and body, marked `Idempotent-Replayed: true`)
//! without doing the work twice; the same key on a different request is refused
//! with 422, and while the first is still running, with 409; so is the same
//! key from another API key of the account (an answer may hold a secret shown
//! once). Runs after authentication (keys are per account) and reads the body
//! itself to compare it. Kept answers are sealed at rest (`storage::secret_box`).

use actix_web::body::{BoxBody, EitherBody, MessageBody};
use actix_web::dev::{ServiceRequest, ServiceResponse};
use actix_web::http::header::{self, HeaderValue};
use actix_web::http::{Method, StatusCode};
use actix_web::middleware::Next;
use actix_web::{HttpResponse, ResponseError, web};

use super::error::ApiError;
use super::extract::buffer_body;
use crate::domain::idempotency::StoredResponse;
use crate::domain::idempotency::{check_key, fingerprint};
use crate::services::Services;
use crate::services::auth::Principal;
use crate::services::idempotency::{Begin, Claim};
use crate::telemetry::error_chain;

pub const HEADER: &str = "idempotency-key";
pub const REPLAYED_HEADER: &str = "idempotent-replayed";

/// The API's `(method, path pattern)` pairs (`routes::all_routes`, given by
/// the server, which sits above both): the idempotency layer runs before the
/// router, and takes keys only for requests that reach a handler.
pub struct KnownRoutes(Vec<(&'static str, Vec<String>)>);

impl KnownRoutes {
    pub fn new(routes: Vec<(&'static str, String)>) -> Self {
        KnownRoutes(
            routes
                .into_iter()
                .map(|(method, path)| (method, path.split('/').map(str::to_owned).collect()))
                .collect(),
        )
    }

    /// Whether `method` on `path` (`/v1/loads/load_…`) is one of them.
    pub fn routes(&self, method: &str, path: &str) -> bool {
        let parts: Vec<&str> = path.split('/').collect();
        self.0.iter().any(|(m, pattern)| {
            *m == method
                && pattern.len() == parts.len()
                && pattern
                    .iter()
                    .zip(&parts)
                    .all(|(want, got)| (want.starts_with('{') && !got.is_empty()) || want == got)
        })
    }
}

/// Called by the authentication middleware once `principal` is known.
pub async fn idempotent_posts<B>(
    req: ServiceRequest,
    next: Next<B>,
    principal: &Principal,
) -> Result<ServiceResponse<EitherBody<B, BoxBody>>, actix_web::Error>
where
    B: MessageBody + 'static,
{
    // Every other request (GETs, writes without a key) passes with two checks.
    let raw = match *req.method() {
        Method::POST | Method::PATCH | Method::PUT | Method::DELETE => {
            req.headers().get(HEADER).cloned()
        }
        _ => None,
    };
    // A method or path the API does not route gets its 405 or 404, key or not.
    let raw = raw.filter(|_| {
        req.app_data::<web::Data<KnownRoutes>>()
            .is_none_or(|known| known.routes(req.method().as_str(), req.path()))
    });
    let Some(raw) = raw else {
        return super::forward::serve_or_forward(req, next).await;
    };
    let key = match parse_key(&raw) {
        Ok(key) => key,
        Err(error) => return Ok(refuse(req, error)),
    };
    let services = req
        .app_data::<web::Data<Services>>()
        .expect("Services are registered as app data")
        .clone();
    let (req, print) = match read_and_fingerprint(req, principal).await {
        Ok(read) => read,
        Err((req, error)) => return Ok(refuse(req, error)),
    };
    let begun = services
        .idempotency
        .begin(principal.account_id(), &key, print)
        .await
        .map_err(ApiError::from)?;
    let claim = match begun {
        Begin::Replay(stored) => {
            return Ok(req.into_response(replay(stored)).map_into_right_body());
        }
        Begin::Mismatch => return Ok(refuse(req, reused())),
        Begin::InUse => return Ok(refuse(req, in_use())),
        Begin::Proceed(claim) => claim,
    };
    let response = super::forward::serve_or_forward(req, next).await?;
    // A server error is not an answer to keep: the retry should run again.
    if response.status().is_server_error() {
        return Ok(response);
    }
    Ok(keep_answer(&services, claim, response).await)
}

fn refuse<B>(req: ServiceRequest, error: ApiError) -> ServiceResponse<EitherBody<B, BoxBody>> {
    req.into_response(error.error_response())
        .map_into_right_body()
}

fn parse_key(raw: &HeaderValue) -> Result<String, ApiError> {
    raw.to_str()
        .map_err(|_| "must be visible ASCII".to_string())
        .and_then(|k| check_key(k).map(str::to_owned))
        .map_err(|message| {
            ApiError::field(
                StatusCode::BAD_REQUEST,
                "INVALID_IDEMPOTENCY_KEY",
                "Idempotency-Key",
                &message,
            )
        })
}

/// Reads the body (to compare a retry with the first request byte for byte) and
/// puts it back for the handler; answers the request with its fingerprint.
async fn read_and_fingerprint(
    req: ServiceRequest,
    principal: &Principal,
) -> Result<(ServiceRequest, String), (ServiceRequest, ApiError)> {
    let (req, body) = buffer_body(req).await?;
    let print = fingerprint(
        principal.key_id.as_str(),
        req.method().as_str(),
        req.path(),
        req.query_string(),
        &body,
    );
    Ok((req, print))
}

/// The first answer to a key, sent again.
fn replay(stored: StoredResponse) -> HttpResponse {
    let mut response =
        HttpResponse::build(StatusCode::from_u16(stored.status).unwrap_or(StatusCode::OK));
    if let Some(content_type) = &stored.content_type {
        response.insert_header((header::CONTENT_TYPE, content_type.as_str()));
    }
    response.insert_header((REPLAYED_HEADER, "true"));
    response.body(stored.body)
}

fn reused() -> ApiError {
    ApiError::new(
        StatusCode::UNPROCESSABLE_ENTITY,
        "IDEMPOTENCY_KEY_REUSED",
        "this Idempotency-Key was used for a different request (method, path, body or API key) in the last 24 hours; use a new key",
    )
    .with_details(serde_json::json!({"field": "Idempotency-Key"}))
}

fn in_use() -> ApiError {
    ApiError::new(
        StatusCode::CONFLICT,
        "IDEMPOTENCY_KEY_IN_USE",
        "a request with this Idempotency-Key is still being processed; retry shortly",
    )
    .with_details(serde_json::json!({"field": "Idempotency-Key"}))
}

/// Keeps the answer for the key, durably, before it is sent.
async fn keep_answer<B: MessageBody + 'static, Out>(
    services: &Services,
    claim: Claim,
    response: ServiceResponse<B>,
) -> ServiceResponse<EitherBody<Out, BoxBody>> {
    let (http, response) = response.into_parts();
    let (head, body) = response.into_parts();
    let Ok(bytes) = actix_web::body::to_bytes(body).await else {
        let error = ApiError::new(
            StatusCode::INTERNAL_SERVER_ERROR,
            "INTERNAL_ERROR",
            "an internal error occurred; it has been logged",
        );
        tracing::error!(request_id = %crate::telemetry::request_id(), "a response body could not be read for its idempotency key");
        return ServiceResponse::new(http, error.error_response()).map_into_right_body();
    };
    let content_type = head
        .headers()
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .map(str::to_owned);
    let text = String::from_utf8_lossy(&bytes).into_owned();
    if let Err(error) = services
        .idempotency
        .finish(claim, head.status().as_u16(), content_type, text)
        .await
    {
        // The work is done and durable; only its replay is lost.
        tracing::error!(request_id = %crate::telemetry::request_id(), error = %error_chain(&error), "keeping the answer of an idempotency key failed");
    }
    let mut response = head.set_body(BoxBody::new(bytes));
    response.headers_mut().insert(
        header::HeaderName::from_static(REPLAYED_HEADER),
        HeaderValue::from_static("false"),
    );
    ServiceResponse::new(http, response).map_into_right_body()
}
