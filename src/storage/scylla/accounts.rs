//! Accounts and their API keys.

use async_trait::async_trait;

use super::statements::LoggedBatch;
use super::{ScyllaStore, encode};
use crate::domain::account::Account;
use crate::domain::api_key::ApiKey;
use crate::domain::ids::{AccountId, KeyId};
use crate::storage::{AccountStore, StorageResult};

#[async_trait]
impl AccountStore for ScyllaStore {
    async fn put_account(&self, account: &Account) -> StorageResult<()> {
        let record = encode(account)?;
        self.exec(&self.st.put_account, (account.id.as_str(), record))
            .await
            .map(|_| ())
    }

    async fn get_account(&self, id: &AccountId) -> StorageResult<Option<Account>> {
        self.record(&self.st.get_account, (id.as_str(),)).await
    }

    /// A scan of the whole (small) table, paged; ids are ULIDs, so sorting by
    /// id is oldest first.
    async fn list_accounts(&self) -> StorageResult<Vec<Account>> {
        let mut accounts: Vec<Account> = self.records(&self.st.all_accounts, ()).await?;
        accounts.sort_by(|a, b| a.id.as_str().cmp(b.id.as_str()));
        Ok(accounts)
    }

    /// The key and its place in the account's list, in one logged batch.
    async fn put_api_key(&self, key: &ApiKey) -> StorageResult<()> {
        let record = encode(key)?;
        let mut batch = LoggedBatch::new();
        batch.add(
            &self.st.put_api_key,
            (key.id.as_str().to_owned(), record.clone()),
        );
        batch.add(
            &self.st.put_api_key_by_account,
            (
                key.account_id.as_str().to_owned(),
                key.id.as_str().to_owned(),
                record,
            ),
        );
        self.logged(batch).await
    }

    async fn get_api_key(&self, id: &KeyId) -> StorageResult<Option<ApiKey>> {
        self.record(&self.st.get_api_key, (id.as_str(),)).await
    }

    /// Clustered by key id ascending: oldest first.
    async fn list_api_keys(&self, account: &AccountId) -> StorageResult<Vec<ApiKey>> {
        self.records(&self.st.api_keys_of_account, (account.as_str(),))
            .await
    }
}
