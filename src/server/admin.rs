//! The admin listener: plain HTTP on loopback (unless `--admin-allow-remote`),
//! for the operator command line
//! and for health checks and metrics. The operator API (`/admin/v1`) needs the
//! admin token; `/health`, `/ready` and `/metrics` do not.

use actix_web::body::{EitherBody, MessageBody};
use actix_web::dev::{ServiceRequest, ServiceResponse};
use actix_web::http::{StatusCode, header};
use actix_web::middleware::{Next, from_fn};
use actix_web::{HttpResponse, ResponseError, web};
use serde::Deserialize;
use serde_json::json;
use subtle::ConstantTimeEq;

use crate::api::account_views::{AccountView, KeyView};
use crate::api::envelope;
use crate::api::error::ApiError;
use crate::api::extract::JsonBody;
use crate::api::path::PathId;
use crate::domain::account::PlanKind;
use crate::domain::ids::{AccountId, KeyId};
use crate::domain::timestamp;
use crate::routes;
use crate::services::accounts::{CustomLimits, KeyRequest, NewAccount};
use crate::services::{Services, live};

/// The token the command line must present, as app data.
#[derive(Clone)]
pub struct AdminToken(pub String);

async fn require_admin_token(
    req: ServiceRequest,
    next: Next<impl MessageBody>,
) -> Result<ServiceResponse<EitherBody<impl MessageBody>>, actix_web::Error> {
    let expected = req
        .app_data::<web::Data<AdminToken>>()
        .expect("admin token is registered")
        .0
        .clone();
    let presented = req
        .headers()
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.strip_prefix("Bearer "))
        .unwrap_or("");
    if presented.is_empty() || !bool::from(presented.as_bytes().ct_eq(expected.as_bytes())) {
        // Answered here, not raised: an error raised by a middleware skips the
        // listener's default headers.
        let refusal = ApiError::new(
            StatusCode::UNAUTHORIZED,
            "INVALID_ADMIN_TOKEN",
            "admin requests need 'Authorization: Bearer <contents of admin.token in the data directory>'",
        );
        return Ok(req
            .into_response(refusal.error_response())
            .map_into_right_body());
    }
    Ok(next.call(req).await?.map_into_left_body())
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct CreateAccount {
    name: String,
    #[serde(default = "standard")]
    plan: PlanKind,
    requests_per_hour: Option<u32>,
    max_streams: Option<u32>,
}

/// The admin bodies have no checks of their own beyond the services'.
impl crate::api::extract::BodyInput for CreateAccount {}
impl crate::api::extract::BodyInput for ChangePlan {}
impl crate::api::extract::BodyInput for CreateKey {}

fn standard() -> PlanKind {
    PlanKind::Standard
}

async fn create_account(
    services: web::Data<Services>,
    JsonBody(body): JsonBody<CreateAccount>,
) -> Result<HttpResponse, ApiError> {
    let account = services
        .accounts
        .create_account(NewAccount {
            name: body.name,
            plan: body.plan,
            requests_per_hour: body.requests_per_hour,
            max_streams: body.max_streams,
        })
        .await?;
    Ok(envelope::created(AccountView::new(&account)))
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct ChangePlan {
    plan: PlanKind,
    requests_per_hour: Option<u32>,
    max_streams: Option<u32>,
}

async fn change_plan(
    services: web::Data<Services>,
    id: PathId<AccountId>,
    JsonBody(body): JsonBody<ChangePlan>,
) -> Result<HttpResponse, ApiError> {
    let account = services
        .accounts
        .change_plan(
            &id.found()?,
            body.plan,
            CustomLimits {
                requests_per_hour: body.requests_per_hour,
                max_streams: body.max_streams,
            },
        )
        .await?;
    Ok(envelope::ok(AccountView::new(&account)))
}

async fn list_accounts(services: web::Data<Services>) -> Result<HttpResponse, ApiError> {
    let accounts = services.accounts.list_accounts().await?;
    let views: Vec<AccountView> = accounts.iter().map(AccountView::new).collect();
    Ok(envelope::ok(json!({ "accounts": views })))
}

async fn get_account(
    services: web::Data<Services>,
    id: PathId<AccountId>,
) -> Result<HttpResponse, ApiError> {
    let account = services.accounts.get_account(&id.found()?).await?;
    Ok(envelope::ok(AccountView::new(&account)))
}

/// `POST /admin/v1/accounts/{id}/disable` and `…/enable`.
async fn disable_account(
    services: web::Data<Services>,
    id: PathId<AccountId>,
) -> Result<HttpResponse, ApiError> {
    let account = services.accounts.set_disabled(&id.found()?, true).await?;
    Ok(envelope::ok(AccountView::new(&account)))
}

async fn enable_account(
    services: web::Data<Services>,
    id: PathId<AccountId>,
) -> Result<HttpResponse, ApiError> {
    let account = services.accounts.set_disabled(&id.found()?, false).await?;
    Ok(envelope::ok(AccountView::new(&account)))
}

async fn list_keys(
    services: web::Data<Services>,
    id: PathId<AccountId>,
) -> Result<HttpResponse, ApiError> {
    let keys = services.accounts.list_keys(&id.found()?).await?;
    let views: Vec<KeyView> = keys.iter().map(KeyView::new).collect();
    Ok(envelope::ok(json!({ "keys": views })))
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct CreateKey {
    account_id: String,
    permissions: Vec<String>,
    expires_at: Option<String>,
    description: Option<String>,
}

async fn create_key(
    services: web::Data<Services>,
    JsonBody(body): JsonBody<CreateKey>,
) -> Result<HttpResponse, ApiError> {
    let expires_at = match body.expires_at {
        Some(raw) => Some(timestamp::parse_utc(&raw).map_err(|message| {
            ApiError::field(
                StatusCode::BAD_REQUEST,
                "VALIDATION_FAILED",
                "expires_at",
                message,
            )
        })?),
        None => None,
    };
    let issued = services
        .accounts
        .create_key(KeyRequest {
            account_id: body.account_id,
            permissions: body.permissions,
            expires_at,
            description: body.description,
        })
        .await?;
    let mut view = serde_json::to_value(KeyView::new(&issued.record)).expect("views serialise");
    view["key"] = json!(issued.token);
    Ok(envelope::created(view))
}

async fn revoke_key(
    services: web::Data<Services>,
    id: PathId<KeyId>,
) -> Result<HttpResponse, ApiError> {
    let key = services.accounts.revoke_key(&id.found()?).await?;
    Ok(envelope::ok(KeyView::new(&key)))
}

async fn health() -> HttpResponse {
    HttpResponse::Ok().json(json!({"status": "ok"}))
}

async fn ready(services: web::Data<Services>) -> HttpResponse {
    match services.storage.ping().await {
        Ok(()) => HttpResponse::Ok().json(json!({"status": "ready"})),
        Err(e) => HttpResponse::ServiceUnavailable()
            .json(json!({"status": "unavailable", "reason": e.to_string()})),
    }
}

/// Prometheus text exposition of every metric the service keeps.
async fn metrics_page(services: web::Data<Services>) -> HttpResponse {
    // Counted at scrape time rather than on every actor start and stop.
    metrics::gauge!(RESIDENT_ACTORS_METRIC).set(services.actors.resident() as f64);
    metrics::gauge!(live::STREAMS_METRIC).set(services.tracking.live().streams() as f64);
    services.storage.report_metrics();
    HttpResponse::Ok()
        .content_type("text/plain; version=0.0.4; charset=utf-8")
        .body(crate::telemetry::metrics().render())
}

pub const RESIDENT_ACTORS_METRIC: &str = "freight_resident_load_actors";

pub fn configure(cfg: &mut web::ServiceConfig) {
    cfg.route("/health", web::get().to(health))
        .route("/metrics", web::get().to(metrics_page))
        .route("/ready", web::get().to(ready))
        .service(
            web::scope("/admin/v1")
                .wrap(from_fn(require_admin_token))
                .service(
                    web::resource("/accounts")
                        .route(web::post().to(create_account))
                        .route(web::get().to(list_accounts))
                        .default_service(routes::only("GET, POST")),
                )
                .service(
                    web::resource("/accounts/{id}")
                        .route(web::get().to(get_account))
                        .default_service(routes::only("GET")),
                )
                .service(
                    web::resource("/accounts/{id}/plan")
                        .route(web::put().to(change_plan))
                        .default_service(routes::only("PUT")),
                )
                .service(
                    web::resource("/accounts/{id}/disable").route(web::post().to(disable_account)),
                )
                .service(
                    web::resource("/accounts/{id}/enable").route(web::post().to(enable_account)),
                )
                .service(
                    web::resource("/accounts/{id}/keys")
                        .route(web::get().to(list_keys))
                        .default_service(routes::only("GET")),
                )
                .service(
                    web::resource("/keys")
                        .route(web::post().to(create_key))
                        .default_service(routes::only("POST")),
                )
                .service(
                    web::resource("/keys/{id}/revoke")
                        .route(web::post().to(revoke_key))
                        .default_service(routes::only("POST")),
                )
                .configure(super::admin_users::configure),
        );
}
