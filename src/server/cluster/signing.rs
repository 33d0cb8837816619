//! How instances know a request on an internal listener came from another
//! instance: HMAC-SHA256, keyed with the cluster secret every instance is
//! given. The secret itself never travels.
//!
//! Two signatures, so that nothing is read before the sender is known:
//! - the head's, over the time, a nonce, the method, path and query, the
//!   body's length, and the headers that carry authority (`Authorization`,
//!   `Cookie`, `Idempotency-Key`) with the client's address and origin as the
//!   first instance saw them: checked before the body is read, which is then
//!   read up to the signed length only;
//! - the body's, over the head's signature and the body: checked once read.
//!
//! A signature is good for [`MAX_AGE_SECS`] either side of the receiver's
//! clock, and once: the receiver keeps each nonce for as long as its
//! signature could be good (`internal::Nonces`), so a request captured on the
//! private network cannot be sent again, with its headers or others.

use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use hmac::{Hmac, Mac};
use sha2::{Digest, Sha256};

pub const TIME_HEADER: &str = "x-freight-cluster-time";
pub const NONCE_HEADER: &str = "x-freight-cluster-nonce";
pub const LENGTH_HEADER: &str = "x-freight-cluster-length";
/// The client's address as the first instance saw it (its own peer, or what
/// its trusted proxy reported; client forwarding headers are not relayed), and
/// the origin (`https://host`) the client reached, for the links an answer holds.
pub use crate::api::forward::{CLIENT_HEADER, ORIGIN_HEADER};
pub const SIGNATURE_HEADER: &str = "x-freight-cluster-signature";
pub const BODY_SIGNATURE_HEADER: &str = "x-freight-cluster-body-signature";
/// How far the signing instance's clock may be from the receiver's.
pub const MAX_AGE_SECS: i64 = 60;
/// Shorter secrets are refused at start: the secret is the internal
/// listener's only lock.
pub const MIN_SECRET_BYTES: usize = 32;

/// The secret the instances of one cluster share (`--cluster-secret`).
#[derive(Clone)]
pub struct ClusterSecret(std::sync::Arc<[u8]>);

impl std::fmt::Debug for ClusterSecret {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("ClusterSecret(..)")
    }
}

/// What the head's signature covers.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SignedHead {
    /// Unix seconds at the sender.
    pub time: i64,
    /// 32 hex digits, new for each request.
    pub nonce: String,
    pub method: String,
    pub path_and_query: String,
    /// The body's length in bytes.
    pub length: u64,
    pub authorization: Option<String>,
    pub cookie: Option<String>,
    pub idempotency_key: Option<String>,
    pub client: String,
    pub origin: String,
}

impl SignedHead {
    /// Every part, each with its length first, so none can run into the next.
    fn write_to(&self, mac: &mut Hmac<Sha256>) {
        let time = self.time.to_string();
        let length = self.length.to_string();
        let parts: [Option<&str>; 10] = [
            Some(time.as_str()),
            Some(&self.nonce),
            Some(&self.method),
            Some(&self.path_and_query),
            Some(length.as_str()),
            self.authorization.as_deref(),
            self.cookie.as_deref(),
            self.idempotency_key.as_deref(),
            Some(&self.client),
            Some(&self.origin),
        ];
        for part in parts {
            match part {
                // An absent header is not an empty one.
                None => mac.update(&u64::MAX.to_be_bytes()),
                Some(part) => {
                    mac.update(&(part.len() as u64).to_be_bytes());
                    mac.update(part.as_bytes());
                }
            }
        }
    }
}

/// A new nonce: 128 random bits as hex.
pub fn new_nonce() -> String {
    use rand::RngCore;
    let mut bytes = [0u8; 16];
    rand::rng().fill_bytes(&mut bytes);
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// Whether a nonce is one [`new_nonce`] could have made.
pub fn is_nonce(nonce: &str) -> bool {
    nonce.len() == 32 && nonce.bytes().all(|b| b.is_ascii_hexdigit())
}

impl ClusterSecret {
    pub fn parse(raw: &str) -> Result<Self, String> {
        let raw = raw.trim();
        if raw.len() < MIN_SECRET_BYTES {
            return Err(format!(
                "the cluster secret must be at least {MIN_SECRET_BYTES} characters \
                 (e.g. `openssl rand -hex 32`), the same on every instance"
            ));
        }
        Ok(ClusterSecret(raw.as_bytes().into()))
    }

    fn key(&self) -> Hmac<Sha256> {
        Hmac::<Sha256>::new_from_slice(&self.0).expect("HMAC takes a key of any length")
    }

    fn head_mac(&self, head: &SignedHead) -> Vec<u8> {
        let mut mac = self.key();
        mac.update(b"head\n");
        head.write_to(&mut mac);
        mac.finalize().into_bytes().to_vec()
    }

    fn body_mac(&self, head_mac: &[u8], body: &[u8]) -> Hmac<Sha256> {
        let mut mac = self.key();
        mac.update(b"body\n");
        mac.update(head_mac);
        mac.update(&Sha256::digest(body));
        mac
    }

    /// The head's and the body's signatures (the two headers' values).
    pub fn sign(&self, head: &SignedHead, body: &[u8]) -> (String, String) {
        let head_mac = self.head_mac(head);
        let body_mac = self.body_mac(&head_mac, body).finalize().into_bytes();
        (
            URL_SAFE_NO_PAD.encode(&head_mac),
            URL_SAFE_NO_PAD.encode(body_mac),
        )
    }

    /// Whether `signature` signs this head and its time is within
    /// [`MAX_AGE_SECS`] of `now`; the head's MAC, for [`Self::verify_body`].
    pub fn verify_head(
        &self,
        now: i64,
        head: &SignedHead,
        signature: &str,
    ) -> Result<Vec<u8>, &'static str> {
        if (now - head.time).abs() > MAX_AGE_SECS {
            return Err("the request's time is too far from this instance's clock");
        }
        let signature = URL_SAFE_NO_PAD
            .decode(signature)
            .map_err(|_| "the signature is not base64url")?;
        let mut mac = self.key();
        mac.update(b"head\n");
        head.write_to(&mut mac);
        mac.verify_slice(&signature)
            .map_err(|_| "the signature does not match the request")?;
        Ok(signature)
    }

    /// Whether `signature` signs `body` after the head whose MAC is `head_mac`.
    pub fn verify_body(
        &self,
        head_mac: &[u8],
        body: &[u8],
        signature: &str,
    ) -> Result<(), &'static str> {
        let signature = URL_SAFE_NO_PAD
            .decode(signature)
            .map_err(|_| "the body's signature is not base64url")?;
        self.body_mac(head_mac, body)
            .verify_slice(&signature)
            .map_err(|_| "the body's signature does not match the body")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn secret() -> ClusterSecret {
        ClusterSecret::parse("0123456789abcdef0123456789abcdef").unwrap()
    }

    fn head() -> SignedHead {
        SignedHead {
            time: 1_000,
            nonce: new_nonce(),
            method: "POST".into(),
            path_and_query: "/v1/loads/x/tracking".into(),
            length: 2,
            authorization: Some("Bearer frk_a".into()),
            cookie: None,
            idempotency_key: Some("k-1".into()),
            client: "203.0.113.9".into(),
            origin: "https://freight.example.com".into(),
        }
    }

    #[test]
    fn a_signature_holds_for_its_request_only() {
        let s = secret();
        let (sig, body_sig) = s.sign(&head(), b"{}");
        let mac = s.verify_head(1_010, &head_with(&head(), |_| {}), &sig);
        assert!(mac.is_err(), "another nonce");
        let signed = head();
        let (sig, body_sig2) = s.sign(&signed, b"{}");
        assert_ne!(body_sig, body_sig2);
        let mac = s.verify_head(1_010, &signed, &sig).unwrap();
        assert!(s.verify_body(&mac, b"{}", &body_sig2).is_ok());
        assert!(s.verify_body(&mac, b"{ }", &body_sig2).is_err());
        let changes: [fn(&mut SignedHead); 8] = [
            |h| h.method = "PATCH".into(),
            |h| h.path_and_query = "/v1/loads/y/tracking".into(),
            |h| h.length = 3,
            |h| h.authorization = Some("Bearer frk_b".into()),
            |h| h.cookie = Some("freight_session=x".into()),
            |h| h.idempotency_key = None,
            |h| h.client = "198.51.100.1".into(),
            |h| h.origin = "https://attacker.example".into(),
        ];
        for change in changes {
            let changed = head_with(&signed, change);
            assert!(s.verify_head(1_010, &changed, &sig).is_err(), "{changed:?}");
        }
        let other = ClusterSecret::parse("fedcba9876543210fedcba9876543210").unwrap();
        assert!(other.verify_head(1_000, &signed, &sig).is_err());
    }

    fn head_with(head: &SignedHead, change: impl FnOnce(&mut SignedHead)) -> SignedHead {
        let mut changed = head.clone();
        change(&mut changed);
        if changed == *head {
            changed.nonce = new_nonce();
        }
        changed
    }

    #[test]
    fn an_old_or_future_signature_is_refused() {
        let s = secret();
        let signed = head();
        let (sig, _) = s.sign(&signed, b"{}");
        assert!(
            s.verify_head(1_000 + MAX_AGE_SECS + 1, &signed, &sig)
                .is_err()
        );
        assert!(
            s.verify_head(1_000 - MAX_AGE_SECS - 1, &signed, &sig)
                .is_err()
        );
        assert!(s.verify_head(1_000 + MAX_AGE_SECS, &signed, &sig).is_ok());
    }

    #[test]
    fn nonces_and_short_secrets() {
        assert!(is_nonce(&new_nonce()));
        assert!(!is_nonce("abc"));
        assert_ne!(new_nonce(), new_nonce());
        assert!(ClusterSecret::parse("short").is_err());
    }
}
