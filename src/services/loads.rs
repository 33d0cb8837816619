//! Load creation, lookup, listing and the status lifecycle.

use std::sync::Arc;

use crate::actors::load_actor::ChangeStatus;
use crate::actors::registry::LoadRegistry;
use crate::clock::Clock;
use crate::domain::ids::{AccountId, CarrierId, LoadId};
use crate::domain::load::{
    CarrierSummary, Load, LoadStatus, NewLoad, StatusChange, Transition, TransitionError,
};
use crate::storage::{LoadFilter, Page, PageRequest, Storage, StorageError};

#[derive(Debug, Clone, thiserror::Error)]
pub enum LoadError {
    #[error("load not found")]
    NotFound,
    #[error("carrier {0} does not exist in this account")]
    UnknownCarrier(CarrierId),
    #[error(transparent)]
    Transition(#[from] TransitionError),
    #[error("a load in status {0} does not take GPS fixes")]
    NotTrackable(LoadStatus),
    #[error(transparent)]
    Storage(#[from] StorageError),
}

pub struct LoadService {
    storage: Arc<dyn Storage>,
    clock: Clock,
    registry: Arc<LoadRegistry>,
}

impl LoadService {
    pub fn new(storage: Arc<dyn Storage>, clock: Clock, registry: Arc<LoadRegistry>) -> Self {
        Self {
            storage,
            clock,
            registry,
        }
    }

    pub async fn create(&self, account: &AccountId, new: NewLoad) -> Result<Load, LoadError> {
        let load = Load::create(LoadId::generate(), account.clone(), new, self.clock.now());
        self.storage.insert_load(&load).await?;
        Ok(load)
    }

    /// A malformed id, or another account's load, is simply not found.
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

    /// Applies a status change through the load's actor; returns the load as it
    /// stands afterwards (unchanged when the request repeats the current status).
    pub async fn change_status(
        &self,
        account: &AccountId,
        id: &str,
        change: StatusChange,
    ) -> Result<Load, LoadError> {
        let id = LoadId::parse(id).ok_or(LoadError::NotFound)?;
        let message = ChangeStatus {
            account: account.clone(),
            change,
        };
        self.registry.send(&id, message).await?
    }
}

/// The body of a status change, run by the load's actor (the only writer of the
/// load, so the read-plan-write below cannot interleave with another change).
pub(crate) async fn apply_status_change(
    storage: &dyn Storage,
    clock: &Clock,
    id: &LoadId,
    account: &AccountId,
    change: &StatusChange,
) -> Result<Load, LoadError> {
    let current = storage
        .get_load(id)
        .await?
        .filter(|load| &load.account_id == account)
        .ok_or(LoadError::NotFound)?;
    let (to, carrier) = match current.plan_transition(change)? {
        Transition::Unchanged => return Ok(current),
        Transition::Move(to) => (to, None),
        Transition::Assign(carrier_id) => {
            let carrier = storage
                .get_carrier(account, &carrier_id)
                .await?
                .ok_or(LoadError::UnknownCarrier(carrier_id))?;
            let summary = CarrierSummary {
                id: carrier.id,
                name: carrier.name,
                mc_number: carrier.mc_number,
            };
            (LoadStatus::Assigned, Some(summary))
        }
    };
    let updated = current.apply(to, carrier, change, clock.now());
    storage.update_load(&current, &updated).await?;
    Ok(updated)
}
