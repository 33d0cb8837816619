//! A load's page: its facts, tracking, map, stops, device, share links,
//! status history and GPS trail, and the moves its status allows.

mod device_card;
mod share_card;
mod stops_card;
mod tracking_card;

use actix_web::{HttpResponse, web};
use maud::{Markup, html};

pub use device_card::{attach, detach};
pub use share_card::{create as create_share_link, revoke as revoke_share_link};

use crate::actors::LoadError;
use crate::api::input::load::StatusChangeInput;
use crate::api::path::PathId;
use crate::dashboard::errors::{PageError, load_error};
use crate::dashboard::form::Form;
use crate::dashboard::lookups::{carrier_choices, viewer_load};
use crate::dashboard::map_tiles::MapSource;
use crate::dashboard::maps;
use crate::dashboard::page::{self, Section};
use crate::dashboard::session::Viewer;
use crate::dashboard::widgets::{Problems, grouped, pounds, route, select, status_badge, when};
use crate::domain::ids::LoadId;
use crate::domain::load::{Load, LoadStatus};
use crate::services::Services;
use crate::services::tracking::History;
use crate::storage::PointRange;
use crate::views::tracking::TrackingSummary;

/// GPS points listed on a load's page (the API's history pages through all).
const TRAIL_POINTS: usize = 50;
/// Of those, listed before "Show more" (a phone's screen or two).
const TRAIL_FIRST: usize = 10;

/// GPS points its map draws as the trail's line.
const MAP_POINTS: usize = 2_000;

pub async fn show(
    viewer: Viewer,
    services: web::Data<Services>,
    map: web::Data<MapSource>,
    id: PathId<LoadId>,
) -> Result<HttpResponse, PageError> {
    let id = id.valid().ok_or(PageError::NotFound)?;
    let load = viewer_load(&services, &viewer, &id).await?;
    Ok(page::ok(
        load_view(&services, &viewer, &map, &load, &Problems::default(), None).await?,
    ))
}

/// The load's page with the URL of a share link just made.
async fn page_with_link(
    services: &Services,
    viewer: &Viewer,
    map: &MapSource,
    load: &Load,
    url: &str,
) -> Result<HttpResponse, PageError> {
    Ok(page::ok(
        load_view(services, viewer, map, load, &Problems::default(), Some(url)).await?,
    ))
}

pub async fn change_status(
    viewer: Viewer,
    services: web::Data<Services>,
    map: web::Data<MapSource>,
    id: PathId<LoadId>,
    form: Form,
) -> Result<HttpResponse, PageError> {
    viewer.check_csrf(form.raw("csrf").as_deref())?;
    let id = id.valid().ok_or(PageError::NotFound)?;
    let input = StatusChangeInput {
        status: form.text("status"),
        carrier_id: form.text("carrier_id"),
        location: None,
        notes: form.text("notes"),
    };
    let change = match input.validate() {
        Ok(change) => change,
        Err(errors) => {
            return refused(
                &services,
                &viewer,
                &map,
                &id,
                Problems::from_validation(&errors),
            )
            .await;
        }
    };
    match services
        .loads
        .change_status(viewer.account_id(), &id, change)
        .await
    {
        Ok(_) => Ok(page::see_other(&format!("/dashboard/loads/{id}"))),
        Err(LoadError::Transition(e)) => {
            refused(
                &services,
                &viewer,
                &map,
                &id,
                Problems::one("", e.to_string()),
            )
            .await
        }
        Err(LoadError::UnknownCarrier(_)) => {
            let problems = Problems::one("carrier_id", "names no carrier of this account");
            refused(&services, &viewer, &map, &id, problems).await
        }
        Err(error) => Err(load_error(error)),
    }
}

/// The load's page again, saying why the move was refused.
async fn refused(
    services: &Services,
    viewer: &Viewer,
    map: &MapSource,
    id: &LoadId,
    problems: Problems,
) -> Result<HttpResponse, PageError> {
    let load = viewer_load(services, viewer, id).await?;
    let view = load_view(services, viewer, map, &load, &problems, None).await?;
    Ok(page::respond(actix_web::http::StatusCode::CONFLICT, view))
}

async fn load_view(
    services: &Services,
    viewer: &Viewer,
    map: &MapSource,
    load: &Load,
    problems: &Problems,
    new_link: Option<&str>,
) -> Result<Markup, PageError> {
    // One estimate for the tracking card and every stop's ETA.
    let state = services
        .tracking
        .current(viewer.account_id(), &load.id)
        .await
        .ok();
    let estimate = state.as_ref().and_then(|state| state.estimate());
    let tracking = state
        .as_ref()
        .map(|state| TrackingSummary::new(state, estimate.as_ref()));
    let trail = services
        .tracking
        .history(
            viewer.account_id(),
            &load.id,
            PointRange::latest(MAP_POINTS),
        )
        .await
        .map_err(load_error)?;
    // Only a posted load can be assigned, so only then are carriers offered.
    let carriers = match load.status {
        LoadStatus::Posted => carrier_choices(services, viewer).await?,
        _ => Vec::new(),
    };
    let device = device_card::load_device_card(services, viewer, &load.id).await?;
    let stops = stops_card::stops_card(services, viewer, load, estimate.as_ref()).await;
    let share = share_card::share_card(services, viewer, load, new_link).await;
    Ok(page::page(
        &format!("Load {}", load.id),
        Some(viewer),
        Section::Loads,
        html! {
            p { a href="/dashboard/loads" { "← Loads" } }
            h1 {
                @match &load.reference {
                    Some(reference) => { "Load " strong.reference { (reference) } }
                    None => { "Load" }
                }
                " " (status_badge(load.status))
            }
            // The id is long: it wraps, and copies whole with one button.
            div.copy.id-copy {
                input #load-id readonly value=(load.id) aria-label="Load id";
                button type="button" data-copy="#load-id" { "Copy id" }
            }
            (problems.summary())
            (next_steps(viewer, load, &carriers, problems))
            div.grid2 { (facts(load)) (tracking_card::tracking_card(load, tracking.as_ref())) }
            (maps::load_map(map, load, &trail.points))
            (stops)
            (device)
            (share)
            (history(load))
            (trail_table(&trail))
            script src="/dashboard/assets/dashboard.js" defer {}
        },
    ))
}

/// A form per move the load's status allows.
fn next_steps(
    viewer: &Viewer,
    load: &Load,
    carriers: &[(String, String)],
    problems: &Problems,
) -> Markup {
    let action = format!("/dashboard/loads/{}/status", load.id);
    html! {
        section.card {
            h2 { "Next step" }
            div.actions {
                @for next in load.status.allowed_next() {
                    form method="post" action=(action) {
                        (viewer.csrf_field())
                        input type="hidden" name="status" value=(next.as_str());
                        @if *next == LoadStatus::Assigned {
                            @if carriers.is_empty() {
                                p { "Register a carrier first: " a href="/dashboard/carriers/new" { "Add carrier" } }
                            } @else {
                                (select("carrier_id", "Carrier", carriers, None, problems))
                                button.primary type="submit" { "Assign" }
                            }
                        } @else if *next == LoadStatus::Cancelled {
                            button.danger type="submit" { (action_name(*next)) }
                        } @else {
                            button type="submit" { (action_name(*next)) }
                        }
                    }
                }
                @if load.status.allowed_next().is_empty() {
                    p { (status_badge(load.status)) ": nothing more to do." }
                }
            }
        }
    }
}

fn facts(load: &Load) -> Markup {
    let rate = load.rate_cents.map_or("—".to_owned(), |c| {
        format!("${}.{:02}", grouped(c / 100), c % 100)
    });
    let carrier = load.carrier.as_ref().map_or("—".to_owned(), |c| {
        format!("{} (MC {})", c.name, c.mc_number)
    });
    html! {
        section.card {
            div.actions {
                h2 { "Load" }
                @if !load.status.is_final() {
                    a.button href=(format!("/dashboard/loads/{}/edit", load.id)) { "Edit" }
                }
            }
            dl.facts {
                dt { "Route" } dd {
                    (route(load))
                    @let count = load.stops().len();
                    @if count > 2 { " (" (count) " stops)" }
                }
                dt { "Equipment" } dd { (load.equipment_type.label()) }
                dt { "Weight" } dd { (pounds(load.weight)) }
                dt { "Rate" } dd { (rate) }
                dt { "Carrier" } dd { (carrier) }
                dt { "Pickup" } dd { (when(load.pickup_date)) }
                dt { "Delivery" } dd { (when(load.delivery_date)) }
                @if load.team { dt { "Driving" } dd { "team (no 10-hour rests in the ETA)" } }
                dt { "Notes" } dd { (load.notes.as_deref().unwrap_or("—")) }
            }
        }
    }
}

fn history(load: &Load) -> Markup {
    html! {
        section.card {
            h2 { "Status history" }
            table.stack {
                thead { tr { th { "Status" } th { "When" } th { "Notes" } } }
                tbody {
                    @for entry in &load.status_history {
                        tr {
                            td data-label="Status" { (status_badge(entry.status)) }
                            td data-label="When" { (when(Some(entry.at))) }
                            td data-label="Notes" { (entry.notes.as_deref().unwrap_or("—")) }
                        }
                    }
                }
            }
        }
    }
}

fn trail_table(trail: &History) -> Markup {
    let listed = &trail.points[..trail.points.len().min(TRAIL_POINTS)];
    let (first, more) = listed.split_at(listed.len().min(TRAIL_FIRST));
    html! {
        section.card {
            h2 { "GPS trail" }
            @if listed.is_empty() {
                p.hint { "No GPS points yet." }
            } @else {
                p.hint {
                    (grouped(trail.total as i64)) @if trail.total == 1 { " point" } @else { " points" }
                    @if (listed.len() as u64) < trail.total { "; the latest " (listed.len()) " listed" }
                    ", newest first."
                }
                (trail_rows(first))
                @if !more.is_empty() {
                    details.more {
                        summary { "Show " (more.len()) " more" }
                        (trail_rows(more))
                    }
                }
            }
        }
    }
}

fn trail_rows(fixes: &[crate::domain::tracking::GpsFix]) -> Markup {
    html! {
        table.trail.stack {
            thead { tr { th { "Time" } th { "Latitude" } th { "Longitude" } th { "Speed" } th { "Heading" } } }
            tbody {
                @for fix in fixes {
                    tr {
                        td data-label="Time" { (when(Some(fix.timestamp))) }
                        td data-label="Latitude" { (format!("{:.5}", fix.lat)) }
                        td data-label="Longitude" { (format!("{:.5}", fix.lng)) }
                        td data-label="Speed" { (fix.speed_mph.map_or("—".to_owned(), |s| format!("{s:.0} mph"))) }
                        td data-label="Heading" { (fix.heading_deg.map_or("—".to_owned(), |h| format!("{h:.0}°"))) }
                    }
                }
            }
        }
    }
}

fn action_name(status: LoadStatus) -> &'static str {
    match status {
        LoadStatus::Posted => "Unassign",
        LoadStatus::Assigned => "Assign",
        LoadStatus::InTransit => "Picked up",
        LoadStatus::Delivered => "Delivered",
        LoadStatus::Cancelled => "Cancel load",
    }
}
