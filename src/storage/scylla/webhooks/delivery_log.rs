//! A subscription's delivery log as a list: its total kept as a counter
//! (`delivery_totals`, cql/016) and its pages read hour by hour, newest first.
//! The total was a `COUNT(*)` of every hour partition of the log (up to 720 of
//! them) on every list request (issue 38, finding 7).
//!
//! How exact the total stays:
//! - a delivery's first record (`put_deliveries` with no previous record)
//!   adds 1 once its batch is written;
//! - a pruned delivery takes 1 off once its `deliveries_by_event` row is
//!   gone, which is what leads a later pruning back to it, so a pruning that
//!   fails half-way and runs again counts each delivery off once;
//! - a counter add is never retried (it may have applied).
//!
//! So the total is off only by deliveries whose write failed ambiguously
//! (applied, but answered as an error) or whose counter add failed, until
//! `freight migrate --recount-list-totals`. A page never answers a total below
//! the records it read, and at the end of the log answers what it read.

use async_trait::async_trait;

use super::{CONCURRENCY, ScyllaStore, cql_limit};
use crate::domain::webhook::Delivery;
use crate::storage::{Page, PageRequest, StorageResult};

/// What reading the log and counting deliveries off take; `ScyllaStore`'s
/// statements, or a fake in tests.
#[async_trait]
pub(super) trait DeliveryLogStatements: Sync {
    /// The hours the subscription has records in, newest first.
    async fn hours(&self, webhook: &str) -> StorageResult<Vec<i64>>;
    /// Up to `limit` records of one hour, newest first.
    async fn records_of_hour(
        &self,
        webhook: &str,
        hour: i64,
        limit: usize,
    ) -> StorageResult<Vec<Delivery>>;
    /// The maintained total; 0 before any.
    async fn total(&self, webhook: &str) -> StorageResult<u64>;
    async fn add_to_total(&self, webhook: &str, delta: i64) -> StorageResult<()>;
    /// Deletes a pruned delivery's `deliveries_by_event` row.
    async fn forget_by_event(&self, row: &ByEventRow) -> StorageResult<()>;
}

/// A `deliveries_by_event` row: minute, shard, event id, webhook id.
pub(super) type ByEventRow = (i64, i32, String, String);

/// One page of the log. Hours are read newest first, each up to the page's
/// end; the records before the offset are read and dropped (as offset paging
/// must; the API bounds offsets), and an hour wholly before the offset is
/// skipped whole.
pub(super) async fn page(
    st: &impl DeliveryLogStatements,
    webhook: &str,
    page: PageRequest,
) -> StorageResult<Page<Delivery>> {
    let (hours, counted) =
        futures_util::future::try_join(st.hours(webhook), st.total(webhook)).await?;
    let limit = page.limit as usize;
    let mut items = Vec::with_capacity(limit.min(1_000));
    if limit == 0 {
        return Ok(Page {
            items,
            total: counted,
        });
    }
    let mut skip = page.offset;
    // Records the walk proved exist, and whether it read every hour whole.
    let mut read = 0u64;
    let mut whole = true;
    for hour in hours {
        if items.len() >= limit {
            whole = false;
            break;
        }
        let room = limit - items.len();
        let wanted = usize::try_from(skip)
            .unwrap_or(usize::MAX)
            .saturating_add(room);
        let found = st.records_of_hour(webhook, hour, wanted).await?;
        let count = found.len();
        read += count as u64;
        if count >= wanted {
            whole = false; // the hour may hold more
        }
        if count as u64 <= skip {
            skip -= count as u64;
            continue;
        }
        items.extend(found.into_iter().skip(skip as usize).take(room));
        skip = 0;
    }
    let total = match whole {
        true => read,
        false => counted.max(read),
    };
    Ok(Page { items, total })
}

/// Deletes pruned deliveries' `deliveries_by_event` rows (their records are
/// already gone) and counts each one whose row went off its subscription's
/// total. Every row is tried; the first error is returned after the rows that
/// went are counted off, and a pruning run again finds only the rows left.
pub(super) async fn forget_by_event(
    st: &impl DeliveryLogStatements,
    rows: Vec<ByEventRow>,
) -> StorageResult<()> {
    let mut gone: std::collections::BTreeMap<&str, i64> = Default::default();
    let mut failed = None;
    for chunk in rows.chunks(CONCURRENCY) {
        let outcomes =
            futures_util::future::join_all(chunk.iter().map(|row| st.forget_by_event(row))).await;
        for (row, outcome) in chunk.iter().zip(outcomes) {
            match outcome {
                Ok(()) => *gone.entry(row.3.as_str()).or_default() += 1,
                Err(error) => {
                    failed.get_or_insert(error);
                }
            }
        }
    }
    for (webhook, count) in gone {
        count_deliveries(st, webhook, -count).await;
    }
    failed.map_or(Ok(()), Err)
}

/// Moves a subscription's total by `delta`; a failure is logged, not retried
/// (the add may have applied).
pub(super) async fn count_deliveries(st: &impl DeliveryLogStatements, webhook: &str, delta: i64) {
    if let Err(error) = st.add_to_total(webhook, delta).await {
        tracing::warn!(webhook, delta, %error, "a delivery log's total could not be updated; it is off until recounted");
    }
}

#[async_trait]
impl DeliveryLogStatements for ScyllaStore {
    async fn hours(&self, webhook: &str) -> StorageResult<Vec<i64>> {
        self.rows(&self.wh.delivery_hours, (webhook,), |(hour,): (i64,)| {
            Ok(hour)
        })
        .await
    }

    async fn records_of_hour(
        &self,
        webhook: &str,
        hour: i64,
        limit: usize,
    ) -> StorageResult<Vec<Delivery>> {
        self.records(
            &self.wh.deliveries_of_hour,
            (webhook, hour, cql_limit(limit)),
        )
        .await
    }

    async fn total(&self, webhook: &str) -> StorageResult<u64> {
        Ok(self
            .first::<(Option<scylla::value::Counter>,)>(&self.wh.delivery_total, (webhook,))
            .await?
            .and_then(|(n,)| n)
            .map_or(0, |n| n.0.max(0) as u64))
    }

    async fn add_to_total(&self, webhook: &str, delta: i64) -> StorageResult<()> {
        let values = (scylla::value::Counter(delta), webhook);
        self.exec(&self.wh.add_delivery_total, values)
            .await
            .map(|_| ())
    }

    async fn forget_by_event(&self, row: &ByEventRow) -> StorageResult<()> {
        self.exec(&self.wh.delete_delivery_by_event, row.clone())
            .await
            .map(|_| ())
    }
}

#[cfg(test)]
mod tests;
