//! `/v1/loads`: create, read, list and change status.

use actix_web::{HttpRequest, HttpResponse, web};

use crate::api::envelope::{self, PageInfo};
use crate::api::error::ApiError;
use crate::api::extract::{JsonBody, NoQuery, QueryParams, page_request};
use crate::api::views::{LoadView, TrackingSummary};
use crate::domain::load::{Load, LoadStatus, NewLoadInput, StatusChangeInput};
use crate::domain::location::UsState;
use crate::services::Services;
use crate::services::auth::Principal;
use crate::storage::LoadFilter;

async fn create(
    principal: Principal,
    _: NoQuery,
    services: web::Data<Services>,
    JsonBody(input): JsonBody<NewLoadInput>,
) -> Result<HttpResponse, ApiError> {
    let new = input.validate()?;
    let load = services.loads.create(principal.account_id(), new).await?;
    // A new load has no fixes yet: its tracking summary is known to be empty.
    Ok(envelope::created(LoadView::with_tracking(
        &load,
        TrackingSummary::default(),
    )))
}

async fn get(
    principal: Principal,
    _: NoQuery,
    services: web::Data<Services>,
    id: web::Path<String>,
) -> Result<HttpResponse, ApiError> {
    let load = services.loads.get(principal.account_id(), &id).await?;
    let tracking = tracking_summary(&services, &principal, &load).await;
    Ok(envelope::ok(LoadView::with_tracking(&load, tracking)))
}

/// The load's tracking summary from its actor. The load itself is already read (or
/// already changed, durably): if its tracking cannot be read now, the answer still
/// goes out, with an empty summary, rather than a 503 that would claim nothing
/// happened.
async fn tracking_summary(
    services: &Services,
    principal: &Principal,
    load: &Load,
) -> TrackingSummary {
    match services
        .tracking
        .current(principal.account_id(), load.id.as_str())
        .await
    {
        Ok(state) => TrackingSummary::new(&state),
        Err(error) => {
            tracing::warn!(load = %load.id, %error, "tracking summary unavailable");
            TrackingSummary::default()
        }
    }
}

async fn list(
    principal: Principal,
    services: web::Data<Services>,
    req: HttpRequest,
) -> Result<HttpResponse, ApiError> {
    let mut query = QueryParams::parse(&req)?;
    let (page, limit) = query.pagination();
    let filter = LoadFilter {
        status: query.take("status", LoadStatus::parse),
        origin_state: query.take("origin_state", UsState::parse),
        destination_state: query.take("destination_state", UsState::parse),
    };
    query.finish()?;
    let found = services
        .loads
        .list(principal.account_id(), &filter, page_request(page, limit))
        .await?;
    let views: Vec<LoadView> = found.items.iter().map(LoadView::new).collect();
    Ok(envelope::list(
        "loads",
        views,
        PageInfo {
            page,
            limit,
            total: found.total,
        },
    ))
}

async fn change_status(
    principal: Principal,
    _: NoQuery,
    services: web::Data<Services>,
    id: web::Path<String>,
    JsonBody(input): JsonBody<StatusChangeInput>,
) -> Result<HttpResponse, ApiError> {
    let change = input.validate()?;
    let load = services
        .loads
        .change_status(principal.account_id(), &id, change)
        .await?;
    let tracking = tracking_summary(&services, &principal, &load).await;
    Ok(envelope::ok(LoadView::with_tracking(&load, tracking)))
}

pub fn configure(cfg: &mut web::ServiceConfig) {
    cfg.service(
        web::resource("/loads")
            .route(web::post().to(create))
            .route(web::get().to(list))
            .default_service(super::only("GET, POST")),
    )
    .service(
        web::resource("/loads/{load_id}")
            .route(web::get().to(get))
            .default_service(super::only("GET")),
    )
    .service(
        web::resource("/loads/{load_id}/status")
            .route(web::patch().to(change_status))
            .default_service(super::only("PATCH")),
    );
}
