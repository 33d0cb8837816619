//! What lets several instances share a store: load leases, idempotency key
//! claims and shared request counters. A store one process owns (embedded)
//! leases everything to whoever asks and shares no counts, as documented; a
//! shared store must give each load one owner at a time and add up counts.

use std::time::Duration;

use freight::domain::ids::{AccountId, LoadId};
use freight::storage::Storage;

pub async fn leases_give_a_load_one_owner_at_a_time(store: &dyn Storage) {
    let load = LoadId::generate();
    let ttl = Duration::from_secs(30);
    assert!(store.lease_load(&load, "instance-a", ttl).await.unwrap());
    // The holder renews.
    assert!(store.lease_load(&load, "instance-a", ttl).await.unwrap());
    let second = store.lease_load(&load, "instance-b", ttl).await.unwrap();
    assert_eq!(
        second,
        !store.needs_leases(),
        "a shared store refuses a second owner; a store one process owns has no other"
    );
    // Another owner's release does not free it; the holder's does.
    store.release_load(&load, "instance-b").await.unwrap();
    if store.needs_leases() {
        assert!(!store.lease_load(&load, "instance-b", ttl).await.unwrap());
    }
    store.release_load(&load, "instance-a").await.unwrap();
    assert!(store.lease_load(&load, "instance-b", ttl).await.unwrap());
    // Leases of different loads are independent.
    assert!(
        store
            .lease_load(&LoadId::generate(), "instance-a", ttl)
            .await
            .unwrap()
    );
}

pub async fn idempotency_keys_are_claimed_by_one_instance(store: &dyn Storage) {
    let account = AccountId::generate();
    let ttl = Duration::from_secs(30);
    assert!(
        store
            .claim_idempotency_key(&account, "k1", "instance-a", ttl)
            .await
            .unwrap()
    );
    let second = store
        .claim_idempotency_key(&account, "k1", "instance-b", ttl)
        .await
        .unwrap();
    assert_eq!(second, !store.needs_leases());
    // The same key of another account is another key.
    assert!(
        store
            .claim_idempotency_key(&AccountId::generate(), "k1", "instance-b", ttl)
            .await
            .unwrap()
    );
    store
        .release_idempotency_key(&account, "k1", "instance-a")
        .await
        .unwrap();
    assert!(
        store
            .claim_idempotency_key(&account, "k1", "instance-b", ttl)
            .await
            .unwrap()
    );
}

pub async fn request_counts_add_up_across_instances(store: &dyn Storage) {
    let account = AccountId::generate();
    let minute = chrono::Utc::now().timestamp().div_euclid(60);
    // Two instances' counts of the same minutes, and one the hour before.
    store
        .add_request_counts(&account, &[(minute, 3), (minute - 1, 2)])
        .await
        .unwrap();
    store
        .add_request_counts(&account, &[(minute, 4)])
        .await
        .unwrap();
    store
        .add_request_counts(&account, &[(minute - 59, 1), (minute - 60, 9)])
        .await
        .unwrap();
    let mut counts = store.request_counts(&account, minute - 59).await.unwrap();
    counts.sort();
    if store.needs_leases() {
        assert_eq!(counts, [(minute - 59, 1), (minute - 1, 2), (minute, 7)]);
    } else {
        assert!(
            counts.is_empty(),
            "a store one process owns shares no counts"
        );
    }
    assert!(
        store
            .request_counts(&AccountId::generate(), minute - 59)
            .await
            .unwrap()
            .is_empty()
    );
}

pub async fn instances_register_and_leases_name_their_holder(store: &dyn Storage) {
    let load = LoadId::generate();
    let ttl = Duration::from_secs(30);
    // Owners as the service names them: `<instance>#<incarnation>`.
    let (a, b) = (
        format!("host-a/{}", LoadId::generate().as_str()),
        format!("host-b/{}", LoadId::generate().as_str()),
    );
    let owner = format!("{a}#1");
    assert_eq!(store.load_lease_holder(&load).await.unwrap(), None);
    assert!(store.lease_load(&load, &owner, ttl).await.unwrap());
    let holder = store.load_lease_holder(&load).await.unwrap();
    store
        .register_instance(&a, "10.0.0.1:9445", ttl)
        .await
        .unwrap();
    store
        .register_instance(&b, "10.0.0.2:9445", ttl)
        .await
        .unwrap();
    // Registering again moves the address (a restart on another port).
    store
        .register_instance(&b, "10.0.0.3:9445", ttl)
        .await
        .unwrap();
    let registered = store.instances().await.unwrap();
    let address_of = |name: &str| {
        registered
            .iter()
            .find(|(instance, _)| instance == name)
            .map(|(_, address)| address.as_str())
    };
    if store.needs_leases() {
        assert_eq!(
            holder.as_deref(),
            Some(owner.as_str()),
            "the lease names its holder"
        );
        assert_eq!(address_of(&a), Some("10.0.0.1:9445"));
        assert_eq!(address_of(&b), Some("10.0.0.3:9445"));
        store.release_load(&load, &owner).await.unwrap();
        assert_eq!(store.load_lease_holder(&load).await.unwrap(), None);
    } else {
        assert_eq!(holder, None, "a store one process owns has no other holder");
        assert!(registered.is_empty(), "nor other instances");
    }
}
