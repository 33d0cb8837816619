//! Live tracking as server-sent events: `GET /v1/tracking/stream` (every load of
//! the account) and `GET /v1/loads/{load_id}/tracking/stream` (one load). The
//! events come from `services::live`; this module parses where a stream
//! resumes and answers with the stream.

use std::convert::Infallible;

use actix_web::http::header;
use actix_web::{HttpRequest, HttpResponse, web};
use futures_util::StreamExt;

use crate::api::error::ApiError;
use crate::api::extract::QueryParams;
use crate::api::path::PathId;
use crate::domain::ids::LoadId;
use crate::openapi::params;
use crate::services::Services;
use crate::services::auth::Principal;
use crate::services::live::{EventId, Resume};

resources! {
    "/tracking/stream" => [GET => account_stream],
    "/loads/{load_id}/tracking/stream" => [GET => load_stream],
}

/// Where the stream starts: after the `Last-Event-ID` header (what EventSource
/// sends when it reconnects), else after the `last_event_id` query parameter.
/// A malformed parameter is refused like any; a malformed header (which only
/// a client that made it up can send) is answered with a reset.
fn resume(req: &HttpRequest) -> Result<Resume, ApiError> {
    let mut query = QueryParams::parse(req)?;
    let parameter = query.take("last_event_id", |raw| {
        EventId::parse(raw).ok_or_else(|| "is not the id of an event of a stream".to_string())
    });
    query.finish()?;
    let header =
        Resume::from_last_event_id(req.headers().get("last-event-id").map(|v| v.as_bytes()));
    Ok(match (header, parameter) {
        (Some(header), _) => header,
        (None, Some(id)) => Resume::After(id),
        (None, None) => Resume::Start,
    })
}

/// Opens the account's stream (of one load's fixes, with `load`) where the
/// request says to resume.
async fn event_stream(
    principal: &Principal,
    services: &Services,
    req: &HttpRequest,
    load: Option<PathId<LoadId>>,
) -> Result<HttpResponse, ApiError> {
    let resume = resume(req)?;
    let load = load.map(PathId::found).transpose()?;
    let ending = services.auth.watch_key(principal.key_id.clone());
    let stream = services
        .tracking
        .stream(&principal.account, load, resume, ending)
        .await?;
    Ok(HttpResponse::Ok()
        .insert_header((header::CONTENT_TYPE, "text/event-stream"))
        .insert_header((header::CACHE_CONTROL, "no-cache"))
        // Tells a buffering proxy (nginx) to pass events on as they come.
        .insert_header(("x-accel-buffering", "no"))
        .streaming(stream.map(Ok::<_, Infallible>)))
}

/// The format of both streams, for the document.
const EVENTS: &str = "A stream of server-sent events (`text/event-stream`), open until the \
client closes it or the server stops. It starts with `retry: 2000`. Each GPS fix stored for \
the account's loads (durable; not a duplicate) is an event:\n\n\
```\nid: 5f0c2a9e81d4b7c3-42\nevent: tracking.updated\ndata: {\"load_id\": \"load_…\", \
\"status\": \"in_transit\", \"position\": {\"lat\", \"lng\", \"timestamp\", \"speed\", \
\"heading\"}, \"eta\": \"…\"}\n```\n\n\
`data` is one line of JSON, the `TrackingUpdate` schema: the `data` of a `tracking.updated` \
webhook with the load's ETA once the fix was stored. A stop milestone or ETA change made by \
a fix follows it as an event named like its webhook (`load.arrived`, `load.departed`, \
`load.eta_changed`), with the webhook's `data`. Ids increase along a stream; they are \
`<epoch>-<number>`, opaque to clients. \
**Resume**: reconnect with `Last-Event-ID` (or `?last_event_id=`) set to the last id \
received, and the events since are sent first, from the account's last 1,024 kept in memory. \
If they are not all held (the id is older, or from before a restart of the server: resume is \
per process), the first event is `event: reset`: re-read `GET /v1/loads/{load_id}/tracking` \
and carry on. \
**Heartbeat**: `: keep-alive` after 15 s without an event. \
**Slow clients**: a stream has room for 256 events waiting to be sent; a client that falls \
further behind is sent those, then `event: overflow`, and the stream ends (reconnect with \
the last id to resume). \
**Credential**: the stream ends when the key it was opened with stops working (revoked, \
expired, or its account disabled), within 5 s on the instance where that happened (within the \
30 s key cache on others); its last frame is `event: revoked` (or `event: expired`) with `data: \
{\"reason\", \"message\"}` (reasons `key_revoked`, `key_expired`, `account_disabled`). \
**Limits**: an account holds at most 10 streams open at once on Standard, 50 on Pro, 200 on \
Enterprise (or what its operator set), API and dashboard together, counted per instance; one \
more is refused with `429 TOO_MANY_STREAMS` and `Retry-After`. Opening a stream counts as one \
request against the hourly quota.";

/// The stream-specific refusal, for the document.
const TOO_MANY_STREAMS: &str = "`TOO_MANY_STREAMS`: the account already holds its plan's \
number of live streams open (Standard 10, Pro 50, Enterprise 200 or its operator's \
setting; `details.limit`); retry after `Retry-After` seconds, or close a stream.";

/// Live GPS fixes of every load of the account, as server-sent events.
///
/// Each fix is sent once it is durable. See the 200 answer for the format, resume,
/// heartbeats and slow clients.
#[utoipa::path(
    get,
    path = "/v1/tracking/stream",
    operation_id = "stream_account_tracking",
    tag = "tracking",
    params(params::StreamResume, params::LastEventId),
    responses(
        (status = 200, description = EVENTS, content_type = "text/event-stream", body = crate::openapi::schemas::ServerSentEvent),
        (status = 429, description = TOO_MANY_STREAMS, body = crate::openapi::schemas::Error),
    ),
)]
pub(crate) async fn account_stream(
    principal: Principal,
    services: web::Data<Services>,
    req: HttpRequest,
) -> Result<HttpResponse, ApiError> {
    event_stream(&principal, &services, &req, None).await
}

/// Live GPS fixes of one load, as server-sent events.
///
/// As the account's stream, with only this load's fixes (ids are the account
/// stream's, so they increase with gaps).
#[utoipa::path(
    get,
    path = "/v1/loads/{load_id}/tracking/stream",
    operation_id = "stream_load_tracking",
    tag = "tracking",
    params(
        ("load_id" = LoadId, Path, description = "The load."),
        params::StreamResume,
        params::LastEventId,
    ),
    responses(
        (status = 200, description = EVENTS, content_type = "text/event-stream", body = crate::openapi::schemas::ServerSentEvent),
        (status = 429, description = TOO_MANY_STREAMS, body = crate::openapi::schemas::Error),
    ),
)]
pub(crate) async fn load_stream(
    principal: Principal,
    services: web::Data<Services>,
    id: PathId<LoadId>,
    req: HttpRequest,
) -> Result<HttpResponse, ApiError> {
    event_stream(&principal, &services, &req, Some(id)).await
}
