//! `/v1/carriers`: register, read and list carriers.

use actix_web::{HttpResponse, web};

use crate::api::envelope::{self, Envelope};
use crate::api::error::ApiError;
use crate::api::extract::{JsonBody, NoQuery, Paging};
use crate::api::input::carrier::NewCarrierInput;
use crate::api::path::PathId;
use crate::domain::ids::CarrierId;
use crate::openapi::params;
use crate::openapi::schemas::{CarrierList, Error};
use crate::services::Services;
use crate::services::auth::Principal;
use crate::views::load::CarrierView;

/// Register a carrier.
#[utoipa::path(
    post,
    path = "/v1/carriers",
    operation_id = "create_carrier",
    tag = "carriers",
    request_body(content = NewCarrierInput, example = json!({
        "name": "Lone Star Hauling",
        "mc_number": "123456",
        "dot_number": "2233445",
        "contact": {"email": "dispatch@lonestar.example", "phone": "+1 214-555-0100"},
        "equipment_types": ["dry_van", "refrigerated"],
        "service_areas": ["TX", "OK", "GA"]
    })),
    responses(
        (status = 201, description = "The carrier, as stored.", body = Envelope<CarrierView>),
        (status = 409, description = "`DUPLICATE_CARRIER`: this account already has a carrier \
         with this MC number (`details.existing_carrier_id`).", body = Error),
    ),
)]
pub(crate) async fn create(
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

/// Get a carrier.
#[utoipa::path(
    get,
    path = "/v1/carriers/{carrier_id}",
    operation_id = "get_carrier",
    tag = "carriers",
    params(("carrier_id" = CarrierId, Path, description = "The carrier.")),
    responses((status = 200, description = "The carrier.", body = Envelope<CarrierView>)),
)]
pub(crate) async fn get(
    principal: Principal,
    _: NoQuery,
    services: web::Data<Services>,
    id: PathId<CarrierId>,
) -> Result<HttpResponse, ApiError> {
    let carrier = services
        .carriers
        .get(principal.account_id(), &id.found()?)
        .await?;
    Ok(envelope::ok(CarrierView::new(&carrier)))
}

/// List carriers, newest first.
#[utoipa::path(
    get,
    path = "/v1/carriers",
    operation_id = "list_carriers",
    tag = "carriers",
    params(params::Paging),
    responses((status = 200, description = "A page of carriers.", body = CarrierList)),
)]
pub(crate) async fn list(
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

resources! {
    "/carriers" => [GET => list, POST => create],
    "/carriers/{carrier_id}" => [GET => get],
}
