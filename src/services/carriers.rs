//! Carrier registration and lookup.

use crate::actors::carrier_locks::CarrierLocks;
use std::sync::Arc;

use crate::clock::Clock;
use crate::domain::carrier::{Carrier, CarrierEdit, NewCarrier};
use crate::domain::ids::{AccountId, CarrierId, LoadId};
use crate::domain::load::LoadStatus;
use crate::storage::{
    CarrierInsert, DeletingMark, LoadFilter, Page, PageRequest, Storage, StorageError,
};

#[derive(Debug, thiserror::Error)]
pub enum CarrierError {
    #[error("carrier not found")]
    NotFound,
    #[error("MC number {mc_number} is already registered as {existing}")]
    DuplicateMcNumber {
        mc_number: String,
        existing: CarrierId,
    },
    /// A carrier with loads on the road (assigned or in transit) stays.
    #[error("the carrier has loads assigned or in transit")]
    HasActiveLoads { loads: Vec<LoadId> },
    #[error(transparent)]
    Storage(#[from] StorageError),
}

/// Loads of the account read from storage at a time, looking for a
/// carrier's active ones.
const READ_PAGE: u32 = 500;
/// Active loads named in a refused deletion.
const NAMED_LOADS: usize = 10;

pub struct CarrierService {
    storage: Arc<dyn Storage>,
    clock: Clock,
    /// Shared with the load actors: a deletion waits for assignments in progress.
    locks: Arc<CarrierLocks>,
}

impl CarrierService {
    pub fn new(storage: Arc<dyn Storage>, clock: Clock, locks: Arc<CarrierLocks>) -> Self {
        Self {
            storage,
            clock,
            locks,
        }
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

    /// Changes a carrier's name, contact, equipment or service areas. Loads
    /// keep the name they were assigned under (their `carrier` is a snapshot).
    /// Two edits at once: the later write wins whole.
    pub async fn edit(
        &self,
        account: &AccountId,
        id: &CarrierId,
        edit: &CarrierEdit,
    ) -> Result<Carrier, CarrierError> {
        let current = self.get(account, id).await?;
        let edited = current.edited(edit);
        if edited != current {
            self.storage.update_carrier(&edited).await?;
        }
        Ok(edited)
    }

    /// Deletes a carrier that has no load assigned or in transit (those it
    /// delivered or was unassigned from keep their snapshot of it), and frees
    /// its MC number. A load assigned to it at the very moment of deletion
    /// keeps its snapshot too.
    pub async fn delete(&self, account: &AccountId, id: &CarrierId) -> Result<(), CarrierError> {
        self.get(account, id).await?;
        // From the check to the delete no load can be assigned to it: not by
        // this instance (the lock), nor by another sharing the store (the mark).
        let _deleting = self.locks.deleting(id).await;
        match self.storage.mark_carrier_deleting(account, id).await? {
            DeletingMark::Marked => {}
            DeletingMark::Missing => return Err(CarrierError::NotFound),
            DeletingMark::Held(loads) => return Err(CarrierError::HasActiveLoads { loads }),
        }
        let loads = match self.active_loads(account, id).await {
            Ok(loads) => loads,
            Err(error) => {
                self.unmark(account, id).await;
                return Err(error);
            }
        };
        if !loads.is_empty() {
            self.unmark(account, id).await;
            return Err(CarrierError::HasActiveLoads { loads });
        }
        match self.storage.delete_carrier(account, id).await? {
            true => Ok(()),
            false => Err(CarrierError::NotFound),
        }
    }

    /// Takes back a deletion's mark; if that fails, it expires on its own
    /// (assignments to the carrier are refused until then).
    async fn unmark(&self, account: &AccountId, id: &CarrierId) {
        if let Err(error) = self.storage.unmark_carrier_deleting(account, id).await {
            tracing::warn!(carrier = %id, %error, "could not take back a carrier's deletion mark; it expires within a minute");
        }
    }

    /// Up to `NAMED_LOADS` of the account's loads assigned to or in transit
    /// with the carrier. Reads the account's active loads: deletions are rare.
    async fn active_loads(
        &self,
        account: &AccountId,
        id: &CarrierId,
    ) -> Result<Vec<LoadId>, CarrierError> {
        let mut found = Vec::new();
        for status in [LoadStatus::Assigned, LoadStatus::InTransit] {
            let filter = LoadFilter {
                status: Some(status),
                ..LoadFilter::default()
            };
            let mut offset = 0;
            loop {
                let page = PageRequest {
                    offset,
                    limit: READ_PAGE,
                };
                let loads = self.storage.list_loads(account, &filter, page).await?;
                let read = loads.items.len() as u64;
                found.extend(
                    loads
                        .items
                        .into_iter()
                        .filter(|l| l.carrier.as_ref().is_some_and(|c| &c.id == id))
                        .map(|l| l.id),
                );
                offset += read;
                if found.len() >= NAMED_LOADS
                    || read < u64::from(READ_PAGE)
                    || offset >= loads.total
                {
                    break;
                }
            }
        }
        found.truncate(NAMED_LOADS);
        Ok(found)
    }
}
