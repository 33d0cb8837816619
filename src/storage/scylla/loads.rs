//! Loads: the `loads` row (the commit point of every change), and the list
//! partitions of `loads_by_account` (see `cql/001_core.cql`).

use async_trait::async_trait;
use serde::{Deserialize, Serialize};

use super::statements::LoggedBatch;
use super::{ScyllaStore, decode, encode, keys};
use crate::domain::event::Event;
use crate::domain::ids::{AccountId, LoadId};
use crate::domain::load::Load;
use crate::storage::{LoadFilter, LoadStore, Page, PageRequest, StorageError, StorageResult};

/// What must follow a committed change of a load: kept in the load's row
/// until written, so that a reader can finish a change whose writer died.
#[derive(Serialize, Deserialize)]
struct Pending {
    previous: Load,
    events: Vec<Event>,
}

/// The load changed since its writer read it: another instance moved it (two
/// instances acted for one load, which the lease is there to prevent). The
/// change is not made; the writer reads the load again on its next attempt.
#[derive(Debug, thiserror::Error)]
#[error("load {0} was changed by another writer since it was read")]
struct ChangedMeanwhile(String);

impl ScyllaStore {
    /// Adds the list rows of `load` (all eight of its partitions, with its
    /// current record) to a batch, and removes those of `previous` that it no
    /// longer belongs in.
    fn add_listing(
        &self,
        batch: &mut LoggedBatch,
        previous: Option<&Load>,
        load: &Load,
        record: &str,
    ) {
        let account = load.account_id.as_str().to_owned();
        let id = load.id.as_str().to_owned();
        let filters = keys::load_filters(load);
        if let Some(previous) = previous {
            for stale in keys::load_filters(previous) {
                if !filters.contains(&stale) {
                    batch.add(
                        &self.st.delete_load_listed,
                        (account.clone(), stale, id.clone()),
                    );
                }
            }
        }
        for filter in filters {
            batch.add(
                &self.st.put_load_listed,
                (account.clone(), filter, id.clone(), record.to_owned()),
            );
        }
    }

    /// Writes what follows a committed change (list rows, outbox events) and
    /// clears the load's `pending`.
    async fn finish_change(
        &self,
        load: &Load,
        record: &str,
        pending: &Pending,
    ) -> StorageResult<()> {
        let mut batch = LoggedBatch::new();
        self.add_listing(&mut batch, Some(&pending.previous), load, record);
        self.add_events(&mut batch, &pending.events)?;
        self.logged(batch).await?;
        self.exec(&self.st.clear_load_pending, (load.id.as_str(),))
            .await
            .map(|_| ())
    }
}

#[async_trait]
impl LoadStore for ScyllaStore {
    /// The row, its list rows and its events in one logged batch. A new load's
    /// id is fresh (made by this service), so no other writer can hold it.
    async fn insert_load(&self, load: &Load, events: &[Event]) -> StorageResult<()> {
        let record = encode(load)?;
        let mut batch = LoggedBatch::new();
        batch.add(
            &self.st.insert_load,
            (
                load.id.as_str().to_owned(),
                load.version as i64,
                record.clone(),
            ),
        );
        self.add_listing(&mut batch, None, load, &record);
        self.add_events(&mut batch, events)?;
        self.logged(batch).await
    }

    /// A lightweight transaction on the version `previous` had commits the
    /// change (and what must follow it); then the list rows and events are
    /// written (see [`Pending`]).
    async fn update_load(
        &self,
        previous: &Load,
        updated: &Load,
        events: &[Event],
    ) -> StorageResult<()> {
        let record = encode(updated)?;
        let pending = Pending {
            previous: previous.clone(),
            events: events.to_vec(),
        };
        let committed = self
            .applied(
                &self.st.update_load,
                (
                    updated.version as i64,
                    &record,
                    encode(&pending)?,
                    updated.id.as_str(),
                    previous.version as i64,
                ),
            )
            .await?;
        if !committed {
            return Err(StorageError::unavailable(ChangedMeanwhile(
                updated.id.to_string(),
            )));
        }
        self.finish_change(updated, &record, &pending).await
    }

    async fn get_load(&self, id: &LoadId) -> StorageResult<Option<Load>> {
        let Some((record, pending)) = self
            .first::<(Option<String>, Option<String>)>(&self.st.get_load, (id.as_str(),))
            .await?
        else {
            return Ok(None);
        };
        let record = record.ok_or_else(|| StorageError::corrupt("a load row without a record"))?;
        let load: Load = decode(&record)?;
        if let Some(pending) = pending {
            // Its writer committed the change and did not finish it: finish it.
            self.finish_change(&load, &record, &decode(&pending)?)
                .await?;
        }
        Ok(Some(load))
    }

    /// One partition read (the filter's), newest first; `total` is a count of it.
    async fn list_loads(
        &self,
        account: &AccountId,
        filter: &LoadFilter,
        page: PageRequest,
    ) -> StorageResult<Page<Load>> {
        let filter = keys::load_filter(filter);
        let total = self
            .count(&self.st.count_loads, (account.as_str(), &filter))
            .await?;
        let items = self
            .page(
                &self.st.list_loads,
                |end| (account.as_str(), filter.as_str(), end),
                page,
                total,
            )
            .await?;
        Ok(Page { items, total })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::domain::load::LoadStatus;
    use crate::domain::location::UsState;

    fn load(status: LoadStatus) -> Load {
        crate::domain::load::sample(status)
    }

    #[test]
    fn a_load_is_listed_under_the_eight_subsets_of_its_filters() {
        let posted = load(LoadStatus::Posted);
        let filters = keys::load_filters(&posted);
        assert_eq!(
            filters,
            [
                "",
                "s=posted",
                "o=TX",
                "s=posted,o=TX",
                "d=GA",
                "s=posted,d=GA",
                "o=TX,d=GA",
                "s=posted,o=TX,d=GA"
            ]
        );
        // Each is the partition a GET /v1/loads with those filters reads.
        let filter = LoadFilter {
            status: Some(LoadStatus::Posted),
            destination_state: Some(UsState::parse("GA").unwrap()),
            ..LoadFilter::default()
        };
        assert!(filters.contains(&keys::load_filter(&filter)));
        // A status change moves it out of exactly the four status partitions.
        let mut moved = posted.clone();
        moved.status = LoadStatus::Assigned;
        let stale: Vec<&String> = filters
            .iter()
            .filter(|f| !keys::load_filters(&moved).contains(f))
            .collect();
        assert_eq!(stale.len(), 4);
        assert!(stale.iter().all(|f| f.contains("s=posted")));
    }

    #[test]
    fn a_pending_change_survives_its_row_both_ways() {
        let previous = load(LoadStatus::Posted);
        let pending = Pending {
            previous: previous.clone(),
            events: Vec::new(),
        };
        let back: Pending = decode(&encode(&pending).unwrap()).unwrap();
        assert_eq!(back.previous, previous);
        assert!(back.events.is_empty());
        let record: Load = decode(&encode(&previous).unwrap()).unwrap();
        assert_eq!(record, previous);
    }
}
