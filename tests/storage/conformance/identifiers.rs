//! Device identifiers: one claim per identifier across the whole store,
//! swapped only from the holder seen, released only by its holder, and kept
//! apart from load references (`storage::identifiers`).

use chrono::Duration;
use freight::domain::device::Device;
use freight::domain::ids::{AccountId, DeviceId};
use freight::storage::claims::CLAIM_GRACE;
use freight::storage::{IdentifierClaim, Storage, identifiers};

pub async fn identifier_claims_are_one_per_identifier_across_accounts(store: &dyn Storage) {
    let (a, b) = (DeviceId::generate(), DeviceId::generate());
    let at = crate::fixtures::now();
    let claim = |device: &DeviceId| IdentifierClaim {
        device: device.clone(),
        at,
    };
    let imei = format!("35630704{:07}", at.timestamp_subsec_micros() % 10_000_000);
    assert_eq!(store.identifier_claim(&imei).await.unwrap(), None);
    assert!(
        store
            .swap_identifier_claim(&imei, &claim(&a), None)
            .await
            .unwrap()
    );
    assert!(
        !store
            .swap_identifier_claim(&imei, &claim(&b), None)
            .await
            .unwrap()
    );
    assert!(
        !store
            .swap_identifier_claim(&imei, &claim(&b), Some(&b))
            .await
            .unwrap()
    );
    assert_eq!(
        store.identifier_claim(&imei).await.unwrap(),
        Some(claim(&a))
    );
    // A load reference spelled the same is another name.
    let account = AccountId::generate();
    assert_eq!(store.reference_claim(&account, &imei).await.unwrap(), None);
    store.release_identifier(&imei, &b).await.unwrap();
    assert_eq!(
        store.identifier_claim(&imei).await.unwrap(),
        Some(claim(&a))
    );
    store.release_identifier(&imei, &a).await.unwrap();
    assert_eq!(store.identifier_claim(&imei).await.unwrap(), None);
}

pub async fn a_device_carrying_its_identifier_keeps_it_and_a_stale_claim_is_taken_over(
    store: &dyn Storage,
) {
    let now = crate::fixtures::now();
    let account = AccountId::generate();
    let identifier = format!("fleet-{}/phone", now.timestamp_micros());
    let mut device = Device::issue(
        account.clone(),
        "Unit".into(),
        None,
        Some(identifier.clone()),
        now,
    )
    .device;
    let other = DeviceId::generate();
    assert_eq!(
        identifiers::claim(store, &identifier, &device.id, now)
            .await
            .unwrap(),
        Ok(())
    );
    store.put_device(&device).await.unwrap();
    let later = now + CLAIM_GRACE + Duration::seconds(1);
    assert_eq!(
        identifiers::claim(store, &identifier, &other, later)
            .await
            .unwrap(),
        Err(device.id.clone()),
        "the device carries it"
    );
    assert_eq!(
        identifiers::find(store, &identifier)
            .await
            .unwrap()
            .map(|d| d.id),
        Some(device.id.clone())
    );
    // The device gave it up without releasing (a crash between the writes):
    // nobody's now, and taken over past the grace.
    device.identifier = None;
    store.put_device(&device).await.unwrap();
    assert_eq!(identifiers::find(store, &identifier).await.unwrap(), None);
    assert_eq!(
        identifiers::claim(store, &identifier, &other, later)
            .await
            .unwrap(),
        Ok(())
    );
}
