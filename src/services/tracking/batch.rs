//! A request's fixes, point by point, on their way to storage: some rejected
//! before (by the caller's rules), the rest submitted together in one
//! `record_many`, and every point's outcome given back in input order. The
//! API's batch route and the device ingest routes share it rather than each
//! keeping its own bookkeeping of which input became which fix.

use super::TrackingService;
use crate::actors::LoadError;
use crate::domain::account::Account;
use crate::domain::ids::LoadId;
use crate::domain::tracking::{Appended, GpsFix};

/// What became of one point: stored, a duplicate, refused by its load (not
/// found, not taking fixes, storage), or rejected by the caller before.
#[derive(Debug, Clone)]
pub enum PointOutcome<E> {
    Stored,
    Duplicate,
    Refused(LoadError),
    Rejected(E),
}

/// Points in input order; `E` is the caller's reason for a rejection.
pub struct PointBatch<E> {
    /// Per point: its rejection, or `None` while it is submitted.
    rejected: Vec<Option<E>>,
    fixes: Vec<(LoadId, GpsFix)>,
}

impl<E> PointBatch<E> {
    pub fn with_capacity(points: usize) -> Self {
        PointBatch {
            rejected: Vec::with_capacity(points),
            fixes: Vec::with_capacity(points),
        }
    }

    /// The next point is rejected before storage.
    pub fn reject(&mut self, reason: E) {
        self.rejected.push(Some(reason));
    }

    /// The next point goes to storage as a fix of `load`.
    pub fn submit(&mut self, load: LoadId, fix: GpsFix) {
        self.rejected.push(None);
        self.fixes.push((load, fix));
    }

    /// Points so far.
    pub fn len(&self) -> usize {
        self.rejected.len()
    }

    pub fn is_empty(&self) -> bool {
        self.rejected.is_empty()
    }

    /// Records the submitted points (one group-commit submission) and gives
    /// every point's outcome, in input order.
    pub async fn record(
        self,
        tracking: &TrackingService,
        account: &Account,
    ) -> Vec<PointOutcome<E>> {
        let stored = match self.fixes.is_empty() {
            true => Vec::new(),
            false => tracking.record_many(account, self.fixes).await,
        };
        let mut stored = stored.into_iter();
        self.rejected
            .into_iter()
            .map(|rejected| match rejected {
                Some(reason) => PointOutcome::Rejected(reason),
                None => match stored.next() {
                    Some(Ok(Appended::Stored)) => PointOutcome::Stored,
                    Some(Ok(Appended::Duplicate)) => PointOutcome::Duplicate,
                    Some(Err(error)) => PointOutcome::Refused(error),
                    // record_many answers every fix; never short.
                    None => PointOutcome::Refused(LoadError::NotFound),
                },
            })
            .collect()
    }
}
