//! People who use the web dashboard: the users of an account, who sign in with
//! an email address and a password, and their sessions.
//!
//! Passwords are kept only as argon2id hashes (PHC strings); session tokens only
//! as SHA-256 hashes, like API keys: a copy of the store lets nobody sign in.

use chrono::{DateTime, Duration, Utc};
use serde::{Deserialize, Serialize};

use super::carrier;
use super::ids::{AccountId, UserId};
use super::timestamp::serde_utc;

/// NIST SP 800-63B asks for at least 8; 10 costs users little more.
pub const MIN_PASSWORD_CHARS: usize = 10;
/// Bounds the work of hashing what a client sends.
pub const MAX_PASSWORD_CHARS: usize = 200;
/// A session ends this long after sign-in, whatever its activity.
pub const SESSION_LIFETIME: Duration = Duration::days(7);

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct User {
    pub id: UserId,
    pub account_id: AccountId,
    /// Lower-case: one address is one user, however it is typed.
    pub email: String,
    /// argon2id, PHC string format (algorithm, parameters and salt included).
    pub password_hash: String,
    #[serde(with = "serde_utc")]
    pub created_at: DateTime<Utc>,
}

/// A signed-in browser. The token itself lives only in the browser's cookie.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Session {
    /// Hex SHA-256 of the cookie's token.
    pub token_sha256: String,
    pub user_id: UserId,
    pub account_id: AccountId,
    /// The form token of this session (synchronizer-token CSRF defence).
    pub csrf_token: String,
    #[serde(with = "serde_utc")]
    pub created_at: DateTime<Utc>,
    #[serde(with = "serde_utc")]
    pub expires_at: DateTime<Utc>,
}

impl Session {
    pub fn is_live(&self, now: DateTime<Utc>) -> bool {
        now < self.expires_at
    }
}

/// An email address as users type it, checked and lower-cased.
pub fn parse_email(raw: &str) -> Result<String, String> {
    carrier::email(raw).map(|e| e.to_lowercase())
}

/// A password a user may choose: long enough, not too long, not the address.
pub fn check_new_password(password: &str, email: &str) -> Result<(), String> {
    let chars = password.chars().count();
    if chars < MIN_PASSWORD_CHARS {
        return Err(format!("must be at least {MIN_PASSWORD_CHARS} characters"));
    }
    if chars > MAX_PASSWORD_CHARS {
        return Err(format!("must be at most {MAX_PASSWORD_CHARS} characters"));
    }
    if password.trim().eq_ignore_ascii_case(email.trim()) {
        return Err("must not be your email address".into());
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn emails_are_lower_cased_and_passwords_checked() {
        assert_eq!(parse_email(" Ops@Acme.COM ").unwrap(), "ops@acme.com");
        assert!(parse_email("ops").is_err());
        assert!(check_new_password("short", "a@b.co").is_err());
        assert!(check_new_password("a@b.co.uk1", "a@b.co.uk1").is_err());
        assert!(check_new_password(&"x".repeat(201), "a@b.co").is_err());
        assert!(check_new_password("correct horse battery", "a@b.co").is_ok());
    }
}
