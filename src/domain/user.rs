//! People who use the web dashboard: the users of an account, who sign in with
//! an email address and a password, and their sessions.
//!
//! Passwords are kept only as argon2id hashes (PHC strings); session tokens only
//! as SHA-256 hashes, like API keys: a copy of the store lets nobody sign in.

use std::collections::HashSet;
use std::sync::LazyLock;

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

/// What a user may do in the dashboard. Owners manage the account's users,
/// API keys, plan and settings; members use everything else (loads,
/// carriers, devices, webhooks, share links).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Role {
    /// Also every user stored before roles, who could all manage everything.
    #[default]
    Owner,
    Member,
}

impl Role {
    pub fn as_str(self) -> &'static str {
        match self {
            Role::Owner => "owner",
            Role::Member => "member",
        }
    }
}

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
    #[serde(default)]
    pub role: Role,
    /// Who invited them: `None` for an account's first user (signed up, or
    /// made by the operator) and for users stored before this was kept.
    #[serde(default)]
    pub invited_by: Option<UserId>,
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

/// The 10,000 most common passwords (SecLists; source and licence in
/// `common_passwords.LICENSE.txt`). Kept whole as shipped, though only the
/// entries of at least `MIN_PASSWORD_CHARS` (146 of them) can reach this check.
const COMMON_PASSWORDS: &str = include_str!("common_passwords.txt");

/// Whether `password`, ignoring case, is on the list of common passwords.
fn is_common(password: &str) -> bool {
    static LIST: LazyLock<HashSet<String>> = LazyLock::new(|| {
        COMMON_PASSWORDS
            .lines()
            .map(str::trim)
            .filter(|line| !line.is_empty())
            .map(str::to_lowercase)
            .collect()
    });
    LIST.contains(&password.to_lowercase())
}

/// The part of an address before `@` this long or longer is a name worth
/// refusing in a password; a shorter one ("ops") is too likely by chance.
const MIN_LOCAL_PART_CHARS: usize = 4;

/// A password a user may choose: long enough, not too long, not one of the
/// most common passwords, and not built on the user's own address (the first
/// things an attacker tries). Each refusal says why.
pub fn check_new_password(password: &str, email: &str) -> Result<(), String> {
    let chars = password.chars().count();
    if chars < MIN_PASSWORD_CHARS {
        return Err(format!("must be at least {MIN_PASSWORD_CHARS} characters"));
    }
    if chars > MAX_PASSWORD_CHARS {
        return Err(format!("must be at most {MAX_PASSWORD_CHARS} characters"));
    }
    if is_common(password.trim()) {
        return Err("is one of the 10,000 most common passwords; choose another".into());
    }
    let password = password.to_lowercase();
    let email = email.trim().to_lowercase();
    if !email.is_empty() && password.contains(&email) {
        return Err("must not contain your email address".into());
    }
    let local = email.split('@').next().unwrap_or_default();
    if local.chars().count() >= MIN_LOCAL_PART_CHARS && password.contains(local) {
        return Err(format!(
            "must not contain the name in your email address (\"{local}\"); it is the first thing guessed"
        ));
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

    #[test]
    fn the_most_common_passwords_are_refused_whatever_their_case() {
        for common in ["password123", "1234567890", "qwertyuiop", "PassWord123"] {
            let refusal = check_new_password(common, "dispatch@acme.example").unwrap_err();
            assert!(
                refusal.contains("10,000 most common"),
                "{common}: {refusal}"
            );
        }
        assert!(check_new_password("password123 trucks", "dispatch@acme.example").is_ok());
    }

    #[test]
    fn a_password_containing_the_address_or_its_name_is_refused() {
        let email = "dispatch@acme.example";
        let refusal = check_new_password("my dispatch@acme.example!", email).unwrap_err();
        assert!(refusal.contains("email address"), "{refusal}");
        let refusal = check_new_password("Dispatch-2024-go", email).unwrap_err();
        assert!(refusal.contains("\"dispatch\""), "{refusal}");
        // A short name is not refused: "ops" occurs in too many passwords.
        assert!(check_new_password("stops and starts", "ops@acme.example").is_ok());
    }
}
