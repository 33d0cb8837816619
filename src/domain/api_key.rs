//! API keys: permissions, expiry, revocation, and the secret token format.
//!
//! A token is `frk_<key id suffix>_<64 hex chars>`. The embedded key id lets the
//! server fetch exactly one record and compare hashes in constant time, instead of
//! looking a secret up by value. Only the SHA-256 of the secret part is stored:
//! the secret has 256 bits of entropy, so a slow password hash would add nothing.

use chrono::{DateTime, Utc};
use rand::RngCore;
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};
use subtle::ConstantTimeEq;

use super::ids::{AccountId, KeyId};
use super::timestamp::serde_utc;

pub const TOKEN_PREFIX: &str = "frk_";
pub const MAX_DESCRIPTION_CHARS: usize = 200;
const SECRET_BYTES: usize = 32;

/// What an API key may do: `read` for GET, `write` for every other method.
#[derive(
    Debug,
    Clone,
    Copy,
    PartialEq,
    Eq,
    Hash,
    PartialOrd,
    Ord,
    Serialize,
    Deserialize,
    utoipa::ToSchema,
)]
#[serde(rename_all = "snake_case")]
pub enum Permission {
    Read,
    Write,
}

impl Permission {
    pub fn as_str(self) -> &'static str {
        match self {
            Permission::Read => "read",
            Permission::Write => "write",
        }
    }

    pub fn parse(raw: &str) -> Result<Self, String> {
        match raw.trim() {
            "read" => Ok(Permission::Read),
            "write" => Ok(Permission::Write),
            other => Err(format!(
                "unknown permission {other:?}: use read and/or write"
            )),
        }
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ApiKey {
    pub id: KeyId,
    pub account_id: AccountId,
    /// Hex SHA-256 of the secret part of the token.
    pub secret_sha256: String,
    pub permissions: Vec<Permission>,
    pub description: Option<String>,
    #[serde(with = "serde_utc")]
    pub created_at: DateTime<Utc>,
    #[serde(default, with = "serde_utc::option")]
    pub expires_at: Option<DateTime<Utc>>,
    #[serde(default, with = "serde_utc::option")]
    pub revoked_at: Option<DateTime<Utc>>,
}

/// Why a presented token does not authenticate. Each is a distinct 401 code.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum KeyRejection {
    #[error("no API key was sent")]
    Missing,
    #[error("the API key is not in the expected format")]
    Malformed,
    #[error("the API key is not recognised")]
    Unknown,
    #[error("the API key has been revoked")]
    Revoked,
    #[error("the API key has expired")]
    Expired { at: DateTime<Utc> },
    /// A device's token (`frd_…`), which only posts positions.
    #[error("a device token is not an API key")]
    DeviceToken,
}

/// A token split into its parts; produced only by [`parse_token`].
pub struct PresentedToken {
    pub key_id: KeyId,
    secret_hex: String,
}

pub fn parse_token(token: &str) -> Result<PresentedToken, KeyRejection> {
    if token.starts_with(super::device::TOKEN_PREFIX) {
        return Err(KeyRejection::DeviceToken);
    }
    let (suffix, secret_hex) = split_token(token, TOKEN_PREFIX).ok_or(KeyRejection::Malformed)?;
    let key_id = KeyId::from_suffix(suffix).ok_or(KeyRejection::Malformed)?;
    Ok(PresentedToken {
        key_id,
        secret_hex: secret_hex.to_owned(),
    })
}

/// The two parts of a `<prefix><id suffix>_<64 hex>` token (API keys, device
/// tokens): the id's suffix and the secret, if the token has that shape.
pub fn split_token<'t>(token: &'t str, prefix: &str) -> Option<(&'t str, &'t str)> {
    let (suffix, secret_hex) = token.strip_prefix(prefix)?.split_once('_')?;
    let secret_ok = secret_hex.len() == SECRET_BYTES * 2
        && secret_hex
            .bytes()
            .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b));
    secret_ok.then_some((suffix, secret_hex))
}

/// A new random secret, as hex, and the SHA-256 (hex) that is stored of it.
pub fn new_secret() -> (String, String) {
    let mut secret = [0u8; SECRET_BYTES];
    rand::rng().fill_bytes(&mut secret);
    let secret_hex = hex(&secret);
    let stored = sha256_hex(&secret_hex);
    (secret_hex, stored)
}

/// Whether a presented secret is the one whose SHA-256 is `stored`, compared
/// in constant time.
pub fn secret_matches(secret_hex: &str, stored: &str) -> bool {
    bool::from(sha256_hex(secret_hex).as_bytes().ct_eq(stored.as_bytes()))
}

/// Runs on every authenticated request, so it formats without an allocation per byte.
pub(crate) fn sha256_hex(input: &str) -> String {
    hex(&Sha256::digest(input.as_bytes()))
}

fn hex(bytes: &[u8]) -> String {
    const DIGITS: &[u8; 16] = b"0123456789abcdef";
    let mut out = String::with_capacity(bytes.len() * 2);
    for b in bytes {
        out.push(char::from(DIGITS[usize::from(b >> 4)]));
        out.push(char::from(DIGITS[usize::from(b & 0x0f)]));
    }
    out
}

/// A freshly generated key and the one copy of its token the caller will ever see.
pub struct IssuedKey {
    pub record: ApiKey,
    pub token: String,
}

pub struct NewKey {
    pub account_id: AccountId,
    pub permissions: Vec<Permission>,
    pub description: Option<String>,
    pub expires_at: Option<DateTime<Utc>>,
}

impl ApiKey {
    pub fn issue(new: NewKey, now: DateTime<Utc>) -> IssuedKey {
        let id = KeyId::generate();
        let (secret_hex, secret_sha256) = new_secret();
        let suffix = id.as_str().strip_prefix(KeyId::PREFIX).expect("own prefix");
        let token = format!("{TOKEN_PREFIX}{suffix}_{secret_hex}");
        let mut permissions = new.permissions;
        permissions.sort();
        permissions.dedup();
        IssuedKey {
            record: ApiKey {
                id,
                account_id: new.account_id,
                secret_sha256,
                permissions,
                description: new.description,
                created_at: now,
                expires_at: new.expires_at,
                revoked_at: None,
            },
            token,
        }
    }

    /// Checks a presented token against this record at time `now`.
    pub fn verify(&self, token: &PresentedToken, now: DateTime<Utc>) -> Result<(), KeyRejection> {
        if !secret_matches(&token.secret_hex, &self.secret_sha256) {
            return Err(KeyRejection::Unknown);
        }
        self.standing(now)
    }

    /// Whether the key still works at `now`, whoever holds it: not revoked,
    /// not expired.
    pub fn standing(&self, now: DateTime<Utc>) -> Result<(), KeyRejection> {
        if self.revoked_at.is_some() {
            return Err(KeyRejection::Revoked);
        }
        if let Some(at) = self.expires_at.filter(|at| *at <= now) {
            return Err(KeyRejection::Expired { at });
        }
        Ok(())
    }

    pub fn allows(&self, permission: Permission) -> bool {
        self.permissions.contains(&permission)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use chrono::Duration;

    fn issue(expires_at: Option<DateTime<Utc>>) -> IssuedKey {
        ApiKey::issue(
            NewKey {
                account_id: AccountId::generate(),
                permissions: vec![Permission::Write, Permission::Read, Permission::Read],
                description: None,
                expires_at,
            },
            Utc::now(),
        )
    }

    #[test]
    fn issued_token_verifies_and_only_its_hash_is_kept() {
        let issued = issue(None);
        let secret = issued.token.rsplit('_').next().unwrap();
        assert_eq!(secret.len(), 64);
        assert_ne!(issued.record.secret_sha256, secret);
        assert_eq!(issued.record.secret_sha256, sha256_hex(secret));
        assert!(
            !serde_json::to_string(&issued.record)
                .unwrap()
                .contains(secret)
        );
        let presented = parse_token(&issued.token).unwrap();
        assert_eq!(presented.key_id, issued.record.id);
        assert_eq!(issued.record.verify(&presented, Utc::now()), Ok(()));
        assert_eq!(
            issued.record.permissions,
            [Permission::Read, Permission::Write]
        );
    }

    #[test]
    fn wrong_secret_revoked_and_expired_are_told_apart() {
        let now = Utc::now();
        let mut issued = issue(Some(now + Duration::hours(1)));
        let other = issue(None);
        let forged = format!(
            "{}{}",
            &issued.token[..issued.token.len() - 64],
            &other.token[other.token.len() - 64..]
        );
        let forged = parse_token(&forged).unwrap();
        assert_eq!(
            issued.record.verify(&forged, now),
            Err(KeyRejection::Unknown)
        );

        let presented = parse_token(&issued.token).unwrap();
        assert_eq!(
            issued.record.verify(&presented, now + Duration::hours(1)),
            Err(KeyRejection::Expired {
                at: issued.record.expires_at.unwrap()
            })
        );
        issued.record.revoked_at = Some(now);
        assert_eq!(
            issued.record.verify(&presented, now),
            Err(KeyRejection::Revoked)
        );
    }

    #[test]
    fn malformed_tokens() {
        for bad in ["", "frk_", "frk_abc_def", "sk_live_123", &"frk_".repeat(30)] {
            assert!(
                matches!(parse_token(bad), Err(KeyRejection::Malformed)),
                "{bad}"
            );
        }
    }
}
