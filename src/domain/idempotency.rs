//! Idempotency keys: a client retrying a POST with the same `Idempotency-Key`
//! gets the first answer again instead of a second load, carrier or webhook.

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use super::ids::AccountId;
use super::timestamp::serde_utc;

/// How long a key's answer is kept.
pub const RETENTION_HOURS: i64 = 24;
pub const MAX_KEY_CHARS: usize = 255;

/// The answer given to the first request with a key, kept for its retries.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StoredResponse {
    pub account_id: AccountId,
    pub key: String,
    /// What the first request was (method, path, query and body, hashed): a
    /// retry must be the same request.
    pub fingerprint: String,
    pub status: u16,
    pub content_type: Option<String>,
    pub body: String,
    #[serde(with = "serde_utc")]
    pub created_at: DateTime<Utc>,
}

impl StoredResponse {
    pub fn expired(&self, now: DateTime<Utc>) -> bool {
        now - self.created_at >= chrono::Duration::hours(RETENTION_HOURS)
    }
}

/// A key is 1 to 255 visible ASCII characters (a UUID is the usual choice).
pub fn check_key(raw: &str) -> Result<&str, String> {
    if raw.is_empty() || raw.len() > MAX_KEY_CHARS {
        return Err(format!("must be 1 to {MAX_KEY_CHARS} characters"));
    }
    if !raw.bytes().all(|b| b.is_ascii_graphic()) {
        return Err("must be visible ASCII characters without spaces (a UUID, say)".into());
    }
    Ok(raw)
}

/// The hash that tells a retry from a different request under the same key.
/// `credential` names the API key that sent it: a kept answer may hold a
/// secret shown once (a device's token), so only the key that asked for it
/// may have it replayed; another key of the account is told the
/// idempotency key was used for a different request.
pub fn fingerprint(credential: &str, method: &str, path: &str, query: &str, body: &[u8]) -> String {
    let mut hash = Sha256::new();
    for part in [
        credential.as_bytes(),
        method.as_bytes(),
        path.as_bytes(),
        query.as_bytes(),
    ] {
        hash.update((part.len() as u64).to_be_bytes());
        hash.update(part);
    }
    hash.update(body);
    hash.finalize().iter().map(|b| format!("{b:02x}")).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_and_fingerprints() {
        assert!(check_key("7f1d2c9e-0b1a-4c55-9a1e-3b6f2d9e8a71").is_ok());
        assert!(check_key("").is_err());
        assert!(check_key("has space").is_err());
        assert!(check_key("ümlaut").is_err());
        assert!(check_key(&"k".repeat(256)).is_err());
        let a = fingerprint("key_1", "POST", "/v1/loads", "", b"{}");
        assert_eq!(a, fingerprint("key_1", "POST", "/v1/loads", "", b"{}"));
        assert_ne!(a, fingerprint("key_1", "POST", "/v1/loads", "", b"{ }"));
        assert_ne!(a, fingerprint("key_1", "POST", "/v1/carriers", "", b"{}"));
        assert_ne!(a, fingerprint("key_2", "POST", "/v1/loads", "", b"{}"));
        // Parts cannot run into each other.
        assert_ne!(
            fingerprint("key_1", "POST", "/v1/a", "b", b""),
            fingerprint("key_1", "POST", "/v1/ab", "", b"")
        );
    }
}
