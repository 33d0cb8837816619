//! Finds the actor of a load or starts it, spreading actors over a fixed pool of
//! arbiter threads, and delivers messages with a retry for an actor that stopped
//! between lookup and send.

use std::hash::{BuildHasher, RandomState};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use actix::dev::ToEnvelope;
use actix::prelude::*;
use actix_rt::{Arbiter, ArbiterHandle};

use super::load_actor::{
    ActorDeps, LoadActor, ReadTracking, Resident, SharedState, State, TrackingState,
};
use crate::domain::ids::AccountId;
use crate::domain::ids::LoadId;
use crate::services::loads::LoadError;
use crate::storage::StorageError;

/// An actor can stop between being looked up and receiving a message (idle stop);
/// the message is then sent to a fresh actor. More than this many misses in a row
/// means actors stop as fast as they start, which is reported as unavailable.
const SEND_ATTEMPTS: usize = 4;

pub struct LoadRegistry {
    deps: Arc<ActorDeps>,
    arbiters: Vec<ArbiterHandle>,
    /// The arbiters this registry started, stopped with it.
    owned: std::sync::Mutex<Vec<Arbiter>>,
    hasher: RandomState,
    incarnations: AtomicU64,
}

impl LoadRegistry {
    /// Starts `deps.settings.threads` arbiters (must run inside an actix System).
    pub fn new(deps: ActorDeps) -> Self {
        let threads = deps.settings.threads;
        let owned: Vec<Arbiter> = (0..threads).map(|_| Arbiter::new()).collect();
        let arbiters = if owned.is_empty() {
            vec![Arbiter::current()]
        } else {
            owned.iter().map(Arbiter::handle).collect()
        };
        LoadRegistry {
            deps: Arc::new(deps),
            arbiters,
            owned: std::sync::Mutex::new(owned),
            hasher: RandomState::new(),
            incarnations: AtomicU64::new(0),
        }
    }

    /// Actors currently resident.
    pub fn resident(&self) -> usize {
        self.deps.residents.len()
    }

    /// Whether the load's actor is resident.
    pub fn is_resident(&self, id: &LoadId) -> bool {
        self.deps.residents.contains_key(id)
    }

    /// Delivers `message` to the load's actor, starting it if needed.
    pub async fn send<M>(&self, id: &LoadId, message: M) -> Result<M::Result, LoadError>
    where
        M: Message + Clone + Send + 'static,
        M::Result: Send,
        LoadActor: Handler<M>,
        <LoadActor as Actor>::Context: ToEnvelope<LoadActor, M>,
    {
        for _ in 0..SEND_ATTEMPTS {
            let (addr, incarnation) = self.actor_for(id);
            match addr.send(message.clone()).await {
                Ok(result) => return Ok(result),
                Err(MailboxError::Closed) | Err(MailboxError::Timeout) => {
                    self.deps
                        .residents
                        .remove_if(id, |_, resident| resident.incarnation == incarnation);
                }
            }
        }
        Err(LoadError::Storage(StorageError::Unavailable(format!(
            "the actor of {id} stopped {SEND_ATTEMPTS} times in a row"
        ))))
    }

    /// The load's tracking state: read straight from a resident actor's state (no
    /// message, no thread hop), else by a message that starts the actor.
    pub async fn read_tracking(
        &self,
        id: &LoadId,
        account: &AccountId,
    ) -> Result<TrackingState, LoadError> {
        let resident = self.deps.residents.get(id).map(|r| r.state.clone());
        if let Some(state) = resident
            && let Some(read) = state
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .read(account)
        {
            return read;
        }
        let message = ReadTracking {
            account: account.clone(),
        };
        self.send(id, message).await?
    }

    fn actor_for(&self, id: &LoadId) -> (Addr<LoadActor>, u64) {
        if let Some(resident) = self.deps.residents.get(id) {
            return (resident.addr.clone(), resident.incarnation);
        }
        let entry = self.deps.residents.entry(id.clone()).or_insert_with(|| {
            let incarnation = self.incarnations.fetch_add(1, Ordering::Relaxed);
            let arbiter = &self.arbiters[self.hasher.hash_one(id) as usize % self.arbiters.len()];
            let deps = self.deps.clone();
            let actor_id = id.clone();
            let state: SharedState = Arc::new(Mutex::new(State::Loading));
            let actor_state = state.clone();
            let addr = LoadActor::start_in_arbiter(arbiter, move |_| {
                LoadActor::new(actor_id, incarnation, deps, actor_state)
            });
            Resident {
                addr,
                incarnation,
                state,
            }
        });
        (entry.addr.clone(), entry.incarnation)
    }

    /// Stops the arbiter threads (and so every actor on them).
    pub fn shutdown(&self) {
        for arbiter in self
            .owned
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .drain(..)
        {
            arbiter.stop();
        }
    }
}

impl Drop for LoadRegistry {
    fn drop(&mut self) {
        self.shutdown();
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use chrono::Utc;
    use dashmap::DashMap;

    use super::*;
    use crate::actors::group_commit::GroupCommitter;
    use crate::actors::load_actor::{ActorSettings, ChangeStatus, ReadTracking};
    use crate::clock::Clock;
    use crate::domain::fixtures::sample_load;
    use crate::domain::ids::{AccountId, CarrierId};
    use crate::domain::load::{CarrierSummary, Load, LoadStatus, StatusChange};
    use crate::domain::tracking::{Appended, GpsFix};
    use crate::services::tracking::TrackingService;
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
        let (committer, _) = GroupCommitter::start(storage.clone());
        let notifier = Arc::new(Notifier::default());
        let registry = Arc::new(LoadRegistry::new(ActorDeps {
            storage: storage.clone(),
            notifier: notifier.clone(),
            clock: Clock::system(),
            settings: ActorSettings {
                threads: 0,
                idle_timeout: IDLE,
                delivered_linger: LINGER,
            },
            residents: Arc::new(DashMap::new()),
        }));
        let tracking = TrackingService::new(
            storage,
            registry.clone(),
            committer,
            Arc::new(Directory::default()),
            notifier,
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
        tokio::time::pause();

        let fix = GpsFix {
            timestamp: Utc::now(),
            lat: 33.0,
            lng: -95.0,
            speed_mph: Some(50.0),
            heading_deg: Some(90.0),
        };
        let stored = tracking
            .record(&load.account_id, load.id.as_str(), fix)
            .await
            .unwrap();
        assert_eq!(stored, Appended::Stored);
        assert!(registry.is_resident(&load.id));

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
}
