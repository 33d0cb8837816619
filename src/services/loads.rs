//! Load creation, lookup, listing and the status lifecycle.

use std::hash::{BuildHasher, RandomState};
use std::sync::Arc;

use tokio::sync::Mutex;

use crate::clock::Clock;
use crate::domain::ids::{AccountId, CarrierId, LoadId};
use crate::domain::load::{
    CarrierSummary, Load, NewLoad, StatusChange, Transition, TransitionError,
};
use crate::storage::{LoadFilter, Page, PageRequest, Storage, StorageError};

/// Lock stripes serialising read-modify-write of one load. Two loads share a
/// stripe only by hash collision, which costs a short wait, never correctness.
const LOCK_STRIPES: usize = 1024;

#[derive(Debug, thiserror::Error)]
pub enum LoadError {
    #[error("load not found")]
    NotFound,
    #[error("carrier {0} does not exist in this account")]
    UnknownCarrier(CarrierId),
    #[error(transparent)]
    Transition(#[from] TransitionError),
    #[error(transparent)]
    Storage(#[from] StorageError),
}

pub struct LoadService {
    storage: Arc<dyn Storage>,
    clock: Clock,
    stripes: Vec<Mutex<()>>,
    hasher: RandomState,
}

impl LoadService {
    pub fn new(storage: Arc<dyn Storage>, clock: Clock) -> Self {
        Self {
            storage,
            clock,
            stripes: (0..LOCK_STRIPES).map(|_| Mutex::new(())).collect(),
            hasher: RandomState::new(),
        }
    }

    pub async fn create(&self, account: &AccountId, new: NewLoad) -> Result<Load, LoadError> {
        let load = Load::create(LoadId::generate(), account.clone(), new, self.clock.now());
        self.storage.insert_load(&load).await?;
        Ok(load)
    }

    /// A malformed id is simply not found: ids are opaque to clients.
    pub async fn get(&self, account: &AccountId, id: &str) -> Result<Load, LoadError> {
        let id = LoadId::parse(id).ok_or(LoadError::NotFound)?;
        self.storage
            .get_load(&id)
            .await?
            .filter(|load| &load.account_id == account)
            .ok_or(LoadError::NotFound)
    }

    pub async fn list(
        &self,
        account: &AccountId,
        filter: &LoadFilter,
        page: PageRequest,
    ) -> Result<Page<Load>, LoadError> {
        Ok(self.storage.list_loads(account, filter, page).await?)
    }

    /// Applies a status change; returns the load as it stands afterwards (unchanged
    /// when the request repeats the current status).
    pub async fn change_status(
        &self,
        account: &AccountId,
        id: &str,
        change: StatusChange,
    ) -> Result<Load, LoadError> {
        let id = LoadId::parse(id).ok_or(LoadError::NotFound)?;
        let stripe = self.hasher.hash_one(&id) as usize % LOCK_STRIPES;
        let _serialised = self.stripes[stripe].lock().await;
        let current = self
            .storage
            .get_load(&id)
            .await?
            .filter(|load| &load.account_id == account)
            .ok_or(LoadError::NotFound)?;
        let (to, carrier) = match current.plan_transition(&change)? {
            Transition::Unchanged => return Ok(current),
            Transition::Move(to) => (to, None),
            Transition::Assign(carrier_id) => {
                let carrier = self
                    .storage
                    .get_carrier(account, &carrier_id)
                    .await?
                    .ok_or(LoadError::UnknownCarrier(carrier_id))?;
                let summary = CarrierSummary {
                    id: carrier.id,
                    name: carrier.name,
                    mc_number: carrier.mc_number,
                };
                (crate::domain::load::LoadStatus::Assigned, Some(summary))
            }
        };
        let updated = current.apply(to, carrier, &change, self.clock.now());
        self.storage.update_load(&current, &updated).await?;
        Ok(updated)
    }
}
