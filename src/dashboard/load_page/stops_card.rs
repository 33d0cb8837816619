//! The stops card of a load's page: every stop as a timeline, in order, with
//! its place, appointment or window, status, ETA (and late risk), arrival,
//! departure, dwell and detention.

use maud::{Markup, html};

use crate::dashboard::session::Viewer;
use crate::dashboard::stop_words::{kind_name, minutes, status_class, status_name, window};
use crate::dashboard::widgets::when_text as when;
use crate::domain::load::Load;
use crate::domain::stop_etas::RouteEta;
use crate::domain::stop_plan::Handling;
use crate::domain::stops::{ArrivalStatus, PlacedBy};
use crate::services::Services;
use crate::views::stops::StopView;

/// The load's stops, from their stored progress and `estimate`.
pub async fn stops_card(
    services: &Services,
    viewer: &Viewer,
    load: &Load,
    estimate: Option<&RouteEta>,
) -> Markup {
    let progress = match services.storage.load_stops(&load.id).await {
        Ok(progress) => progress.unwrap_or_default(),
        Err(error) => {
            tracing::warn!(load = %load.id, %error, "a load's stops could not be read for its page");
            return html! { section.card { h2 { "Stops" } p { "The stops cannot be read right now." } } };
        }
    };
    let planned = load.stops();
    let stops = StopView::of_load(
        load,
        &planned,
        &progress,
        estimate,
        &viewer.account.stop_settings,
        services.clock.now(),
    );
    html! {
        section.card #stops {
            h2 { "Stops (" (stops.len()) ")" }
            ol.timeline {
                @for stop in &stops { (stop_item(stop)) }
            }
        }
    }
}

fn stop_item(stop: &StopView<'_>) -> Markup {
    let place = &stop.location;
    html! {
        li data-stop=(stop.kind.as_str()) data-sequence=(stop.sequence) data-status=(status_class(stop.status)) {
            h3 {
                span.seq { (stop.sequence) "." }
                (kind_name(stop.kind)) ": " (place.city) ", " (place.state.as_str())
                " " span class=(format!("badge stop-status {}", status_class(stop.status))) data-field="status" { (status_name(stop.status)) }
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
                dt { "Place" } dd {
                    @if let Some(address) = place.address { (address) ", " }
                    (place.city) ", " (place.state.as_str()) " " (place.zip)
                }
                dt { @if stop.appointment_end.is_some() { "Window" } @else { "Appointment" } }
                dd data-field="window" { (window(stop.appointment.as_ref(), stop.appointment_end.as_ref())) }
                @if let Some(original) = stop.original_appointment {
                    dt { "First appointment" } dd { (crate::dashboard::widgets::when(Some(original.start))) }
                }
                @if stop.eta.is_some() {
                    dt { "ETA" } dd data-field="eta" {
                        (when(stop.eta.as_ref()))
                        @if stop.late_risk { " " span.badge.late { "At risk of being late" } }
                    }
                }
                dt { "Arrived" } dd data-field="arrived" {
                    (when(stop.arrived_at.as_ref()))
                    @if stop.inferred { " (inferred)" }
                }
                dt { "Departed" } dd data-field="departed" { (when(stop.departed_at.as_ref())) }
                @if stop.skipped_at.is_some() {
                    dt { "Skipped" } dd { (when(stop.skipped_at.as_ref())) }
                }
                dt { "Dwell" } dd data-field="dwell" { (minutes(stop.dwell_minutes)) " (planned " (minutes(Some(stop.planned_dwell_minutes))) ")" }
                dt { "Detention" } dd data-field="detention" { (minutes(stop.detention_minutes)) }
                dt { "Handling" } dd { (match stop.handling { Handling::Live => "live", Handling::Drop => "drop" }) }
                @if !stop.references.is_empty() {
                    dt { "References" } dd data-field="references" {
                        @for (i, r) in stop.references.iter().enumerate() {
                            @if i > 0 { ", " }
                            (r.kind.as_str().replace('_', " ")) " " strong { (r.value) }
                        }
                    }
                }
                @if let Some(contact) = stop.contact {
                    dt { "Contact" } dd {
                        (contact_line(contact))
                    }
                }
                @if let Some(notes) = stop.notes {
                    dt { "Notes" } dd { (notes) }
                }
                dt { "Geofence" } dd {
                    @match (place.radius_m, place.placed_by) {
                        (Some(radius), Some(placed_by)) => {
                            (format!("{radius} m around the "))
                            (match placed_by { PlacedBy::Coordinates => "facility", PlacedBy::Zip => "ZIP centre" })
                        }
                        _ => "not placed (unknown ZIP)",
                    }
                }
            }
        }
    }
}

fn contact_line(contact: &crate::domain::stop_plan::Contact) -> String {
    [&contact.name, &contact.phone, &contact.email]
        .into_iter()
        .flatten()
        .cloned()
        .collect::<Vec<_>>()
        .join(" · ")
}
