//! Share links as the account sees them, and the public tracking page's data
//! (`/track/{token}.json`): what a consignee may see of a load, nothing more.

use chrono::{DateTime, Utc};
use serde::Serialize;
use utoipa::ToSchema;

use crate::domain::load::Load;
use crate::domain::share_link::ShareLink;
use crate::domain::stops::{ArrivalStatus, StopKind};
use crate::domain::timestamp::format;
use crate::domain::tracking::TrackingState;

use super::stops::StopView;
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

/// A stop on the public page: its times and, at arrival, how it compares
/// with the appointment.
#[derive(Serialize, ToSchema)]
pub struct PublicStop {
    #[serde(rename = "type")]
    pub kind: StopKind,
    pub place: PublicPlace,
    /// Where the stop is on the map (its geofence's centre); null when freight
    /// cannot place it.
    #[schema(required = true)]
    pub lat: Option<f64>,
    #[schema(required = true)]
    pub lng: Option<f64>,
    #[schema(required = true, format = DateTime)]
    pub appointment: Option<String>,
    #[schema(required = true, format = DateTime)]
    pub arrived_at: Option<String>,
    #[schema(required = true, format = DateTime)]
    pub departed_at: Option<String>,
    #[schema(required = true)]
    pub arrival_status: Option<ArrivalStatus>,
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
    #[schema(required = true, format = DateTime)]
    pub eta: Option<String>,
    pub late_risk: bool,
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
        let summary = state.map(TrackingSummary::new).unwrap_or_default();
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
        PublicTracking {
            status: load.status.as_str(),
            origin: place(&load.origin),
            destination: place(&load.destination),
            position,
            eta: summary.eta.clone(),
            late_risk: summary.late_risk,
            stops: stops
                .iter()
                .map(|stop| PublicStop {
                    kind: stop.kind,
                    place: PublicPlace {
                        city: stop.location.city.to_owned(),
                        state: stop.location.state.as_str().to_owned(),
                    },
                    lat: stop.location.lat,
                    lng: stop.location.lng,
                    appointment: stop.appointment.clone(),
                    arrived_at: stop.arrived_at.clone(),
                    departed_at: stop.departed_at.clone(),
                    arrival_status: stop.arrival_status,
                })
                .collect(),
            link_expires_at: format(&link_ends_at),
        }
    }
}
