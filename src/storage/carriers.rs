//! Carriers, unique by MC number within an account.

use async_trait::async_trait;

use super::{Page, PageRequest, StorageResult};
use crate::domain::carrier::Carrier;
use crate::domain::ids::{AccountId, CarrierId, LoadId};

/// Outcome of inserting a carrier: MC numbers are unique within an account.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CarrierInsert {
    Inserted,
    DuplicateMcNumber(CarrierId),
}

#[async_trait]
pub trait CarrierStore: Send + Sync {
    /// Inserts a new carrier, unless its account already has one with the same MC
    /// number: then nothing is written and the outcome names that carrier.
    async fn insert_carrier(&self, carrier: &Carrier) -> StorageResult<CarrierInsert>;
    /// Replaces a stored carrier's record (its MC number unchanged).
    async fn update_carrier(&self, carrier: &Carrier) -> StorageResult<()>;
    /// Deletes a carrier of `account` and frees its MC number; false if there
    /// was none.
    async fn delete_carrier(&self, account: &AccountId, id: &CarrierId) -> StorageResult<bool>;
    /// A carrier of `account` by id (`None` if it belongs to another account).
    async fn get_carrier(
        &self,
        account: &AccountId,
        id: &CarrierId,
    ) -> StorageResult<Option<Carrier>>;
    /// Newest first.
    async fn list_carriers(
        &self,
        account: &AccountId,
        page: PageRequest,
    ) -> StorageResult<Page<Carrier>>;

    /// Holds `carrier` while `load` is assigned to it, from the read of the
    /// carrier to the load's write, so that no deletion runs meanwhile on
    /// any instance; false: the carrier is gone, or being deleted (see
    /// [`Self::mark_carrier_deleting`]). A store only one process opens
    /// needs nothing here (`actors::carrier_locks` covers it), hence the
    /// default; a store several instances share holds it in the store, for a
    /// limited time in case the holder dies.
    async fn hold_carrier(
        &self,
        _account: &AccountId,
        _carrier: &CarrierId,
        _load: &LoadId,
    ) -> StorageResult<bool> {
        Ok(true)
    }
    /// Ends a [`Self::hold_carrier`].
    async fn release_carrier(
        &self,
        _account: &AccountId,
        _carrier: &CarrierId,
        _load: &LoadId,
    ) -> StorageResult<()> {
        Ok(())
    }
    /// Marks `carrier` as being deleted, from the check for its loads to the
    /// delete (a hold then fails), unless loads hold it: then those loads.
    async fn mark_carrier_deleting(
        &self,
        _account: &AccountId,
        _carrier: &CarrierId,
    ) -> StorageResult<DeletingMark> {
        Ok(DeletingMark::Marked)
    }
    /// Takes back a [`Self::mark_carrier_deleting`] when the carrier stays.
    async fn unmark_carrier_deleting(
        &self,
        _account: &AccountId,
        _carrier: &CarrierId,
    ) -> StorageResult<()> {
        Ok(())
    }
}

/// What marking a carrier as being deleted found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum DeletingMark {
    Marked,
    /// Loads being assigned to it hold it.
    Held(Vec<LoadId>),
    /// No such carrier.
    Missing,
}
