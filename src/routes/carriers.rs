//! `/v1/carriers`: register, read and list carriers.

use actix_web::{HttpResponse, web};

use crate::api::envelope;
use crate::api::error::ApiError;
use crate::api::extract::{JsonBody, NoQuery, Paging};
use crate::api::views::CarrierView;
use crate::domain::carrier::NewCarrierInput;
use crate::services::Services;
use crate::services::auth::Principal;

async fn create(
    principal: Principal,
    _: NoQuery,
    services: web::Data<Services>,
    JsonBody(input): JsonBody<NewCarrierInput>,
) -> Result<HttpResponse, ApiError> {
    let new = input.validate()?;
    let carrier = services
        .carriers
        .create(principal.account_id(), new)
        .await?;
    Ok(envelope::created(CarrierView::new(&carrier)))
}

async fn get(
    principal: Principal,
    _: NoQuery,
    services: web::Data<Services>,
    id: web::Path<String>,
) -> Result<HttpResponse, ApiError> {
    let carrier = services.carriers.get(principal.account_id(), &id).await?;
    Ok(envelope::ok(CarrierView::new(&carrier)))
}

async fn list(
    principal: Principal,
    services: web::Data<Services>,
    paging: Paging,
) -> Result<HttpResponse, ApiError> {
    let found = services
        .carriers
        .list(principal.account_id(), paging.request())
        .await?;
    let views: Vec<CarrierView> = found.items.iter().map(CarrierView::new).collect();
    Ok(envelope::list("carriers", views, paging.info(found.total)))
}

pub fn configure(cfg: &mut web::ServiceConfig) {
    cfg.service(
        web::resource("/carriers")
            .route(web::post().to(create))
            .route(web::get().to(list))
            .default_service(super::only("GET, POST")),
    )
    .service(
        web::resource("/carriers/{carrier_id}")
            .route(web::get().to(get))
            .default_service(super::only("GET")),
    );
}
