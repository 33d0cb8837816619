//! Load actors as the tracking service drives them: idle actors stop and come
//! back from storage with nothing lost, under paused tokio time.

use crate::domain::account::{Account, PlanKind, StopSettings};
use std::sync::Arc;
use std::time::Duration;

use crate::actors::LoadError;
use crate::actors::load_actor::ActorDeps;
use crate::actors::registry::LoadRegistry;
use crate::domain::ids::LoadId;
use chrono::Utc;

use super::TrackingService;
use crate::actors::load_actor::{ActorSettings, ChangeStatus, ReadTracking};
use crate::clock::Clock;
use crate::domain::fixtures::sample_load;
use crate::domain::ids::{AccountId, CarrierId};
use crate::domain::load::{CarrierSummary, ChangeSource, Load, LoadStatus, StatusChange};
use crate::domain::tracking::{Appended, FixSource, GpsFix};
use crate::services::live::{LiveHub, LiveSettings};
use crate::services::tracking::group_commit::GroupCommitter;
use crate::storage::Storage;
use crate::storage::embedded::EmbeddedStore;
use crate::webhooks::directory::Directory;
use crate::webhooks::notifier::Notifier;

const IDLE: Duration = Duration::from_secs(60);
const LINGER: Duration = Duration::from_secs(5);

async fn moving_load(storage: &dyn Storage) -> Load {
    let mut load = sample_load(&AccountId::generate(), "TX", "GA");
    load.status = LoadStatus::InTransit;
    load.carrier = Some(CarrierSummary {
        id: CarrierId::generate(),
        name: "C".into(),
        mc_number: "1".into(),
    });
    storage.insert_load(&load, &[]).await.unwrap();
    load
}

/// A registry on the current thread's arbiter, and a tracking service over it.
fn registry(storage: Arc<dyn Storage>) -> (Arc<LoadRegistry>, TrackingService) {
    let (committer, _) = GroupCommitter::start(storage.clone()).unwrap();
    let notifier = Arc::new(Notifier::default());
    let registry = Arc::new(LoadRegistry::new(ActorDeps {
        storage: storage.clone(),
        notifier: notifier.clone(),
        clock: Clock::system(),
        settings: ActorSettings {
            threads: 0,
            idle_timeout: IDLE,
            delivered_linger: LINGER,
            lease_ttl: crate::actors::load_actor::LEASE_TTL,
        },
        residents: Arc::default(),
        instance: "test-instance".into(),
        carriers: Arc::default(),
    }));
    let tracking = TrackingService::new(
        storage,
        registry.clone(),
        committer,
        Arc::new(Directory::default()),
        notifier,
        LiveHub::new(LiveSettings::default()),
        Clock::system(),
    );
    (registry, tracking)
}

/// Lets timers that are due run (time is paused, so this takes no real time).
async fn settle() {
    for _ in 0..10 {
        tokio::task::yield_now().await;
    }
}

#[actix_rt::test]
async fn idle_actors_stop_and_come_back_from_storage_with_nothing_lost() {
    let dir = tempfile::tempdir().unwrap();
    let storage: Arc<dyn Storage> = Arc::new(EmbeddedStore::open(dir.path()).await.unwrap());
    let load = moving_load(&*storage).await;
    let (registry, tracking) = registry(storage.clone());

    let fix = GpsFix {
        timestamp: Utc::now(),
        lat: 33.0,
        lng: -95.0,
        speed_mph: Some(50.0),
        heading_deg: Some(90.0),
        source: FixSource::Api,
    };
    // Written before time is paused: the commit runs on the committer's
    // threads, and a paused clock would leap ahead while this runtime waits
    // for them with nothing else to do.
    let account = Account {
        id: load.account_id.clone(),
        name: "Idle".into(),
        plan: PlanKind::Standard,
        custom_requests_per_hour: None,
        custom_max_streams: None,
        created_at: Utc::now(),
        disabled: false,
        stop_settings: StopSettings::default(),
    };
    let stored = tracking.record(&account, &load.id, fix).await.unwrap();
    assert_eq!(stored, Appended::Stored);
    assert!(registry.is_resident(&load.id));
    tokio::time::pause();

    // Activity keeps it; silence for the idle timeout stops it.
    tokio::time::advance(IDLE - Duration::from_secs(1)).await;
    settle().await;
    assert!(
        registry.is_resident(&load.id),
        "stopped before the idle timeout"
    );
    tokio::time::advance(Duration::from_secs(2)).await;
    settle().await;
    assert_eq!(registry.resident(), 0, "an idle actor stops");

    // The next message starts it again from storage, latest position included.
    let read = ReadTracking {
        account: load.account_id.clone(),
    };
    let state = registry.send(&load.id, read).await.unwrap().unwrap();
    assert!(registry.is_resident(&load.id));
    assert_eq!(state.status, LoadStatus::InTransit);
    assert_eq!(state.recent.len(), 1);
    assert_eq!(state.recent[0].lat, 33.0);
    assert_eq!(
        state.recent[0].timestamp.timestamp_micros(),
        fix.timestamp.timestamp_micros()
    );

    // Delivery stops the actor after the linger, whatever the activity.
    let deliver = ChangeStatus {
        account: load.account_id.clone(),
        change: StatusChange {
            status: LoadStatus::Delivered,
            carrier_id: None,
            location: None,
            notes: None,
            source: ChangeSource::Api,
        },
    };
    let delivered = registry.send(&load.id, deliver).await.unwrap().unwrap();
    assert_eq!(delivered.status, LoadStatus::Delivered);
    tokio::time::advance(LINGER - Duration::from_millis(100)).await;
    settle().await;
    assert!(registry.is_resident(&load.id), "stopped before the linger");
    tokio::time::advance(Duration::from_millis(101)).await;
    settle().await;
    assert_eq!(
        registry.resident(),
        0,
        "a delivered load's actor stops soon after"
    );
    let stored = storage.get_load(&load.id).await.unwrap().unwrap();
    assert_eq!(stored.status, LoadStatus::Delivered);
}

#[actix_rt::test]
async fn unknown_loads_and_other_accounts_are_not_found() {
    let dir = tempfile::tempdir().unwrap();
    let storage: Arc<dyn Storage> = Arc::new(EmbeddedStore::open(dir.path()).await.unwrap());
    let load = moving_load(&*storage).await;
    let (registry, _) = registry(storage);
    let stranger = ReadTracking {
        account: AccountId::generate(),
    };
    assert!(matches!(
        registry.send(&load.id, stranger.clone()).await.unwrap(),
        Err(LoadError::NotFound)
    ));
    assert!(matches!(
        registry.send(&LoadId::generate(), stranger).await.unwrap(),
        Err(LoadError::NotFound)
    ));
}
