//! The stops card of a load's page: its stops as a timeline (arrived,
//! departed, dwell, detention, early or late).

use maud::{Markup, html};

use crate::dashboard::session::Viewer;
use crate::dashboard::widgets::when_text as when;
use crate::domain::load::Load;
use crate::domain::stops::{ArrivalStatus, StopKind};
use crate::services::Services;
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
    let estimate = services
        .tracking
        .current(viewer.account_id(), &load.id)
        .await
        .ok()
        .and_then(|state| state.estimate());
    let planned = load.stops();
    let stops = StopView::of_load(
        load,
        &planned,
        &progress,
        estimate.as_ref(),
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
