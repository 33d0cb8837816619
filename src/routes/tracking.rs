//! GPS tracking: `POST/GET /v1/loads/{id}/tracking`, history, and bulk ingest.

use actix_web::{HttpRequest, HttpResponse, web};
use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use crate::actors::load_actor::RECENT_FIXES;
use crate::api::envelope::{self, Envelope, PageInfo};
use crate::api::error::ApiError;
use crate::api::extract::{
    BATCH_BODY_LIMIT, BodyLimit, JsonBody, JsonBytes, NoQuery, QueryParams, parse_json,
    whole_number,
};
use crate::api::input::tracking::FixInput;
use crate::api::path::PathId;
use crate::domain::ids::LoadId;
use crate::domain::timestamp;
use crate::domain::tracking::Appended;
use crate::domain::validation::ValidationErrors;
use crate::openapi::params;
use crate::openapi::schemas::GpsHistory;
use crate::services::Services;
use crate::services::auth::Principal;
use crate::services::tracking::{PointBatch, PointOutcome};
use crate::storage::PointRange;
use crate::views::tracking::{LiveTracking, PointView, RecordedFix};

/// Points accepted in one bulk request.
pub const MAX_BATCH_POINTS: usize = 1_000;
pub const DEFAULT_HISTORY_LIMIT: usize = 100;
pub const MAX_HISTORY_LIMIT: usize = 1_000;

/// Record one GPS fix of a load.
///
/// Accepted only while the load is `assigned` or `in_transit`. Answered once the
/// fix is durable and in the load's live state. A fix with the same timestamp as
/// a stored one is a duplicate: nothing is written and the answer is 200 with
/// `duplicate: true`.
#[utoipa::path(
    post,
    path = "/v1/loads/{load_id}/tracking",
    operation_id = "record_gps_fix",
    tag = "tracking",
    params(("load_id" = LoadId, Path, description = "The load the fix belongs to.")),
    request_body(content = FixInput, example = json!({
        "lat": 32.7767, "lng": -96.797, "timestamp": "2026-11-24T16:04:37Z", "speed": 61.5, "heading": 92
    })),
    responses(
        (status = 201, description = "The fix was stored.", body = Envelope<RecordedFix>),
        (status = 200, description = "A fix with this timestamp was already stored; nothing was \
         written. The answer shows the stored fix (`duplicate: true`), not the one just sent.",
         body = Envelope<RecordedFix>),
        (status = 409, description = "`LOAD_NOT_TRACKABLE`: the load is not `assigned` or `in_transit` \
         (`details.current_status`).", body = crate::openapi::schemas::Error),
    ),
)]
pub(crate) async fn record(
    principal: Principal,
    services: web::Data<Services>,
    id: PathId<LoadId>,
    _: NoQuery,
    JsonBody(input): JsonBody<FixInput>,
) -> Result<HttpResponse, ApiError> {
    let mut errors = ValidationErrors::new();
    if input.load_id.is_some() {
        errors.add("load_id", "is given by the path; leave it out of the body");
    }
    let fix = input.validate("", services.clock.now(), &mut errors);
    let fix = errors.finish(|| fix.expect("checked"))?;
    let id = id.found()?;
    let outcome = services
        .tracking
        .record(&principal.account, &id, fix)
        .await?;
    Ok(match outcome {
        Appended::Stored => envelope::created(RecordedFix::new(id.as_str(), &fix, false)),
        // The answer shows what is stored, which may differ from what was
        // just sent (the first fix with this timestamp won).
        Appended::Duplicate => {
            let stored = services
                .tracking
                .stored_fix(&id, fix.timestamp)
                .await?
                .unwrap_or(fix);
            envelope::ok(RecordedFix::new(id.as_str(), &stored, true))
        }
    })
}

/// The live view of a load: latest position, ETA and recent fixes.
///
/// Read from the load's actor, not from storage. `city`/`state` name the nearest
/// ZIP centroid within 50 miles.
#[utoipa::path(
    get,
    path = "/v1/loads/{load_id}/tracking",
    operation_id = "get_live_tracking",
    tag = "tracking",
    params(("load_id" = LoadId, Path, description = "The load."), params::LivePoints),
    responses(
        (status = 200, description = "The load's live tracking.", body = Envelope<LiveTracking>),
    ),
)]
pub(crate) async fn live(
    principal: Principal,
    services: web::Data<Services>,
    id: PathId<LoadId>,
    req: HttpRequest,
) -> Result<HttpResponse, ApiError> {
    let mut query = QueryParams::parse(&req)?;
    let points = query
        .take("points", |raw| {
            whole_number(raw, 0, RECENT_FIXES as u64)
                .map_err(|e| format!("{e}; use /tracking/history for more"))
        })
        .map_or(RECENT_FIXES, |n| n as usize);
    query.finish()?;
    let id = id.found()?;
    let render = |state: &_| envelope::body(LiveTracking::new(id.as_str(), state, points));
    if points == RECENT_FIXES {
        // The usual view (dashboards poll it): rendered once per change.
        let view = services
            .tracking
            .current_view(principal.account_id(), &id, render)
            .await?;
        return Ok(envelope::ok_body(view?));
    }
    let state = services
        .tracking
        .current(principal.account_id(), &id)
        .await?;
    Ok(envelope::ok_body(render(&state)?))
}

/// `c<page>.<µs of the last point returned>`: opaque to clients.
fn parse_cursor(raw: &str) -> Result<(u64, DateTime<Utc>), String> {
    let invalid = || "is not a cursor this service returned".to_string();
    let (page, micros) = raw
        .strip_prefix('c')
        .and_then(|rest| rest.split_once('.'))
        .ok_or_else(invalid)?;
    let page: u64 = page
        .parse()
        .ok()
        .filter(|p| *p < u64::from(u32::MAX))
        .ok_or_else(invalid)?;
    let micros: i64 = micros.parse().map_err(|_| invalid())?;
    let at = DateTime::from_timestamp_micros(micros).ok_or_else(invalid)?;
    Ok((page, at))
}

/// The stored fixes of a load, newest first, a page at a time.
///
/// `from`/`to` are inclusive. Page with the cursor each answer gives in
/// `pagination.next_cursor`.
#[utoipa::path(
    get,
    path = "/v1/loads/{load_id}/tracking/history",
    operation_id = "get_tracking_history",
    tag = "tracking",
    params(("load_id" = LoadId, Path, description = "The load."), params::HistoryQuery),
    responses(
        (status = 200, description = "A page of fixes.", body = GpsHistory),
    ),
)]
pub(crate) async fn history(
    principal: Principal,
    services: web::Data<Services>,
    id: PathId<LoadId>,
    req: HttpRequest,
) -> Result<HttpResponse, ApiError> {
    let mut query = QueryParams::parse(&req)?;
    let from = query.take("from", timestamp::parse_utc_in_query);
    let to = query.take("to", timestamp::parse_utc_in_query);
    let limit = query
        .take("limit", |raw| {
            whole_number(raw, 1, MAX_HISTORY_LIMIT as u64)
        })
        .map_or(DEFAULT_HISTORY_LIMIT, |n| n as usize);
    let cursor = query.take("cursor", parse_cursor);
    // Pages of a time series are cursors, not numbers (a page number would
    // move as fixes arrive): the answer's `pagination.page` says which page it
    // is, and a `page` parameter is refused with what to send instead.
    query.take("page", |_| -> Result<(), String> {
        Err(
            "history pages by cursor: pass the previous answer's pagination.next_cursor as cursor"
                .into(),
        )
    });
    query.finish_allowing(&["from", "to", "limit", "cursor"])?;
    if let (Some(from), Some(to)) = (from, to)
        && to < from
    {
        return Err(ApiError::field(
            actix_web::http::StatusCode::BAD_REQUEST,
            "INVALID_QUERY_PARAMETER",
            "to",
            "must not be before from",
        ));
    }
    let range = PointRange {
        from: from.unwrap_or(DateTime::<Utc>::MIN_UTC),
        to: to.unwrap_or(DateTime::<Utc>::MAX_UTC),
        before: cursor.map(|(_, at)| at),
        limit,
    };
    let page = cursor.map_or(1, |(page, _)| page + 1);
    let found = services
        .tracking
        .history(principal.account_id(), &id.found()?, range)
        .await?;
    // Every page before this one was full: fixes read so far, this page's included.
    let read = (page - 1) * limit as u64 + found.points.len() as u64;
    let next_cursor = (found.points.len() == limit && read < found.total)
        .then(|| found.points.last())
        .flatten()
        .map(|last| format!("c{page}.{}", last.timestamp.timestamp_micros()));
    let points: Vec<PointView> = found.points.iter().map(PointView::new).collect();
    let mut response = envelope::list_value(
        "points",
        points,
        PageInfo {
            page,
            limit: limit as u32,
            total: found.total,
        },
    );
    response["pagination"]["next_cursor"] = json!(next_cursor);
    Ok(HttpResponse::Ok().json(response))
}

/// Up to 1,000 fixes of one or many loads.
#[derive(Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
#[schema(as = GpsBatch)]
pub(crate) struct BatchInput {
    /// The fixes, each a `BatchPoint`. Any JSON value is taken here: a point
    /// that is not a valid `BatchPoint` is not a refusal of the request, it is
    /// rejected on its own in the answer (so the schema of an item is open).
    #[schema(value_type = Vec<serde_json::Value>, min_items = 1, max_items = 1000)]
    points: Vec<FixInput>,
}

/// Each point is judged on its own (see `batch_inputs`).
impl crate::api::extract::BodyInput for BatchInput {}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct LooseBatchInput<'a> {
    #[serde(borrow)]
    points: Vec<&'a serde_json::value::RawValue>,
}

/// Each point as a `FixInput`, or the reason it cannot be one. The whole body is
/// parsed typed first (the fast path); only if that fails is each point parsed
/// on its own, so one malformed point does not sink the others.
fn batch_inputs(body: &[u8]) -> Result<Vec<Result<FixInput, ApiError>>, ApiError> {
    if let Ok(batch) = serde_json::from_slice::<BatchInput>(body) {
        return check_size(batch.points.len()).map(|()| batch.points.into_iter().map(Ok).collect());
    }
    // Each point's raw text, so a point that cannot even be a number (1e400) or
    // repeats a key is judged on its own like any other malformed point.
    let mut de = serde_json::Deserializer::from_slice(body);
    let loose: LooseBatchInput = serde_path_to_error::deserialize(&mut de).map_err(|_| {
        parse_json::<BatchInput>(body)
            .err()
            .unwrap_or_else(not_a_batch)
    })?;
    check_size(loose.points.len())?;
    Ok(loose
        .points
        .into_iter()
        .map(|point| parse_json::<FixInput>(point.get().as_bytes()))
        .collect())
}

fn not_a_batch() -> ApiError {
    ValidationErrors::single("points", "must be an array of points").into()
}

fn check_size(len: usize) -> Result<(), ApiError> {
    if len == 0 || len > MAX_BATCH_POINTS {
        return Err(ValidationErrors::single(
            "points",
            format!("must hold 1 to {MAX_BATCH_POINTS} points"),
        )
        .into());
    }
    Ok(())
}

/// What became of one point of a batch.
#[derive(Serialize, Clone, Copy, PartialEq, Eq, utoipa::ToSchema)]
#[serde(rename_all = "snake_case")]
#[schema(as = BatchPointStatus)]
pub(crate) enum PointStatus {
    Created,
    Duplicate,
    Rejected,
}

/// The answer for one point of a batch, by its index in the request.
#[derive(Serialize, utoipa::ToSchema)]
#[schema(as = BatchPointResult)]
pub(crate) struct PointResult {
    #[schema(value_type = u32)]
    index: usize,
    status: PointStatus,
    /// Why the point was rejected (only with `status: rejected`); field paths are
    /// relative to the point.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(value_type = crate::openapi::schemas::ErrorDetail, required = false)]
    error: Option<Value>,
}

/// The answer to a batch: one result per point, in request order.
#[derive(Serialize, utoipa::ToSchema)]
#[schema(as = GpsBatchResult)]
pub(crate) struct BatchResult {
    #[schema(value_type = u32)]
    accepted: usize,
    #[schema(value_type = u32)]
    duplicates: usize,
    #[schema(value_type = u32)]
    rejected: usize,
    results: Vec<PointResult>,
}

fn rejected(index: usize, error: ApiError) -> PointResult {
    PointResult {
        index,
        status: PointStatus::Rejected,
        error: Some(error.body()["error"].take()),
    }
}

/// Record up to 1,000 GPS fixes of one or many loads.
///
/// Each point stands alone: stored durably or not at all, whatever happens to its
/// neighbours. A point that fails validation (a wrong type or unknown field
/// included) is rejected in the 200 answer without sinking the others; only a
/// body that is not `{"points": [1 to 1000 items]}` is refused with 400.
#[utoipa::path(
    post,
    path = "/v1/tracking/batch",
    operation_id = "record_gps_batch",
    tag = "tracking",
    request_body(content = BatchInput, description = "At most 1 MiB.", example = json!({"points": [
        {"load_id": "load_01jd5ex0k3m2v8q4r6t9w1y3z5", "lat": 32.7767, "lng": -96.797,
         "timestamp": "2026-11-24T16:04:07Z", "speed": 61.5, "heading": 92},
        {"load_id": "load_01jd5ex0k3m2v8q4r6t9w1y3z5", "lat": 32.79, "lng": -96.74,
         "timestamp": "2026-11-24T16:04:37Z"}
    ]})),
    responses(
        (status = 200, description = "One result per point, in order.", body = Envelope<BatchResult>),
    ),
)]
pub(crate) async fn batch(
    principal: Principal,
    services: web::Data<Services>,
    _: NoQuery,
    JsonBytes(body): JsonBytes,
) -> Result<HttpResponse, ApiError> {
    let inputs = batch_inputs(&body)?;
    let now = services.clock.now();
    let mut points = PointBatch::<ApiError>::with_capacity(inputs.len());
    for input in inputs {
        let input = match input {
            Ok(input) => input,
            Err(error) => {
                points.reject(error);
                continue;
            }
        };
        let mut errors = ValidationErrors::new();
        // As in a path: text that is not a load id names no load (404), the
        // same answer as an id of a load that does not exist.
        let raw_load = errors.require("load_id", input.load_id.clone(), Ok::<_, String>);
        let fix = input.validate("", now, &mut errors);
        let load = match raw_load.as_deref().map(|raw| LoadId::parse(raw.trim())) {
            Some(None) if errors.is_empty() => {
                points.reject(<LoadId as crate::api::path::PathResource>::not_found(""));
                continue;
            }
            parsed => parsed.flatten(),
        };
        match errors.finish(|| (load.expect("checked"), fix.expect("checked"))) {
            Ok((load, fix)) => points.submit(load, fix),
            Err(errors) => points.reject(errors.into()),
        }
    }
    let outcomes = points.record(&services.tracking, &principal.account).await;
    let results: Vec<PointResult> = outcomes
        .into_iter()
        .enumerate()
        .map(|(index, outcome)| match outcome {
            PointOutcome::Stored => PointResult {
                index,
                status: PointStatus::Created,
                error: None,
            },
            PointOutcome::Duplicate => PointResult {
                index,
                status: PointStatus::Duplicate,
                error: None,
            },
            PointOutcome::Refused(error) => rejected(index, error.into()),
            PointOutcome::Rejected(error) => rejected(index, error),
        })
        .collect();
    let count = |status| results.iter().filter(|r| r.status == status).count();
    Ok(envelope::ok(BatchResult {
        accepted: count(PointStatus::Created),
        duplicates: count(PointStatus::Duplicate),
        rejected: count(PointStatus::Rejected),
        results,
    }))
}

resources! {
    "/loads/{load_id}/tracking" => [GET => live, POST => record],
    "/loads/{load_id}/tracking/history" => [GET => history],
    "/tracking/batch" (web::Data::new(BodyLimit(BATCH_BODY_LIMIT))) => [POST => batch],
}
