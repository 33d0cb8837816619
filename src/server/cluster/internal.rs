//! The internal listener: where other instances forward requests for the
//! loads this instance acts for. Plain HTTP on a private address
//! (`--internal-listen`), never the public port, and every request must be
//! signed with the cluster secret (`signing`), or it is refused with 401
//! before routing.
//!
//! Its refusals are counted (`freight_cluster_signature_refusals_total`) and
//! logged at WARN at most every 10 s.
//!
//! It serves the API's own routes (a forwarded request runs as it would
//! have on the instance it reached, its API key checked again) plus the
//! internal ones: forwarded GPS fixes and the account event taps. A request
//! here is not counted against the account's quota nor matched to its
//! idempotency key: the instance it was forwarded from did both.

use std::net::TcpListener;
use std::sync::Arc;
use std::sync::atomic::{AtomicI64, AtomicU64, Ordering};

use actix_server::Server;
use actix_web::body::{BoxBody, EitherBody, MessageBody};
use actix_web::dev::{Payload, ServiceRequest, ServiceResponse};
use actix_web::http::StatusCode;
use actix_web::middleware::{Next, from_fn};
use actix_web::{App, HttpMessage, HttpResponse, HttpServer, ResponseError, web};

use super::forward::{FIXES_PATH, FixesAnswer, FixesRequest, WireOutcome};
use super::signing::{
    BODY_SIGNATURE_HEADER, CLIENT_HEADER, ClusterSecret, LENGTH_HEADER, MAX_AGE_SECS, NONCE_HEADER,
    ORIGIN_HEADER, SIGNATURE_HEADER, SignedHead, TIME_HEADER, is_nonce,
};
use crate::api::auth::TransportPolicy;
use crate::api::body::read_capped;
use crate::api::error::ApiError;
use crate::api::extract::BodyLimit;
use crate::api::forward::InternalListener;
use crate::domain::ids::AccountId;
use crate::services::Services;
use crate::shared_map::SharedMap;

/// The largest body taken here (forwarded fixes included).
const INTERNAL_BODY_LIMIT: usize = 16 << 20;

/// On a refusal of the signature: the instance that forwarded the request
/// has another secret (mid-rotation) or clock.
pub const REFUSED_HEADER: &str = "x-freight-cluster-refused";

/// The secret requests here must be signed with, and the nonces taken (app data).
#[derive(Clone)]
struct Internal(ClusterSecret, Arc<Nonces>);

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
    let internal = web::Data::new(Internal(secret, Arc::default()));
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

/// The signed time of a request here (a request extension), which bounds
/// what it may open (a tap's life).
#[derive(Debug, Clone, Copy)]
pub struct SignedAt(pub i64);

/// The nonces of the signatures taken lately: each is good once.
#[derive(Default)]
pub(super) struct Nonces {
    seen: SharedMap<u128, i64>,
    taken: AtomicU64,
}

impl Nonces {
    /// Whether `nonce`, signed at `time`, is new (and now taken). Nonces older
    /// than any signature that could still be good are forgotten now and then.
    fn first_use(&self, nonce: &str, time: i64, now: i64) -> bool {
        let Ok(key) = u128::from_str_radix(nonce, 16) else {
            return false;
        };
        if self
            .taken
            .fetch_add(1, Ordering::Relaxed)
            .is_multiple_of(1024)
        {
            self.seen.retain(|_, at| now - *at <= 2 * MAX_AGE_SECS);
        }
        match self.seen.entry(key) {
            dashmap::Entry::Occupied(_) => false,
            dashmap::Entry::Vacant(slot) => {
                slot.insert(time);
                true
            }
        }
    }
}

/// Refusals logged at WARN at most this often; the rest at DEBUG, counted in
/// the next warning (a peer sending garbage must not fill the log).
const REFUSAL_LOG_EVERY_SECS: i64 = 10;
static LAST_REFUSAL_LOGGED: AtomicI64 = AtomicI64::new(0);
static REFUSALS_UNLOGGED: AtomicU64 = AtomicU64::new(0);

fn log_refusal(peer: Option<std::net::SocketAddr>, reason: &str) {
    metrics::counter!(REFUSALS_METRIC).increment(1);
    let now = chrono::Utc::now().timestamp();
    let last = LAST_REFUSAL_LOGGED.load(Ordering::Relaxed);
    if now.saturating_sub(last) >= REFUSAL_LOG_EVERY_SECS
        && LAST_REFUSAL_LOGGED
            .compare_exchange(last, now, Ordering::AcqRel, Ordering::Relaxed)
            .is_ok()
    {
        let also = REFUSALS_UNLOGGED.swap(0, Ordering::Relaxed);
        tracing::warn!(
            ?peer,
            reason,
            refused_since_last_warning = also,
            "refused an unsigned or wrongly signed request on the internal listener"
        );
    } else {
        REFUSALS_UNLOGGED.fetch_add(1, Ordering::Relaxed);
        tracing::debug!(
            ?peer,
            reason,
            "refused an unsigned or wrongly signed request on the internal listener"
        );
    }
}

/// Requests refused on the internal listener for their signature.
pub const REFUSALS_METRIC: &str = "freight_cluster_signature_refusals_total";

/// The signed head of a request as it arrived; `None` where a part is missing.
fn signed_head(req: &ServiceRequest) -> Result<(SignedHead, String, String), &'static str> {
    let header = |name: &str| {
        req.headers()
            .get(name)
            .and_then(|v| v.to_str().ok())
            .map(str::to_owned)
    };
    let time = header(TIME_HEADER).and_then(|t| t.parse::<i64>().ok());
    let nonce = header(NONCE_HEADER).filter(|n| is_nonce(n));
    let length = header(LENGTH_HEADER).and_then(|l| l.parse::<u64>().ok());
    let (Some(time), Some(nonce), Some(length), Some(signature), Some(body_signature)) = (
        time,
        nonce,
        length,
        header(SIGNATURE_HEADER),
        header(BODY_SIGNATURE_HEADER),
    ) else {
        return Err("the request is not signed");
    };
    let head = SignedHead {
        time,
        nonce,
        method: req.method().as_str().to_owned(),
        path_and_query: req
            .uri()
            .path_and_query()
            .map_or(req.path(), |p| p.as_str())
            .to_owned(),
        length,
        authorization: header("authorization"),
        cookie: header("cookie"),
        idempotency_key: header("idempotency-key"),
        client: header(CLIENT_HEADER).unwrap_or_default(),
        origin: header(ORIGIN_HEADER).unwrap_or_default(),
    };
    Ok((head, signature, body_signature))
}

/// Refuses a request without a valid signature, before anything else sees
/// it: the head's signature before a byte of the body is read, the body (up
/// to its signed length) after.
async fn verify<B: MessageBody + 'static>(
    req: ServiceRequest,
    next: Next<B>,
) -> Result<ServiceResponse<EitherBody<B, BoxBody>>, actix_web::Error> {
    let Internal(secret, nonces) = req
        .app_data::<web::Data<Internal>>()
        .expect("the internal app has its secret")
        .get_ref()
        .clone();
    let now = chrono::Utc::now().timestamp();
    let head = signed_head(&req).and_then(|(head, signature, body_signature)| {
        let mac = secret.verify_head(now, &head, &signature)?;
        if head.length > INTERNAL_BODY_LIMIT as u64 {
            return Err("the signed length is over the internal listener's limit");
        }
        if !nonces.first_use(&head.nonce, head.time, now) {
            return Err("the signature was used already");
        }
        Ok((head, mac, body_signature))
    });
    let (head, mac, body_signature) = match head {
        Ok(checked) => checked,
        Err(reason) => return Ok(refuse(req, reason)),
    };
    let (http, mut payload) = req.into_parts();
    let length = head.length as usize;
    let body = match read_capped(&mut payload, Some(length), length).await {
        Ok(body) => body,
        Err(error) => {
            let req = ServiceRequest::from_parts(http, payload);
            return Ok(req
                .into_response(error.error_response())
                .map_into_right_body());
        }
    };
    let req = ServiceRequest::from_parts(http, Payload::from(body.clone()));
    if let Err(reason) = secret.verify_body(&mac, &body, &body_signature) {
        return Ok(refuse(req, reason));
    }
    req.extensions_mut().insert(SignedAt(head.time));
    Ok(next.call(req).await?.map_into_left_body())
}

fn refuse<B>(req: ServiceRequest, reason: &'static str) -> ServiceResponse<EitherBody<B, BoxBody>> {
    log_refusal(req.peer_addr(), reason);
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
    req.into_response(response).map_into_right_body()
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
