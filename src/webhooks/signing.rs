//! Standard Webhooks signatures (DESIGN.md): `webhook-id`, `webhook-timestamp`
//! and `webhook-signature: v1,<base64 HMAC-SHA256 of "id.timestamp.body">`.

use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use hmac::{Hmac, Mac};
use sha2::Sha256;

/// The HMAC key of a subscription secret: a `whsec_<base64>` secret is decoded,
/// as the standard does; any other secret is used as its UTF-8 bytes.
pub fn signing_key(secret: &str) -> Vec<u8> {
    secret
        .strip_prefix("whsec_")
        .and_then(|encoded| STANDARD.decode(encoded).ok())
        .unwrap_or_else(|| secret.as_bytes().to_vec())
}

/// The secret in the form Standard Webhooks libraries take (`whsec_` and the
/// key in base64): for a plain secret, its UTF-8 bytes encoded, so that
/// `Webhook(signing_secret).verify(...)` accepts what was signed with it.
pub fn signing_secret(secret: &str) -> String {
    format!("whsec_{}", STANDARD.encode(signing_key(secret)))
}

/// Bytes of key in a secret the service makes (as Svix does: 192 bits).
const GENERATED_KEY_BYTES: usize = 24;

/// A new random secret, already in the `whsec_` form.
pub fn generate_secret() -> String {
    use rand::RngCore;
    let mut key = [0u8; GENERATED_KEY_BYTES];
    rand::rng().fill_bytes(&mut key);
    format!("whsec_{}", STANDARD.encode(key))
}

/// A subscription's secret, made ready to sign: the HMAC state after the key,
/// which each signature copies instead of hashing the key again.
#[derive(Clone)]
pub struct Signer(Hmac<Sha256>);

impl Signer {
    pub fn new(secret: &str) -> Self {
        Signer(Hmac::new_from_slice(&signing_key(secret)).expect("HMAC takes any key length"))
    }

    /// The `webhook-signature` header value for one attempt; `timestamp` is the
    /// `webhook-timestamp` header's text (Unix seconds).
    pub fn sign(&self, id: &str, timestamp: &[u8], body: &[u8]) -> String {
        let mut mac = self.0.clone();
        mac.update(id.as_bytes());
        mac.update(b".");
        mac.update(timestamp);
        mac.update(b".");
        mac.update(body);
        let mut header = String::with_capacity(47);
        header.push_str("v1,");
        STANDARD.encode_string(mac.finalize().into_bytes(), &mut header);
        header
    }
}

/// The `webhook-signature` header value for one attempt.
pub fn signature(secret: &str, id: &str, timestamp: i64, body: &[u8]) -> String {
    Signer::new(secret).sign(id, timestamp.to_string().as_bytes(), body)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The example of the Standard Webhooks specification.
    #[test]
    fn matches_the_specification_example() {
        let secret = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw";
        let body = br#"{"test": 2432232314}"#;
        assert_eq!(
            signature(secret, "msg_p5jXN8AQM9LWM0D4loKWxJek", 1614265330, body),
            "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE="
        );
    }

    /// One prepared signer signs many messages, each as if it were the first.
    #[test]
    fn a_prepared_signer_is_reusable() {
        let signer = Signer::new("whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw");
        for _ in 0..2 {
            assert_eq!(
                signer.sign(
                    "msg_p5jXN8AQM9LWM0D4loKWxJek",
                    b"1614265330",
                    br#"{"test": 2432232314}"#
                ),
                "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE="
            );
        }
        assert_ne!(
            signer.sign(
                "msg_p5jXN8AQM9LWM0D4loKWxJek",
                b"1614265331",
                br#"{"test": 2432232314}"#
            ),
            "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE="
        );
    }
}
