//! `/v1/devices`: create, read, list and revoke devices; and
//! `/v1/loads/{load_id}/device`: attach a device to a load, detach it.
//! (What devices post is `routes::ingest`.)

use actix_web::{HttpRequest, HttpResponse, web};
use serde_json::json;

use crate::api::envelope::{self, Envelope};
use crate::api::error::ApiError;
use crate::api::extract::{JsonBody, NoQuery, Paging};
use crate::api::input::device::{AttachDeviceInput, DeviceChangeInput, NewDeviceInput};
use crate::api::path::PathId;
use crate::domain::ids::{DeviceId, LoadId};
use crate::openapi::params;
use crate::openapi::schemas::{DeletedDevice, DeviceList, Error};
use crate::services::Services;
use crate::services::auth::Principal;
use crate::views::device::{AttachedDevice, DeviceView, IngestSettings, NewDeviceView};

/// Create a device.
///
/// The answer holds the device's token, shown this once, and per app the
/// exact settings to type in (`ingest`). The token authenticates only this
/// device's position posts (`/v1/ingest/…`), nothing else.
#[utoipa::path(
    post,
    path = "/v1/devices",
    operation_id = "create_device",
    tag = "devices",
    request_body(content = NewDeviceInput, example = json!({"name": "Truck 12", "identifier": "356307042441013"})),
    responses(
        (status = 201, description = "The device, its token and its apps' settings.", body = Envelope<NewDeviceView>),
        (status = 409, description = "`IDENTIFIER_TAKEN`: another device, of this account or \
         another, has the identifier.", body = Error),
    ),
)]
pub(crate) async fn create(
    principal: Principal,
    _: NoQuery,
    services: web::Data<Services>,
    req: HttpRequest,
    JsonBody(input): JsonBody<NewDeviceInput>,
) -> Result<HttpResponse, ApiError> {
    let new = input.validate()?;
    let issued = services.devices.create(principal.account_id(), new).await?;
    let origin = crate::api::origin::public_origin(&req);
    let ingest = IngestSettings::new(&origin, &issued.token);
    Ok(envelope::created(NewDeviceView::new(
        &issued.device,
        issued.token,
        ingest,
    )))
}

/// Get a device.
#[utoipa::path(
    get,
    path = "/v1/devices/{device_id}",
    operation_id = "get_device",
    tag = "devices",
    params(("device_id" = String, Path, description = "The device.")),
    responses((status = 200, description = "The device.", body = Envelope<DeviceView>)),
)]
pub(crate) async fn get(
    principal: Principal,
    _: NoQuery,
    services: web::Data<Services>,
    id: PathId<DeviceId>,
) -> Result<HttpResponse, ApiError> {
    let (device, loads) = services
        .devices
        .get(principal.account_id(), &id.found()?)
        .await?;
    let standing = services.devices.standing(&device.id);
    Ok(envelope::ok(DeviceView::new(&device, &loads, &standing)))
}

/// Change a device.
///
/// Its name, carrier or identifier; only the fields sent change, `null`
/// clears the carrier or the identifier (freeing it for another device). A
/// tracker connected under the old identifier is refused from its next packet.
#[utoipa::path(
    patch,
    path = "/v1/devices/{device_id}",
    operation_id = "update_device",
    tag = "devices",
    params(("device_id" = String, Path, description = "The device.")),
    request_body(content = DeviceChangeInput, example = json!({"identifier": "356307042441013"})),
    responses(
        (status = 200, description = "The device after the change.", body = Envelope<DeviceView>),
        (status = 409, description = "`IDENTIFIER_TAKEN`: another device, of this account or \
         another, has the identifier.", body = Error),
    ),
)]
pub(crate) async fn update(
    principal: Principal,
    _: NoQuery,
    services: web::Data<Services>,
    id: PathId<DeviceId>,
    JsonBody(input): JsonBody<DeviceChangeInput>,
) -> Result<HttpResponse, ApiError> {
    let edit = input.validate()?;
    let (device, loads) = services
        .devices
        .edit(principal.account_id(), &id.found()?, edit)
        .await?;
    let standing = services.devices.standing(&device.id);
    Ok(envelope::ok(DeviceView::new(&device, &loads, &standing)))
}

/// List the account's devices, oldest first.
#[utoipa::path(
    get,
    path = "/v1/devices",
    operation_id = "list_devices",
    tag = "devices",
    params(params::Paging),
    responses((status = 200, description = "A page of devices.", body = DeviceList)),
)]
pub(crate) async fn list(
    principal: Principal,
    services: web::Data<Services>,
    paging: Paging,
) -> Result<HttpResponse, ApiError> {
    let devices = services.devices.list(principal.account_id()).await?;
    let page = paging.request();
    let views: Vec<DeviceView> = devices
        .iter()
        .skip(page.offset as usize)
        .take(page.limit as usize)
        .map(|(device, loads)| {
            DeviceView::new(device, loads, &services.devices.standing(&device.id))
        })
        .collect();
    Ok(envelope::list(
        "devices",
        views,
        paging.info(devices.len() as u64),
    ))
}

/// Revoke a device.
///
/// Its token stops working at once, and it is detached from its loads; the
/// positions it posted stay with them.
#[utoipa::path(
    delete,
    path = "/v1/devices/{device_id}",
    operation_id = "delete_device",
    tag = "devices",
    params(("device_id" = String, Path, description = "The device.")),
    responses((status = 200, description = "Revoked.", body = Envelope<DeletedDevice>)),
)]
pub(crate) async fn delete(
    principal: Principal,
    _: NoQuery,
    services: web::Data<Services>,
    id: PathId<DeviceId>,
) -> Result<HttpResponse, ApiError> {
    let id = id.found()?;
    services.devices.delete(principal.account_id(), &id).await?;
    Ok(envelope::ok(json!({"id": id.as_str(), "deleted": true})))
}

/// Attach a device to a load.
///
/// Allowed in any status; the device's positions become the load's fixes
/// while it is `assigned` or `in_transit`. A load has one device at most: this
/// replaces the one it had. A device may feed several loads.
#[utoipa::path(
    put,
    path = "/v1/loads/{load_id}/device",
    operation_id = "attach_device",
    tag = "devices",
    params(("load_id" = LoadId, Path, description = "The load.")),
    request_body(content = AttachDeviceInput, example = json!({"device_id": "dev_01jd8y6m2x0q3v5p7r9t1w3y5z"})),
    responses(
        (status = 200, description = "The device now attached.", body = Envelope<AttachedDevice>),
        (status = 400, description = "`UNKNOWN_DEVICE`: `device_id` names no device of this \
         account (`details.field`).", body = Error),
    ),
)]
pub(crate) async fn attach(
    principal: Principal,
    _: NoQuery,
    services: web::Data<Services>,
    id: PathId<LoadId>,
    JsonBody(input): JsonBody<AttachDeviceInput>,
) -> Result<HttpResponse, ApiError> {
    let device = input.validate()?;
    let load = id.found()?;
    let device = services
        .devices
        .attach(principal.account_id(), &load, &device)
        .await?;
    Ok(envelope::ok(AttachedDevice::new(&device)))
}

/// Detach the load's device (none attached: nothing to do).
#[utoipa::path(
    delete,
    path = "/v1/loads/{load_id}/device",
    operation_id = "detach_device",
    tag = "devices",
    params(("load_id" = LoadId, Path, description = "The load.")),
    responses((status = 200, description = "The load has no device now.", body = Envelope<Option<AttachedDevice>>)),
)]
pub(crate) async fn detach(
    principal: Principal,
    _: NoQuery,
    services: web::Data<Services>,
    id: PathId<LoadId>,
) -> Result<HttpResponse, ApiError> {
    services
        .devices
        .detach(principal.account_id(), &id.found()?)
        .await?;
    Ok(envelope::ok(serde_json::Value::Null))
}

resources! {
    "/devices" => [GET => list, POST => create],
    "/devices/{device_id}" => [GET => get, PATCH => update, DELETE => delete],
    "/loads/{load_id}/device" => [PUT => attach, DELETE => detach],
}
