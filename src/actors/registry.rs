//! Finds the actor of a load or starts it, spreading actors over a fixed pool of
//! arbiter threads, and delivers messages with a retry for an actor that stopped
//! between lookup and send.

use std::hash::{BuildHasher, RandomState};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use actix::dev::ToEnvelope;
use actix::prelude::*;
use actix_rt::{Arbiter, ArbiterHandle};
use bytes::Bytes;

use super::LoadError;
use super::load_actor::{ActorDeps, GeofenceMove, LoadActor, ReadTracking, Resident};
use super::load_state::{Admission, SharedState, View, Wanted};
use crate::domain::ids::AccountId;
use crate::domain::ids::LoadId;
use crate::domain::load::LoadStatus;
use crate::domain::tracking::{GpsFix, TrackingState};
use crate::unavailable::Unavailable;

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

    /// This instance's name among those sharing the store.
    pub fn instance(&self) -> &Arc<str> {
        &self.deps.instance
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
        Err(LoadError::Unavailable(Unavailable::LoadActor {
            load: id.clone(),
            attempts: SEND_ATTEMPTS,
        }))
    }

    /// Admits GPS fixes under the resident actor's lock (no message, no thread
    /// hop), or `None` when only a message can: no resident actor, or one that
    /// must decide itself. Then [`Self::send`] the [`AdmitFixes`], which starts
    /// the actor if needed.
    pub fn try_admit(
        &self,
        id: &LoadId,
        account: &AccountId,
        fixes: &[GpsFix],
        events: &Wanted,
    ) -> Option<Result<Admission, LoadError>> {
        self.shared(id)?.try_admit(account, fixes, events)
    }

    /// Tells the load's actor that its truck's departure moves the load to
    /// `to` (from the committer's threads: nothing is awaited).
    pub fn move_by_geofence(&self, id: &LoadId, account: &AccountId, to: LoadStatus) {
        let (addr, _) = self.actor_for(id);
        addr.do_send(GeofenceMove {
            account: account.clone(),
            to,
        });
    }

    /// The load's tracking state: read straight from a resident actor's state (no
    /// message, no thread hop), else by a message that starts the actor.
    pub async fn read_tracking(
        &self,
        id: &LoadId,
        account: &AccountId,
    ) -> Result<TrackingState, LoadError> {
        if let Some(state) = self.shared(id)
            && let Some(read) = state.try_read(account)
        {
            return read;
        }
        let message = ReadTracking {
            account: account.clone(),
        };
        self.send(id, message).await?
    }

    /// The load's live view as `render` writes it: the resident actor's copy if
    /// its state has not changed since the last render, else rendered now (and
    /// kept by a resident actor).
    pub async fn read_rendered<E>(
        &self,
        id: &LoadId,
        account: &AccountId,
        render: impl FnOnce(&TrackingState) -> Result<Bytes, E>,
    ) -> Result<Result<Bytes, E>, LoadError> {
        if let Some(shared) = self.shared(id)
            && let Some(view) = shared.try_view(account)
        {
            return Ok(match view? {
                View::Current(view) => Ok(view),
                View::Stale { state, version } => render(&state).inspect(|view| {
                    shared.keep_view(version, view.clone());
                }),
            });
        }
        Ok(render(&self.read_tracking(id, account).await?))
    }

    /// The resident actor's shared state (the map's shard is unlocked before the
    /// state's lock is taken).
    fn shared(&self, id: &LoadId) -> Option<SharedState> {
        self.deps.residents.get(id).map(|r| r.state.clone())
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
            let state = SharedState::loading();
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

    /// Gives up the lease of every resident actor's load, for a shutdown
    /// once the listeners have stopped: the other instances act for those
    /// loads at once instead of after the lease time (a rolling restart hands
    /// over without a pause). Each actor is marked stopping first, so that a
    /// fix admitted after this goes through a message to a successor. A
    /// release that fails leaves the lease to expire.
    pub async fn release_leases(&self) {
        use futures_util::StreamExt as _;
        if !self.deps.storage.needs_leases() {
            return;
        }
        let held: Vec<(LoadId, String)> = self
            .deps
            .residents
            .iter()
            .filter_map(|resident| {
                let mut shared = resident.state.lock();
                shared.stopping = true;
                matches!(shared.state, super::load_state::State::Active(_)).then(|| {
                    let owner =
                        crate::storage::lease_owner(&self.deps.instance, resident.incarnation);
                    (resident.key().clone(), owner)
                })
            })
            .collect();
        let storage = &self.deps.storage;
        futures_util::stream::iter(held)
            .for_each_concurrent(64, |(id, owner)| async move {
                if let Err(error) = storage.release_load(&id, &owner).await {
                    tracing::warn!(load = %id, error = %crate::telemetry::error_chain(&error), "could not release the load's lease at shutdown; it expires on its own");
                }
            })
            .await;
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
