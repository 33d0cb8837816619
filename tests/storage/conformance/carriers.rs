//! Carriers, unique by MC number within an account.

use freight::domain::carrier::{Carrier, Contact, NewCarrier};
use freight::domain::ids::{AccountId, CarrierId};
use freight::storage::{CarrierInsert, PageRequest, Storage};

use super::ALL;

/// A carrier of `account` with MC number `mc`, not stored yet.
pub fn carrier(account: &AccountId, mc: &str) -> Carrier {
    let new = NewCarrier {
        name: "Carrier".into(),
        mc_number: mc.into(),
        dot_number: None,
        contact: Contact::default(),
        equipment_types: Vec::new(),
        service_areas: Vec::new(),
    };
    Carrier::create(
        CarrierId::generate(),
        account.clone(),
        new,
        crate::fixtures::now(),
    )
}

pub async fn carriers_are_unique_by_mc_number_per_account(store: &dyn Storage) {
    let owner = AccountId::generate();
    let first = carrier(&owner, "1001");
    let second = carrier(&owner, "1002");
    assert_eq!(
        store.insert_carrier(&first).await.unwrap(),
        CarrierInsert::Inserted
    );
    assert_eq!(
        store.insert_carrier(&second).await.unwrap(),
        CarrierInsert::Inserted
    );
    assert_eq!(
        store
            .insert_carrier(&carrier(&owner, "1001"))
            .await
            .unwrap(),
        CarrierInsert::DuplicateMcNumber(first.id.clone())
    );
    let elsewhere = carrier(&AccountId::generate(), "1001");
    assert_eq!(
        store.insert_carrier(&elsewhere).await.unwrap(),
        CarrierInsert::Inserted
    );

    assert_eq!(
        store.get_carrier(&owner, &first.id).await.unwrap(),
        Some(first.clone())
    );
    assert_eq!(
        store
            .get_carrier(&elsewhere.account_id, &first.id)
            .await
            .unwrap(),
        None
    );
    let page = store.list_carriers(&owner, ALL).await.unwrap();
    assert_eq!(page.items, vec![second.clone(), first.clone()]);
    assert_eq!(page.total, 2);
    let second_page = store
        .list_carriers(
            &owner,
            PageRequest {
                offset: 1,
                limit: 1,
            },
        )
        .await
        .unwrap();
    assert_eq!(second_page.items, vec![first]);
}

pub async fn carriers_are_changed_and_deleted_freeing_their_number(store: &dyn Storage) {
    let owner = AccountId::generate();
    let first = carrier(&owner, "2001");
    let kept = carrier(&owner, "2002");
    for c in [&first, &kept] {
        assert_eq!(
            store.insert_carrier(c).await.unwrap(),
            CarrierInsert::Inserted
        );
    }
    let mut changed = first.clone();
    changed.name = "Renamed".into();
    changed.contact.phone = Some("+1 214-555-0100".into());
    store.update_carrier(&changed).await.unwrap();
    assert_eq!(
        store.get_carrier(&owner, &first.id).await.unwrap(),
        Some(changed.clone())
    );
    // Its number is still its own.
    assert_eq!(
        store
            .insert_carrier(&carrier(&owner, "2001"))
            .await
            .unwrap(),
        CarrierInsert::DuplicateMcNumber(first.id.clone())
    );

    assert!(store.delete_carrier(&owner, &first.id).await.unwrap());
    assert_eq!(store.get_carrier(&owner, &first.id).await.unwrap(), None);
    assert!(!store.delete_carrier(&owner, &first.id).await.unwrap());
    // Another account's carrier is not this account's to delete.
    assert!(
        !store
            .delete_carrier(&AccountId::generate(), &kept.id)
            .await
            .unwrap()
    );
    let listed = store.list_carriers(&owner, ALL).await.unwrap();
    assert_eq!(listed.total, 1);
    assert_eq!(listed.items, vec![kept.clone()]);
    // The number is free, and stays taken by whoever takes it next.
    let again = carrier(&owner, "2001");
    assert_eq!(
        store.insert_carrier(&again).await.unwrap(),
        CarrierInsert::Inserted
    );
    assert_eq!(
        store
            .insert_carrier(&carrier(&owner, "2001"))
            .await
            .unwrap(),
        CarrierInsert::DuplicateMcNumber(again.id.clone())
    );
}
