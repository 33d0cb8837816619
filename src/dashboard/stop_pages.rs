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
use super::widgets::{Kind, Problems, field};
use crate::api::input::account::SettingsChangeInput;
use crate::api::path::PathId;
use crate::domain::account::StopSettings;
use crate::domain::ids::{LoadId, ShareLinkId};
use crate::domain::load::Load;
use crate::domain::share_link::ShareLink;
use crate::domain::stops::{ArrivalStatus, StopKind};
use crate::domain::validation::ValidationErrors;
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
pub async fn stops_card(services: &Services, viewer: &Viewer, load: &Load) -> Markup {
    let progress = match services.storage.load_stops(&load.id).await {
        Ok(progress) => progress.unwrap_or_default(),
        Err(error) => {
            tracing::warn!(load = %load.id, %error, "a load's stops could not be read for its page");
            return html! { section.card { h2 { "Stops" } p { "The stops cannot be read right now." } } };
        }
    };
    let stops = StopView::of_load(
        load,
        &progress,
        &viewer.account.stop_settings,
        services.clock.now(),
    );
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
                                        (format!("{radius} m around the "))
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
    map: web::Data<super::MapSource>,
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
    let url = format!("{}/track/{token}", crate::api::origin::public_origin(&req));
    let load = services
        .loads
        .get(viewer.account_id(), &id)
        .await
        .map_err(super::load_pages::load_error)?;
    super::load_pages::page_with_link(&services, &viewer, &map, &load, &url).await
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

/// Settings → Stops: the account's arrival thresholds, default free time
/// and automatic in-transit (`/v1/account/settings` in the API).
pub async fn settings_page(viewer: Viewer, req: HttpRequest) -> HttpResponse {
    let current = viewer.account.stop_settings;
    let saved = req.query_string() == "saved=1";
    page::ok(settings_view(
        &viewer,
        &current,
        None,
        &Problems::default(),
        saved,
    ))
}

pub async fn change_settings(
    viewer: Viewer,
    services: web::Data<Services>,
    form: Form,
) -> Result<HttpResponse, PageError> {
    viewer.check_csrf(form.raw("csrf").as_deref())?;
    viewer.check_owner()?;
    let mut errors = ValidationErrors::new();
    let input = SettingsChangeInput {
        late_after_minutes: form.number("late_after_minutes", &mut errors),
        early_before_minutes: form.number("early_before_minutes", &mut errors),
        detention_free_minutes: form.number("detention_free_minutes", &mut errors),
        // An unticked box is not sent.
        auto_in_transit: Some(form.raw("auto_in_transit").is_some()),
    };
    let current = viewer.account.stop_settings;
    let checked = input.apply(current).and_then(|next| errors.finish(|| next));
    let next = match checked {
        Ok(next) => next,
        Err(errors) => {
            let problems = Problems::from_validation(&errors);
            return Ok(page::respond(
                actix_web::http::StatusCode::BAD_REQUEST,
                settings_view(&viewer, &current, Some(&form), &problems, false),
            ));
        }
    };
    services
        .accounts
        .change_stop_settings(viewer.account_id(), |_| Ok(next))
        .await
        .map_err(super::account_pages::account_error)?;
    Ok(page::see_other("/dashboard/settings/stops?saved=1"))
}

fn settings_view(
    viewer: &Viewer,
    current: &StopSettings,
    sent: Option<&Form>,
    problems: &Problems,
    saved: bool,
) -> Markup {
    let value = |name: &str, stored: u32| match sent {
        Some(form) => form.text(name),
        None => Some(stored.to_string()),
    };
    let auto = sent.map_or(current.auto_in_transit, |f| {
        f.raw("auto_in_transit").is_some()
    });
    page::page(
        "Stops",
        Some(viewer),
        page::Section::Settings,
        html! {
            h1 { "Settings → Stops" }
            (settings_tabs("Stops"))
            @if saved { p.notice role="status" { "Saved." } }
            form.card method="post" action="/dashboard/settings/stops" {
                (viewer.csrf_field())
                (problems.summary())
                p.hint { "How arrivals at your loads' pickups and deliveries are judged against their appointments." }
                (field("late_after_minutes", "Late: minutes after the appointment", Kind::Number { step: "1" }, value("late_after_minutes", current.late_after_minutes).as_deref(), true, problems))
                (field("early_before_minutes", "Early: minutes before the appointment", Kind::Number { step: "1" }, value("early_before_minutes", current.early_before_minutes).as_deref(), true, problems))
                (field("detention_free_minutes", "Free time at a stop for new loads (minutes)", Kind::Number { step: "1" }, value("detention_free_minutes", current.detention_free_minutes).as_deref(), true, problems))
                div.field {
                    label {
                        input type="checkbox" name="auto_in_transit" value="on" checked[auto];
                        " Move an assigned load to in transit when its truck leaves the pickup"
                    }
                }
                button type="submit" { "Save" }
            }
        },
    )
}

/// The links between the settings pages, `current` in bold.
pub fn settings_tabs(current: &str) -> Markup {
    const TABS: [(&str, &str); 3] = [
        ("API Keys", "/dashboard/settings/api-keys"),
        ("Users", "/dashboard/settings/users"),
        ("Stops", "/dashboard/settings/stops"),
    ];
    html! {
        p.tabs {
            @for (n, (name, href)) in TABS.iter().enumerate() {
                @if n > 0 { " · " }
                @if *name == current { strong { (name) } } @else { a href=(href) { (name) } }
            }
        }
    }
}
