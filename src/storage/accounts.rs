//! Accounts and their API keys.

use async_trait::async_trait;

use super::StorageResult;
use crate::domain::account::Account;
use crate::domain::api_key::ApiKey;
use crate::domain::ids::{AccountId, KeyId};

#[async_trait]
pub trait AccountStore: Send + Sync {
    /// Creates or replaces an account.
    async fn put_account(&self, account: &Account) -> StorageResult<()>;
    /// An account by id.
    async fn get_account(&self, id: &AccountId) -> StorageResult<Option<Account>>;
    /// All accounts, oldest first. Operator use only: accounts are few.
    async fn list_accounts(&self) -> StorageResult<Vec<Account>>;

    /// Creates or replaces an API key record (revocation is a replace).
    async fn put_api_key(&self, key: &ApiKey) -> StorageResult<()>;
    /// An API key record by id, whatever its account: callers check ownership.
    async fn get_api_key(&self, id: &KeyId) -> StorageResult<Option<ApiKey>>;
    /// An account's keys, oldest first.
    async fn list_api_keys(&self, account: &AccountId) -> StorageResult<Vec<ApiKey>>;
}
