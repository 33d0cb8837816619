//! Share links: found by their token's hash, listed by load, replaced whole.

use chrono::Duration;
use freight::domain::ids::{AccountId, LoadId};
use freight::domain::share_link::ShareLink;
use freight::storage::Storage;

pub async fn share_links_are_found_by_token_and_listed_by_load(store: &dyn Storage) {
    let now = crate::fixtures::now();
    let (account, load) = (AccountId::generate(), LoadId::generate());
    let (first, token) = ShareLink::issue(
        account.clone(),
        load.clone(),
        now + Duration::hours(72),
        now,
    );
    let (second, _) =
        ShareLink::issue(account.clone(), load.clone(), now + Duration::hours(1), now);
    let (elsewhere, _) =
        ShareLink::issue(account, LoadId::generate(), now + Duration::hours(1), now);
    for link in [&first, &second, &elsewhere] {
        store.put_share_link(link).await.unwrap();
    }
    assert_eq!(
        store
            .share_link_by_token(&ShareLink::token_hash(&token))
            .await
            .unwrap(),
        Some(first.clone())
    );
    assert_eq!(
        store.share_link_by_token(&token).await.unwrap(),
        None,
        "by hash only"
    );
    assert_eq!(
        store.share_links_of_load(&load).await.unwrap(),
        [first.clone(), second.clone()]
    );

    let revoked = ShareLink {
        revoked_at: Some(now),
        ..first.clone()
    };
    store.put_share_link(&revoked).await.unwrap();
    assert_eq!(
        store
            .share_link_by_token(&first.token_sha256)
            .await
            .unwrap(),
        Some(revoked.clone())
    );
    assert_eq!(
        store.share_links_of_load(&load).await.unwrap(),
        [revoked, second]
    );
    assert!(
        store
            .share_links_of_load(&LoadId::generate())
            .await
            .unwrap()
            .is_empty()
    );
}
