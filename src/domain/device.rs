//! Devices: a telematics unit or a phone app that posts positions, with a
//! token of its own that authenticates nothing but those posts.
//!
//! A token is `frd_<device id suffix>_<64 hex chars>`, the API key scheme
//! (`api_key::split_token`): the embedded id finds one record, whose stored
//! SHA-256 the secret is compared with in constant time. A device is attached
//! to loads (a truck carrying several); a load has one device at most.

use std::collections::BTreeMap;

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

use super::api_key::{new_secret, secret_matches, split_token};
use super::ids::{AccountId, CarrierId, DeviceId, LoadId};
use super::timestamp::serde_utc;

pub const TOKEN_PREFIX: &str = "frd_";
pub const MAX_NAME_CHARS: usize = 100;
pub const MAX_IDENTIFIER_CHARS: usize = 64;

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Device {
    pub id: DeviceId,
    pub account_id: AccountId,
    pub name: String,
    /// The carrier that runs it, if the account says.
    pub carrier_id: Option<CarrierId>,
    /// What the device calls itself, for the protocols that identify a device
    /// by what it says rather than a token (a tracker's IMEI, an OwnTracks
    /// `user/device`): unique across the service (`storage::identifiers`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub identifier: Option<String>,
    /// The UTC offset (`+08:00`) of the local times the unit reports, for
    /// trackers that send local time without a zone (GT06); `None`: what the
    /// unit says at login, else UTC.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub time_zone: Option<String>,
    /// Hex SHA-256 of the secret part of the token.
    pub token_sha256: String,
    #[serde(with = "serde_utc")]
    pub created_at: DateTime<Utc>,
    /// When a post of the device last arrived, as stored (kept to the minute:
    /// see `services::devices`).
    #[serde(default, with = "serde_utc::option")]
    pub last_seen_at: Option<DateTime<Utc>>,
}

/// What the operator allows each device (`--device-positions-per-second`,
/// `--device-burst`, `--device-max-loads`), the same on every plan.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct DeviceLimits {
    /// The sustained rate, in positions a second (a position fed to several
    /// loads counts once per load).
    pub positions_per_second: f64,
    /// Positions a device may send at once after a quiet spell.
    pub burst: u32,
    /// Loads that are not delivered or cancelled a device may be attached to at once.
    pub max_loads: usize,
}

impl Default for DeviceLimits {
    fn default() -> Self {
        DeviceLimits {
            positions_per_second: 1.0,
            burst: 60,
            max_loads: 10,
        }
    }
}

/// What a device's ignored positions were.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Ignored {
    /// The latest: its reason and when it arrived.
    pub last: Option<(&'static str, DateTime<Utc>)>,
    pub counts: BTreeMap<&'static str, u64>,
}

/// What the service knows of a device beyond its record: its allowance now
/// and the positions it ignored (`GET /v1/devices/{id}`).
#[derive(Debug, Clone, PartialEq)]
pub struct Standing {
    pub limits: DeviceLimits,
    /// Positions it may send now (below zero: a debt it is waiting off).
    pub available: f64,
    pub ignored: Ignored,
}

/// A load and the device attached to it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Attachment {
    pub load_id: LoadId,
    pub device_id: DeviceId,
    pub account_id: AccountId,
}

/// A new device as an account asked for it (validated).
pub struct NewDevice {
    pub name: String,
    pub carrier_id: Option<CarrierId>,
    pub identifier: Option<String>,
    pub time_zone: Option<String>,
}

/// A validated change of a device: `None` leaves a field, `Some(None)` clears it.
#[derive(Debug, Default)]
pub struct DeviceEdit {
    pub name: Option<String>,
    pub carrier_id: Option<Option<CarrierId>>,
    pub identifier: Option<Option<String>>,
    pub time_zone: Option<Option<String>>,
}

/// A new device and the one copy of its token.
pub struct IssuedDevice {
    pub device: Device,
    pub token: String,
}

impl Device {
    pub fn issue(
        account_id: AccountId,
        name: String,
        carrier_id: Option<CarrierId>,
        identifier: Option<String>,
        now: DateTime<Utc>,
    ) -> IssuedDevice {
        let id = DeviceId::generate();
        let (secret_hex, token_sha256) = new_secret();
        let suffix = id
            .as_str()
            .strip_prefix(DeviceId::PREFIX)
            .expect("own prefix");
        let token = format!("{TOKEN_PREFIX}{suffix}_{secret_hex}");
        IssuedDevice {
            device: Device {
                id,
                account_id,
                name,
                carrier_id,
                identifier,
                time_zone: None,
                token_sha256,
                created_at: now,
                last_seen_at: None,
            },
            token,
        }
    }

    /// Whether `token` is this device's.
    pub fn token_matches(&self, token: &PresentedDeviceToken) -> bool {
        token.device_id == self.id && secret_matches(&token.secret_hex, &self.token_sha256)
    }
}

/// An identifier as an account sends it: 1 to 64 letters, digits and
/// `.`, `_`, `-`, `@`, with at most one `/` between two parts (OwnTracks'
/// `user/device`). A tracker's IMEI is 15 digits; older H02 units say 10
/// digits and old Queclink firmware 14 hex characters, so no length is imposed
/// beyond the cap. Kept as sent: devices compare it byte for byte.
pub fn check_identifier(raw: &str) -> Result<String, String> {
    let identifier = raw.trim();
    let allowed = |c: char| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-' | '@');
    let parts: Vec<&str> = identifier.split('/').collect();
    if identifier.is_empty() || identifier.chars().count() > MAX_IDENTIFIER_CHARS {
        return Err(format!("must be 1 to {MAX_IDENTIFIER_CHARS} characters"));
    }
    if parts.len() > 2
        || parts
            .iter()
            .any(|p| p.is_empty() || !p.chars().all(allowed))
    {
        return Err(
            "must be letters, digits, '.', '_', '-' or '@', with at most one '/' between two \
             parts (an IMEI: 15 digits; OwnTracks: user/device)"
                .into(),
        );
    }
    Ok(identifier.to_owned())
}

/// A UTC offset as an account sends it (`+08:00`, `-0530`, `+8`, `Z`), as
/// `+HH:MM`; within ±14 hours, in whole minutes.
pub fn check_time_zone(raw: &str) -> Result<String, String> {
    let refused = || "must be a UTC offset such as +08:00, -05:30 or Z".to_string();
    let raw = raw.trim();
    if raw == "Z" || raw == "UTC" {
        return Ok("+00:00".into());
    }
    let (sign, rest) = match raw.split_at_checked(1) {
        Some(("+", rest)) => (1, rest),
        Some(("-", rest)) => (-1, rest),
        _ => return Err(refused()),
    };
    let digits: String = rest.chars().filter(|c| *c != ':').collect();
    if !digits.bytes().all(|b| b.is_ascii_digit())
        || !(1..=4).contains(&digits.len())
        || (rest.contains(':') && digits.len() != 4)
    {
        return Err(refused());
    }
    let (hours, minutes) = match digits.len() {
        1 | 2 => (digits.parse::<i32>().map_err(|_| refused())?, 0),
        _ => {
            let split = digits.len() - 2;
            (
                digits[..split].parse::<i32>().map_err(|_| refused())?,
                digits[split..].parse::<i32>().map_err(|_| refused())?,
            )
        }
    };
    if minutes >= 60 || hours * 60 + minutes > 14 * 60 {
        return Err(refused());
    }
    Ok(format!(
        "{}{hours:02}:{minutes:02}",
        if sign < 0 { '-' } else { '+' }
    ))
}

/// The offset of a checked time zone (`+HH:MM`).
pub fn time_zone_offset(zone: &str) -> Option<chrono::FixedOffset> {
    let sign = if zone.starts_with('-') { -1 } else { 1 };
    let hours: i32 = zone.get(1..3)?.parse().ok()?;
    let minutes: i32 = zone.get(4..6)?.parse().ok()?;
    chrono::FixedOffset::east_opt(sign * (hours * 3600 + minutes * 60))
}

/// A token split into its parts; produced only by [`parse_device_token`].
pub struct PresentedDeviceToken {
    pub device_id: DeviceId,
    secret_hex: String,
}

/// A device token as a device sent it; `None` when it cannot be one.
pub fn parse_device_token(token: &str) -> Option<PresentedDeviceToken> {
    let (suffix, secret_hex) = split_token(token.trim(), TOKEN_PREFIX)?;
    Some(PresentedDeviceToken {
        device_id: DeviceId::from_suffix(suffix)?,
        secret_hex: secret_hex.to_owned(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn time_zones_are_utc_offsets() {
        for (raw, want) in [
            ("+08:00", "+08:00"),
            ("-0530", "-05:30"),
            ("+8", "+08:00"),
            ("Z", "+00:00"),
            ("-14:00", "-14:00"),
        ] {
            assert_eq!(check_time_zone(raw).as_deref(), Ok(want), "{raw}");
        }
        for bad in ["8", "+15:00", "+08:60", "Asia/Shanghai", "+8:0", ""] {
            assert!(check_time_zone(bad).is_err(), "{bad:?}");
        }
        assert_eq!(
            time_zone_offset("-05:30"),
            chrono::FixedOffset::west_opt(5 * 3600 + 1800)
        );
    }

    #[test]
    fn identifiers_are_imeis_and_owntracks_topics_and_nothing_else() {
        assert_eq!(
            check_identifier(" 356307042441013 ").unwrap(),
            "356307042441013"
        );
        assert_eq!(check_identifier("alice/phone").unwrap(), "alice/phone");
        assert_eq!(
            check_identifier("A10000499AEF9B").unwrap(),
            "A10000499AEF9B"
        );
        for bad in [
            "",
            "a/b/c",
            "/phone",
            "alice/",
            "owntracks/+",
            "has space",
            "#",
            &"9".repeat(65),
        ] {
            assert!(check_identifier(bad).is_err(), "{bad:?} is refused");
        }
    }

    #[test]
    fn a_token_matches_its_device_only() {
        let now = Utc::now();
        let issued = Device::issue(AccountId::generate(), "Truck 12".into(), None, None, now);
        assert!(issued.token.starts_with(TOKEN_PREFIX));
        let presented = parse_device_token(&issued.token).expect("own token parses");
        assert!(issued.device.token_matches(&presented));
        let other = Device::issue(AccountId::generate(), "Truck 13".into(), None, None, now);
        assert!(!other.device.token_matches(&presented), "another device");
        // The same id with another secret.
        let forged = format!(
            "{}{}",
            &issued.token[..issued.token.len() - 64],
            "0".repeat(64)
        );
        assert!(
            !issued
                .device
                .token_matches(&parse_device_token(&forged).unwrap())
        );
        for bad in [
            "",
            "frd_",
            "frk_x_y",
            &issued.token[..issued.token.len() - 1],
        ] {
            assert!(parse_device_token(bad).is_none(), "{bad}");
        }
        assert!(
            !issued
                .device
                .token_sha256
                .contains(&issued.token[issued.token.len() - 64..]),
            "only a hash is kept"
        );
    }
}
