//! The public tracking page of a share link: `/track/{token}` (HTML, kept
//! current by `assets/track.js`) and `/track/{token}.json`. No sign-in: the
//! token is the key. The page shows only what `PublicTracking` holds (route
//! cities, status, position, ETA, late risk, every stop's city, state,
//! window, status and ETA; never a stop's references, contact or notes), is
//! kept out of search engines and referrers, and is rate-limited per client
//! address.

use actix_web::http::StatusCode;
use actix_web::http::header;
use actix_web::{HttpRequest, HttpResponse, web};
use maud::{DOCTYPE, Markup, html};

use super::page::CSP;
use super::session::client_address;
use super::stop_words::{kind_name, status_class, status_name, window};
use super::widgets::when_text as when;
use crate::domain::share_link::Closed;
use crate::services::Services;
use crate::services::share_links::{ShareLinkError, delivered_at};
use crate::services::throttle::ClientKeys;
use crate::views::share_link::PublicTracking;
use crate::views::stops::{StopStatus, StopView};

/// `GET /track/{token}` and `GET /track/{token}.json`.
pub async fn show(
    services: web::Data<Services>,
    req: HttpRequest,
    token: web::Path<String>,
) -> HttpResponse {
    let (token, json) = match token.strip_suffix(".json") {
        Some(token) => (token, true),
        None => (token.as_str(), false),
    };
    let client = ClientKeys::of(&client_address(&req));
    if let Err(retry_after) = services.share_links.admit_viewer(&client.address) {
        let mut response = answer(
            json,
            StatusCode::TOO_MANY_REQUESTS,
            "Too many requests",
            "Try again in a minute.",
        );
        response
            .headers_mut()
            .insert(header::RETRY_AFTER, header::HeaderValue::from(retry_after));
        return response;
    }
    let (link, load) = match services.share_links.open(token).await {
        Ok(opened) => opened,
        Err(ShareLinkError::Gone(closed)) => {
            let why = match closed {
                Closed::Revoked => "This tracking link was revoked.",
                Closed::Expired => "This tracking link has expired.",
            };
            return answer(json, StatusCode::GONE, "Link no longer valid", why);
        }
        Err(ShareLinkError::NotFound | ShareLinkError::LoadNotFound) => {
            return answer(
                json,
                StatusCode::NOT_FOUND,
                "Not found",
                "No shipment is shared at this address.",
            );
        }
        Err(error) => {
            tracing::warn!(%error, "a tracking page could not be read");
            return answer(
                json,
                StatusCode::SERVICE_UNAVAILABLE,
                "Unavailable",
                "Try again in a moment.",
            );
        }
    };
    let state = services
        .tracking
        .current(&load.account_id, &load.id)
        .await
        .ok();
    let progress = match services.storage.load_stops(&load.id).await {
        Ok(progress) => progress.unwrap_or_default(),
        Err(error) => {
            tracing::warn!(%error, "a tracking page's stops could not be read");
            return answer(
                json,
                StatusCode::SERVICE_UNAVAILABLE,
                "Unavailable",
                "Try again in a moment.",
            );
        }
    };
    // Arrivals are judged by the load's account's thresholds.
    let settings = match services.storage.get_account(&load.account_id).await {
        Ok(account) => account.map(|a| a.stop_settings).unwrap_or_default(),
        Err(error) => {
            tracing::warn!(%error, "a tracking page's account could not be read");
            return answer(
                json,
                StatusCode::SERVICE_UNAVAILABLE,
                "Unavailable",
                "Try again in a moment.",
            );
        }
    };
    let now = services.clock.now();
    let estimate = state.as_ref().and_then(|s| s.estimate());
    let planned = load.stops();
    let stops = StopView::of_load(
        &load,
        &planned,
        &progress,
        estimate.as_ref(),
        &settings,
        now,
    );
    let ends_at = link.ends_at(delivered_at(&load));
    let data = PublicTracking::new(&load, state.as_ref(), &stops, ends_at);
    if json {
        return headers(HttpResponse::Ok())
            .content_type("application/json")
            .json(&data);
    }
    headers(HttpResponse::Ok())
        .content_type("text/html; charset=utf-8")
        .body(page(&data, token).into_string())
}

/// The headers every answer of these routes carries.
fn headers(mut builder: actix_web::HttpResponseBuilder) -> actix_web::HttpResponseBuilder {
    builder
        .insert_header((header::CACHE_CONTROL, "no-store"))
        .insert_header(("x-robots-tag", "noindex, nofollow"))
        .insert_header(("referrer-policy", "no-referrer"))
        .insert_header(("x-frame-options", "DENY"))
        .insert_header(("content-security-policy", CSP));
    builder
}

/// A refusal: JSON for the `.json` route, a small page otherwise.
fn answer(json: bool, status: StatusCode, title: &str, message: &str) -> HttpResponse {
    let mut builder = headers(HttpResponse::build(status));
    if json {
        return builder
            .json(serde_json::json!({"error": {"status": status.as_u16(), "message": message}}));
    }
    builder.content_type("text/html; charset=utf-8").body(
        shell(
            title,
            html! {
                h1 { (title) }
                p { (message) }
            },
        )
        .into_string(),
    )
}

fn shell(title: &str, body: Markup) -> Markup {
    html! {
        (DOCTYPE)
        html lang="en" {
            head {
                meta charset="utf-8";
                meta name="viewport" content="width=device-width, initial-scale=1";
                meta name="robots" content="noindex, nofollow";
                meta name="referrer" content="no-referrer";
                title { (title) " · shipment tracking" }
                link rel="stylesheet" href="/dashboard/assets/dashboard.css";
                link rel="icon" type="image/svg+xml" href="/dashboard/assets/favicon.svg";
                link rel="stylesheet" href="/dashboard/assets/board.css";
            }
            body {
                header.top { span.brand { "freight" } }
                main { (body) }
            }
        }
    }
}

fn page(data: &PublicTracking, token: &str) -> Markup {
    let route = format!(
        "{}, {} → {}, {}",
        data.origin.city, data.origin.state, data.destination.city, data.destination.state
    );
    shell(
        &route,
        html! {
            h1 { (route) }
            dl.facts {
                dt { "Status" } dd data-field="status" { (data.status.replace('_', " ")) }
                @match &data.arrival {
                    Some(arrival) => {
                        dt { "Delivery" } dd data-field="arrival" { (arrival) }
                    }
                    None => {
                        dt { "Estimated arrival" } dd data-field="eta" { (when(data.eta.as_ref())) }
                        dt { "Schedule" } dd data-field="late-risk" {
                            @if data.late_risk { "At risk of arriving late" } @else { "On schedule" }
                        }
                    }
                }
                dt { "Last position" } dd data-field="position-at" {
                    @match &data.position {
                        Some(position) => (when(Some(&position.at))),
                        None => "no position yet",
                    }
                }
            }
            div #track data-outline="/dashboard/assets/us-states.json" data-json=(format!("/track/{token}.json")) {}
            h2 { "Stops" }
            // A list rather than a table: it reads at phone width without
            // squeezing the cities.
            ol.timeline {
                @for stop in &data.stops {
                    @let field = |name: &str| format!("stop-{}-{name}", stop.sequence);
                    li data-stop=(stop.kind.as_str()) data-sequence=(stop.sequence) data-status=(status_class(stop.status)) {
                        h3 {
                            span.seq { (stop.sequence) "." }
                            (kind_name(stop.kind)) ": " (stop.place.city) ", " (stop.place.state)
                            " " span class=(format!("badge stop-status {}", status_class(stop.status))) data-field=(field("status")) { (status_name(stop.status)) }
                        }
                        dl.facts {
                            dt { @if stop.appointment_end.is_some() { "Window" } @else { "Appointment" } }
                            dd { (window(stop.appointment.as_ref(), stop.appointment_end.as_ref())) }
                            @if matches!(stop.status, StopStatus::Scheduled | StopStatus::EnRoute) {
                                dt { "ETA" } dd data-field=(field("eta")) {
                                    (when(stop.eta.as_ref()))
                                    @if stop.late_risk { " (at risk of being late)" }
                                }
                            }
                            dt { "Arrived" } dd data-field=(field("arrived")) {
                                (stop.arrived_local.clone().unwrap_or_else(|| "—".to_owned()))
                            }
                            dt { "Departed" } dd data-field=(field("departed")) { (when(stop.departed_at.as_ref())) }
                        }
                    }
                }
            }
            p.hint { "This page updates by itself. The link works until " (when(Some(&data.link_expires_at))) "." }
            script src="/dashboard/assets/board.js" {}
            script src="/dashboard/assets/track.js" {}
        },
    )
}
