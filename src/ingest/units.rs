//! Unit conversions from what devices send to what the API stores: mph and
//! degrees in `[0, 360)`.

/// International knot (1,852 m an hour) in mph.
pub const MPH_PER_KNOT: f64 = 1.150_779_448;
/// Metres a second in mph.
pub const MPH_PER_METRE_PER_SECOND: f64 = 2.236_936_292;
/// Kilometres an hour in mph.
pub const MPH_PER_KMH: f64 = 0.621_371_192;

/// The unit a device reports ground speed in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SpeedUnit {
    Knots,
    MetresPerSecond,
    KilometresPerHour,
    MilesPerHour,
}

impl SpeedUnit {
    /// The values of the OsmAnd endpoint's `speed_unit` parameter.
    pub fn from_param(raw: &str) -> Option<Self> {
        match raw.trim() {
            "kn" => Some(Self::Knots),
            "mps" => Some(Self::MetresPerSecond),
            "kmh" => Some(Self::KilometresPerHour),
            "mph" => Some(Self::MilesPerHour),
            _ => None,
        }
    }

    pub fn to_mph(self, speed: f64) -> f64 {
        match self {
            Self::Knots => speed * MPH_PER_KNOT,
            Self::MetresPerSecond => speed * MPH_PER_METRE_PER_SECOND,
            Self::KilometresPerHour => speed * MPH_PER_KMH,
            Self::MilesPerHour => speed,
        }
    }
}

/// A course in degrees folded into `[0, 360)`; a negative course is the
/// devices' way of saying "unknown" (-1 on iOS and in Traccar Client 9).
/// The caller has already refused non-finite numbers.
pub fn normalise_heading(degrees: f64) -> Option<f64> {
    if degrees < 0.0 {
        return None;
    }
    let folded = degrees.rem_euclid(360.0);
    // rem_euclid can round up to exactly 360 for values a hair below it.
    Some(if folded >= 360.0 { 0.0 } else { folded })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn close(actual: f64, expected: f64) {
        assert!(
            (actual - expected).abs() < 1e-6,
            "{actual} is not {expected}"
        );
    }

    #[test]
    fn knots_convert_to_mph() {
        close(SpeedUnit::Knots.to_mph(1.0), 1.150_779_448);
        close(SpeedUnit::Knots.to_mph(20.5), 23.590_978_684);
        close(SpeedUnit::Knots.to_mph(0.0), 0.0);
    }

    #[test]
    fn metres_per_second_convert_to_mph() {
        close(SpeedUnit::MetresPerSecond.to_mph(1.0), 2.236_936_292);
        close(SpeedUnit::MetresPerSecond.to_mph(26.8224), 60.000_000_0);
    }

    #[test]
    fn kilometres_per_hour_convert_to_mph() {
        close(SpeedUnit::KilometresPerHour.to_mph(1.0), 0.621_371_192);
        close(SpeedUnit::KilometresPerHour.to_mph(100.0), 62.137_119_2);
    }

    #[test]
    fn mph_stays_mph() {
        close(SpeedUnit::MilesPerHour.to_mph(55.5), 55.5);
    }

    #[test]
    fn speed_unit_parameter_values() {
        assert_eq!(SpeedUnit::from_param("kn"), Some(SpeedUnit::Knots));
        assert_eq!(
            SpeedUnit::from_param("mps"),
            Some(SpeedUnit::MetresPerSecond)
        );
        assert_eq!(
            SpeedUnit::from_param("kmh"),
            Some(SpeedUnit::KilometresPerHour)
        );
        assert_eq!(SpeedUnit::from_param("mph"), Some(SpeedUnit::MilesPerHour));
        assert_eq!(SpeedUnit::from_param("knots"), None);
        assert_eq!(SpeedUnit::from_param("MPS"), None);
        assert_eq!(SpeedUnit::from_param(""), None);
    }

    #[test]
    fn headings_fold_into_a_circle() {
        close(normalise_heading(0.0).unwrap(), 0.0);
        close(normalise_heading(92.0).unwrap(), 92.0);
        close(normalise_heading(359.5).unwrap(), 359.5);
        close(normalise_heading(360.0).unwrap(), 0.0);
        close(normalise_heading(450.25).unwrap(), 90.25);
        close(normalise_heading(720.0).unwrap(), 0.0);
        let just_below = 360.0 - f64::EPSILON * 64.0;
        let folded = normalise_heading(just_below).unwrap();
        assert!((0.0..360.0).contains(&folded), "{folded}");
    }

    #[test]
    fn negative_headings_are_unknown() {
        assert_eq!(normalise_heading(-1.0), None);
        assert_eq!(normalise_heading(-0.5), None);
        assert_eq!(normalise_heading(-720.0), None);
    }
}
