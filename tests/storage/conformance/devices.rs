//! Devices and the loads they are attached to.

use freight::domain::device::{Attachment, Device};
use freight::domain::ids::{AccountId, LoadId};
use freight::storage::Storage;

fn device(account: &AccountId, name: &str) -> Device {
    Device::issue(
        account.clone(),
        name.into(),
        None,
        None,
        crate::fixtures::now(),
    )
    .device
}

fn attach(load: &LoadId, device: &Device) -> Attachment {
    Attachment {
        load_id: load.clone(),
        device_id: device.id.clone(),
        account_id: device.account_id.clone(),
    }
}

/// Devices read back as put, listed per account oldest first; a load has one
/// device, which a new attachment replaces; removing a device removes its
/// attachments and nothing of another device.
pub async fn devices_and_their_loads(store: &dyn Storage) {
    let (account, other) = (AccountId::generate(), AccountId::generate());
    let truck = device(&account, "Truck 12");
    let phone = device(&account, "Driver's phone");
    let theirs = device(&other, "Theirs");
    for d in [&truck, &phone, &theirs] {
        store.put_device(d).await.unwrap();
    }
    assert_eq!(
        store.get_device(&truck.id).await.unwrap(),
        Some(truck.clone())
    );
    assert_eq!(
        store.list_devices(&account).await.unwrap(),
        vec![truck.clone(), phone.clone()]
    );
    let seen = Device {
        last_seen_at: Some(crate::fixtures::now()),
        ..truck.clone()
    };
    store.put_device(&seen).await.unwrap();
    assert_eq!(
        store.get_device(&truck.id).await.unwrap(),
        Some(seen.clone())
    );
    assert_eq!(store.list_devices(&account).await.unwrap().len(), 2);
    let everyone = store.all_devices().await.unwrap();
    for d in [&truck, &phone, &theirs] {
        assert!(
            everyone.iter().any(|e| e.id == d.id),
            "{} in all_devices",
            d.id
        );
    }

    // The truck carries two loads.
    let (first, second) = (LoadId::generate(), LoadId::generate());
    store.put_attachment(&attach(&first, &truck)).await.unwrap();
    store
        .put_attachment(&attach(&second, &truck))
        .await
        .unwrap();
    let mut loads: Vec<LoadId> = store
        .attachments_of_device(&truck.id)
        .await
        .unwrap()
        .into_iter()
        .map(|a| a.load_id)
        .collect();
    loads.sort();
    let mut expected = vec![first.clone(), second.clone()];
    expected.sort();
    assert_eq!(loads, expected);
    assert_eq!(
        store.attachment_of_load(&first).await.unwrap(),
        Some(attach(&first, &truck))
    );

    // The second load moves to the phone: one device per load.
    store
        .put_attachment(&attach(&second, &phone))
        .await
        .unwrap();
    assert_eq!(
        store.attachment_of_load(&second).await.unwrap(),
        Some(attach(&second, &phone))
    );
    assert_eq!(
        store.attachments_of_device(&truck.id).await.unwrap(),
        vec![attach(&first, &truck)]
    );
    // Attaching again changes nothing.
    store
        .put_attachment(&attach(&second, &phone))
        .await
        .unwrap();
    assert_eq!(
        store.attachments_of_device(&phone.id).await.unwrap(),
        vec![attach(&second, &phone)]
    );

    store.delete_attachment(&first).await.unwrap();
    store.delete_attachment(&first).await.unwrap();
    assert_eq!(store.attachment_of_load(&first).await.unwrap(), None);
    assert_eq!(
        store.attachments_of_device(&truck.id).await.unwrap(),
        vec![]
    );

    // A sighting notes the time, and never brings a removed device back.
    let at = crate::fixtures::now() + chrono::Duration::minutes(5);
    store.record_sighting(&truck.id, at).await.unwrap();
    let seen = store.get_device(&truck.id).await.unwrap().unwrap();
    assert_eq!(seen.last_seen_at, Some(at));
    let gone = device(&account, "Gone");
    store.put_device(&gone).await.unwrap();
    store.delete_device(&gone).await.unwrap();
    store.record_sighting(&gone.id, at).await.unwrap();
    assert_eq!(store.get_device(&gone.id).await.unwrap(), None);
    assert!(
        !store
            .all_devices()
            .await
            .unwrap()
            .iter()
            .any(|d| d.id == gone.id),
        "a sighting of a removed device is no device"
    );

    // Removing the phone takes its attachment, not the truck.
    store.put_attachment(&attach(&first, &truck)).await.unwrap();
    store.delete_device(&phone).await.unwrap();
    assert_eq!(store.get_device(&phone.id).await.unwrap(), None);
    assert_eq!(store.attachment_of_load(&second).await.unwrap(), None);
    assert_eq!(store.list_devices(&account).await.unwrap(), vec![seen]);
    assert_eq!(
        store.attachments_of_device(&truck.id).await.unwrap(),
        vec![attach(&first, &truck)]
    );
}
