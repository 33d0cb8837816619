//! GPS ingest and tracking reads, through the load actors.

use std::collections::HashMap;
use std::sync::Arc;

use futures_util::future::join_all;

use super::loads::LoadError;
use crate::actors::group_commit::GroupCommitter;
use crate::actors::load_actor::{AdmitFixes, FixesStored, TrackingState};
use crate::actors::registry::LoadRegistry;
use crate::domain::ids::{AccountId, LoadId};
use crate::domain::tracking::{Appended, GpsFix, TrackingPoint};
use crate::storage::{PointRange, Storage, StorageError};

pub struct TrackingService {
    storage: Arc<dyn Storage>,
    registry: Arc<LoadRegistry>,
    committer: GroupCommitter,
}

/// One page of a load's history.
pub struct History {
    pub points: Vec<GpsFix>,
    /// Points in the requested time range, all pages.
    pub total: u64,
}

impl TrackingService {
    pub fn new(
        storage: Arc<dyn Storage>,
        registry: Arc<LoadRegistry>,
        committer: GroupCommitter,
    ) -> Self {
        Self {
            storage,
            registry,
            committer,
        }
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
        self.record_many(account, vec![(id, fix)])
            .await
            .pop()
            .unwrap_or(Err(LoadError::NotFound))
    }

    /// Records fixes of one or many loads. Each load's actor admits its fixes (or
    /// refuses them: unknown load, wrong status); the admitted fixes of all loads
    /// go to storage in one group-commit submission; then each actor learns what
    /// was stored. Each fix gets its own outcome, in input order, and is stored
    /// durably or not at all.
    pub async fn record_many(
        &self,
        account: &AccountId,
        fixes: Vec<(LoadId, GpsFix)>,
    ) -> Vec<Result<Appended, LoadError>> {
        let mut groups: HashMap<LoadId, (Vec<usize>, Vec<GpsFix>)> = HashMap::new();
        for (index, (load, fix)) in fixes.iter().enumerate() {
            let group = groups.entry(load.clone()).or_default();
            group.0.push(index);
            group.1.push(*fix);
        }
        let admissions = groups
            .into_iter()
            .map(|(load, (indexes, fixes))| async move {
                let admit = AdmitFixes {
                    account: account.clone(),
                };
                let admitted = self.registry.send(&load, admit).await.and_then(|r| r);
                (load, indexes, fixes, admitted)
            });
        let mut outcomes: Vec<Result<Appended, LoadError>> =
            (0..fixes.len()).map(|_| Err(LoadError::NotFound)).collect();
        let mut admitted = Vec::new();
        let mut points = Vec::with_capacity(fixes.len());
        for (load, indexes, fixes, admission) in join_all(admissions).await {
            match admission {
                Ok(actor) => {
                    points.extend(fixes.iter().map(|fix| TrackingPoint {
                        load_id: load.clone(),
                        fix: *fix,
                    }));
                    admitted.push((actor, indexes, fixes));
                }
                Err(error) => {
                    for index in indexes {
                        outcomes[index] = Err(error.clone());
                    }
                }
            }
        }
        if admitted.is_empty() {
            return outcomes;
        }
        let awaiting: Vec<usize> = admitted
            .iter()
            .flat_map(|(_, indexes, _)| indexes.iter().copied())
            .collect();
        // Detached, so that the actors hear back even if the client goes away and
        // this request's future is dropped mid-commit.
        let committer = self.committer.clone();
        let commit = actix_rt::spawn(async move {
            let stored = committer.append(points).await;
            let mut answers = Vec::with_capacity(admitted.len());
            let mut results = stored.as_ref().ok().map(|r| r.iter().copied());
            for (actor, indexes, fixes) in admitted {
                let mine: Option<Vec<Appended>> = results
                    .as_mut()
                    .map(|all| all.by_ref().take(fixes.len()).collect());
                actor.do_send(FixesStored {
                    fixes,
                    outcomes: mine.clone(),
                });
                answers.push((indexes, mine));
            }
            (answers, stored.err())
        });
        match commit.await {
            Ok((answers, failure)) => {
                for (indexes, mine) in answers {
                    match &mine {
                        Some(stored) => {
                            for (index, outcome) in indexes.into_iter().zip(stored) {
                                outcomes[index] = Ok(*outcome);
                            }
                        }
                        None => {
                            let error = failure.clone().unwrap_or_else(|| {
                                StorageError::Unavailable("the GPS batch failed".into())
                            });
                            for index in indexes {
                                outcomes[index] = Err(LoadError::Storage(error.clone()));
                            }
                        }
                    }
                }
            }
            Err(join) => {
                let error =
                    StorageError::Unavailable(format!("the GPS commit task failed: {join}"));
                for index in awaiting {
                    outcomes[index] = Err(LoadError::Storage(error.clone()));
                }
            }
        }
        outcomes
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
