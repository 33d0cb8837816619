//! `/v1/carriers`: register, read, list, change and delete carriers.

use actix_web::{HttpResponse, web};
use serde_json::json;

use crate::api::envelope::{self, Envelope};
use crate::api::error::ApiError;
use crate::api::extract::{JsonBody, NoQuery, Paging};
use crate::api::input::carrier::{CarrierChangeInput, NewCarrierInput};
use crate::api::path::PathId;
use crate::domain::ids::CarrierId;
use crate::openapi::params;
use crate::openapi::schemas::{CarrierList, DeletedCarrier, Error};
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

/// Change a carrier.
///
/// Name, USDOT number, contact, equipment and service areas; only the fields
/// sent change (`null` clears the USDOT number or a part of the contact; a list
/// replaces the list). The MC number cannot change. Loads keep the carrier as it
/// was when they were assigned.
#[utoipa::path(
    patch,
    path = "/v1/carriers/{carrier_id}",
    operation_id = "update_carrier",
    tag = "carriers",
    params(("carrier_id" = CarrierId, Path, description = "The carrier.")),
    request_body(content = CarrierChangeInput, example = json!({
        "contact": {"phone": "+1 214-555-0199"},
        "service_areas": ["TX", "OK", "GA", "AL"]
    })),
    responses(
        (status = 200, description = "The carrier after the change.", body = Envelope<CarrierView>),
        (status = 400, description = "`VALIDATION_FAILED`: a field, as on create, or \
         `mc_number`, which cannot change.", body = Error),
    ),
)]
pub(crate) async fn update(
    principal: Principal,
    _: NoQuery,
    services: web::Data<Services>,
    id: PathId<CarrierId>,
    JsonBody(input): JsonBody<CarrierChangeInput>,
) -> Result<HttpResponse, ApiError> {
    let edit = input.validate()?;
    let carrier = services
        .carriers
        .edit(principal.account_id(), &id.found()?, &edit)
        .await?;
    Ok(envelope::ok(CarrierView::new(&carrier)))
}

/// Delete a carrier.
///
/// Refused while the carrier has a load assigned or in transit (409
/// `CARRIER_HAS_ACTIVE_LOADS`, naming up to 10 in `details.load_ids`).
/// Loads it delivered keep their snapshot of it. Its MC number is free again.
#[utoipa::path(
    delete,
    path = "/v1/carriers/{carrier_id}",
    operation_id = "delete_carrier",
    tag = "carriers",
    params(("carrier_id" = CarrierId, Path, description = "The carrier.")),
    responses(
        (status = 200, description = "Deleted.", body = Envelope<DeletedCarrier>),
        (status = 409, description = "`CARRIER_HAS_ACTIVE_LOADS` (`details.load_ids`).", body = Error),
    ),
)]
pub(crate) async fn delete(
    principal: Principal,
    _: NoQuery,
    services: web::Data<Services>,
    id: PathId<CarrierId>,
) -> Result<HttpResponse, ApiError> {
    let id = id.found()?;
    services
        .carriers
        .delete(principal.account_id(), &id)
        .await?;
    Ok(envelope::ok(json!({"id": id.as_str(), "deleted": true})))
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
    "/carriers/{carrier_id}" => [GET => get, PATCH => update, DELETE => delete],
}
