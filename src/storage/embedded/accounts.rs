//! Accounts and their API keys: JSON records, keys also listed under their account.

use async_trait::async_trait;

use super::{EmbeddedStore, encode, keys, unavailable};
use crate::domain::account::Account;
use crate::domain::api_key::ApiKey;
use crate::domain::ids::{AccountId, KeyId};
use crate::storage::{AccountStore, StorageResult};

#[async_trait]
impl AccountStore for EmbeddedStore {
    async fn put_account(&self, account: &Account) -> StorageResult<()> {
        let value = encode(account)?;
        let key = account.id.as_str().as_bytes().to_vec();
        self.put_one(|s| &s.accounts, key, value).await
    }

    async fn get_account(&self, id: &AccountId) -> StorageResult<Option<Account>> {
        let key = id.as_str().as_bytes().to_vec();
        self.run(move |s| s.get_json(&s.accounts, &key)).await
    }

    async fn list_accounts(&self) -> StorageResult<Vec<Account>> {
        self.all_of(|s| &s.accounts).await
    }

    async fn put_api_key(&self, key: &ApiKey) -> StorageResult<()> {
        let value = encode(key)?;
        let id = key.id.as_str().as_bytes().to_vec();
        let listing = keys::owned(&key.account_id, key.id.as_str());
        self.run(move |s| {
            let mut batch = s.durable_batch();
            batch.insert(&s.api_keys, id, value);
            batch.insert(&s.account_keys, listing, Vec::<u8>::new());
            s.commit_durably(batch)
        })
        .await
    }

    async fn get_api_key(&self, id: &KeyId) -> StorageResult<Option<ApiKey>> {
        let key = id.as_str().as_bytes().to_vec();
        self.run(move |s| s.get_json(&s.api_keys, &key)).await
    }

    async fn list_api_keys(&self, account: &AccountId) -> StorageResult<Vec<ApiKey>> {
        let prefix = account.as_str().as_bytes().to_vec();
        let prefix_len = prefix.len();
        self.run(move |s| {
            let mut out = Vec::new();
            for guard in s.account_keys.prefix(&prefix) {
                let listing = guard.key().map_err(unavailable)?;
                if let Some(key) = s.get_json(&s.api_keys, &listing[prefix_len..])? {
                    out.push(key);
                }
            }
            Ok(out)
        })
        .await
    }
}
