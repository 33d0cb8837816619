//! Dashboard users, their sessions, and the one-time links that let a person
//! choose a password (invitations, resets).

use async_trait::async_trait;
use chrono::{DateTime, Utc};

use super::StorageResult;
use crate::domain::account::Account;
use crate::domain::ids::{AccountId, UserId};
use crate::domain::password_link::PasswordLink;
use crate::domain::user::{Session, User};

/// Outcome of adding a user: an email address belongs to one user at most.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum UserInsert {
    Inserted,
    EmailTaken,
}

#[async_trait]
pub trait DashboardStore: Send + Sync {
    /// Adds a user, and with it (atomically) `new_account` when the user is the
    /// first of a new account; nothing is written when the email is taken.
    async fn insert_user(
        &self,
        user: &User,
        new_account: Option<&Account>,
    ) -> StorageResult<UserInsert>;
    /// A user by id.
    async fn get_user(&self, id: &UserId) -> StorageResult<Option<User>>;
    /// A user by (lower-case) email address.
    async fn find_user_by_email(&self, email: &str) -> StorageResult<Option<User>>;
    /// An account's users, oldest first.
    async fn list_users(&self, account: &AccountId) -> StorageResult<Vec<User>>;
    /// Replaces a user's record (a new password); the email never changes.
    async fn put_user(&self, user: &User) -> StorageResult<()>;
    /// Removes a user: the record, its email (free for anyone again), its
    /// place in the account's list, and every session of it.
    async fn delete_user(&self, user: &User) -> StorageResult<()>;

    /// Keeps a one-time link (an invitation is also listed under its account).
    async fn put_password_link(&self, link: &PasswordLink) -> StorageResult<()>;
    /// A link by the SHA-256 of its token, expired or not.
    async fn get_password_link(&self, token_sha256: &str) -> StorageResult<Option<PasswordLink>>;
    /// Removes a link and returns it, if it was there: of callers racing for
    /// one link, exactly one gets it.
    async fn take_password_link(&self, token_sha256: &str) -> StorageResult<Option<PasswordLink>>;
    /// An account's invitations not yet accepted nor withdrawn (expired
    /// ones included), in no particular order.
    async fn list_invitations(&self, account: &AccountId) -> StorageResult<Vec<PasswordLink>>;

    /// Creates a session (a sign-in).
    async fn put_session(&self, session: &Session) -> StorageResult<()>;
    /// A session by the SHA-256 of its token, expired or not.
    async fn get_session(&self, token_sha256: &str) -> StorageResult<Option<Session>>;
    /// Ends a session (sign-out); ending an unknown one is not an error.
    async fn delete_session(&self, token_sha256: &str) -> StorageResult<()>;
    /// Ends every session of a user but `keep` (sign out everywhere else);
    /// returns how many ended.
    async fn delete_user_sessions(&self, user: &UserId, keep: Option<&str>) -> StorageResult<u64>;
    /// Forgets sessions that expired before `before`; returns how many.
    async fn purge_sessions(&self, before: DateTime<Utc>) -> StorageResult<u64>;
}
