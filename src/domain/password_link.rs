//! One-time links that let a person choose a password: an invitation to join
//! an account (made in the dashboard by a user of the account), and a reset of
//! a user's password (made by the operator's command line).
//!
//! The link carries a random token; only its SHA-256 is stored, as for
//! sessions and API keys, so a copy of the store opens no link. A link works
//! once: redeeming it removes it.

use chrono::{DateTime, Duration, Utc};
use serde::{Deserialize, Serialize};

use super::ids::{AccountId, UserId};
use super::timestamp::serde_utc;

/// How long an invitation can be accepted.
pub const INVITATION_LIFETIME: Duration = Duration::days(7);
/// How long a password reset made by the operator can be used.
pub const RESET_LIFETIME: Duration = Duration::hours(24);
/// Where a link leads, with its token in `?token=` (the query string is not
/// written to the request log, the path is).
pub const LINK_PATH: &str = "/dashboard/password";

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PasswordLink {
    /// Hex SHA-256 of the link's token.
    pub token_sha256: String,
    pub purpose: LinkPurpose,
    #[serde(with = "serde_utc")]
    pub created_at: DateTime<Utc>,
    #[serde(with = "serde_utc")]
    pub expires_at: DateTime<Utc>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum LinkPurpose {
    /// `email` may join `account_id` as a new user, choosing a password.
    Invitation {
        account_id: AccountId,
        /// Lower-case.
        email: String,
        /// The user who invited them; `None`: the operator (`freight users
        /// create`).
        #[serde(default)]
        invited_by: Option<UserId>,
    },
    /// `user_id` chooses a new password (the old one was cleared).
    Reset {
        user_id: UserId,
        account_id: AccountId,
    },
}

impl PasswordLink {
    pub fn is_live(&self, now: DateTime<Utc>) -> bool {
        now < self.expires_at
    }

    /// The account the link is for (an invitation's, a reset user's).
    pub fn account_id(&self) -> &AccountId {
        match &self.purpose {
            LinkPurpose::Invitation { account_id, .. } | LinkPurpose::Reset { account_id, .. } => {
                account_id
            }
        }
    }

    /// The invitation's address, if it is one.
    pub fn invited_email(&self) -> Option<&str> {
        match &self.purpose {
            LinkPurpose::Invitation { email, .. } => Some(email),
            LinkPurpose::Reset { .. } => None,
        }
    }
}
