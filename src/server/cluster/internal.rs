//! The internal listener: where other instances forward requests for the
//! loads this instance acts for. Plain HTTP on a private address
//! (`--internal-listen`), never the public port, and every request must be
//! signed with the cluster secret (`signing`), or it is refused with 401
//! before routing.
//!
//! It serves the API's own routes (a forwarded request runs as it would
//! have on the instance it reached, its API key checked again) plus the
//! internal ones: forwarded GPS fixes and the account event taps. A request
//! here is not counted against the account's quota nor matched to its
//! idempotency key: the instance it was forwarded from did both.

use std::net::TcpListener;

use actix_server::Server;
use actix_web::body::{BoxBody, EitherBody, MessageBody};
use actix_web::dev::{ServiceRequest, ServiceResponse};
use actix_web::http::StatusCode;
use actix_web::middleware::{Next, from_fn};
use actix_web::{App, HttpResponse, HttpServer, ResponseError, web};

use super::forward::{FIXES_PATH, FixesAnswer, FixesRequest, WireOutcome};
use super::signing::{ClusterSecret, SIGNATURE_HEADER, TIME_HEADER};
use crate::api::auth::TransportPolicy;
use crate::api::error::ApiError;
use crate::api::extract::{BodyLimit, buffer_body};
use crate::api::forward::InternalListener;
use crate::domain::ids::AccountId;
use crate::services::Services;

/// The largest body taken here (forwarded fixes included).
const INTERNAL_BODY_LIMIT: usize = 16 << 20;

/// On a refusal of the signature: the instance that forwarded the request
/// has another secret (mid-rotation) or clock.
pub const REFUSED_HEADER: &str = "x-freight-cluster-refused";

/// The secret requests here must be signed with (app data).
#[derive(Clone)]
struct Internal(ClusterSecret);

/// The internal listener's server, over the same services as the API's.
pub fn server(
    services: &Services,
    secret: ClusterSecret,
    listener: TcpListener,
    workers: usize,
    known_routes: web::Data<crate::api::idempotency::KnownRoutes>,
    body_limit: BodyLimit,
    map: crate::dashboard::MapSource,
) -> anyhow::Result<Server> {
    let services = services.clone();
    let dashboard = crate::dashboard::configure(map);
    let internal = web::Data::new(Internal(secret));
    let server = HttpServer::new(move || {
        App::new()
            .app_data(web::Data::new(services.clone()))
            .app_data(internal.clone())
            .app_data(web::Data::new(InternalListener))
            .app_data(known_routes.clone())
            // The instance that forwarded a request held it to the public
            // caps already; a batch of fixes of several loads can grow a
            // little in forwarding (a device attached to several loads).
            .app_data(web::Data::new(BodyLimit(
                body_limit.0.max(INTERNAL_BODY_LIMIT),
            )))
            .app_data(web::PayloadConfig::new(INTERNAL_BODY_LIMIT))
            .app_data(web::Data::new(TransportPolicy::TrustForwardedProto))
            .wrap(from_fn(verify))
            // Inside the signature check: the request id the first instance
            // gave the request carries on in this one's logs.
            .wrap(from_fn(crate::server::observe::observe))
            .route(FIXES_PATH, web::post().to(fixes))
            .route(
                super::live_taps::PATH,
                web::get().to(super::live_taps::serve),
            )
            .configure(crate::routes::configure)
            .configure(dashboard.clone())
            .default_service(web::to(crate::routes::not_found))
    })
    .workers(workers)
    .disable_signals()
    .listen(listener)?
    .run();
    Ok(server)
}

/// Refuses a request without a valid signature, before anything else sees it.
async fn verify<B: MessageBody + 'static>(
    req: ServiceRequest,
    next: Next<B>,
) -> Result<ServiceResponse<EitherBody<B, BoxBody>>, actix_web::Error> {
    let Internal(secret) = req
        .app_data::<web::Data<Internal>>()
        .expect("the internal app has its secret")
        .get_ref()
        .clone();
    let header = |name: &str| {
        req.headers()
            .get(name)
            .and_then(|v| v.to_str().ok())
            .map(str::to_owned)
    };
    let (time, signature) = (header(TIME_HEADER), header(SIGNATURE_HEADER));
    let path = req
        .uri()
        .path_and_query()
        .map_or(req.path(), |p| p.as_str())
        .to_owned();
    let method = req.method().as_str().to_owned();
    let (req, body) = match buffer_body(req).await {
        Ok(read) => read,
        Err((req, error)) => {
            return Ok(req
                .into_response(error.error_response())
                .map_into_right_body());
        }
    };
    let checked = match (time.and_then(|t| t.parse::<i64>().ok()), signature) {
        (Some(time), Some(signature)) => secret.verify(
            chrono::Utc::now().timestamp(),
            time,
            &signature,
            &method,
            &path,
            &body,
        ),
        _ => Err("the request is not signed"),
    };
    if let Err(reason) = checked {
        tracing::warn!(peer = ?req.peer_addr(), reason, "refused an unsigned or wrongly signed request on the internal listener");
        let refusal = ApiError::new(
            StatusCode::UNAUTHORIZED,
            "CLUSTER_SIGNATURE_INVALID",
            format!("this listener takes requests from other instances only: {reason}"),
        );
        let mut response = refusal.error_response();
        // Tells the forwarding instance the refusal is the cluster's, not the
        // client's (it answers 503 rather than pass a 401 on).
        response.headers_mut().insert(
            actix_web::http::header::HeaderName::from_static(REFUSED_HEADER),
            actix_web::http::header::HeaderValue::from_static("signature"),
        );
        return Ok(req.into_response(response).map_into_right_body());
    }
    Ok(next.call(req).await?.map_into_left_body())
}

/// `POST /internal/v1/fixes`: fixes of loads this instance acts for, sent
/// by the instance that received them; each gets its outcome, in order.
async fn fixes(services: web::Data<Services>, body: web::Bytes) -> Result<HttpResponse, ApiError> {
    let request: FixesRequest = serde_json::from_slice(&body).map_err(|error| {
        ApiError::new(
            StatusCode::BAD_REQUEST,
            "MALFORMED_BODY",
            format!("not a forwarded batch of fixes: {error}"),
        )
    })?;
    let account_id = AccountId::parse(&request.account_id).ok_or_else(|| {
        ApiError::new(
            StatusCode::BAD_REQUEST,
            "MALFORMED_BODY",
            "not an account id",
        )
    })?;
    let Some(account) = services.storage.get_account(&account_id).await? else {
        return Err(ApiError::new(
            StatusCode::NOT_FOUND,
            "NOT_FOUND",
            "no such account",
        ));
    };
    let mut decoded = Vec::with_capacity(request.points.len());
    for point in &request.points {
        decoded.push(point.decode().ok_or_else(|| {
            ApiError::new(StatusCode::BAD_REQUEST, "MALFORMED_BODY", "not a fix")
        })?);
    }
    // Recorded here only: a load this instance no longer acts for is
    // answered `unavailable`, not forwarded on (no forwarding loops).
    let outcomes = services.tracking.record_here(&account, decoded).await;
    Ok(HttpResponse::Ok().json(FixesAnswer {
        outcomes: outcomes.iter().map(WireOutcome::new).collect(),
    }))
}
