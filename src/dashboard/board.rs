//! The dispatch board: every active load of the account on a map, each at its
//! latest position, moving as fixes arrive. The page is a frame;
//! `assets/board.js` draws the map (Leaflet over the operator's tiles, or the
//! vendored outline of the states without them) from `loads.json` and follows
//! the account's tracking stream.

use std::collections::HashMap;
use std::convert::Infallible;

use actix_web::http::header;
use actix_web::{HttpRequest, HttpResponse, web};
use futures_util::stream::{self, StreamExt};
use maud::html;
use serde::Serialize;

use super::errors::PageError;
use super::errors::device_error;
use super::errors::load_error;
use super::map_tiles::MapSource;
use super::maps;
use super::page::{self, Section};
use super::session::Viewer;
use crate::api::error::STREAMS_RETRY_AFTER_SECONDS;
use crate::domain::ids::LoadId;
use crate::domain::load::{Load, LoadStatus};
use crate::services::Services;
use crate::services::live::Resume;
use crate::services::tracking::StreamError;
use crate::storage::{LoadFilter, PageRequest};
use crate::views::stops::{StopStatus, StopView};
use crate::views::tracking::{PointView, TrackingSummary};

/// Loads per status the board shows; beyond it the list says so.
const MAX_PER_STATUS: u32 = 500;
/// Actors asked for positions at once (each may have to start from storage).
const CONCURRENT_READS: usize = 32;

pub async fn page(viewer: Viewer, map: web::Data<MapSource>) -> HttpResponse {
    let tiles = map.tiles();
    page::ok(page::page(
        "Board",
        Some(&viewer),
        Section::Board,
        html! {
            link rel="stylesheet" href="/dashboard/assets/board.css";
            (maps::leaflet(&map))
            div.actions {
                h1 { "Dispatch board" }
                p #board-status.hint role="status" aria-live="polite" { "Connecting…" }
            }
            div.board-layout {
                div #board data-outline="/dashboard/assets/us-states.json"
                    data-stream="/dashboard/stream" data-loads="/dashboard/board/loads.json"
                    data-tiles=[tiles.map(|t| &t.template)]
                    data-attribution=[tiles.map(|t| &t.attribution)] {}
                ul #board-list aria-label="Active loads" {}
            }
            div #board-empty.card hidden {
                h2 { "No loads on the road yet" }
                p {
                    "The board shows loads that are assigned or in transit. Open a posted load in "
                    a href="/dashboard/loads" { "Loads" } " and assign a carrier (or "
                    a href="/dashboard/loads/new" { "create one" } "); it appears here at once, and its truck moves as GPS fixes arrive from a device or the API."
                }
            }
            p.hint {
                "Assigned and in-transit loads, at their latest GPS fix. API clients get the same feed from "
                code { "GET /v1/tracking/stream" } "."
            }
            script src="/dashboard/assets/board.js" defer {}
        },
    ))
}

/// The account's tracking stream for the board, opened by the session (the
/// API's `GET /v1/tracking/stream` is the same feed, opened by a key). Resumes
/// after `Last-Event-ID` as the API's does.
pub async fn stream(
    viewer: Viewer,
    services: web::Data<Services>,
    req: HttpRequest,
) -> Result<HttpResponse, PageError> {
    let header = req.headers().get("last-event-id").map(|v| v.as_bytes());
    let resume = Resume::from_last_event_id(header).unwrap_or(Resume::Start);
    // Counted against the account's quota like the API's stream.
    let quota = services
        .rate_limits
        .check(viewer.account_id(), viewer.account.requests_per_hour());
    if !quota.allowed {
        let retry_after = quota.retry_after.unwrap_or(1);
        return Err(PageError::Throttled { retry_after });
    }
    let ending = services
        .users
        .watch_session(viewer.session.token_sha256.clone());
    let events = services
        .tracking
        .stream(&viewer.account, None, resume, ending)
        .await
        .map_err(|error| match error {
            StreamError::Load(error) => load_error(error),
            StreamError::TooMany(_) => PageError::Throttled {
                retry_after: STREAMS_RETRY_AFTER_SECONDS,
            },
        })?;
    Ok(HttpResponse::Ok()
        .insert_header((header::CONTENT_TYPE, "text/event-stream"))
        .insert_header((header::CACHE_CONTROL, "no-cache"))
        .insert_header(("x-accel-buffering", "no"))
        .streaming(events.map(Ok::<_, Infallible>)))
}

#[derive(Serialize)]
struct BoardLoads {
    loads: Vec<BoardLoad>,
    /// More active loads exist than the board shows.
    truncated: bool,
}

#[derive(Serialize)]
struct BoardLoad {
    id: String,
    /// The shipper's reference (PO, BOL), by which the loads list names it.
    reference: Option<String>,
    status: &'static str,
    origin: Place,
    destination: Place,
    carrier: Option<Carrier>,
    /// The device whose positions feed it, if one is attached.
    device: Option<DeviceName>,
    position: Option<PointView>,
    eta: Option<String>,
    /// The ETA is more than 15 minutes past the delivery appointment.
    late_risk: bool,
    /// The stop the truck is at (`pickup` or `delivery`), if any.
    at_stop: Option<&'static str>,
    /// The first stop neither departed nor skipped: where the truck is, or
    /// goes next.
    next_stop: Option<NextStop>,
    /// The stop `eta` is for (the next delivery), 1 for the first stop.
    eta_stop_sequence: Option<u32>,
    url: String,
}

#[derive(Serialize)]
struct NextStop {
    sequence: u32,
    #[serde(rename = "type")]
    kind: &'static str,
    status: StopStatus,
    city: String,
    state: String,
    /// Its appointment, or its window's start.
    appointment: Option<String>,
    /// While it is ahead and the load is tracked.
    eta: Option<String>,
    late_risk: bool,
}

#[derive(Serialize)]
struct Place {
    city: String,
    state: String,
}

#[derive(Serialize)]
struct Carrier {
    name: String,
}

#[derive(Serialize)]
struct DeviceName {
    name: String,
}

pub async fn loads(
    viewer: Viewer,
    services: web::Data<Services>,
) -> Result<HttpResponse, PageError> {
    let mut active = Vec::new();
    let mut truncated = false;
    for status in [LoadStatus::Assigned, LoadStatus::InTransit] {
        let filter = LoadFilter {
            status: Some(status),
            ..LoadFilter::default()
        };
        let page = services
            .loads
            .list(
                viewer.account_id(),
                &filter,
                PageRequest {
                    offset: 0,
                    limit: MAX_PER_STATUS,
                },
            )
            .await
            .map_err(load_error)?;
        truncated |= page.total > u64::from(MAX_PER_STATUS);
        active.extend(page.items);
    }
    let account = viewer.account_id();
    // One read of the account's devices names every load's device.
    let mut feeds: HashMap<LoadId, String> = HashMap::new();
    for (device, loads) in services.devices.list(account).await.map_err(device_error)? {
        for load in loads {
            feeds.insert(load, device.name.clone());
        }
    }
    let services = &services;
    let feeds = &feeds;
    let settings = &viewer.account.stop_settings;
    let loads: Vec<BoardLoad> = stream::iter(active)
        .map(|load| async move {
            let state = services
                .tracking
                .current_anywhere(account, &load.id)
                .await
                .ok();
            let device = feeds.get(&load.id).cloned();
            // A stop that cannot be read now shows as none: the board stays up.
            let progress = services
                .storage
                .load_stops(&load.id)
                .await
                .map(Option::unwrap_or_default)
                .ok();
            let planned = load.stops();
            let at_stop = progress.as_ref().and_then(|progress| {
                planned
                    .iter()
                    .zip(progress.of_stops(&planned))
                    .find(|(_, p)| p.at_stop())
                    .map(|(stop, _)| stop.kind.as_str())
            });
            let estimate = state.as_ref().and_then(|s| s.estimate());
            let next_stop = progress.as_ref().and_then(|progress| {
                let stops = StopView::of_load(
                    &load,
                    &planned,
                    progress,
                    estimate.as_ref(),
                    settings,
                    services.clock.now(),
                );
                stops
                    .iter()
                    .find(|s| !matches!(s.status, StopStatus::Departed | StopStatus::Skipped))
                    .map(|s| NextStop {
                        sequence: s.sequence,
                        kind: s.kind.as_str(),
                        status: s.status,
                        city: s.location.city.to_owned(),
                        state: s.location.state.to_string(),
                        appointment: s.appointment.clone(),
                        eta: s.eta.clone(),
                        late_risk: s.late_risk,
                    })
            });
            let tracked = state.as_ref().map(|state| Tracked {
                status: state.status,
                summary: TrackingSummary::new(state, estimate.as_ref()),
                eta_stop_sequence: estimate
                    .as_ref()
                    .and_then(|e| e.next_delivery(&state.route))
                    .map(|e| e.index as u32 + 1),
                position: state.recent.first().map(PointView::new),
            });
            board_load(load, tracked, device, at_stop, next_stop)
        })
        .buffered(CONCURRENT_READS)
        .collect()
        .await;
    Ok(HttpResponse::Ok()
        .insert_header(("cache-control", "no-store"))
        .json(BoardLoads { loads, truncated }))
}

/// What the load's tracking says, when it has any.
struct Tracked {
    status: LoadStatus,
    summary: TrackingSummary,
    eta_stop_sequence: Option<u32>,
    position: Option<PointView>,
}

fn board_load(
    load: Load,
    tracked: Option<Tracked>,
    device: Option<String>,
    at_stop: Option<&'static str>,
    next_stop: Option<NextStop>,
) -> BoardLoad {
    let (status, summary, eta_stop_sequence, position) = match tracked {
        Some(t) => (t.status, Some(t.summary), t.eta_stop_sequence, t.position),
        None => (load.status, None, None, None),
    };
    BoardLoad {
        url: format!("/dashboard/loads/{}", load.id),
        id: load.id.to_string(),
        reference: load.reference,
        status: status.as_str(),
        origin: Place {
            city: load.origin.city,
            state: load.origin.state.to_string(),
        },
        destination: Place {
            city: load.destination.city,
            state: load.destination.state.to_string(),
        },
        carrier: load.carrier.map(|c| Carrier { name: c.name }),
        device: device.map(|name| DeviceName { name }),
        position,
        late_risk: summary.as_ref().is_some_and(|s| s.late_risk),
        eta: summary.and_then(|s| s.eta),
        at_stop,
        next_stop,
        eta_stop_sequence,
    }
}
