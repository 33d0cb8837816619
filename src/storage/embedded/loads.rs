//! Loads, their listing index, and the counters that give a list its total in
//! one read (carriers' listing uses the counters and the paging too).

use async_trait::async_trait;
use fjall::{Keyspace, Readable};
use serde::de::DeserializeOwned;

use super::webhooks::encode_events;
use super::{COUNT_LOCK_STRIPES, EmbeddedStore, Inner, decode, encode, keys, unavailable};
use crate::domain::event::Event;
use crate::domain::ids::{AccountId, LoadId};
use crate::domain::load::Load;
use crate::storage::{LoadFilter, LoadStore, Page, PageRequest, StorageError, StorageResult};

impl Inner {
    /// The counter under `key`, as read in `snapshot`.
    fn count(&self, snapshot: &fjall::Snapshot, key: &[u8]) -> StorageResult<u64> {
        match snapshot.get(&self.counts, key).map_err(unavailable)? {
            Some(bytes) => {
                let raw: [u8; 8] = bytes
                    .as_ref()
                    .try_into()
                    .map_err(|_| StorageError::corrupt("counter is not 8 bytes"))?;
                Ok(u64::from_be_bytes(raw))
            }
            None => Ok(0),
        }
    }

    /// Adds `delta` to each counter in `changes` within `batch`. The caller holds
    /// the account's count lock, so no other writer moves these counters meanwhile.
    pub(super) fn adjust_counts(
        &self,
        batch: &mut fjall::OwnedWriteBatch,
        changes: &[(Vec<u8>, i64)],
    ) -> StorageResult<()> {
        let snapshot = self.db.snapshot();
        for (key, delta) in changes {
            let next = self.count(&snapshot, key)?.saturating_add_signed(*delta);
            batch.insert(&self.counts, key.clone(), next.to_be_bytes().to_vec());
        }
        Ok(())
    }

    fn count_lock(&self, account: &AccountId) -> std::sync::MutexGuard<'_, ()> {
        let hash = account.as_str().bytes().fold(0usize, |h, b| {
            h.wrapping_mul(31).wrapping_add(usize::from(b))
        });
        self.count_locks[hash % COUNT_LOCK_STRIPES]
            .lock()
            .unwrap_or_else(|p| p.into_inner())
    }

    /// One newest-first page of the keys under `prefix` in `scan`, each turned into
    /// a record by `fetch`; `total` comes from the counter `count_key`. Only the
    /// keys up to the end of the page are visited.
    pub(super) fn page_newest_first<T: DeserializeOwned>(
        &self,
        scan: &Keyspace,
        prefix: &[u8],
        count_key: &[u8],
        page: PageRequest,
        fetch: impl Fn(&fjall::Snapshot, &[u8]) -> StorageResult<Option<T>>,
    ) -> StorageResult<Page<T>> {
        let snapshot = self.db.snapshot();
        let total = self.count(&snapshot, count_key)?;
        let mut items = Vec::with_capacity(page.limit as usize);
        if page.offset < total {
            let keys = snapshot
                .prefix(scan, prefix)
                .rev()
                .skip(page.offset as usize)
                .take(page.limit as usize);
            for guard in keys {
                let key = guard.key().map_err(unavailable)?;
                if let Some(item) = fetch(&snapshot, &key)? {
                    items.push(item);
                }
            }
        }
        Ok(Page { items, total })
    }
}

#[async_trait]
impl LoadStore for EmbeddedStore {
    async fn insert_load(&self, load: &Load, events: &[Event]) -> StorageResult<()> {
        let value = encode(load)?;
        let events = encode_events(events)?;
        let key = keys::load(&load.id);
        let index = keys::load_index_keys(load);
        let counters: Vec<(Vec<u8>, i64)> = keys::load_index_prefixes(load)
            .into_iter()
            .map(|p| (p, 1))
            .collect();
        let account = load.account_id.clone();
        self.run(move |s| {
            let _counting = s.count_lock(&account);
            let mut batch = s.durable_batch();
            batch.insert(&s.loads, key, value);
            for entry in index {
                batch.insert(&s.load_index, entry, Vec::<u8>::new());
            }
            s.adjust_counts(&mut batch, &counters)?;
            s.add_events(&mut batch, events);
            s.commit_durably(batch)
        })
        .await
    }

    async fn update_load(
        &self,
        previous: &Load,
        updated: &Load,
        events: &[Event],
    ) -> StorageResult<()> {
        let value = encode(updated)?;
        let events = encode_events(events)?;
        let key = keys::load(&updated.id);
        let old_index = keys::load_index_keys(previous);
        let new_index = keys::load_index_keys(updated);
        let old_prefixes = keys::load_index_prefixes(previous);
        let new_prefixes = keys::load_index_prefixes(updated);
        let mut counters: Vec<(Vec<u8>, i64)> = Vec::new();
        for prefix in old_prefixes.iter().filter(|p| !new_prefixes.contains(p)) {
            counters.push((prefix.clone(), -1));
        }
        for prefix in new_prefixes.iter().filter(|p| !old_prefixes.contains(p)) {
            counters.push((prefix.clone(), 1));
        }
        let account = updated.account_id.clone();
        self.run(move |s| {
            let _counting = s.count_lock(&account);
            let mut batch = s.durable_batch();
            batch.insert(&s.loads, key, value);
            for entry in old_index.iter().filter(|k| !new_index.contains(k)) {
                batch.remove(&s.load_index, entry.clone());
            }
            for entry in new_index {
                batch.insert(&s.load_index, entry, Vec::<u8>::new());
            }
            s.adjust_counts(&mut batch, &counters)?;
            s.add_events(&mut batch, events);
            s.commit_durably(batch)
        })
        .await?;
        // Tests only: a write that landed, answered as failed (a timeout).
        match self.shared_for_tests() {
            Some(shared) => shared.after_load_update(),
            None => Ok(()),
        }
    }

    async fn get_load(&self, id: &LoadId) -> StorageResult<Option<Load>> {
        let key = keys::load(id);
        self.run(move |s| s.get_json(&s.loads, &key)).await
    }

    async fn list_loads(
        &self,
        account: &AccountId,
        filter: &LoadFilter,
        page: PageRequest,
    ) -> StorageResult<Page<Load>> {
        let prefix = keys::load_index_prefix(account, filter);
        self.run(move |s| {
            s.page_newest_first(&s.load_index, &prefix, &prefix, page, |snap, index_key| {
                let id = keys::load_id_from_index_key(index_key)
                    .ok_or_else(|| StorageError::corrupt("load index key without id"))?;
                match snap.get(&s.loads, keys::load(&id)).map_err(unavailable)? {
                    Some(bytes) => decode(&bytes).map(Some),
                    None => Err(StorageError::corrupt(format!(
                        "index names missing load {id}"
                    ))),
                }
            })
        })
        .await
    }
}
