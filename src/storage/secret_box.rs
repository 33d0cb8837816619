//! Webhook signing secrets sealed at rest: a copy of the store (a backup, a
//! journal file, a ScyllaDB snapshot) without the key signs nothing.
//!
//! A sealed secret is stored in the subscription's record in place of the
//! secret, as `enc:v1:` and the base64 of a random 96-bit nonce followed by the
//! AES-256-GCM ciphertext and tag. The webhook's id is the associated data, so
//! a sealed secret moved onto another subscription does not open. A secret
//! without the prefix was written before secrets were sealed, and is read as
//! it is; [`crate::storage::WebhookStore::reseal_webhook_secrets`] rewrites
//! those at start.
//!
//! Both backends seal in `put_webhook` and open in `get_webhook` and
//! `all_webhooks` through [`SecretSealing`], so nothing above storage ever
//! sees a sealed secret, and the conformance suite runs the same checks on a
//! sealing store of each backend.
//!
//! The answers kept for `Idempotency-Key` replays are sealed the same way,
//! whole (their body may be a new device's token, a share link's URL or a
//! webhook's signing secret, each shown once), with the account and key as
//! the associated data.

use std::sync::Arc;

use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use ring::aead::{AES_256_GCM, Aad, LessSafeKey, NONCE_LEN, Nonce, UnboundKey};
use ring::rand::{SecureRandom, SystemRandom};

use super::{StorageError, StorageResult};
use crate::domain::idempotency::StoredResponse;
use crate::domain::webhook::Subscription;

/// The key's length: AES-256.
pub const KEY_BYTES: usize = 32;
/// Marks a sealed secret, and the version of its layout.
const SEALED_PREFIX: &str = "enc:v1:";

/// Why a stored secret does not open.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum OpenError {
    #[error("the sealed secret is not base64 of a nonce and a ciphertext")]
    Malformed,
    /// Either the key is not the one it was sealed with, or the record was
    /// altered: AES-GCM cannot tell which.
    #[error(
        "the sealed secret does not open with this key (another key sealed it, or it was altered)"
    )]
    WrongKey,
}

/// An AEAD key that seals and opens secrets.
pub struct SecretBox {
    key: LessSafeKey,
    rng: SystemRandom,
}

impl std::fmt::Debug for SecretBox {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("SecretBox(..)")
    }
}

impl SecretBox {
    pub fn new(key: &[u8; KEY_BYTES]) -> Self {
        let key = UnboundKey::new(&AES_256_GCM, key).expect("an AES-256 key is 32 bytes");
        SecretBox {
            key: LessSafeKey::new(key),
            rng: SystemRandom::new(),
        }
    }

    /// `secret` sealed for the record named `context` (the webhook's id).
    pub fn seal(&self, secret: &str, context: &str) -> String {
        let mut nonce = [0u8; NONCE_LEN];
        // The system's random source failing is not something to go on past.
        self.rng
            .fill(&mut nonce)
            .expect("the system random source works");
        let mut sealed = secret.as_bytes().to_vec();
        self.key
            .seal_in_place_append_tag(
                Nonce::assume_unique_for_key(nonce),
                Aad::from(context.as_bytes()),
                &mut sealed,
            )
            .expect("a secret is far shorter than AES-GCM's limit");
        let mut out = nonce.to_vec();
        out.extend_from_slice(&sealed);
        format!("{SEALED_PREFIX}{}", STANDARD.encode(out))
    }

    /// The secret a stored value holds: opened if sealed, as it is if plain.
    pub fn open(&self, stored: &str, context: &str) -> Result<String, OpenError> {
        let Some(encoded) = stored.strip_prefix(SEALED_PREFIX) else {
            return Ok(stored.to_owned());
        };
        let bytes = STANDARD.decode(encoded).map_err(|_| OpenError::Malformed)?;
        if bytes.len() < NONCE_LEN + AES_256_GCM.tag_len() {
            return Err(OpenError::Malformed);
        }
        let (nonce, sealed) = bytes.split_at(NONCE_LEN);
        let nonce = Nonce::try_assume_unique_for_key(nonce).map_err(|_| OpenError::Malformed)?;
        let mut sealed = sealed.to_vec();
        let plain = self
            .key
            .open_in_place(nonce, Aad::from(context.as_bytes()), &mut sealed)
            .map_err(|_| OpenError::WrongKey)?;
        String::from_utf8(plain.to_vec()).map_err(|_| OpenError::Malformed)
    }
}

/// What a kept answer is sealed for: its account and key, so that it opens
/// for no other.
fn answer_context(answer: &StoredResponse) -> String {
    format!("idempotency:{}:{}", answer.account_id, answer.key)
}

/// Whether a stored secret is sealed (rather than written before sealing).
pub fn is_sealed(stored: &str) -> bool {
    stored.starts_with(SEALED_PREFIX)
}

/// How a backend keeps subscription secrets: sealed with a box (what
/// `storage::open` always gives it), or, for a store opened without one (tests
/// and benchmarks that open a backend directly), as they are.
#[derive(Debug, Clone, Default)]
pub(crate) struct SecretSealing(Option<Arc<SecretBox>>);

impl SecretSealing {
    pub(crate) fn with(secret_box: Arc<SecretBox>) -> Self {
        SecretSealing(Some(secret_box))
    }

    /// The subscription as it is to be stored.
    pub(crate) fn seal(&self, webhook: &Subscription) -> Subscription {
        let mut stored = webhook.clone();
        if let Some(secret_box) = &self.0 {
            stored.secret = secret_box.seal(&webhook.secret, webhook.id.as_str());
        }
        stored
    }

    /// The subscription as storage read it, with its secret opened.
    pub(crate) fn open(&self, mut stored: Subscription) -> StorageResult<Subscription> {
        let opened = match &self.0 {
            Some(secret_box) => secret_box.open(&stored.secret, stored.id.as_str()),
            None if is_sealed(&stored.secret) => {
                return Err(StorageError::corrupt(format!(
                    "webhook {}: its secret is sealed, and this store was opened without the key",
                    stored.id
                )));
            }
            None => return Ok(stored),
        };
        stored.secret = opened.map_err(|error| {
            StorageError::undecodable(format!("webhook {}'s secret", stored.id), error)
        })?;
        Ok(stored)
    }

    /// A kept answer as it is to be stored: its body sealed.
    pub(crate) fn seal_answer(&self, answer: &StoredResponse) -> StoredResponse {
        let mut stored = answer.clone();
        if let Some(secret_box) = &self.0 {
            stored.body = secret_box.seal(&answer.body, &answer_context(answer));
        }
        stored
    }

    /// A kept answer as storage read it, its body opened. One kept before
    /// answers were sealed reads as it is, and lives out its day.
    pub(crate) fn open_answer(&self, mut stored: StoredResponse) -> StorageResult<StoredResponse> {
        if !is_sealed(&stored.body) {
            return Ok(stored);
        }
        let Some(secret_box) = &self.0 else {
            return Err(StorageError::corrupt(format!(
                "idempotency key {}: its answer is sealed, and this store was opened without the key",
                stored.key
            )));
        };
        stored.body = secret_box
            .open(&stored.body, &answer_context(&stored))
            .map_err(|error| {
                StorageError::undecodable(
                    format!("the answer of idempotency key {}", stored.key),
                    error,
                )
            })?;
        Ok(stored)
    }

    /// The subscription as storage read it (checked to open), and whether it
    /// must be written again: its secret is plain and this store seals.
    pub(crate) fn reseal(&self, stored: Subscription) -> StorageResult<(Subscription, bool)> {
        let plain = !is_sealed(&stored.secret);
        let opened = self.open(stored)?;
        Ok((opened, plain && self.0.is_some()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn a_box() -> SecretBox {
        SecretBox::new(&[7u8; KEY_BYTES])
    }

    #[test]
    fn a_sealed_secret_opens_and_does_not_show() {
        let secret_box = a_box();
        let sealed = secret_box.seal("s3cret-s3cret-s3cret", "wh_1");
        assert!(is_sealed(&sealed));
        assert!(!sealed.contains("s3cret"), "{sealed}");
        assert_eq!(
            secret_box.open(&sealed, "wh_1").unwrap(),
            "s3cret-s3cret-s3cret"
        );
        // A nonce of its own each time: the same secret seals differently.
        assert_ne!(sealed, secret_box.seal("s3cret-s3cret-s3cret", "wh_1"));
    }

    #[test]
    fn an_altered_moved_or_foreign_sealed_secret_is_refused() {
        let secret_box = a_box();
        let sealed = secret_box.seal("s3cret-s3cret-s3cret", "wh_1");
        let mut bytes = STANDARD
            .decode(sealed.strip_prefix(SEALED_PREFIX).unwrap())
            .unwrap();
        let last = bytes.len() - 1;
        bytes[last] ^= 1;
        let altered = format!("{SEALED_PREFIX}{}", STANDARD.encode(bytes));
        assert_eq!(secret_box.open(&altered, "wh_1"), Err(OpenError::WrongKey));
        assert_eq!(secret_box.open(&sealed, "wh_2"), Err(OpenError::WrongKey));
        let other = SecretBox::new(&[8u8; KEY_BYTES]);
        assert_eq!(other.open(&sealed, "wh_1"), Err(OpenError::WrongKey));
        assert_eq!(
            secret_box.open("enc:v1:AAAA", "wh_1"),
            Err(OpenError::Malformed)
        );
    }

    #[test]
    fn a_plain_secret_from_before_sealing_reads_as_it_is() {
        assert_eq!(
            a_box().open("whsec_plain-old-secret", "wh_1").unwrap(),
            "whsec_plain-old-secret"
        );
    }
}
