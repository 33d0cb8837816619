//! What devices post, in the protocols their apps already speak, each
//! authenticated by the device's own token (never an account key):
//!
//! - `/v1/ingest/osmand`: OsmAnd and Traccar Client (query string, form body,
//!   or Traccar Client 9's JSON), and GPSLogger's custom URL; `200`, empty.
//! - `/v1/ingest/owntracks`: OwnTracks' HTTP mode, the token as the Basic
//!   password; `200 []`.
//! - `/v1/ingest/overland`: Overland's batches, `Authorization: Bearer` or
//!   `?token=`; `200 {"result": "ok"}` once every location is durable or a
//!   duplicate (a location the rules refuse is counted and skipped).
//!
//! The protocols are parsed by `crate::ingest`; what becomes of a position is
//! `services::device_ingest`. Mounted outside `/v1`'s key authentication.

use actix_web::http::{StatusCode, header};
use actix_web::{HttpRequest, HttpResponse, ResponseError, web};
use serde_json::json;

use crate::api::body::{declared_length, read_capped};
use crate::api::error::ApiError;
use crate::api::extract::{BATCH_BODY_LIMIT, DEFAULT_BODY_LIMIT};
use crate::ingest::{self, DevicePosition, Parsed, Protocol};
use crate::services::Services;
use crate::services::device_ingest::{self, refused};
use crate::services::devices::{DeviceContext, DeviceRefusal};

/// The body of a device's post, read whole once its token (where the
/// protocol carries it outside the body) has been checked: capped at
/// `DEFAULT_BODY_LIMIT` (Overland's batches: `BATCH_BODY_LIMIT`), and bounded
/// in time as every body is (`api::body`).
async fn read_body(req: &HttpRequest, payload: web::Payload) -> Result<web::Bytes, HttpResponse> {
    let limit = if req.path().ends_with("/overland") {
        BATCH_BODY_LIMIT
    } else {
        DEFAULT_BODY_LIMIT
    };
    let declared = declared_length(req.headers());
    read_capped(&mut payload.into_inner(), declared, limit)
        .await
        .map_err(|error| error.error_response())
}

/// A refused post, in the error envelope, counted by reason.
fn refusal(
    protocol: Protocol,
    reason: &'static str,
    status: StatusCode,
    code: &'static str,
    message: String,
) -> HttpResponse {
    refused(protocol, reason);
    ApiError::new(status, code, message).error_response()
}

fn malformed(protocol: Protocol, why: &ingest::Refusal) -> HttpResponse {
    if why.kind() == ingest::RefusalReason::MissingToken {
        return refusal(
            protocol,
            why.reason(),
            StatusCode::UNAUTHORIZED,
            "INVALID_DEVICE_TOKEN",
            why.to_string(),
        );
    }
    refusal(
        protocol,
        why.reason(),
        StatusCode::BAD_REQUEST,
        "INVALID_POSITION",
        why.to_string(),
    )
}

/// The device of the token; an answer if refused. Only the device's own
/// allowance meters its posts (`meter`), never the account's API quota.
async fn admit(
    services: &Services,
    protocol: Protocol,
    token: Option<&str>,
) -> Result<DeviceContext, HttpResponse> {
    match services.devices.authenticate(token).await {
        Ok(device) => Ok(device),
        Err(DeviceRefusal::Storage(error)) => {
            refused(protocol, "storage");
            Err(ApiError::from(error).error_response())
        }
        Err(error @ DeviceRefusal::AccountDisabled) => Err(refusal(
            protocol,
            error.reason(),
            StatusCode::FORBIDDEN,
            "ACCOUNT_DISABLED",
            error.to_string(),
        )),
        Err(error) => Err(refusal(
            protocol,
            error.reason(),
            StatusCode::UNAUTHORIZED,
            "INVALID_DEVICE_TOKEN",
            error.to_string(),
        )),
    }
}

/// Takes a post of `positions` from the device's allowance (429 with
/// `Retry-After` past it), and notes that the device was seen.
async fn meter(
    services: &Services,
    protocol: Protocol,
    device: &DeviceContext,
    positions: usize,
) -> Result<(), HttpResponse> {
    let meter = &services.devices.meter;
    if let Err(exhausted) = meter.take(&device.device.id, positions) {
        let limits = meter.limits();
        let retry_after = exhausted.retry_after;
        refused(protocol, "rate_limited");
        metrics::counter!(crate::api::auth::RATE_LIMITED_METRIC).increment(1);
        return Err(ApiError::new(
            StatusCode::TOO_MANY_REQUESTS,
            "RATE_LIMITED",
            format!(
                "this device has used its allowance of {} positions a second (bursts of {}); retry in {retry_after} s",
                limits.positions_per_second, limits.burst
            ),
        )
        .with_details(json!({
            "scope": "device",
            "positions_per_second": limits.positions_per_second,
            "burst": limits.burst,
            "retry_after_seconds": retry_after,
        }))
        .with_header("retry-after", retry_after.to_string())
        .error_response());
    }
    if let Err(error) = services.devices.seen(&device.device, protocol).await {
        tracing::warn!(device = %device.device.id, error = %crate::telemetry::error_chain(&error), "could not note when a device was last seen");
    }
    Ok(())
}

/// Records the positions; `answer` is the protocol's success. Positions fed
/// to several loads are charged once more per further load, and those not
/// stored are noted on the device with their reason.
async fn record(
    services: &Services,
    protocol: Protocol,
    device: &DeviceContext,
    positions: &[DevicePosition],
    answer: impl FnOnce() -> HttpResponse,
) -> HttpResponse {
    if positions.is_empty() {
        return answer();
    }
    let now = services.clock.now();
    match device_ingest::record(&services.tracking, device, positions, protocol, now).await {
        Ok(outcome) => {
            let id = &device.device.id;
            services
                .devices
                .meter
                .charge(id, outcome.further_fixes(positions.len()));
            services.devices.ignored.note(id, &outcome.ignored, now);
            answer()
        }
        Err(error) => ApiError::from(error).error_response(),
    }
}

/// The answers every ingest endpoint may give besides its success.
const REFUSALS: &str = "`400 INVALID_POSITION` (a position the protocol cannot carry: \
`details` says no more than the message), `401 INVALID_DEVICE_TOKEN` (no token, an unknown \
or revoked one, or an account API key: only device tokens post here; checked before \
the body is read wherever the protocol sends the token outside it), `403 \
ACCOUNT_DISABLED`, `408 BODY_TOO_SLOW`, `429 RATE_LIMITED` (the device's own allowance, \
`details.scope` `device`, with `Retry-After`; device posts never count against the \
account's API quota), `503` (retry). Every refusal is counted by reason in `freight_device_refusals_total`.";

/// A position from OsmAnd, Traccar Client or GPSLogger (query string).
///
/// Parameters: `id` (or `deviceid`) = the device token; `lat`, `lon` (or
/// `location=lat,lon`); `timestamp` (Unix seconds, milliseconds, ISO 8601 or
/// `yyyy-MM-dd HH:mm:ss` UTC; absent: now); `speed` in knots unless
/// `speed_unit` says `mps`, `kmh` or `mph`; `bearing` or `heading`;
/// `altitude`, `accuracy`, `hdop`, `batt`, `charge`. Without coordinates the
/// post is a heartbeat. Success is `200` with an empty body.
#[utoipa::path(
    get,
    path = "/v1/ingest/osmand",
    operation_id = "ingest_osmand_get",
    tag = "devices",
    security(("deviceToken" = [])),
    responses(
        (status = 200, description = "Taken (stored, a duplicate, or reaching no load taking fixes); an empty body.", content_type = "text/plain", body = String),
        (status = 400, description = REFUSALS, body = crate::openapi::schemas::Error),
        (status = 401, description = REFUSALS, body = crate::openapi::schemas::Error),
        (status = 403, description = REFUSALS, body = crate::openapi::schemas::Error),
        (status = 429, description = REFUSALS, body = crate::openapi::schemas::Error),
    ),
)]
pub(crate) async fn osmand_get(
    services: web::Data<Services>,
    req: HttpRequest,
    body: web::Payload,
) -> HttpResponse {
    osmand(services, req, body).await
}

/// A position from Traccar Client or OsmAnd (query string, form body, or
/// Traccar Client 9's JSON).
///
/// As the `GET`; with an empty query the parameters may come as a form body
/// (Traccar Client 10), and `Content-Type: application/json` takes Traccar
/// Client 9's body (`{"location": {"timestamp", "coords": {…}, "battery": {…}},
/// "device_id"}`, speeds in m/s, -1 unknown).
#[utoipa::path(
    post,
    path = "/v1/ingest/osmand",
    operation_id = "ingest_osmand_post",
    tag = "devices",
    security(("deviceToken" = [])),
    responses(
        (status = 200, description = "Taken (stored, a duplicate, or reaching no load taking fixes); an empty body.", content_type = "text/plain", body = String),
        (status = 400, description = REFUSALS, body = crate::openapi::schemas::Error),
        (status = 401, description = REFUSALS, body = crate::openapi::schemas::Error),
        (status = 403, description = REFUSALS, body = crate::openapi::schemas::Error),
        (status = 429, description = REFUSALS, body = crate::openapi::schemas::Error),
    ),
)]
pub(crate) async fn osmand_post(
    services: web::Data<Services>,
    req: HttpRequest,
    body: web::Payload,
) -> HttpResponse {
    osmand(services, req, body).await
}

/// OsmAnd, Traccar Client (all generations), GPSLogger. A post without
/// coordinates is a heartbeat: `200`, only `last_seen_at` moves.
async fn osmand(
    services: web::Data<Services>,
    req: HttpRequest,
    payload: web::Payload,
) -> HttpResponse {
    // A token in the query is checked before the body is read; the body may
    // carry it instead (a form, or Traccar Client 9's JSON).
    let early = match query_value(req.query_string(), &["id", "deviceid"]) {
        Some(token) => match admit(&services, Protocol::OsmAnd, Some(&token)).await {
            Ok(device) => Some(device),
            Err(answer) => return answer,
        },
        None => None,
    };
    let body = match read_body(&req, payload).await {
        Ok(body) => body,
        Err(answer) => return answer,
    };
    let content_type = req
        .headers()
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok());
    let now = services.clock.now();
    let request = match ingest::parse_osmand(req.query_string(), content_type, &body, now) {
        Ok(request) => request,
        Err(why) => return malformed(Protocol::OsmAnd, &why),
    };
    let device = match early {
        Some(device) => device,
        None => match admit(&services, request.protocol, Some(&request.token)).await {
            Ok(device) => device,
            Err(answer) => return answer,
        },
    };
    let positions: Vec<DevicePosition> = match request.parsed {
        Parsed::Position(position) => vec![position],
        Parsed::Heartbeat => {
            metrics::counter!(device_ingest::POSITIONS_METRIC, "protocol" => request.protocol.as_str(), "outcome" => "heartbeat").increment(1);
            Vec::new()
        }
    };
    if let Err(answer) = meter(&services, request.protocol, &device, positions.len()).await {
        return answer;
    }
    record(&services, request.protocol, &device, &positions, || {
        HttpResponse::Ok()
            .content_type("text/plain; charset=utf-8")
            .finish()
    })
    .await
}

/// A position from OwnTracks (HTTP mode).
///
/// HTTP Basic authentication: any user name and the device token as the
/// password (or the token as the user name with an empty password). The body
/// is OwnTracks' JSON (`{"_type": "location", "lat", "lon", "tst", "vel" km/h,
/// "cog", "acc", "alt", "batt"}`); other `_type`s and empty bodies store
/// nothing. The answer is a JSON array (`[]`: no commands).
#[utoipa::path(
    post,
    path = "/v1/ingest/owntracks",
    operation_id = "ingest_owntracks",
    tag = "devices",
    security(("deviceBasic" = [])),
    responses(
        (status = 200, description = "Taken: `[]`.", body = Vec<serde_json::Value>),
        (status = 400, description = REFUSALS, body = crate::openapi::schemas::Error),
        (status = 401, description = REFUSALS, body = crate::openapi::schemas::Error),
        (status = 403, description = REFUSALS, body = crate::openapi::schemas::Error),
        (status = 429, description = REFUSALS, body = crate::openapi::schemas::Error),
    ),
)]
pub(crate) async fn owntracks(
    services: web::Data<Services>,
    req: HttpRequest,
    payload: web::Payload,
) -> HttpResponse {
    let authorization = req
        .headers()
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok());
    let token = ingest::basic_auth_token(authorization);
    let device = match admit(&services, Protocol::OwnTracks, token.as_deref()).await {
        Ok(device) => device,
        Err(answer) => return answer,
    };
    let body = match read_body(&req, payload).await {
        Ok(body) => body,
        Err(answer) => return answer,
    };
    let position = match ingest::parse_owntracks(&body) {
        Ok(position) => position,
        Err(why) => return malformed(Protocol::OwnTracks, &why),
    };
    let positions: Vec<DevicePosition> = position.into_iter().collect();
    if let Err(answer) = meter(&services, Protocol::OwnTracks, &device, positions.len()).await {
        return answer;
    }
    record(&services, Protocol::OwnTracks, &device, &positions, || {
        HttpResponse::Ok().json(json!([]))
    })
    .await
}

/// A batch of positions from Overland (up to 1,000).
///
/// `Authorization: Bearer <device token>` or `?token=`. The body is
/// `{"locations": [GeoJSON Feature (coordinates [lon, lat]; properties
/// timestamp, speed m/s, course, horizontal_accuracy, battery_level, …)]}`.
/// `{"result": "ok"}` once every location is durable or a duplicate; a location
/// the rules refuse is counted and skipped, never a reason to refuse the
/// batch (the app would send it forever).
#[utoipa::path(
    post,
    path = "/v1/ingest/overland",
    operation_id = "ingest_overland",
    tag = "devices",
    security(("deviceToken" = [])),
    responses(
        (status = 200, description = "Taken: `{\"result\": \"ok\"}`.", body = serde_json::Value),
        (status = 400, description = REFUSALS, body = crate::openapi::schemas::Error),
        (status = 401, description = REFUSALS, body = crate::openapi::schemas::Error),
        (status = 403, description = REFUSALS, body = crate::openapi::schemas::Error),
        (status = 429, description = REFUSALS, body = crate::openapi::schemas::Error),
    ),
)]
pub(crate) async fn overland(
    services: web::Data<Services>,
    req: HttpRequest,
    payload: web::Payload,
) -> HttpResponse {
    let authorization = req
        .headers()
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok());
    let query_token = query_value(req.query_string(), &["token"]);
    let token = ingest::bearer_token(authorization).or(query_token.as_deref());
    let device = match admit(&services, Protocol::Overland, token).await {
        Ok(device) => device,
        Err(answer) => return answer,
    };
    let body = match read_body(&req, payload).await {
        Ok(body) => body,
        Err(answer) => return answer,
    };
    let locations = match ingest::parse_overland(&body) {
        Ok(locations) => locations,
        Err(why) => return malformed(Protocol::Overland, &why),
    };
    let mut positions = Vec::with_capacity(locations.len());
    for location in locations {
        match location {
            Ok(position) => positions.push(position),
            // Counted and skipped: the app would send a refused batch forever.
            Err(why) => refused(Protocol::Overland, why.reason()),
        }
    }
    if let Err(answer) = meter(&services, Protocol::Overland, &device, positions.len()).await {
        return answer;
    }
    record(&services, Protocol::Overland, &device, &positions, || {
        HttpResponse::Ok().json(json!({"result": "ok"}))
    })
    .await
}

/// The first non-blank value of one of `names` in the query (`?token=`, for
/// apps that cannot set a header; OsmAnd's `?id=`).
fn query_value(query: &str, names: &[&str]) -> Option<String> {
    serde_urlencoded::from_str::<Vec<(String, String)>>(query)
        .ok()?
        .into_iter()
        .find_map(|(name, value)| {
            (names.contains(&name.as_str()) && !value.trim().is_empty()).then_some(value)
        })
}

/// The paths, outside `/v1`'s key authentication (the app builder mounts
/// this scope before `/v1`'s).
pub const ROUTES: &[(&str, &str)] = &[
    ("GET", "/v1/ingest/osmand"),
    ("POST", "/v1/ingest/osmand"),
    ("POST", "/v1/ingest/owntracks"),
    ("POST", "/v1/ingest/overland"),
];

pub fn configure(cfg: &mut web::ServiceConfig) {
    cfg.service(
        web::scope("/v1/ingest")
            .service(
                web::resource("/osmand")
                    .app_data(crate::telemetry::RouteId("/v1/ingest/osmand"))
                    .route(web::get().to(osmand_get))
                    .route(web::post().to(osmand_post))
                    .default_service(super::only("GET, POST")),
            )
            .service(
                web::resource("/owntracks")
                    .app_data(crate::telemetry::RouteId("/v1/ingest/owntracks"))
                    .route(web::post().to(owntracks))
                    .default_service(super::only("POST")),
            )
            .service(
                web::resource("/overland")
                    .app_data(crate::telemetry::RouteId("/v1/ingest/overland"))
                    .route(web::post().to(overland))
                    .default_service(super::only("POST")),
            )
            .default_service(web::to(super::not_found)),
    );
}
