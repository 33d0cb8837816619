//! The CQL store's carrier holds and deletion marks (`carrier_holds`), which
//! only a store several instances share has: not a conformance check.

use freight::domain::ids::AccountId;
use freight::storage::PageRequest;

use crate::{conformance, open_scylla};

/// A carrier's holds (assignments in progress) and its deletion mark keep
/// each other out, on the CQL store, where instances share them
/// (`carrier_holds`): a deletion finds the loads holding it, an assignment
/// finds the carrier being deleted, and neither writes a row for a carrier
/// that does not exist.
#[tokio::test(flavor = "multi_thread")]
async fn holds_and_deletion_marks_keep_each_other_out() {
    use freight::domain::ids::{CarrierId, LoadId};
    use freight::storage::{CarrierInsert, DeletingMark};

    let Some((_keyspace, store)) = open_scylla().await else {
        return;
    };
    let account = AccountId::generate();
    let carrier = conformance::carriers::carrier(&account, "MC-424242");
    assert_eq!(
        store.insert_carrier(&carrier).await.unwrap(),
        CarrierInsert::Inserted
    );
    let (first, second) = (LoadId::generate(), LoadId::generate());
    assert!(
        store
            .hold_carrier(&account, &carrier.id, &first)
            .await
            .unwrap()
    );
    assert_eq!(
        store
            .mark_carrier_deleting(&account, &carrier.id)
            .await
            .unwrap(),
        DeletingMark::Held(vec![first.clone()]),
        "a deletion waits out a hold a moment, then names the load"
    );
    store
        .release_carrier(&account, &carrier.id, &first)
        .await
        .unwrap();
    assert_eq!(
        store
            .mark_carrier_deleting(&account, &carrier.id)
            .await
            .unwrap(),
        DeletingMark::Marked
    );
    assert!(
        !store
            .hold_carrier(&account, &carrier.id, &second)
            .await
            .unwrap(),
        "an assignment is refused while the carrier is being deleted"
    );
    store
        .unmark_carrier_deleting(&account, &carrier.id)
        .await
        .unwrap();
    assert!(
        store
            .hold_carrier(&account, &carrier.id, &second)
            .await
            .unwrap()
    );
    store
        .release_carrier(&account, &carrier.id, &second)
        .await
        .unwrap();
    // The carrier reads as it was written: holds and marks are not its record.
    assert_eq!(
        store.get_carrier(&account, &carrier.id).await.unwrap(),
        Some(carrier.clone())
    );
    assert!(store.delete_carrier(&account, &carrier.id).await.unwrap());

    let missing = CarrierId::generate();
    assert!(
        !store
            .hold_carrier(&account, &missing, &first)
            .await
            .unwrap()
    );
    assert!(
        !store
            .hold_carrier(&account, &carrier.id, &first)
            .await
            .unwrap()
    );
    assert_eq!(
        store
            .mark_carrier_deleting(&account, &missing)
            .await
            .unwrap(),
        DeletingMark::Missing
    );
    let listed = store
        .list_carriers(
            &account,
            PageRequest {
                offset: 0,
                limit: 10,
            },
        )
        .await
        .unwrap();
    assert!(listed.items.is_empty(), "no row was written for them");
}
