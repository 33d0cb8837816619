//! Places: US state codes, ZIP codes, addresses and coordinates.

use serde::{Deserialize, Serialize};

/// The 50 states, the District of Columbia and Puerto Rico: where US freight
/// lanes run. Other territories are refused until a customer needs them.
pub const STATE_CODES: [&str; 52] = [
    "AL", "AK", "AZ", "AR", "CA", "CO", "CT", "DE", "DC", "FL", "GA", "HI", "ID", "IL", "IN", "IA",
    "KS", "KY", "LA", "ME", "MD", "MA", "MI", "MN", "MS", "MO", "MT", "NE", "NV", "NH", "NJ", "NM",
    "NY", "NC", "ND", "OH", "OK", "OR", "PA", "PR", "RI", "SC", "SD", "TN", "TX", "UT", "VT", "VA",
    "WA", "WV", "WI", "WY",
];

pub const MAX_CITY_CHARS: usize = 100;
pub const MAX_ADDRESS_CHARS: usize = 200;

/// A two-letter US state code, stored upper-case.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(try_from = "String", into = "String")]
pub struct UsState([u8; 2]);

impl UsState {
    /// Accepts any letter case (`tx` is `TX`); refuses anything that is not a state code.
    pub fn parse(raw: &str) -> Result<Self, String> {
        let upper = raw.trim().to_ascii_uppercase();
        if STATE_CODES.contains(&upper.as_str()) {
            let bytes = upper.as_bytes();
            Ok(Self([bytes[0], bytes[1]]))
        } else {
            Err("must be a two-letter US state code such as TX".into())
        }
    }

    pub fn as_str(&self) -> &str {
        std::str::from_utf8(&self.0).expect("state codes are ascii")
    }
}

impl TryFrom<String> for UsState {
    type Error = String;
    fn try_from(raw: String) -> Result<Self, String> {
        Self::parse(&raw)
    }
}

impl From<UsState> for String {
    fn from(state: UsState) -> String {
        state.as_str().to_owned()
    }
}

impl std::fmt::Display for UsState {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// `12345` or `12345-6789`.
pub fn parse_zip(raw: &str) -> Result<String, String> {
    let zip = raw.trim();
    let bytes = zip.as_bytes();
    let five = bytes.len() >= 5 && bytes[..5].iter().all(u8::is_ascii_digit);
    let ok = match bytes.len() {
        5 => five,
        10 => five && bytes[5] == b'-' && bytes[6..].iter().all(u8::is_ascii_digit),
        _ => false,
    };
    if ok {
        Ok(zip.to_owned())
    } else {
        Err("must be a US ZIP code: 5 digits, optionally -4 more".into())
    }
}

/// A pickup or delivery place.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct Location {
    #[schema(examples("Dallas"))]
    pub city: String,
    pub state: UsState,
    #[schema(pattern = "^[0-9]{5}(?:-[0-9]{4})?$", examples("75201"))]
    pub zip: String,
    /// Street address; null when not given.
    #[serde(default)]
    #[schema(required = true)]
    pub address: Option<String>,
    /// The facility's latitude: with `lng`, the centre of the stop's geofence
    /// (else the ZIP's centroid is). Null when not given.
    #[serde(default)]
    #[schema(minimum = -90.0, maximum = 90.0)]
    pub lat: Option<f64>,
    #[serde(default)]
    #[schema(minimum = -180.0, maximum = 180.0)]
    pub lng: Option<f64>,
    /// The arrival radius of the stop's geofence, in metres (25-10,000); null
    /// for the default (500 m around coordinates, 3,000 m around a ZIP centroid).
    #[serde(default)]
    #[schema(minimum = 25, maximum = 10000)]
    pub radius_m: Option<u32>,
}

/// The smallest and largest arrival radius a stop may be given, in metres.
pub const RADIUS_M_RANGE: std::ops::RangeInclusive<u32> = 25..=10_000;

/// A WGS 84 position in decimal degrees.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct Coordinates {
    #[schema(minimum = -90.0, maximum = 90.0)]
    pub lat: f64,
    #[schema(minimum = -180.0, maximum = 180.0)]
    pub lng: f64,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn state_codes_normalise_case_and_refuse_unknowns() {
        assert_eq!(UsState::parse("tx").unwrap().as_str(), "TX");
        assert_eq!(UsState::parse(" Ca ").unwrap().as_str(), "CA");
        for bad in ["XX", "T", "TEX", "", "1A"] {
            assert!(UsState::parse(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn zip_shapes() {
        assert!(parse_zip("75201").is_ok());
        assert!(parse_zip("75201-1234").is_ok());
        for bad in ["7520", "752011", "75201-12", "abcde", "75201 1234", ""] {
            assert!(parse_zip(bad).is_err(), "{bad}");
        }
    }
}
