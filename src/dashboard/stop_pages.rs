//! On a load's page: its stops as a timeline (arrived, departed, dwell,
//! detention, early or late), and its share links (make one, see its URL
//! once, revoke).

use actix_web::{HttpRequest, HttpResponse, web};
use maud::{Markup, html};

use super::device_pages::copy;
use super::form::Form;
use super::page::{self, PageError};
use super::session::Viewer;
use super::widgets::when_text as when;
use crate::api::path::PathId;
use crate::domain::ids::{LoadId, ShareLinkId};
use crate::domain::load::Load;
use crate::domain::share_link::ShareLink;
use crate::domain::stops::{ArrivalStatus, StopKind};
use crate::services::Services;
use crate::services::share_links::{ShareLinkError, delivered_at};
use crate::views::stops::StopView;

fn minutes(m: Option<i64>) -> String {
    match m {
        None => "—".to_owned(),
        Some(m) if m < 60 => format!("{m} min"),
        Some(m) => format!("{} h {:02} min", m / 60, m % 60),
    }
}

/// The load's stops, from their stored progress.
pub async fn stops_card(services: &Services, load: &Load) -> Markup {
    let progress = match services.storage.load_stops(&load.id).await {
        Ok(progress) => progress.unwrap_or_default(),
        Err(error) => {
            tracing::warn!(load = %load.id, %error, "a load's stops could not be read for its page");
            return html! { section.card { h2 { "Stops" } p { "The stops cannot be read right now." } } };
        }
    };
    let stops = StopView::of_load(load, &progress, services.clock.now());
    html! {
        section.card #stops {
            h2 { "Stops" }
            ol.timeline {
                @for stop in &stops {
                    li data-stop=(stop.kind.as_str()) {
                        h3 {
                            (match stop.kind { StopKind::Pickup => "Pickup", StopKind::Delivery => "Delivery" })
                            ": " (stop.location.city) ", " (stop.location.state.as_str())
                            @match stop.arrival_status {
                                Some(ArrivalStatus::Late) => {
                                    " " span.badge.late { "late " (stop.deviation_minutes.unwrap_or(0)) " min" }
                                }
                                Some(ArrivalStatus::Early) => {
                                    " " span.badge.early { "early " (-stop.deviation_minutes.unwrap_or(0)) " min" }
                                }
                                Some(ArrivalStatus::OnTime) => { " " span.badge.ontime { "on time" } }
                                None => {}
                            }
                        }
                        dl.facts {
                            dt { "Appointment" } dd { (when(stop.appointment.as_ref())) }
                            dt { "Arrived" } dd data-field="arrived" {
                                (when(stop.arrived_at.as_ref()))
                                @if stop.inferred { " (inferred)" }
                            }
                            dt { "Departed" } dd data-field="departed" { (when(stop.departed_at.as_ref())) }
                            dt { "Dwell" } dd { (minutes(stop.dwell_minutes)) }
                            dt { "Detention" } dd { (minutes(stop.detention_minutes)) }
                            dt { "Geofence" } dd {
                                @match (stop.location.radius_m, stop.location.placed_by) {
                                    (Some(radius), Some(placed_by)) => {
                                        (format!("{radius:.0} m around the "))
                                        (match placed_by { crate::domain::stops::PlacedBy::Coordinates => "facility", crate::domain::stops::PlacedBy::Zip => "ZIP centre" })
                                    }
                                    _ => "not placed (unknown ZIP)",
                                }
                            }
                        }
                    }
                }
            }
        }
    }
}

/// The load's share links, and the URL of one just made (shown this once).
pub async fn share_card(
    services: &Services,
    viewer: &Viewer,
    load: &Load,
    new_url: Option<&str>,
) -> Markup {
    let links = match services
        .share_links
        .list(viewer.account_id(), &load.id)
        .await
    {
        Ok((_, links)) => links,
        Err(error) => {
            tracing::warn!(load = %load.id, %error, "a load's share links could not be read");
            Vec::new()
        }
    };
    let now = services.clock.now();
    let delivered = delivered_at(load);
    let live: Vec<&ShareLink> = links
        .iter()
        .filter(|link| link.check(delivered, now).is_ok())
        .collect();
    html! {
        section.card #share {
            h2 { "Share tracking" }
            p.hint { "A link to a public page with the route's cities, status, position, ETA and stops: no carrier, rate, notes or weight." }
            @if let Some(url) = new_url {
                (copy("share-url", "Tracking page (shown once)", url))
            }
            form method="post" action=(format!("/dashboard/loads/{}/share-links", load.id)) {
                (viewer.csrf_field())
                button type="submit" { "Make a link (72 hours)" }
            }
            @if !live.is_empty() {
                ul.links {
                    @for link in &live {
                        li {
                            "Works until " (link.ends_at(delivered).format("%-d %b %Y, %H:%M UTC"))
                            form.inline method="post" action=(format!("/dashboard/loads/{}/share-links/{}/revoke", load.id, link.id)) {
                                (viewer.csrf_field())
                                button type="submit" { "Revoke" }
                            }
                        }
                    }
                }
            }
        }
    }
}

fn share_error(error: ShareLinkError) -> PageError {
    match error {
        ShareLinkError::Storage(error) => PageError::Unavailable(error.to_string()),
        _ => PageError::NotFound,
    }
}

/// `POST /dashboard/loads/{id}/share-links`: makes a link and shows the
/// load's page with its URL.
pub async fn create(
    viewer: Viewer,
    services: web::Data<Services>,
    req: HttpRequest,
    id: PathId<LoadId>,
    form: Form,
) -> Result<HttpResponse, PageError> {
    viewer.check_csrf(form.raw("csrf").as_deref())?;
    let id = id.valid().ok_or(PageError::NotFound)?;
    let (_, token) = services
        .share_links
        .create(viewer.account_id(), &id, None)
        .await
        .map_err(share_error)?;
    let url = format!("https://{}/track/{token}", req.connection_info().host());
    let load = services
        .loads
        .get(viewer.account_id(), &id)
        .await
        .map_err(super::load_pages::load_error)?;
    super::load_pages::page_with_link(&services, &viewer, &load, &url).await
}

/// `POST /dashboard/loads/{id}/share-links/{link}/revoke`.
pub async fn revoke(
    viewer: Viewer,
    services: web::Data<Services>,
    path: web::Path<(String, String)>,
    form: Form,
) -> Result<HttpResponse, PageError> {
    viewer.check_csrf(form.raw("csrf").as_deref())?;
    let (load, link) = path.into_inner();
    let load = LoadId::parse(&load).ok_or(PageError::NotFound)?;
    let link = ShareLinkId::parse(&link).ok_or(PageError::NotFound)?;
    services
        .share_links
        .revoke(viewer.account_id(), &load, &link)
        .await
        .map_err(share_error)?;
    Ok(page::see_other(&format!("/dashboard/loads/{load}#share")))
}
