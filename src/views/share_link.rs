//! Share links as the account sees them, and the public tracking page's data
//! (`/track/{token}.json`): what a consignee may see of a load, nothing more.

use chrono::{DateTime, Utc};
use serde::Serialize;
use utoipa::ToSchema;

use crate::domain::load::Load;
use crate::domain::local_time;
use crate::domain::share_link::ShareLink;
use crate::domain::stops::{ArrivalStatus, StopKind};
use crate::domain::timestamp::format;
use crate::domain::tracking::TrackingState;

use super::stops::{StopStatus, StopView};
use super::tracking::TrackingSummary;

/// A share link, as made (`url` holds the token: shown this once).
#[derive(Serialize, ToSchema)]
pub struct NewShareLinkView {
    #[schema(value_type = String, examples("shl_01jd8y6m2x0q3v5p7r9t1w3y5z"))]
    pub id: String,
    /// The public tracking page. Anyone with it sees the load's route, status,
    /// position, ETA and stops (no carrier, rate, notes, weight or ids).
    pub url: String,
    #[schema(format = DateTime)]
    pub expires_at: String,
    #[schema(format = DateTime)]
    pub created_at: String,
}

impl NewShareLinkView {
    pub fn new(link: &ShareLink, origin: &str, token: &str) -> Self {
        NewShareLinkView {
            id: link.id.as_str().to_owned(),
            url: format!("{origin}/track/{token}"),
            expires_at: format(&link.expires_at),
            created_at: format(&link.created_at),
        }
    }
}

/// A share link in a list (its URL is not kept: only the one who made it has it).
#[derive(Serialize, ToSchema)]
pub struct ShareLinkView {
    #[schema(value_type = String)]
    pub id: String,
    /// When it stops working: its expiry, or 7 days after delivery if sooner.
    #[schema(format = DateTime)]
    pub expires_at: String,
    #[schema(format = DateTime)]
    pub created_at: String,
    #[schema(required = true, format = DateTime)]
    pub revoked_at: Option<String>,
    /// Opens its page now: neither revoked nor expired.
    pub active: bool,
}

impl ShareLinkView {
    pub fn new(link: &ShareLink, delivered_at: Option<DateTime<Utc>>, now: DateTime<Utc>) -> Self {
        ShareLinkView {
            id: link.id.as_str().to_owned(),
            expires_at: format(&link.ends_at(delivered_at)),
            created_at: format(&link.created_at),
            revoked_at: link.revoked_at.as_ref().map(format),
            active: link.check(delivered_at, now).is_ok(),
        }
    }
}

/// A city and state, without street or ZIP.
#[derive(Serialize, ToSchema)]
pub struct PublicPlace {
    pub city: String,
    pub state: String,
}

/// Where the truck is.
#[derive(Serialize, ToSchema)]
pub struct PublicPosition {
    pub lat: f64,
    pub lng: f64,
    #[schema(format = DateTime)]
    pub at: String,
    #[schema(required = true)]
    pub city: Option<String>,
    #[schema(required = true)]
    pub state: Option<String>,
}

/// A stop on the public page: where (city and state), its appointment or
/// window, where it stands, its ETA and, at arrival, how it compares with
/// the appointment. Its position is rounded to about a kilometre (two
/// decimals), as its street and ZIP are held back, and so are its
/// references, contact and notes.
#[derive(Serialize, ToSchema)]
pub struct PublicStop {
    /// 1 for the first stop, in the order the truck visits them.
    pub sequence: u32,
    #[serde(rename = "type")]
    pub kind: StopKind,
    pub status: StopStatus,
    pub place: PublicPlace,
    /// Where the stop is on the map (its geofence's centre); null when freight
    /// cannot place it.
    #[schema(required = true)]
    pub lat: Option<f64>,
    #[schema(required = true)]
    pub lng: Option<f64>,
    /// The appointment time, or a window's start.
    #[schema(required = true, format = DateTime)]
    pub appointment: Option<String>,
    /// A window's end; null for an appointment time.
    #[schema(required = true, format = DateTime)]
    pub appointment_end: Option<String>,
    /// While the stop is ahead and the truck tracked: its estimated arrival.
    #[schema(required = true, format = DateTime)]
    pub eta: Option<String>,
    /// The ETA is past the window's end, or more than 15 minutes past the
    /// appointment; false without an ETA.
    pub late_risk: bool,
    #[schema(required = true, format = DateTime)]
    pub arrived_at: Option<String>,
    #[schema(required = true, format = DateTime)]
    pub departed_at: Option<String>,
    #[schema(required = true)]
    pub arrival_status: Option<ArrivalStatus>,
    /// Arrival minus appointment, whole minutes (negative: early).
    #[schema(required = true)]
    pub deviation_minutes: Option<i64>,
    /// The arrival in the stop's local time with its zone named, and how it
    /// compares with the appointment: "1 Dec 2026, 21:20 EST (30 min late)".
    #[schema(required = true)]
    pub arrived_local: Option<String>,
}

/// A coordinate to two decimals: within about a kilometre.
fn about_a_kilometre(degrees: f64) -> f64 {
    (degrees * 100.0).round() / 100.0
}

/// "1 Dec 2026, 21:20 EST (30 min late)", once the truck has arrived.
fn arrived_local(stop: &StopView<'_>) -> Option<String> {
    let at: DateTime<Utc> = stop.arrived_at.as_ref()?.parse().ok()?;
    let local = local_time::format_local(at, stop.location.state.as_str());
    let mark = match (stop.arrival_status, stop.deviation_minutes) {
        (Some(ArrivalStatus::Late), Some(m)) => format!(" ({} late)", minutes(m)),
        (Some(ArrivalStatus::Early), Some(m)) => format!(" ({} early)", minutes(-m)),
        (Some(ArrivalStatus::OnTime), _) => " (on time)".to_owned(),
        _ => String::new(),
    };
    Some(format!("{local}{mark}"))
}

/// 30 as "30 min", 135 as "2 h 15 min".
fn minutes(m: i64) -> String {
    match (m / 60, m % 60) {
        (0, m) => format!("{m} min"),
        (h, 0) => format!("{h} h"),
        (h, m) => format!("{h} h {m} min"),
    }
}

/// The public tracking page's data.
#[derive(Serialize, ToSchema)]
pub struct PublicTracking {
    #[schema(value_type = String)]
    pub status: &'static str,
    pub origin: PublicPlace,
    pub destination: PublicPlace,
    #[schema(required = true)]
    pub position: Option<PublicPosition>,
    /// Null once the truck has arrived at the delivery (see `arrival`).
    #[schema(required = true, format = DateTime)]
    pub eta: Option<String>,
    /// False once the truck has arrived at the delivery.
    pub late_risk: bool,
    /// Once the truck has arrived at the delivery: when, in the delivery's
    /// local time, and how it compares with the appointment.
    #[schema(required = true)]
    pub arrival: Option<String>,
    pub stops: Vec<PublicStop>,
    /// When the link stops working.
    #[schema(format = DateTime)]
    pub link_expires_at: String,
}

impl PublicTracking {
    pub fn new(
        load: &Load,
        state: Option<&TrackingState>,
        stops: &[StopView<'_>],
        link_ends_at: DateTime<Utc>,
    ) -> Self {
        let summary = state.map(TrackingSummary::of).unwrap_or_default();
        let position = state.and_then(|s| s.recent.first()).map(|fix| {
            let place = summary.current_location.as_ref();
            PublicPosition {
                lat: fix.lat,
                lng: fix.lng,
                at: format(&fix.timestamp),
                city: place.and_then(|p| p.city).map(str::to_owned),
                state: place.and_then(|p| p.state).map(str::to_owned),
            }
        });
        let place = |l: &crate::domain::location::Location| PublicPlace {
            city: l.city.clone(),
            state: l.state.as_str().to_owned(),
        };
        let stops: Vec<PublicStop> = stops
            .iter()
            .map(|stop| PublicStop {
                sequence: stop.sequence,
                kind: stop.kind,
                status: stop.status,
                place: PublicPlace {
                    city: stop.location.city.to_owned(),
                    state: stop.location.state.as_str().to_owned(),
                },
                lat: stop.location.lat.map(about_a_kilometre),
                lng: stop.location.lng.map(about_a_kilometre),
                appointment: stop.appointment.clone(),
                appointment_end: stop.appointment_end.clone(),
                eta: stop.eta.clone(),
                late_risk: stop.late_risk,
                arrived_at: stop.arrived_at.clone(),
                departed_at: stop.departed_at.clone(),
                arrival_status: stop.arrival_status,
                deviation_minutes: stop.deviation_minutes,
                arrived_local: arrived_local(stop),
            })
            .collect();
        let arrival = stops
            .iter()
            .rfind(|s| s.kind == StopKind::Delivery)
            .and_then(|s| s.arrived_local.as_ref())
            .map(|local| format!("Arrived {local}"));
        // Arrived: the estimate and its risk are over (the stop says how it went).
        let arrived = arrival.is_some();
        PublicTracking {
            status: load.status.as_str(),
            origin: place(&load.origin),
            destination: place(&load.destination),
            position,
            eta: summary.eta.clone().filter(|_| !arrived),
            late_risk: summary.late_risk && !arrived,
            arrival,
            stops,
            link_expires_at: format(&link_ends_at),
        }
    }
}
