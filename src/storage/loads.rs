//! Loads, their listing indexes, and the pages every newest-first list returns.

use async_trait::async_trait;

use super::StorageResult;
use crate::domain::event::Event;
use crate::domain::ids::{AccountId, LoadId};
use crate::domain::load::{Load, LoadStatus};
use crate::domain::location::UsState;

/// Filters of `GET /v1/loads`; any combination is served by one index scan.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct LoadFilter {
    pub status: Option<LoadStatus>,
    pub origin_state: Option<UsState>,
    pub destination_state: Option<UsState>,
}

/// Which slice of a newest-first list to return.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PageRequest {
    pub offset: u64,
    pub limit: u32,
}

#[derive(Debug, Clone, PartialEq)]
pub struct Page<T> {
    pub items: Vec<T>,
    /// Matching items in all pages.
    pub total: u64,
}

#[async_trait]
pub trait LoadStore: Send + Sync {
    /// Inserts a new load together with its events (the outbox), atomically.
    async fn insert_load(&self, load: &Load, events: &[Event]) -> StorageResult<()>;
    /// Replaces `previous` with `updated` (same id), moving its index entries.
    /// The caller serialises changes to one load; `previous` is what it last read.
    async fn update_load(
        &self,
        previous: &Load,
        updated: &Load,
        events: &[Event],
    ) -> StorageResult<()>;
    /// A load by id, whatever its account: callers check ownership.
    async fn get_load(&self, id: &LoadId) -> StorageResult<Option<Load>>;
    /// Finishes a committed change of the load whose follow-up (list rows,
    /// events) was not written, if the store commits in two steps (ScyllaDB);
    /// called by the load's writer (its actor, on start) only. Nothing to do
    /// for a store that commits a change in one write.
    async fn finish_load_change(&self, _id: &LoadId) -> StorageResult<()> {
        Ok(())
    }
    /// Newest first.
    async fn list_loads(
        &self,
        account: &AccountId,
        filter: &LoadFilter,
        page: PageRequest,
    ) -> StorageResult<Page<Load>>;
}
