//! The load actor's own messages: the move to in-transit a departure from the
//! pickup asks for, and the detention clock coming due.

use std::num::NonZeroI64;
use std::sync::Arc;
use std::time::Duration;

use chrono::Utc;

use super::{ActorDeps, ActorSettings, DetentionDue, GeofenceMove, ReadTracking};
use crate::actors::registry::LoadRegistry;
use crate::clock::Clock;
use crate::domain::account::{Account, PlanKind, StopSettings};
use crate::domain::fixtures::sample_load;
use crate::domain::ids::{AccountId, CarrierId};
use crate::domain::load::{CarrierSummary, ChangeSource, Load, LoadStatus, StatusEntry};
use crate::domain::stops::{StopKey, StopKind, StopProgress, StopTimer, StopsProgress};
use crate::domain::tracking::{FixSource, GpsFix, StopsChange, TrackingPoint};
use crate::storage::Storage;
use crate::storage::embedded::EmbeddedStore;
use crate::webhooks::notifier::Notifier;

async fn store() -> (tempfile::TempDir, Arc<dyn Storage>) {
    let dir = tempfile::tempdir().unwrap();
    let storage: Arc<dyn Storage> = Arc::new(EmbeddedStore::open(dir.path()).await.unwrap());
    (dir, storage)
}

/// A store acting as several instances share it (`as_if_shared`): the
/// embedded store with its test switches, and the same as `dyn Storage`.
async fn shared_store() -> (tempfile::TempDir, Arc<EmbeddedStore>, Arc<dyn Storage>) {
    let dir = tempfile::tempdir().unwrap();
    let embedded = Arc::new(
        EmbeddedStore::open(dir.path())
            .await
            .unwrap()
            .as_if_shared(),
    );
    let storage: Arc<dyn Storage> = embedded.clone();
    (dir, embedded, storage)
}

fn registry(storage: Arc<dyn Storage>) -> LoadRegistry {
    LoadRegistry::new(ActorDeps {
        storage,
        notifier: Arc::new(Notifier::default()),
        clock: Clock::system(),
        settings: ActorSettings {
            threads: 0,
            idle_timeout: Duration::from_secs(60),
            delivered_linger: Duration::from_secs(5),
            lease_ttl: super::LEASE_TTL,
        },
        residents: Arc::default(),
        instance: "test-instance".into(),
        carriers: Arc::default(),
    })
}

async fn load_in(storage: &dyn Storage, status: LoadStatus) -> Load {
    let mut load = sample_load(&AccountId::generate(), "TX", "GA");
    load.status = status;
    load.carrier = Some(CarrierSummary {
        id: CarrierId::generate(),
        name: "C".into(),
        mc_number: "1".into(),
    });
    storage.insert_load(&load, &[]).await.unwrap();
    load
}

#[actix_rt::test]
async fn a_departure_from_the_pickup_moves_an_assigned_load_in_transit_once() {
    let (_dir, storage) = store().await;
    let load = load_in(&*storage, LoadStatus::Assigned).await;
    let registry = registry(storage.clone());
    let departed = GeofenceMove {
        account: load.account_id.clone(),
        to: LoadStatus::InTransit,
    };
    // Answered once the move is made.
    registry.send(&load.id, departed.clone()).await.unwrap();
    let read = ReadTracking {
        account: load.account_id.clone(),
    };
    let state = registry.send(&load.id, read).await.unwrap().unwrap();
    assert_eq!(state.status, LoadStatus::InTransit);
    let stored = storage.get_load(&load.id).await.unwrap().unwrap();
    let last = stored.status_history.last().unwrap();
    assert_eq!(
        (last.status, last.source),
        (LoadStatus::InTransit, ChangeSource::Geofence)
    );

    // Again (a repeat of the departure's notice): nothing more is recorded.
    registry.send(&load.id, departed).await.unwrap();
    let again = storage.get_load(&load.id).await.unwrap().unwrap();
    assert_eq!(again.status_history.len(), stored.status_history.len());
}

#[actix_rt::test]
async fn a_delivered_load_stays_delivered() {
    let (_dir, storage) = store().await;
    let load = load_in(&*storage, LoadStatus::Delivered).await;
    let registry = registry(storage.clone());
    let account = load.account_id.clone();
    registry
        .send(
            &load.id,
            GeofenceMove {
                account: account.clone(),
                to: LoadStatus::InTransit,
            },
        )
        .await
        .unwrap();
    let state = registry
        .send(&load.id, ReadTracking { account })
        .await
        .unwrap()
        .unwrap();
    assert_eq!(state.status, LoadStatus::Delivered);
    let stored = storage.get_load(&load.id).await.unwrap().unwrap();
    assert_eq!(
        stored.status_history, load.status_history,
        "nothing recorded"
    );
}

#[actix_rt::test]
async fn detention_is_sent_only_while_the_truck_is_at_the_stop_and_once() {
    let (_dir, storage) = store().await;
    let load = load_in(&*storage, LoadStatus::InTransit).await;
    // The pickup's arrival as its fix stored it, with the clock set.
    let now = Utc::now();
    let arrived = StopsProgress {
        stops: vec![(
            StopKey::Legacy(StopKind::Pickup),
            StopProgress {
                arrived_at: NonZeroI64::new(now.timestamp_micros()),
                ..StopProgress::default()
            },
        )],
        ..StopsProgress::default()
    };
    let point = TrackingPoint {
        load_id: load.id.clone(),
        fix: GpsFix {
            timestamp: now,
            lat: 32.78,
            lng: -96.8,
            speed_mph: Some(0.0),
            heading_deg: None,
            source: FixSource::Api,
        },
        event: None,
        stops: Some(Box::new(StopsChange {
            progress: arrived,
            events: Vec::new(),
            timer: Some(StopTimer::Set {
                stop: StopKey::Legacy(StopKind::Pickup),
                due: now,
            }),
        })),
    };
    storage.append_points(vec![point]).await.unwrap();
    let before = storage.last_event_sequence(&load.id).await.unwrap();
    let registry = registry(storage.clone());
    let due = DetentionDue {
        stop: StopKey::Legacy(StopKind::Pickup),
        since: now,
    };
    registry.send(&load.id, due.clone()).await.unwrap();
    assert_eq!(
        storage.last_event_sequence(&load.id).await.unwrap(),
        before + 1,
        "load.detention_started written"
    );
    assert!(
        storage.stop_timers().await.unwrap().is_empty(),
        "the clock ended"
    );
    // Due again (a stale reading of storage): not sent twice.
    registry.send(&load.id, due).await.unwrap();
    assert_eq!(
        storage.last_event_sequence(&load.id).await.unwrap(),
        before + 1
    );
    // The delivery, where the truck never arrived: nothing sent.
    registry
        .send(
            &load.id,
            DetentionDue {
                stop: StopKey::Legacy(StopKind::Delivery),
                since: now,
            },
        )
        .await
        .unwrap();
    assert_eq!(
        storage.last_event_sequence(&load.id).await.unwrap(),
        before + 1
    );
}

/// Stores an arrival at and departure from the pickup of `load`, as the
/// fixes that made them would have, `departed_ago` before now.
async fn departed_pickup(storage: &dyn Storage, load: &Load, departed_ago: chrono::Duration) {
    let departed = Utc::now() - departed_ago;
    let progress = StopsProgress {
        stops: vec![(
            StopKey::Legacy(StopKind::Pickup),
            StopProgress {
                arrived_at: NonZeroI64::new(
                    (departed - chrono::Duration::minutes(30)).timestamp_micros(),
                ),
                departed_at: NonZeroI64::new(departed.timestamp_micros()),
                ..StopProgress::default()
            },
        )],
        ..StopsProgress::default()
    };
    let point = TrackingPoint {
        load_id: load.id.clone(),
        fix: GpsFix {
            timestamp: departed,
            lat: 32.9,
            lng: -96.8,
            speed_mph: Some(40.0),
            heading_deg: None,
            source: FixSource::Api,
        },
        event: None,
        stops: Some(Box::new(StopsChange {
            progress,
            events: Vec::new(),
            timer: Some(StopTimer::Clear),
        })),
    };
    storage.append_points(vec![point]).await.unwrap();
}

/// An account with `auto_in_transit` as given, owning `load`.
async fn account_of(storage: &dyn Storage, load: &Load, auto_in_transit: bool) {
    let account = Account {
        id: load.account_id.clone(),
        name: "Shipper".into(),
        plan: PlanKind::Standard,
        custom_requests_per_hour: None,
        custom_max_streams: None,
        created_at: Utc::now(),
        disabled: false,
        stop_settings: StopSettings {
            auto_in_transit,
            ..StopSettings::default()
        },
    };
    storage.put_account(&account).await.unwrap();
}

/// Marks `load` assigned `ago` before now in its history, as stored.
async fn assigned_ago(storage: &dyn Storage, load: &mut Load, ago: chrono::Duration) {
    let previous = load.clone();
    load.status_history.push(StatusEntry {
        status: LoadStatus::Assigned,
        at: Utc::now() - ago,
        location: None,
        notes: None,
        source: ChangeSource::Api,
    });
    load.version += 1;
    storage.update_load(&previous, load, &[]).await.unwrap();
}

#[actix_rt::test]
async fn a_departure_stored_before_a_crash_moves_the_load_when_its_actor_starts() {
    let (_dir, storage) = store().await;
    let mut load = load_in(&*storage, LoadStatus::Assigned).await;
    assigned_ago(&*storage, &mut load, chrono::Duration::hours(1)).await;
    account_of(&*storage, &load, true).await;
    // Written by the fix; the instance died before moving the load.
    departed_pickup(&*storage, &load, chrono::Duration::minutes(10)).await;

    let registry = registry(storage.clone());
    let read = ReadTracking {
        account: load.account_id.clone(),
    };
    registry.send(&load.id, read).await.unwrap().unwrap();
    let mut moved = None;
    for _ in 0..500 {
        let stored = storage.get_load(&load.id).await.unwrap().unwrap();
        if stored.status == LoadStatus::InTransit {
            moved = Some(stored);
            break;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    let moved = moved.expect("the load moved in transit within 5 s");
    assert_eq!(
        moved.status_history.last().unwrap().source,
        ChangeSource::Geofence
    );
}

#[actix_rt::test]
async fn a_departure_older_than_the_assignment_or_unwanted_leaves_the_load_assigned() {
    for (auto, departed_ago) in [(true, 120), (false, 10)] {
        let (_dir, storage) = store().await;
        let mut load = load_in(&*storage, LoadStatus::Assigned).await;
        assigned_ago(&*storage, &mut load, chrono::Duration::hours(1)).await;
        account_of(&*storage, &load, auto).await;
        departed_pickup(&*storage, &load, chrono::Duration::minutes(departed_ago)).await;
        let stored = storage.get_load(&load.id).await.unwrap().unwrap();
        assert_eq!(
            super::stop_messages::unmade_move(&stored, &StopsProgress::default()),
            None
        );
        let progress = storage.load_stops(&load.id).await.unwrap().unwrap();
        // Older than the assignment: not to be moved, whatever the setting.
        assert_eq!(
            super::stop_messages::unmade_move(&stored, &progress).is_some(),
            departed_ago < 60,
            "departed {departed_ago} min ago"
        );
    }
}

/// Issue 38, finding 4: an actor whose lease renewals fail stops acting for
/// the load before the lease can expire (another instance may take it then).
#[actix_rt::test]
async fn an_actor_whose_lease_renewals_fail_stops_acting_before_the_lease_expires() {
    tokio::time::pause();
    let (_dir, embedded, storage) = shared_store().await;
    let load = load_in(&*storage, LoadStatus::Assigned).await;
    let registry = registry(storage.clone());
    let read = || ReadTracking {
        account: load.account_id.clone(),
    };
    let acting = registry.send(&load.id, read()).await.unwrap();
    assert!(acting.is_ok(), "the actor acts for the load");

    // The lease table becomes unreachable: the renewal at 5 s fails, and the
    // lease may live until 15 s after the start at the least.
    embedded.fail_load_leases(true);
    tokio::time::sleep((super::LEASE_TTL / 3) + Duration::from_millis(100)).await;
    let still = registry.send(&load.id, read()).await.unwrap();
    assert!(still.is_ok(), "one failed renewal leaves time to retry");
    tokio::time::sleep(super::LEASE_TTL / 3).await;
    // At 10 s the next renewal could not land before 15 s: it has let go.
    let stopped = registry.send(&load.id, read()).await.unwrap();
    assert!(stopped.is_err(), "still acting for the load: {stopped:?}");

    // Reachable again: once the actor that could not start has lingered out
    // (`MISSING_LINGER`), a new one takes the lease and acts.
    embedded.fail_load_leases(false);
    tokio::time::sleep(super::MISSING_LINGER + Duration::from_millis(100)).await;
    let back = registry.send(&load.id, read()).await.unwrap();
    assert!(back.is_ok(), "{back:?}");
}

/// A change whose write landed but was answered as failed (a timeout): the
/// actor starts again from storage, so the next change does not number its
/// events over the ones already stored.
#[actix_rt::test]
async fn after_a_failed_change_write_the_next_change_numbers_its_events_from_storage() {
    let (_dir, embedded, storage) = shared_store().await;
    let load = load_in(&*storage, LoadStatus::Assigned).await;
    let registry = registry(storage.clone());
    let change = |status| super::ChangeStatus {
        account: load.account_id.clone(),
        change: crate::domain::load::StatusChange {
            status,
            carrier_id: None,
            location: None,
            notes: None,
            source: ChangeSource::Api,
        },
    };
    embedded.fail_load_updates_after_writing(true);
    let failed = registry
        .send(&load.id, change(LoadStatus::InTransit))
        .await
        .unwrap();
    assert!(failed.is_err(), "answered as failed: {failed:?}");
    let stored = storage.last_event_sequence(&load.id).await.unwrap();
    assert!(stored > 0, "the change and its event landed");

    embedded.fail_load_updates_after_writing(false);
    // The actor that failed stops; the next one reads the load in transit.
    let delivered = eventually_ok(|| registry.send(&load.id, change(LoadStatus::Delivered))).await;
    assert_eq!(delivered.status, LoadStatus::Delivered);
    let events = storage.unfanned_events(None, 100).await.unwrap();
    let mut sequences: Vec<u64> = events
        .iter()
        .filter(|e| e.load_id == load.id)
        .map(|e| e.sequence)
        .collect();
    let written = sequences.len();
    sequences.sort_unstable();
    sequences.dedup();
    assert_eq!(
        sequences.len(),
        written,
        "event numbers repeated: {sequences:?}"
    );
    assert!(sequences.iter().all(|&n| n > 0));
    assert!(storage.last_event_sequence(&load.id).await.unwrap() > stored);
}

/// The first `Ok` of `attempt`, tried a few times a few milliseconds apart
/// while an actor that stopped makes way for a new one.
async fn eventually_ok<F, Fut>(mut attempt: F) -> Load
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<
            Output = Result<Result<Load, crate::actors::LoadError>, crate::actors::LoadError>,
        >,
{
    for _ in 0..50 {
        if let Ok(Ok(load)) = attempt().await {
            return load;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    panic!("the change was never made");
}
