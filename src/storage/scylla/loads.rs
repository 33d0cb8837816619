//! Loads: the `loads` row (the commit point of every change; how it is
//! written is `load_rows`), and the list partitions of `loads_by_account`
//! (see `cql/001_core.cql`).

use async_trait::async_trait;

use super::load_rows::{self, LoadRowStatements, RowCas};
use super::statements::LoggedBatch;
use super::{ScyllaStore, keys};
use crate::domain::event::Event;
use crate::domain::ids::{AccountId, LoadId};
use crate::domain::load::Load;
use crate::storage::{LoadFilter, LoadStore, Page, PageRequest, StorageError, StorageResult};

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
}

#[async_trait]
impl LoadRowStatements for ScyllaStore {
    async fn insert_row(
        &self,
        id: &LoadId,
        version: i64,
        record: &str,
        pending: &str,
    ) -> StorageResult<bool> {
        self.applied(
            &self.st.insert_load,
            (id.as_str(), version, record, pending),
        )
        .await
    }

    async fn update_row(
        &self,
        id: &LoadId,
        expected: i64,
        version: i64,
        record: &str,
        pending: &str,
    ) -> StorageResult<RowCas> {
        let values = (version, record, pending, id.as_str(), expected);
        let answer = self.lwt(&self.st.update_load, values).await?;
        Ok(match answer.applied {
            true => RowCas::Applied,
            false => RowCas::NotApplied {
                version: answer.bigint("version"),
                pending: answer.text("pending"),
            },
        })
    }

    async fn read_row(
        &self,
        id: &LoadId,
        as_writer: bool,
    ) -> StorageResult<Option<(String, Option<String>)>> {
        let statement = match as_writer {
            true => &self.st.get_load_serial,
            false => &self.st.get_load,
        };
        let Some((record, pending)) = self
            .first::<(Option<String>, Option<String>)>(statement, (id.as_str(),))
            .await?
        else {
            return Ok(None);
        };
        let record = record.ok_or_else(|| StorageError::corrupt("a load row without a record"))?;
        Ok(Some((record, pending)))
    }

    async fn follow_up(
        &self,
        previous: Option<&Load>,
        load: &Load,
        record: &str,
        events: &[Event],
    ) -> StorageResult<()> {
        let mut batch = LoggedBatch::new();
        self.add_listing(&mut batch, previous, load, record);
        self.add_events(&mut batch, events)?;
        self.logged(batch).await
    }

    async fn add_to_totals(&self, account: &str, deltas: &[(String, i64)]) -> StorageResult<()> {
        let adds = deltas.iter().map(|(list, delta)| {
            let values = (scylla::value::Counter(*delta), account, list.as_str());
            self.exec(&self.st.add_list_total, values)
        });
        futures_util::future::try_join_all(adds).await.map(|_| ())
    }

    async fn clear_pending(&self, id: &LoadId, version: i64) -> StorageResult<()> {
        // Not applied: a later change committed, which finished this one first.
        self.applied(&self.st.clear_load_pending, (id.as_str(), version))
            .await
            .map(|_| ())
    }
}

#[async_trait]
impl LoadStore for ScyllaStore {
    /// See `load_rows`: the row (with its follow-up pending), then the list
    /// rows and events in one logged batch.
    async fn insert_load(&self, load: &Load, events: &[Event]) -> StorageResult<()> {
        load_rows::insert(self, load, events).await
    }

    /// See `load_rows`: a lightweight transaction on the version `previous`
    /// had commits the change with its follow-up, which is then written.
    async fn update_load(
        &self,
        previous: &Load,
        updated: &Load,
        events: &[Event],
    ) -> StorageResult<()> {
        load_rows::update(self, previous, updated, events).await
    }

    async fn get_load(&self, id: &LoadId) -> StorageResult<Option<Load>> {
        load_rows::read(self, id).await
    }

    async fn finish_load_change(&self, id: &LoadId) -> StorageResult<()> {
        load_rows::finish_unfinished(self, id).await
    }

    /// One partition read (the filter's), newest first; `total` is the list's
    /// maintained total (`list_totals`, see `load_rows::finish`).
    async fn list_loads(
        &self,
        account: &AccountId,
        filter: &LoadFilter,
        page: PageRequest,
    ) -> StorageResult<Page<Load>> {
        let filter = keys::load_filter(filter);
        let list = format!("{}{filter}", load_rows::LOAD_LISTS);
        let counted = self.list_total(account.as_str(), &list).await?;
        self.page(
            &self.st.list_loads,
            |end| (account.as_str(), filter.as_str(), end),
            page,
            counted,
        )
        .await
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
}
