//! Load references: claims taken, moved only from the holder seen, released
//! only by their holder; and the protocol on top (`storage::references`).

use chrono::Duration;
use freight::domain::ids::{AccountId, LoadId};
use freight::storage::references::{self, CLAIM_GRACE};
use freight::storage::{ReferenceClaim, Storage};

pub async fn reference_claims_are_swapped_only_from_the_holder_seen(store: &dyn Storage) {
    let account = AccountId::generate();
    let (a, b) = (LoadId::generate(), LoadId::generate());
    let at = crate::fixtures::now();
    let claim = |load: &LoadId| ReferenceClaim {
        load: load.clone(),
        at,
    };
    assert_eq!(store.reference_claim(&account, "PO-1").await.unwrap(), None);
    assert!(
        store
            .swap_reference_claim(&account, "PO-1", &claim(&a), None)
            .await
            .unwrap()
    );
    assert_eq!(
        store.reference_claim(&account, "PO-1").await.unwrap(),
        Some(claim(&a))
    );
    // Taken: only a swap from the holder seen is made.
    assert!(
        !store
            .swap_reference_claim(&account, "PO-1", &claim(&b), None)
            .await
            .unwrap()
    );
    assert!(
        !store
            .swap_reference_claim(&account, "PO-1", &claim(&b), Some(&b))
            .await
            .unwrap()
    );
    assert!(
        store
            .swap_reference_claim(&account, "PO-1", &claim(&b), Some(&a))
            .await
            .unwrap()
    );
    // Another account's same reference is another claim.
    assert_eq!(
        store
            .reference_claim(&AccountId::generate(), "PO-1")
            .await
            .unwrap(),
        None
    );
    // Only the holder releases.
    store.release_reference(&account, "PO-1", &a).await.unwrap();
    assert_eq!(
        store.reference_claim(&account, "PO-1").await.unwrap(),
        Some(claim(&b))
    );
    store.release_reference(&account, "PO-1", &b).await.unwrap();
    assert_eq!(store.reference_claim(&account, "PO-1").await.unwrap(), None);
}

pub async fn a_stale_reference_claim_is_taken_over_and_a_live_one_is_not(store: &dyn Storage) {
    let account = AccountId::generate();
    let (writer, other) = (LoadId::generate(), LoadId::generate());
    let now = crate::fixtures::now();
    // A writer claimed and never wrote its load.
    assert_eq!(
        references::claim(store, &account, "BOL-7", &writer, now)
            .await
            .unwrap(),
        Ok(())
    );
    // Within the grace it may still be writing: taken.
    assert_eq!(
        references::claim(store, &account, "BOL-7", &other, now + Duration::seconds(5))
            .await
            .unwrap(),
        Err(writer.clone())
    );
    // Past it, with no load carrying the reference: stale, taken over.
    let later = now + CLAIM_GRACE + Duration::seconds(1);
    assert_eq!(
        references::claim(store, &account, "BOL-7", &other, later)
            .await
            .unwrap(),
        Ok(())
    );
    assert_eq!(
        store
            .reference_claim(&account, "BOL-7")
            .await
            .unwrap()
            .map(|c| c.load),
        Some(other.clone())
    );
    // Claiming what one holds is a no-op.
    assert_eq!(
        references::claim(store, &account, "BOL-7", &other, later)
            .await
            .unwrap(),
        Ok(())
    );
    // A load that is stored with the reference keeps it past the grace.
    let mut load = crate::fixtures::sample_load(&account, "TX", "GA");
    load.reference = Some("BOL-8".into());
    assert_eq!(
        references::claim(store, &account, "BOL-8", &load.id, now)
            .await
            .unwrap(),
        Ok(())
    );
    store.insert_load(&load, &[]).await.unwrap();
    assert_eq!(
        references::claim(store, &account, "BOL-8", &other, later)
            .await
            .unwrap(),
        Err(load.id.clone())
    );
    assert_eq!(
        references::find(store, &account, "BOL-8")
            .await
            .unwrap()
            .map(|l| l.id),
        Some(load.id.clone())
    );
    assert_eq!(
        references::find(store, &account, "BOL-7").await.unwrap(),
        None
    );
}
