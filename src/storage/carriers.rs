//! Carriers, unique by MC number within an account.

use async_trait::async_trait;

use super::{Page, PageRequest, StorageResult};
use crate::domain::carrier::Carrier;
use crate::domain::ids::{AccountId, CarrierId};

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
}
