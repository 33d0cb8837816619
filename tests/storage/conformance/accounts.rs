//! Accounts and their API keys.

use chrono::Duration;
use freight::domain::account::{Account, PlanKind};
use freight::domain::api_key::{ApiKey, NewKey, Permission};
use freight::domain::ids::{AccountId, KeyId};
use freight::storage::Storage;

use super::account;

pub async fn accounts_and_keys(store: &dyn Storage) {
    let first = account();
    let second = account();
    store.put_account(&first).await.unwrap();
    store.put_account(&second).await.unwrap();
    assert_eq!(
        store.get_account(&first.id).await.unwrap(),
        Some(first.clone())
    );
    assert_eq!(
        store.get_account(&AccountId::generate()).await.unwrap(),
        None
    );
    let listed = store.list_accounts().await.unwrap();
    assert!(listed.contains(&first) && listed.contains(&second));

    let mut upgraded = first.clone();
    upgraded.plan = PlanKind::Pro;
    store.put_account(&upgraded).await.unwrap();
    assert_eq!(store.get_account(&first.id).await.unwrap(), Some(upgraded));

    let issue = |account: &Account| {
        ApiKey::issue(
            NewKey {
                account_id: account.id.clone(),
                permissions: vec![Permission::Read],
                description: Some("conformance".into()),
                expires_at: Some(crate::fixtures::now() + Duration::days(1)),
            },
            crate::fixtures::now(),
        )
        .record
    };
    let mut key = issue(&first);
    let other_key = issue(&second);
    store.put_api_key(&key).await.unwrap();
    store.put_api_key(&other_key).await.unwrap();
    assert_eq!(store.get_api_key(&key.id).await.unwrap(), Some(key.clone()));
    assert_eq!(store.get_api_key(&KeyId::generate()).await.unwrap(), None);
    assert_eq!(
        store.list_api_keys(&first.id).await.unwrap(),
        vec![key.clone()]
    );

    key.revoked_at = Some(crate::fixtures::now());
    store.put_api_key(&key).await.unwrap();
    assert_eq!(store.get_api_key(&key.id).await.unwrap(), Some(key.clone()));
    assert_eq!(store.list_api_keys(&first.id).await.unwrap(), vec![key]);
}
