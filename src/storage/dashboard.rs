//! Dashboard users and their sessions.

use async_trait::async_trait;
use chrono::{DateTime, Utc};

use super::StorageResult;
use crate::domain::account::Account;
use crate::domain::ids::{AccountId, UserId};
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
