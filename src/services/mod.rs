//! Application services: the operations handlers call, independent of HTTP.

pub mod accounts;
pub mod auth;
pub mod carriers;
pub mod loads;
pub mod tracking;

use std::sync::Arc;

use dashmap::DashMap;

use crate::actors::group_commit::GroupCommitter;
use crate::actors::load_actor::{ActorDeps, ActorSettings};
use crate::actors::registry::LoadRegistry;
use crate::clock::Clock;
use crate::storage::Storage;

/// Everything a request handler may use; cheap to clone (all `Arc`s inside).
#[derive(Clone)]
pub struct Services {
    pub storage: Arc<dyn Storage>,
    pub clock: Clock,
    pub auth: Arc<auth::Authenticator>,
    pub accounts: Arc<accounts::AccountService>,
    pub loads: Arc<loads::LoadService>,
    pub carriers: Arc<carriers::CarrierService>,
    pub tracking: Arc<tracking::TrackingService>,
}

impl Services {
    /// Starts the GPS group committer and the load actors' arbiters; must run
    /// inside an actix System.
    pub fn start(storage: Arc<dyn Storage>, clock: Clock, actors: ActorSettings) -> Self {
        let (committer, _task) = GroupCommitter::start(storage.clone());
        let registry = Arc::new(LoadRegistry::new(ActorDeps {
            storage: storage.clone(),
            clock: clock.clone(),
            settings: actors,
            residents: Arc::new(DashMap::new()),
        }));
        let auth = Arc::new(auth::Authenticator::new(storage.clone(), clock.clone()));
        Services {
            accounts: Arc::new(accounts::AccountService::new(
                storage.clone(),
                clock.clone(),
                auth.clone(),
            )),
            loads: Arc::new(loads::LoadService::new(
                storage.clone(),
                clock.clone(),
                registry.clone(),
            )),
            carriers: Arc::new(carriers::CarrierService::new(
                storage.clone(),
                clock.clone(),
            )),
            tracking: Arc::new(tracking::TrackingService::new(
                storage.clone(),
                registry,
                committer,
            )),
            auth,
            storage,
            clock,
        }
    }
}
