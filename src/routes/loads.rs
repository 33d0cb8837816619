//! `/v1/loads`: create, read, list and change status.

use actix_web::{HttpRequest, HttpResponse, web};

use crate::api::envelope::{self, Envelope, PageInfo};
use crate::api::error::ApiError;
use crate::api::extract::{JsonBody, NoQuery, QueryParams, page_request};
use crate::api::input::load::{LoadChangeInput, NewLoadInput, StatusChangeInput};
use crate::api::path::{PathId, SecondPathId};
use crate::domain::equipment::EquipmentType;
use crate::domain::ids::{CarrierId, LoadId, StopId};
use crate::domain::load::{Load, LoadStatus, MAX_REFERENCE_CHARS, parse_reference};
use crate::domain::location::{UsState, parse_zip};
use crate::domain::stops::{StopKind, StopsProgress};
use crate::domain::timestamp;
use crate::domain::tracking::TrackingState;
use crate::openapi::params;
use crate::openapi::schemas::{Error, LoadList, StatusChangeBody};
use crate::services::Services;
use crate::services::auth::Principal;
use crate::services::load_search::{self, FieldFilter, LoadQuery, StopFilter};
use crate::storage::LoadFilter;
use crate::telemetry::error_chain;
use crate::views::device::AttachedDevice;
use crate::views::load::LoadView;
use crate::views::stops::StopView;
use crate::views::tracking::TrackingSummary;

/// Post a load.
///
/// The new load is `posted`, with an empty tracking summary.
#[utoipa::path(
    post,
    path = "/v1/loads",
    operation_id = "create_load",
    tag = "loads",
    request_body(content = NewLoadInput, example = json!({
        "origin": {"city": "Dallas", "state": "TX", "zip": "75201", "address": "1200 Main St"},
        "destination": {"city": "Atlanta", "state": "GA", "zip": "30301"},
        "weight": 42000,
        "equipment_type": "dry_van",
        "pickup_date": "2026-11-25T14:00:00Z",
        "delivery_date": "2026-11-26T17:00:00Z",
        "rate": 1850.5,
        "notes": "Dock 4, call ahead"
    })),
    responses(
        (status = 201, description = "The load, as stored.", body = Envelope<LoadView>),
        (status = 409, description = "`REFERENCE_TAKEN`: another load of the account has this \
         `reference` (`details.load_id`).", body = Error),
    ),
)]
pub(crate) async fn create(
    principal: Principal,
    _: NoQuery,
    services: web::Data<Services>,
    JsonBody(input): JsonBody<NewLoadInput>,
) -> Result<HttpResponse, ApiError> {
    let new = input.validate()?;
    let load = services.loads.create(&principal.account, new).await?;
    // A new load has no fixes yet and no device: both are known to be empty.
    Ok(envelope::created(LoadView::retrieved(
        &load,
        TrackingSummary::default(),
        Some(None),
    )))
}

/// Get a load, with its tracking summary.
#[utoipa::path(
    get,
    path = "/v1/loads/{load_id}",
    operation_id = "get_load",
    tag = "loads",
    params(("load_id" = LoadId, Path, description = "The load.")),
    responses((status = 200, description = "The load.", body = Envelope<LoadView>)),
)]
pub(crate) async fn get(
    principal: Principal,
    _: NoQuery,
    services: web::Data<Services>,
    id: PathId<LoadId>,
) -> Result<HttpResponse, ApiError> {
    let load = services
        .loads
        .get(principal.account_id(), &id.found()?)
        .await?;
    Ok(retrieved(&services, &principal, &load).await)
}

/// Correct a load.
///
/// Only the fields sent change; `null` clears an optional one. Checked as on
/// create. Nothing changes once the load is `delivered` or `cancelled`, and
/// `origin` and `destination` only while it is `posted` (409
/// `LOAD_NOT_EDITABLE`, with `details.current_status` and `details.fields`).
/// A change sends `load.updated` with the names of the changed fields; a
/// request that changes nothing sends nothing and answers 200.
#[utoipa::path(
    patch,
    path = "/v1/loads/{load_id}",
    operation_id = "update_load",
    tag = "loads",
    params(("load_id" = LoadId, Path, description = "The load.")),
    request_body(content = LoadChangeInput, example = json!({
        "weight": 40500, "reference": "PO-44172", "notes": null
    })),
    responses(
        (status = 200, description = "The load after the change.", body = Envelope<LoadView>),
        (status = 400, description = "`VALIDATION_FAILED`: a field, as on create (also \
         `delivery_date` before the load's `pickup_date`).", body = Error),
        (status = 409, description = "`LOAD_NOT_EDITABLE` (`details.current_status`, \
         `details.fields`) or `REFERENCE_TAKEN` (`details.load_id`: the load that has it).", body = Error),
    ),
)]
pub(crate) async fn update(
    principal: Principal,
    _: NoQuery,
    services: web::Data<Services>,
    id: PathId<LoadId>,
    JsonBody(input): JsonBody<LoadChangeInput>,
) -> Result<HttpResponse, ApiError> {
    let edit = input.validate()?;
    let load = services
        .loads
        .edit(principal.account_id(), &id.found()?, edit)
        .await?;
    Ok(retrieved(&services, &principal, &load).await)
}

/// A load as `GET /v1/loads/{id}` shows it: with its tracking summary, its
/// device and its stops.
async fn retrieved(services: &Services, principal: &Principal, load: &Load) -> HttpResponse {
    let state = tracking_state(services, principal, load).await;
    let estimate = state.as_ref().and_then(|s| s.estimate());
    let tracking = state.as_ref().map_or_else(TrackingSummary::default, |s| {
        TrackingSummary::new(s, estimate.as_ref())
    });
    let device = attached_device(services, principal, load).await;
    let progress = stop_progress(services, load).await;
    let planned = load.stops();
    let stops = progress.map(|p| {
        StopView::of_load(
            load,
            &planned,
            &p,
            estimate.as_ref(),
            &principal.account.stop_settings,
            services.clock.now(),
        )
    });
    envelope::ok(LoadView::retrieved(load, tracking, device).with_stops(stops))
}

/// The load's device for its view. The load is already read (or changed,
/// durably): if its device cannot be read now, the field is left out rather
/// than the answer turned into a 503 that would claim nothing happened.
async fn attached_device(
    services: &Services,
    principal: &Principal,
    load: &Load,
) -> Option<Option<AttachedDevice>> {
    match services
        .devices
        .device_of_load(principal.account_id(), &load.id)
        .await
    {
        Ok(device) => Some(device.as_ref().map(AttachedDevice::new)),
        Err(error) => {
            tracing::warn!(request_id = %crate::telemetry::request_id(), load = %load.id, %error, "a load's device could not be read for its view");
            None
        }
    }
}

/// The load's stop progress for its view; as for the device, a failed read
/// leaves the field out.
async fn stop_progress(services: &Services, load: &Load) -> Option<StopsProgress> {
    match services.storage.load_stops(&load.id).await {
        Ok(progress) => Some(progress.unwrap_or_default()),
        Err(error) => {
            tracing::warn!(request_id = %crate::telemetry::request_id(), load = %load.id, %error, "a load's stops could not be read for its view");
            None
        }
    }
}

/// The load's tracking state from its actor. The load itself is already read (or
/// already changed, durably): if its tracking cannot be read now, the answer still
/// goes out, with an empty summary and no ETAs, rather than a 503 that would claim
/// nothing happened.
async fn tracking_state(
    services: &Services,
    principal: &Principal,
    load: &Load,
) -> Option<TrackingState> {
    match services
        .tracking
        .current(principal.account_id(), &load.id)
        .await
    {
        Ok(state) => Some(state),
        Err(error) => {
            tracing::warn!(request_id = %crate::telemetry::request_id(), load = %load.id, error = %error_chain(&error), "tracking summary unavailable");
            None
        }
    }
}

/// Every query parameter of `GET /v1/loads`, as its refusal of another lists them.
const LIST_PARAMETERS: &[&str] = &[
    "page",
    "limit",
    "status",
    "origin_state",
    "destination_state",
    "reference",
    "carrier_id",
    "equipment_type",
    "pickup_from",
    "pickup_to",
    "q",
    "late_risk",
    "at_stop",
    "stop_state",
    "stop_zip",
];

/// List loads, newest first.
///
/// List items leave out `tracking` (get a load by id for it). Filters combine
/// (AND). `status`, `origin_state`, `destination_state` and `reference` are
/// indexed; the others look at each load of the indexed range (`late_risk`
/// and `at_stop`: each tracked load; `stop_state` and `stop_zip`: every stop
/// of each load), so they cost more as the account's loads grow.
#[utoipa::path(
    get,
    path = "/v1/loads",
    operation_id = "list_loads",
    tag = "loads",
    params(params::Paging, params::LoadFilters),
    responses((status = 200, description = "A page of loads.", body = LoadList)),
)]
pub(crate) async fn list(
    principal: Principal,
    services: web::Data<Services>,
    req: HttpRequest,
) -> Result<HttpResponse, ApiError> {
    let mut query = QueryParams::parse(&req)?;
    let (page, limit) = query.pagination();
    let indexed = LoadFilter {
        status: query.take("status", LoadStatus::parse),
        origin_state: query.take("origin_state", UsState::parse),
        destination_state: query.take("destination_state", UsState::parse),
    };
    let reference = query.take("reference", parse_reference);
    let fields = FieldFilter {
        carrier_id: query.take("carrier_id", |raw| {
            CarrierId::parse(raw.trim()).ok_or_else(|| "must be a carrier id (carrier_...)".into())
        }),
        equipment_type: query.take("equipment_type", EquipmentType::parse),
        pickup_from: query.take("pickup_from", timestamp::parse_utc_in_query),
        pickup_to: query.take("pickup_to", timestamp::parse_utc_in_query),
        q: query.take("q", |raw| match raw.trim() {
            "" => Err("must not be empty".to_owned()),
            q if q.chars().count() > MAX_REFERENCE_CHARS => {
                Err(format!("must be at most {MAX_REFERENCE_CHARS} characters"))
            }
            q => Ok(q.to_owned()),
        }),
        stop_state: query.take("stop_state", UsState::parse),
        stop_zip: query.take("stop_zip", parse_zip),
    };
    let stops = StopFilter {
        late_risk: query.take("late_risk", |raw| match raw {
            "true" => Ok(true),
            "false" => Ok(false),
            _ => Err("must be true or false".to_owned()),
        }),
        at_stop: query.take("at_stop", |raw| {
            StopKind::parse(raw).ok_or_else(|| "must be pickup or delivery".to_owned())
        }),
    };
    query.finish_allowing(LIST_PARAMETERS)?;
    let query = LoadQuery {
        indexed,
        reference,
        fields,
        stops,
    };
    let found = load_search::list(
        &services,
        principal.account_id(),
        &query,
        page_request(page, limit),
    )
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

/// Change a load's status (assign, start, deliver, unassign, cancel).
///
/// Allowed moves: `posted` → `assigned` (with `carrier_id`) or `cancelled`,
/// `assigned` → `in_transit`, `posted` (unassign) or `cancelled`, `in_transit`
/// → `delivered`; `delivered` and `cancelled` are final (a load cannot be
/// cancelled once picked up). Repeating the current status changes nothing and
/// answers 200.
#[utoipa::path(
    patch,
    path = "/v1/loads/{load_id}/status",
    operation_id = "change_load_status",
    tag = "loads",
    params(("load_id" = LoadId, Path, description = "The load.")),
    request_body(content = StatusChangeBody, examples(
        ("assign" = (summary = "Assign to a carrier", value = json!({
            "status": "assigned", "carrier_id": "carrier_01jd5ex0k3m2v8q4r6t9w1y3z5"
        }))),
        ("pick up" = (summary = "Start the trip", value = json!({
            "status": "in_transit", "location": {"lat": 32.7767, "lng": -96.797}, "notes": "Picked up"
        }))),
        ("cancel" = (summary = "Cancel before pickup", value = json!({
            "status": "cancelled", "notes": "Shipper withdrew the order"
        }))),
    )),
    responses(
        (status = 200, description = "The load after the change.", body = Envelope<LoadView>),
        (status = 400, description = "`VALIDATION_FAILED` (a field, or `carrier_id` missing when \
         assigning or given with another status) or `UNKNOWN_CARRIER` (`carrier_id` names no \
         carrier of this account).", body = Error),
        (status = 409, description = "`INVALID_STATUS_TRANSITION` (`details.current_status`, \
         `requested_status`, `allowed_next`) or `LOAD_ALREADY_ASSIGNED` (to another carrier; \
         `details.current_carrier_id`): unassign first.", body = Error),
    ),
)]
pub(crate) async fn change_status(
    principal: Principal,
    _: NoQuery,
    services: web::Data<Services>,
    id: PathId<LoadId>,
    JsonBody(input): JsonBody<StatusChangeInput>,
) -> Result<HttpResponse, ApiError> {
    let change = input.validate()?;
    let load = services
        .loads
        .change_status(principal.account_id(), &id.found()?, change)
        .await?;
    if load.status == LoadStatus::Delivered {
        services.tracking.delivered(principal.account_id());
    }
    Ok(retrieved(&services, &principal, &load).await)
}

/// Skip a stop.
///
/// Marks the stop `skipped`: freight no longer watches for the truck there,
/// and ETAs chain past it. Sends `load.updated` (`changed: ["stops"]`) and
/// `load.stop_skipped` (`source: api`). A stop skipped already answers 200
/// and sends nothing. A stop the truck has arrived at cannot be skipped.
#[utoipa::path(
    post,
    path = "/v1/loads/{load_id}/stops/{stop_id}/skip",
    operation_id = "skip_stop",
    tag = "loads",
    params(
        ("load_id" = LoadId, Path, description = "The load."),
        ("stop_id" = String, Path, description = "The stop (`stop_...`)."),
    ),
    responses(
        (status = 200, description = "The load after the change.", body = Envelope<LoadView>),
        (status = 404, description = "`INVALID_LOAD` or `INVALID_STOP` (the load has no such stop).", body = Error),
        (status = 409, description = "`STOP_FROZEN` (`details.stop_id`: the truck has arrived \
         there) or `LOAD_NOT_EDITABLE` (the load is delivered or cancelled).", body = Error),
    ),
)]
pub(crate) async fn skip_stop(
    principal: Principal,
    _: NoQuery,
    services: web::Data<Services>,
    id: PathId<LoadId>,
    stop: SecondPathId<StopId>,
) -> Result<HttpResponse, ApiError> {
    let id = id.found()?;
    // The load first: another account's load is not found, whatever the stop.
    services.loads.get(principal.account_id(), &id).await?;
    let load = services
        .loads
        .skip_stop(principal.account_id(), &id, stop.found()?)
        .await?;
    Ok(retrieved(&services, &principal, &load).await)
}

resources! {
    "/loads" => [GET => list, POST => create],
    "/loads/{load_id}" => [GET => get, PATCH => update],
    "/loads/{load_id}/status" => [PATCH => change_status],
    "/loads/{load_id}/stops/{stop_id}/skip" => [POST => skip_stop],
}
