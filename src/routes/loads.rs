//! `/v1/loads`: create, read, list and change status.

use actix_web::{HttpRequest, HttpResponse, web};

use crate::api::envelope::{self, Envelope, PageInfo};
use crate::api::error::ApiError;
use crate::api::extract::{JsonBody, NoQuery, QueryParams, page_request};
use crate::api::input::load::{NewLoadInput, StatusChangeInput};
use crate::api::path::PathId;
use crate::domain::ids::LoadId;
use crate::domain::load::{Load, LoadStatus};
use crate::domain::location::UsState;
use crate::domain::stops::{StopKind, StopsProgress};
use crate::openapi::params;
use crate::openapi::schemas::{Error, LoadList, StatusChangeBody};
use crate::services::Services;
use crate::services::auth::Principal;
use crate::services::stop_filters::{self, StopFilter};
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
    responses((status = 201, description = "The load, as stored.", body = Envelope<LoadView>)),
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
    let tracking = tracking_summary(&services, &principal, &load).await;
    let device = attached_device(&services, &principal, &load).await;
    let progress = stop_progress(&services, &load).await;
    let stops = progress.map(|p| {
        StopView::of_load(
            &load,
            &p,
            &principal.account.stop_settings,
            services.clock.now(),
        )
    });
    Ok(envelope::ok(
        LoadView::retrieved(&load, tracking, device).with_stops(stops),
    ))
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
        .current(principal.account_id(), &load.id)
        .await
    {
        Ok(state) => TrackingSummary::new(&state),
        Err(error) => {
            tracing::warn!(request_id = %crate::telemetry::request_id(), load = %load.id, error = %error_chain(&error), "tracking summary unavailable");
            TrackingSummary::default()
        }
    }
}

/// List loads, newest first.
///
/// List items leave out `tracking` (get a load by id for it). `late_risk`
/// and `at_stop` look at each of the account's tracked loads, so they cost
/// more than the other filters as the loads on the road grow.
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
    let filter = LoadFilter {
        status: query.take("status", LoadStatus::parse),
        origin_state: query.take("origin_state", UsState::parse),
        destination_state: query.take("destination_state", UsState::parse),
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
    query.finish()?;
    let account = principal.account_id();
    let page_request = page_request(page, limit);
    let found = match stops.is_empty() {
        true => services.loads.list(account, &filter, page_request).await?,
        false => stop_filters::list(&services, account, &filter, stops, page_request).await?,
    };
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

/// Change a load's status (assign, start, deliver, unassign).
///
/// Allowed moves: `posted` → `assigned` (with `carrier_id`), `assigned` →
/// `in_transit` or `posted` (unassign), `in_transit` → `delivered`; `delivered`
/// is final. Repeating the current status changes nothing and answers 200.
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
    let tracking = tracking_summary(&services, &principal, &load).await;
    let device = attached_device(&services, &principal, &load).await;
    let progress = stop_progress(&services, &load).await;
    let stops = progress.map(|p| {
        StopView::of_load(
            &load,
            &p,
            &principal.account.stop_settings,
            services.clock.now(),
        )
    });
    Ok(envelope::ok(
        LoadView::retrieved(&load, tracking, device).with_stops(stops),
    ))
}

resources! {
    "/loads" => [GET => list, POST => create],
    "/loads/{load_id}" => [GET => get],
    "/loads/{load_id}/status" => [PATCH => change_status],
}
