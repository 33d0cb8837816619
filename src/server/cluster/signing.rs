//! How instances know a request on an internal listener came from another
//! instance: an HMAC-SHA256, keyed with the cluster secret every instance is
//! given, over the time, method, path and query, and a hash of the body. The
//! secret itself never travels; a signature is good for [`MAX_AGE_SECS`]
//! either side of the receiver's clock, and only for that exact request.

use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use hmac::{Hmac, Mac};
use sha2::{Digest, Sha256};

pub const TIME_HEADER: &str = "x-freight-cluster-time";
pub const SIGNATURE_HEADER: &str = "x-freight-cluster-signature";
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

    fn mac(&self, time: i64, method: &str, path_and_query: &str, body: &[u8]) -> Hmac<Sha256> {
        let mut mac =
            Hmac::<Sha256>::new_from_slice(&self.0).expect("HMAC takes a key of any length");
        let body_hash = Sha256::digest(body);
        mac.update(format!("{time}\n{method}\n{path_and_query}\n").as_bytes());
        mac.update(&body_hash);
        mac
    }

    /// The signature header's value for a request sent at `time` (Unix seconds).
    pub fn sign(&self, time: i64, method: &str, path_and_query: &str, body: &[u8]) -> String {
        URL_SAFE_NO_PAD.encode(
            self.mac(time, method, path_and_query, body)
                .finalize()
                .into_bytes(),
        )
    }

    /// Whether `signature` signs this request, sent at `time`, and `time` is
    /// within [`MAX_AGE_SECS`] of `now`.
    pub fn verify(
        &self,
        now: i64,
        time: i64,
        signature: &str,
        method: &str,
        path_and_query: &str,
        body: &[u8],
    ) -> Result<(), &'static str> {
        if (now - time).abs() > MAX_AGE_SECS {
            return Err("the request's time is too far from this instance's clock");
        }
        let signature = URL_SAFE_NO_PAD
            .decode(signature)
            .map_err(|_| "the signature is not base64url")?;
        self.mac(time, method, path_and_query, body)
            .verify_slice(&signature)
            .map_err(|_| "the signature does not match the request")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn secret() -> ClusterSecret {
        ClusterSecret::parse("0123456789abcdef0123456789abcdef").unwrap()
    }

    #[test]
    fn a_signature_holds_for_its_request_only() {
        let s = secret();
        let sig = s.sign(1_000, "POST", "/v1/loads/x/tracking", b"{}");
        assert!(
            s.verify(1_010, 1_000, &sig, "POST", "/v1/loads/x/tracking", b"{}")
                .is_ok()
        );
        for (method, path, body) in [
            ("PATCH", "/v1/loads/x/tracking", &b"{}"[..]),
            ("POST", "/v1/loads/y/tracking", b"{}"),
            ("POST", "/v1/loads/x/tracking", b"{ }"),
        ] {
            assert!(s.verify(1_010, 1_000, &sig, method, path, body).is_err());
        }
        let other = ClusterSecret::parse("fedcba9876543210fedcba9876543210").unwrap();
        assert!(
            other
                .verify(1_000, 1_000, &sig, "POST", "/v1/loads/x/tracking", b"{}")
                .is_err()
        );
    }

    #[test]
    fn an_old_or_future_signature_is_refused() {
        let s = secret();
        let sig = s.sign(1_000, "GET", "/", b"");
        assert!(
            s.verify(1_000 + MAX_AGE_SECS + 1, 1_000, &sig, "GET", "/", b"")
                .is_err()
        );
        assert!(
            s.verify(1_000 - MAX_AGE_SECS - 1, 1_000, &sig, "GET", "/", b"")
                .is_err()
        );
        assert!(
            s.verify(1_000 + MAX_AGE_SECS, 1_000, &sig, "GET", "/", b"")
                .is_ok()
        );
    }

    #[test]
    fn a_short_secret_is_refused() {
        assert!(ClusterSecret::parse("short").is_err());
    }
}
