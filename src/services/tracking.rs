//! GPS ingest and tracking reads, through the load actors.

use std::collections::HashMap;
use std::sync::Arc;

use futures_util::future::join_all;

use super::loads::LoadError;
use crate::actors::load_actor::{RecordFixes, TrackingState};
use crate::actors::registry::LoadRegistry;
use crate::domain::ids::{AccountId, LoadId};
use crate::domain::tracking::{Appended, GpsFix};
use crate::storage::{PointRange, Storage};

pub struct TrackingService {
    storage: Arc<dyn Storage>,
    registry: Arc<LoadRegistry>,
}

/// One page of a load's history.
pub struct History {
    pub points: Vec<GpsFix>,
    /// Points in the requested time range, all pages.
    pub total: u64,
}

impl TrackingService {
    pub fn new(storage: Arc<dyn Storage>, registry: Arc<LoadRegistry>) -> Self {
        Self { storage, registry }
    }

    pub fn registry(&self) -> &LoadRegistry {
        &self.registry
    }

    /// Records one fix; answers once it is durable.
    pub async fn record(
        &self,
        account: &AccountId,
        load: &str,
        fix: GpsFix,
    ) -> Result<Appended, LoadError> {
        let id = LoadId::parse(load).ok_or(LoadError::NotFound)?;
        let message = RecordFixes {
            account: account.clone(),
            fixes: vec![fix],
        };
        let outcomes = self.registry.send(&id, message).await??;
        outcomes.into_iter().next().ok_or_else(|| {
            LoadError::Storage(crate::storage::StorageError::Corrupt(
                "no outcome for a fix".into(),
            ))
        })
    }

    /// Records fixes of many loads: one message per load, all loads at once. Each
    /// fix gets its own outcome, in input order; a load's fixes share its fate
    /// (unknown load, wrong status, storage failure) but never half-apply.
    pub async fn record_many(
        &self,
        account: &AccountId,
        fixes: Vec<(LoadId, GpsFix)>,
    ) -> Vec<Result<Appended, LoadError>> {
        let mut by_load: HashMap<LoadId, (Vec<usize>, Vec<GpsFix>)> = HashMap::new();
        for (index, (load, fix)) in fixes.iter().enumerate() {
            let entry = by_load.entry(load.clone()).or_default();
            entry.0.push(index);
            entry.1.push(*fix);
        }
        let sends = by_load
            .into_iter()
            .map(|(load, (indexes, fixes))| async move {
                let message = RecordFixes {
                    account: account.clone(),
                    fixes,
                };
                let result = self.registry.send(&load, message).await.and_then(|r| r);
                (indexes, result)
            });
        let mut outcomes: Vec<Option<Result<Appended, LoadError>>> =
            (0..fixes.len()).map(|_| None).collect();
        for (indexes, result) in join_all(sends).await {
            match result {
                Ok(stored) => {
                    for (index, outcome) in indexes.into_iter().zip(stored) {
                        outcomes[index] = Some(Ok(outcome));
                    }
                }
                Err(error) => {
                    for index in indexes {
                        outcomes[index] = Some(Err(error.clone()));
                    }
                }
            }
        }
        outcomes
            .into_iter()
            .map(|o| o.unwrap_or(Err(LoadError::NotFound)))
            .collect()
    }

    /// The load's tracking state from its actor (no storage read if resident).
    pub async fn current(
        &self,
        account: &AccountId,
        load: &str,
    ) -> Result<TrackingState, LoadError> {
        let id = LoadId::parse(load).ok_or(LoadError::NotFound)?;
        self.registry.read_tracking(&id, account).await
    }

    /// A page of history, newest first, straight from storage.
    pub async fn history(
        &self,
        account: &AccountId,
        load: &str,
        range: PointRange,
    ) -> Result<History, LoadError> {
        let id = LoadId::parse(load).ok_or(LoadError::NotFound)?;
        self.storage
            .get_load(&id)
            .await?
            .filter(|l| &l.account_id == account)
            .ok_or(LoadError::NotFound)?;
        let points = self.storage.load_points(&id, range).await?;
        let total = self.storage.count_points(&id, range.from, range.to).await?;
        Ok(History { points, total })
    }
}
