//! US ZIP code centroids: where a destination is, and which city a position is near.
//!
//! `zip_centroids.csv` (zip, lat, lng, state, kind, city; 41,914 rows) is built from
//! the dataset embedded in the `zipcodes` crate 3.0.1 on crates.io (MIT licence,
//! <https://github.com/seanpianka/zipcodes>), keeping every non-military US ZIP with
//! coordinates, rounded to 4 decimals (~11 m). `kind` is S (standard), P (PO box)
//! or U (unique: one organisation). Every ZIP locates a destination; only standard
//! ZIPs name the city of a position, because PO-box and unique ZIPs often carry a
//! rounded, shared centroid (downtown Dallas would otherwise be "Irving").
//! To rebuild the table:
//!
//! ```sh
//! bzcat ~/.cargo/registry/src/*/zipcodes-3.0.1/src/zips.json.bz2 | python3 -c '
//! import json, sys
//! kinds = {"STANDARD": "S", "PO BOX": "P", "UNIQUE": "U"}
//! rows = []
//! for z in json.load(sys.stdin):
//!     if z["zip_code_type"] == "MILITARY" or z["country"] != "US":
//!         continue
//!     if float(z["lat"]) == 0 and float(z["long"]) == 0:
//!         continue
//!     city = z["city"].replace(",", " ")
//!     rows.append("%s,%.4f,%.4f,%s,%s,%s" % (z["zip_code"], float(z["lat"]), float(z["long"]), z["state"], kinds[z["zip_code_type"]], city))
//! print("\n".join(sorted(rows)))
//! ' > src/geo/zip_centroids.csv
//! ```

use std::collections::HashMap;
use std::sync::OnceLock;

const ZIP_CENTROIDS: &str = include_str!("zip_centroids.csv");
pub const EARTH_RADIUS_MILES: f64 = 3_958.8;
/// Grid cells for the nearest-place search, in degrees.
const CELL_DEGREES: f64 = 0.25;
/// Miles per degree of latitude.
const MILES_PER_DEGREE: f64 = 69.05;
/// Beyond this, a position is not "near" any US ZIP (at sea, abroad): no city is given.
const MAX_NEAREST_MILES: f64 = 50.0;

/// A ZIP code's centroid and the city it is addressed to.
#[derive(Debug, Clone, PartialEq)]
pub struct Place {
    pub zip: String,
    pub lat: f64,
    pub lng: f64,
    pub state: String,
    pub city: String,
    /// A standard (delivery-area) ZIP, as opposed to a PO-box or single-organisation one.
    pub standard: bool,
}

struct ZipTable {
    places: Vec<Place>,
    by_zip: HashMap<String, usize>,
    /// (lat cell, lng cell) → indexes into `places`.
    grid: HashMap<(i32, i32), Vec<usize>>,
}

fn cell(lat: f64, lng: f64) -> (i32, i32) {
    (
        (lat / CELL_DEGREES).floor() as i32,
        (lng / CELL_DEGREES).floor() as i32,
    )
}

fn table() -> &'static ZipTable {
    static TABLE: OnceLock<ZipTable> = OnceLock::new();
    TABLE.get_or_init(|| {
        let mut places = Vec::with_capacity(42_000);
        for line in ZIP_CENTROIDS.lines() {
            let mut fields = line.splitn(6, ',');
            let (Some(zip), Some(lat), Some(lng), Some(state), Some(kind), Some(city)) = (
                fields.next(),
                fields.next(),
                fields.next(),
                fields.next(),
                fields.next(),
                fields.next(),
            ) else {
                continue;
            };
            let (Ok(lat), Ok(lng)) = (lat.parse(), lng.parse()) else {
                continue;
            };
            places.push(Place {
                zip: zip.to_owned(),
                lat,
                lng,
                state: state.to_owned(),
                city: city.to_owned(),
                standard: kind == "S",
            });
        }
        let by_zip = places
            .iter()
            .enumerate()
            .map(|(i, p)| (p.zip.clone(), i))
            .collect();
        let mut grid: HashMap<(i32, i32), Vec<usize>> = HashMap::new();
        for (i, p) in places.iter().enumerate().filter(|(_, p)| p.standard) {
            grid.entry(cell(p.lat, p.lng)).or_default().push(i);
        }
        ZipTable {
            places,
            by_zip,
            grid,
        }
    })
}

/// Loads the table now rather than on the first request that needs it.
pub fn warm_up() {
    let _ = table();
}

/// The centroid of a ZIP code (`12345` or `12345-6789`). A ZIP the table lacks
/// (new, or a unique ZIP of one building) falls back to the nearest-numbered ZIP in
/// the same 3-digit area, which is in the same region.
pub fn zip_centroid(zip: &str) -> Option<&'static Place> {
    let table = table();
    let five = zip.get(..5)?;
    if let Some(&i) = table.by_zip.get(five) {
        return Some(&table.places[i]);
    }
    let wanted: u32 = five.parse().ok()?;
    let area = &five[..3];
    // `places` is sorted by ZIP, so the area's ZIPs are contiguous.
    let start = table.places.partition_point(|p| p.zip.as_str() < area);
    table.places[start..]
        .iter()
        .take_while(|p| p.zip.starts_with(area))
        .min_by_key(|p| {
            p.zip
                .parse::<u32>()
                .map_or(u32::MAX, |z| z.abs_diff(wanted))
        })
}

/// The standard ZIP centroid nearest to a position, if one is within 50 miles.
pub fn nearest_place(lat: f64, lng: f64) -> Option<&'static Place> {
    let table = table();
    let (row, col) = cell(lat, lng);
    // Over tens of miles a flat projection (longitude scaled by cos(latitude))
    // ranks places like the great circle does, at a fraction of the cost.
    let lng_scale = lat.to_radians().cos().max(0.05);
    let planar = |p: &Place| {
        let (dy, dx) = (p.lat - lat, (p.lng - lng) * lng_scale);
        dy * dy + dx * dx
    };
    let reach_degrees = MAX_NEAREST_MILES / MILES_PER_DEGREE;
    let max_ring = ((reach_degrees / (CELL_DEGREES * lng_scale)).ceil() as i32 + 1).min(64);
    let mut best: Option<(f64, &Place)> = None;
    for ring in 0..=max_ring {
        for dr in -ring..=ring {
            for dc in -ring..=ring {
                if dr.abs() != ring && dc.abs() != ring {
                    continue;
                }
                for &i in table.grid.get(&(row + dr, col + dc)).into_iter().flatten() {
                    let place = &table.places[i];
                    let d = planar(place);
                    if best.is_none_or(|(b, _)| d < b) {
                        best = Some((d, place));
                    }
                }
            }
        }
        // Every cell beyond this ring is at least `ring` cells away in each direction.
        let beyond = f64::from(ring) * CELL_DEGREES * lng_scale;
        if best.is_some_and(|(b, _)| b <= beyond * beyond) {
            break;
        }
    }
    best.map(|(_, p)| p)
        .filter(|p| haversine_miles(lat, lng, p.lat, p.lng) <= MAX_NEAREST_MILES)
}

/// Great-circle distance in statute miles.
pub fn haversine_miles(lat1: f64, lng1: f64, lat2: f64, lng2: f64) -> f64 {
    let (phi1, phi2) = (lat1.to_radians(), lat2.to_radians());
    let dphi = (lat2 - lat1).to_radians();
    let dlambda = (lng2 - lng1).to_radians();
    let a = (dphi / 2.0).sin().powi(2) + phi1.cos() * phi2.cos() * (dlambda / 2.0).sin().powi(2);
    2.0 * EARTH_RADIUS_MILES * a.sqrt().asin()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn known_zips_resolve() {
        let dallas = zip_centroid("75201").unwrap();
        assert_eq!(
            (dallas.city.as_str(), dallas.state.as_str()),
            ("Dallas", "TX")
        );
        assert!((dallas.lat - 32.79).abs() < 0.1 && (dallas.lng + 96.80).abs() < 0.1);
        assert_eq!(zip_centroid("75201-1234").unwrap().zip, "75201");
        assert!(zip_centroid("abc").is_none());
        assert!(table().places.len() > 40_000);
    }

    #[test]
    fn unknown_zips_fall_back_to_their_area() {
        let place = zip_centroid("75299").expect("area 752 exists");
        assert!(place.zip.starts_with("752"));
        assert_eq!(place.state, "TX");
    }

    #[test]
    fn nearest_place_finds_the_city() {
        // Downtown Dallas, where PO-box ZIPs of Irving share a rounded centroid.
        assert_eq!(nearest_place(32.7767, -96.797).unwrap().city, "Dallas");
        // Downtown Atlanta.
        let place = nearest_place(33.749, -84.388).unwrap();
        assert_eq!(place.state, "GA");
        assert_eq!(place.city, "Atlanta");
        // Mid-Atlantic Ocean: nothing near.
        assert!(nearest_place(30.0, -45.0).is_none());
    }

    #[test]
    fn the_grid_search_agrees_with_brute_force() {
        let table = table();
        // A deterministic spread of positions over the lower 48, Alaska and Hawaii.
        let mut seed = 12345u64;
        let mut next = || {
            seed = seed
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            (seed >> 11) as f64 / (1u64 << 53) as f64
        };
        for _ in 0..300 {
            let (lat, lng) = match (next() * 10.0) as u32 {
                0 => (55.0 + next() * 15.0, -165.0 + next() * 25.0),
                1 => (19.0 + next() * 3.0, -160.0 + next() * 5.0),
                _ => (25.0 + next() * 24.0, -124.0 + next() * 57.0),
            };
            let brute = table
                .places
                .iter()
                .filter(|p| p.standard)
                .map(|p| (haversine_miles(lat, lng, p.lat, p.lng), p))
                .min_by(|a, b| a.0.total_cmp(&b.0))
                .filter(|(d, _)| *d <= MAX_NEAREST_MILES);
            let fast = nearest_place(lat, lng);
            match (brute, fast) {
                (None, None) => {}
                (Some((d, _)), Some(p)) => {
                    // Ties and the flat projection may pick a neighbour, never a farther town.
                    let found = haversine_miles(lat, lng, p.lat, p.lng);
                    assert!(found - d < 0.5, "({lat}, {lng}): {found} vs {d}");
                }
                (Some((d, _)), None) => assert!(
                    d > MAX_NEAREST_MILES - 0.5,
                    "({lat}, {lng}) missed one at {d}"
                ),
                (None, Some(p)) => {
                    let found = haversine_miles(lat, lng, p.lat, p.lng);
                    assert!(found <= MAX_NEAREST_MILES, "({lat}, {lng}): {found}");
                }
            }
        }
    }

    #[test]
    fn haversine_matches_known_distances() {
        // Dallas to Atlanta is about 720 miles as the crow flies.
        let d = haversine_miles(32.7767, -96.7970, 33.7490, -84.3880);
        assert!((d - 721.0).abs() < 10.0, "{d}");
        assert_eq!(haversine_miles(10.0, 10.0, 10.0, 10.0), 0.0);
    }
}
