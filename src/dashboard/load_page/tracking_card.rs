//! The tracking card of a load's page: where the truck is, the next
//! delivery's ETA, and the driver's hours-of-service clock as the load's own
//! fixes show it (inferred from GPS, not read from an ELD).

use maud::{Markup, html};

use crate::dashboard::stop_words::minutes;
use crate::dashboard::widgets::{when, when_text};
use crate::domain::hos::{self, HoursOfService};
use crate::domain::load::{Load, LoadStatus};
use crate::views::tracking::TrackingSummary;

pub fn tracking_card(load: &Load, tracking: Option<&TrackingSummary>) -> Markup {
    // The board shows the loads on the road: assigned and in transit.
    let on_board = matches!(load.status, LoadStatus::Assigned | LoadStatus::InTransit);
    html! {
        section.card #tracking {
            h2 { "Tracking" }
            @match tracking.and_then(|t| t.current_location.as_ref().map(|here| (t, here))) {
                Some((t, here)) => {
                    dl.facts {
                        dt { "Position" } dd {
                            (format!("{:.4}, {:.4}", here.lat, here.lng))
                            @if let (Some(city), Some(state)) = (here.city, here.state) { " near " (city) ", " (state) }
                        }
                        dt { "Last update" } dd { (when_text(t.last_update.as_ref())) }
                        dt { "ETA (next delivery)" } dd { (when_text(t.eta.as_ref())) }
                        @if t.eta.is_some() {
                            dt { "Late risk" } dd {
                                @if t.late_risk { span.badge.late { "At risk of being late" } }
                                @else { "On time" }
                            }
                        }
                    }
                }
                None => p { "No GPS fix yet." },
            }
            @if let Some(clock) = tracking.and_then(|t| t.hours_of_service.as_ref()) {
                (hours_of_service(clock))
            }
            @if on_board {
                p { a href="/dashboard/board" { "See it on the board" } }
            }
        }
    }
}

/// Driving, window and since-break minutes against their limits, and when
/// the ETA's plan has the driver rest.
fn hours_of_service(clock: &HoursOfService) -> Markup {
    let of = |used: u32, limit: chrono::Duration| {
        format!(
            "{} of {}",
            minutes(Some(i64::from(used))),
            minutes(Some(limit.num_minutes()))
        )
    };
    html! {
        div #hours-of-service {
            h3 { "Hours of service" }
            p.hint { "Inferred from GPS, not from an ELD: driving is movement over 5 mph, and any stop of 30 minutes is a break." }
            dl.facts {
                dt { "Driving" } dd data-field="hos-driving" { (of(clock.driving_minutes, hos::DRIVING_LIMIT)) }
                dt { "Window" } dd data-field="hos-window" { (of(clock.window_minutes, hos::WINDOW)) }
                dt { "Since break" } dd data-field="hos-since-break" { (of(clock.since_break_minutes, hos::BREAK_AFTER)) }
                dt { "Next rest" } dd data-field="hos-next-rest" {
                    @match clock.next_rest_at {
                        Some(at) => (when(Some(at))),
                        None => "none needed before the last stop",
                    }
                }
            }
        }
    }
}
