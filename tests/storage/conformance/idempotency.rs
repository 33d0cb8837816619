//! Idempotency answers.

use chrono::{DateTime, Duration, Utc};
use freight::domain::account::Account;
use freight::domain::idempotency::StoredResponse;
use freight::storage::Storage;

use super::account;

/// Idempotency answers are kept per (account, key), replaced on a second put, and
/// purged by age.
pub async fn idempotency_answers_are_kept_and_purged(store: &dyn Storage) {
    let (a, b) = (account(), account());
    let now = crate::fixtures::now();
    let answer = |owner: &Account, key: &str, at: DateTime<Utc>| StoredResponse {
        account_id: owner.id.clone(),
        key: key.into(),
        fingerprint: "f".repeat(64),
        status: 201,
        content_type: Some("application/json".into()),
        body: format!("{{\"key\":\"{key}\"}}"),
        created_at: at,
    };
    let old = answer(&a, "old", now - Duration::hours(25));
    let fresh = answer(&a, "fresh", now);
    store.put_idempotent(&old).await.unwrap();
    store.put_idempotent(&fresh).await.unwrap();
    assert_eq!(
        store.get_idempotent(&a.id, "fresh").await.unwrap(),
        Some(fresh.clone())
    );
    assert_eq!(
        store.get_idempotent(&b.id, "fresh").await.unwrap(),
        None,
        "per account"
    );
    let replaced = StoredResponse {
        status: 400,
        ..fresh.clone()
    };
    store.put_idempotent(&replaced).await.unwrap();
    assert_eq!(
        store.get_idempotent(&a.id, "fresh").await.unwrap(),
        Some(replaced)
    );
    let purged = store
        .purge_idempotent(now - Duration::hours(24))
        .await
        .unwrap();
    assert!(purged >= 1);
    assert_eq!(store.get_idempotent(&a.id, "old").await.unwrap(), None);
    assert!(
        store
            .get_idempotent(&a.id, "fresh")
            .await
            .unwrap()
            .is_some()
    );
}
