//! Carrier registration and lookup.

use std::sync::Arc;

use crate::clock::Clock;
use crate::domain::carrier::{Carrier, NewCarrier};
use crate::domain::ids::{AccountId, CarrierId};
use crate::storage::{CarrierInsert, Page, PageRequest, Storage, StorageError};

#[derive(Debug, thiserror::Error)]
pub enum CarrierError {
    #[error("carrier not found")]
    NotFound,
    #[error("MC number {mc_number} is already registered as {existing}")]
    DuplicateMcNumber {
        mc_number: String,
        existing: CarrierId,
    },
    #[error(transparent)]
    Storage(#[from] StorageError),
}

pub struct CarrierService {
    storage: Arc<dyn Storage>,
    clock: Clock,
}

impl CarrierService {
    pub fn new(storage: Arc<dyn Storage>, clock: Clock) -> Self {
        Self { storage, clock }
    }

    pub async fn create(
        &self,
        account: &AccountId,
        new: NewCarrier,
    ) -> Result<Carrier, CarrierError> {
        let carrier = Carrier::create(
            CarrierId::generate(),
            account.clone(),
            new,
            self.clock.now(),
        );
        match self.storage.insert_carrier(&carrier).await? {
            CarrierInsert::Inserted => Ok(carrier),
            CarrierInsert::DuplicateMcNumber(existing) => Err(CarrierError::DuplicateMcNumber {
                mc_number: carrier.mc_number,
                existing,
            }),
        }
    }

    /// Another account's carrier is simply not found.
    pub async fn get(&self, account: &AccountId, id: &CarrierId) -> Result<Carrier, CarrierError> {
        self.storage
            .get_carrier(account, id)
            .await?
            .ok_or(CarrierError::NotFound)
    }

    pub async fn list(
        &self,
        account: &AccountId,
        page: PageRequest,
    ) -> Result<Page<Carrier>, CarrierError> {
        Ok(self.storage.list_carriers(account, page).await?)
    }
}
