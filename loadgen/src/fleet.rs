//! Simulated trucks: each drives between two real US cities along the great
//! circle at a highway speed, and reports where it is.

use rand::Rng;

/// Cities trucks drive between: (name, state, ZIP, lat, lng).
pub const CITIES: &[(&str, &str, &str, f64, f64)] = &[
    ("Dallas", "TX", "75201", 32.7767, -96.7970),
    ("Atlanta", "GA", "30303", 33.7490, -84.3880),
    ("Chicago", "IL", "60601", 41.8781, -87.6298),
    ("Los Angeles", "CA", "90012", 34.0522, -118.2437),
    ("Houston", "TX", "77002", 29.7604, -95.3698),
    ("Phoenix", "AZ", "85003", 33.4484, -112.0740),
    ("Denver", "CO", "80202", 39.7392, -104.9903),
    ("Memphis", "TN", "38103", 35.1495, -90.0490),
    ("Kansas City", "MO", "64106", 39.0997, -94.5786),
    ("Indianapolis", "IN", "46204", 39.7684, -86.1581),
    ("Columbus", "OH", "43215", 39.9612, -82.9988),
    ("Charlotte", "NC", "28202", 35.2271, -80.8431),
    ("Jacksonville", "FL", "32202", 30.3322, -81.6557),
    ("Nashville", "TN", "37203", 36.1627, -86.7816),
    ("Salt Lake City", "UT", "84111", 40.7608, -111.8910),
    ("Seattle", "WA", "98104", 47.6062, -122.3321),
    ("Sacramento", "CA", "95814", 38.5816, -121.4944),
    ("Albuquerque", "NM", "87102", 35.0844, -106.6504),
    ("Oklahoma City", "OK", "73102", 35.4676, -97.5164),
    ("Harrisburg", "PA", "17101", 40.2732, -76.8867),
];

/// One truck on its way from `from` to `to` (indexes into [`CITIES`]).
#[derive(Debug, Clone)]
pub struct Truck {
    pub from: usize,
    pub to: usize,
    /// Miles driven from `from`.
    driven: f64,
    total: f64,
    pub speed_mph: f64,
}

impl Truck {
    /// A truck between two different cities, somewhere along its way.
    pub fn new(rng: &mut impl Rng) -> Self {
        let from = rng.random_range(0..CITIES.len());
        let mut to = rng.random_range(0..CITIES.len() - 1);
        if to >= from {
            to += 1;
        }
        let total = miles_between(from, to);
        Truck {
            from,
            to,
            driven: rng.random_range(0.0..total * 0.5),
            total,
            speed_mph: rng.random_range(55.0..70.0),
        }
    }

    /// Drives on for `seconds`; at the destination it heads back.
    pub fn drive(&mut self, seconds: f64) {
        self.driven += self.speed_mph * seconds / 3600.0;
        if self.driven >= self.total {
            self.driven -= self.total;
            std::mem::swap(&mut self.from, &mut self.to);
        }
    }

    /// (lat, lng, heading in degrees from north) where the truck is.
    pub fn position(&self) -> (f64, f64, f64) {
        let (a, b) = (point(self.from), point(self.to));
        let fraction = (self.driven / self.total).clamp(0.0, 1.0);
        let (lat, lng) = along(a, b, fraction);
        let (ahead_lat, ahead_lng) = along(a, b, (fraction + 0.001).min(1.0));
        (lat, lng, bearing((lat, lng), (ahead_lat, ahead_lng)))
    }
}

fn point(city: usize) -> (f64, f64) {
    (CITIES[city].3, CITIES[city].4)
}

fn miles_between(a: usize, b: usize) -> f64 {
    let ((lat1, lng1), (lat2, lng2)) = (point(a), point(b));
    haversine_miles(lat1, lng1, lat2, lng2).max(1.0)
}

/// The point `fraction` of the way from `a` to `b` along the great circle.
fn along(a: (f64, f64), b: (f64, f64), fraction: f64) -> (f64, f64) {
    let (lat1, lng1) = (a.0.to_radians(), a.1.to_radians());
    let (lat2, lng2) = (b.0.to_radians(), b.1.to_radians());
    let cosine = lat1.sin() * lat2.sin() + lat1.cos() * lat2.cos() * (lng2 - lng1).cos();
    let angle = cosine.clamp(-1.0, 1.0).acos();
    if angle < 1e-9 {
        return a;
    }
    let wa = ((1.0 - fraction) * angle).sin() / angle.sin();
    let wb = (fraction * angle).sin() / angle.sin();
    let x = wa * lat1.cos() * lng1.cos() + wb * lat2.cos() * lng2.cos();
    let y = wa * lat1.cos() * lng1.sin() + wb * lat2.cos() * lng2.sin();
    let z = wa * lat1.sin() + wb * lat2.sin();
    let lat = z.atan2((x * x + y * y).sqrt());
    (lat.to_degrees(), y.atan2(x).to_degrees())
}

/// Initial bearing from `a` to `b`, degrees clockwise from true north, 0–360.
fn bearing(a: (f64, f64), b: (f64, f64)) -> f64 {
    let (lat1, lat2) = (a.0.to_radians(), b.0.to_radians());
    let dlng = (b.1 - a.1).to_radians();
    let y = dlng.sin() * lat2.cos();
    let x = lat1.cos() * lat2.sin() - lat1.sin() * lat2.cos() * dlng.cos();
    let degrees = y.atan2(x).to_degrees().rem_euclid(360.0);
    // 360.0 itself (rounding) is north.
    if degrees >= 360.0 { 0.0 } else { degrees }
}

/// Great-circle distance in statute miles (the server's `geo::haversine_miles`;
/// this crate does not depend on the service it drives).
fn haversine_miles(lat1: f64, lng1: f64, lat2: f64, lng2: f64) -> f64 {
    const EARTH_RADIUS_MILES: f64 = 3958.8;
    let (phi1, phi2) = (lat1.to_radians(), lat2.to_radians());
    let (dphi, dlambda) = ((lat2 - lat1).to_radians(), (lng2 - lng1).to_radians());
    let a = (dphi / 2.0).sin().powi(2) + phi1.cos() * phi2.cos() * (dlambda / 2.0).sin().powi(2);
    2.0 * EARTH_RADIUS_MILES * a.sqrt().asin()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_truck_moves_at_its_speed_along_the_way_and_turns_back() {
        let mut truck = Truck {
            from: 0,
            to: 1,
            driven: 0.0,
            total: miles_between(0, 1),
            speed_mph: 60.0,
        };
        let (lat0, lng0, heading) = truck.position();
        assert!((lat0 - 32.7767).abs() < 1e-6 && (lng0 + 96.797).abs() < 1e-6);
        assert!(
            (60.0..=100.0).contains(&heading),
            "Dallas to Atlanta heads east: {heading}"
        );
        truck.drive(3600.0);
        let (lat, lng, _) = truck.position();
        let moved = haversine_miles(lat0, lng0, lat, lng);
        assert!((moved - 60.0).abs() < 0.5, "an hour at 60 mph: {moved}");
        truck.drive(3600.0 * 24.0);
        assert_eq!((truck.from, truck.to), (1, 0), "turned back at Atlanta");
    }

    #[test]
    fn positions_stay_on_the_map() {
        let mut rng = rand::rng();
        for _ in 0..200 {
            let mut truck = Truck::new(&mut rng);
            truck.drive(rng.random_range(0.0..100_000.0));
            let (lat, lng, heading) = truck.position();
            assert!((24.0..50.0).contains(&lat) && (-125.0..-66.0).contains(&lng));
            assert!((0.0..360.0).contains(&heading));
        }
    }
}
