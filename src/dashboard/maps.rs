//! The maps' frames on the board and the load pages. The drawing is done in the
//! browser: `assets/board.js` (the board) and `assets/load_map.js` (a load's
//! trail), with Leaflet over the operator's tiles when `--map-tiles` is set and
//! over the vendored outline of the states otherwise.

use maud::{Markup, html};
use serde::Serialize;

use super::map_tiles::MapSource;
use crate::domain::load::Load;
use crate::domain::stops::Geofence;
use crate::domain::tracking::GpsFix;

/// Leaflet's stylesheet and script, on the pages that draw tiles: pages
/// without tiles load neither (they are 160 KB the outline does not need).
pub fn leaflet(map: &MapSource) -> Markup {
    html! {
        @if map.tiles().is_some() {
            link rel="stylesheet" href="/dashboard/assets/leaflet.css";
            script src="/dashboard/assets/leaflet.js" defer {}
        }
    }
}

/// What `load_map.js` draws: the trail as a line (oldest first), the truck at
/// its latest fix, and the stops freight can place.
#[derive(Serialize)]
struct LoadMap {
    trail: Vec<[f64; 2]>,
    truck: Option<Truck>,
    stops: Vec<MapStop>,
}

#[derive(Serialize)]
struct Truck {
    lat: f64,
    lng: f64,
    heading: Option<f64>,
}

#[derive(Serialize)]
struct MapStop {
    #[serde(rename = "type")]
    kind: &'static str,
    /// 1 for the first stop.
    sequence: usize,
    lat: f64,
    lng: f64,
    city: String,
    state: String,
}

/// A load's map: `points` newest first, as the history reads them.
pub fn load_map(map: &MapSource, load: &Load, points: &[GpsFix]) -> Markup {
    let stops = load
        .stops()
        .iter()
        .enumerate()
        .filter_map(|(i, stop)| {
            Geofence::of(&stop.location).map(|fence| MapStop {
                kind: stop.kind.as_str(),
                sequence: i + 1,
                lat: fence.lat,
                lng: fence.lng,
                city: stop.location.city.clone(),
                state: stop.location.state.to_string(),
            })
        })
        .collect();
    let data = LoadMap {
        trail: points.iter().rev().map(|fix| [fix.lat, fix.lng]).collect(),
        truck: points.first().map(|fix| Truck {
            lat: fix.lat,
            lng: fix.lng,
            heading: fix.heading_deg,
        }),
        stops,
    };
    let json = serde_json::to_string(&data).unwrap_or_else(|_| "{}".to_owned());
    let tiles = map.tiles();
    html! {
        section.card {
            h2 { "Map" }
            div #load-map.load-map data-outline="/dashboard/assets/us-states.json" data-map=(json)
                data-tiles=[tiles.map(|t| &t.template)]
                data-attribution=[tiles.map(|t| &t.attribution)] {}
            ul.map-legend aria-label="Map legend" {
                li { span.key.key-pickup {} "Pickup" }
                li { span.key.key-delivery {} "Delivery" }
                li { span.key.key-truck {} "Truck, at its latest fix" }
                li { span.key.key-trail {} "GPS trail" }
            }
            p.hint {
                @match points.len() {
                    0 => "No GPS points yet: the map shows the stops.",
                    1 => "The one GPS point so far, with the stops.",
                    n => { "The trail of the latest " (n) " GPS points, with the stops." }
                }
            }
        }
        link rel="stylesheet" href="/dashboard/assets/board.css";
        (leaflet(map))
        script src="/dashboard/assets/board.js" defer {}
        script src="/dashboard/assets/load_map.js" defer {}
    }
}
