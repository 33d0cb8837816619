//! The embedded backend: fjall, an LSM store in the data directory.
//!
//! Records are JSON, but for outbox events and delivery records, which have a
//! compact binary layout (`codec`). Every write is one atomic cross-keyspace
//! batch synced to the journal
//! (`PersistMode::SyncData`) before it returns, so an acknowledged write survives
//! a crash or power loss. fjall calls block, so they run on tokio's blocking pool,
//! never on an HTTP worker thread.

mod codec;
mod keys;

use std::collections::HashMap;
use std::path::Path;
use std::sync::Arc;

use async_trait::async_trait;
use fjall::{Database, Keyspace, KeyspaceCreateOptions, PersistMode, Readable};
use serde::Serialize;
use serde::de::DeserializeOwned;

use super::{
    AccountStore, CarrierInsert, CarrierStore, IdempotencyStore, LoadFilter, LoadStore, Page,
    PageRequest, PointRange, Storage, StorageError, StorageResult, TrackingStore, WebhookStore,
};
use crate::domain::account::Account;
use crate::domain::api_key::ApiKey;
use crate::domain::carrier::Carrier;
use crate::domain::event::Event;
use crate::domain::idempotency::StoredResponse;
use crate::domain::ids::{AccountId, CarrierId, KeyId, LoadId};
use crate::domain::ids::{EventId, WebhookId};
use crate::domain::load::Load;
use crate::domain::tracking::{Appended, GpsFix, TrackingPoint};
use crate::domain::webhook::{Delivery, DeliveryStatus, Subscription};
use chrono::{DateTime, Utc};

const COUNT_LOCK_STRIPES: usize = 64;

/// Group sync bookkeeping: batches written to the journal, and how many of them
/// an fdatasync has covered.
#[derive(Default)]
struct SyncState {
    written: u64,
    synced: u64,
    syncing: bool,
}

struct Inner {
    db: Database,
    accounts: Keyspace,
    api_keys: Keyspace,
    /// `account ‖ key id` → empty: lists an account's keys.
    account_keys: Keyspace,
    loads: Keyspace,
    /// See [`keys::load_index_prefix`].
    load_index: Keyspace,
    /// Index prefix → number of keys under it (u64 big-endian), so a list's
    /// `total` is one read instead of a count over the range.
    counts: Keyspace,
    sync: std::sync::Mutex<SyncState>,
    synced: std::sync::Condvar,
    /// Serialise the read-modify-write of one account's counters. Striped by
    /// account: loads of different accounts rarely wait for each other.
    count_locks: Vec<std::sync::Mutex<()>>,
    carriers: Keyspace,
    /// GPS time series, see [`keys::point`].
    points: Keyspace,
    /// The outbox: event id (time-ordered) → event.
    events: Keyspace,
    /// `load id ‖ sequence` → event id: a load's last sequence number.
    load_events: Keyspace,
    webhooks: Keyspace,
    /// `webhook id ‖ event id` → delivery.
    deliveries: Keyspace,
    /// `next attempt (µs) ‖ webhook id ‖ event id` → (): the retry schedule.
    due: Keyspace,
    /// Event id → (): events committed and not yet fanned out to subscriptions.
    unfanned: Keyspace,
    /// `account ‖ mc number` → carrier id: uniqueness of MC numbers.
    carrier_mc: Keyspace,
    /// `account ‖ 0 ‖ idempotency key` → the first answer.
    idempotency: Keyspace,
    /// Serialises the read-check-write of carrier creation (rare; loads never take it).
    carrier_insert: std::sync::Mutex<()>,
}

#[derive(Clone)]
pub struct EmbeddedStore {
    inner: Arc<Inner>,
}

fn unavailable(e: impl std::fmt::Display) -> StorageError {
    StorageError::Unavailable(e.to_string())
}

fn encode<T: Serialize>(value: &T) -> StorageResult<Vec<u8>> {
    serde_json::to_vec(value).map_err(|e| StorageError::Corrupt(e.to_string()))
}

struct EncodedEvent {
    id: Vec<u8>,
    sequence_key: Vec<u8>,
    value: Vec<u8>,
}

fn encode_events(events: &[Event]) -> StorageResult<Vec<EncodedEvent>> {
    events
        .iter()
        .map(|event| {
            Ok(EncodedEvent {
                id: event.id.as_str().as_bytes().to_vec(),
                sequence_key: keys::load_event(&event.load_id, event.sequence),
                value: codec::encode_event(event),
            })
        })
        .collect()
}

fn decode<T: DeserializeOwned>(bytes: &[u8]) -> StorageResult<T> {
    serde_json::from_slice(bytes).map_err(|e| StorageError::Corrupt(e.to_string()))
}

impl EmbeddedStore {
    pub async fn open(path: &Path) -> StorageResult<Self> {
        let path = path.to_owned();
        tokio::task::spawn_blocking(move || Self::open_blocking(&path))
            .await
            .map_err(unavailable)?
    }

    fn open_blocking(path: &Path) -> StorageResult<Self> {
        std::fs::create_dir_all(path).map_err(unavailable)?;
        let db = Database::builder(path).open().map_err(unavailable)?;
        let keyspace = |name: &str| db.keyspace(name, KeyspaceCreateOptions::default);
        let inner = Inner {
            accounts: keyspace("accounts").map_err(unavailable)?,
            api_keys: keyspace("api_keys").map_err(unavailable)?,
            account_keys: keyspace("account_keys").map_err(unavailable)?,
            loads: keyspace("loads").map_err(unavailable)?,
            load_index: keyspace("load_index").map_err(unavailable)?,
            counts: keyspace("counts").map_err(unavailable)?,
            sync: std::sync::Mutex::new(SyncState::default()),
            synced: std::sync::Condvar::new(),
            count_locks: (0..COUNT_LOCK_STRIPES)
                .map(|_| std::sync::Mutex::new(()))
                .collect(),
            carriers: keyspace("carriers").map_err(unavailable)?,
            points: keyspace("points").map_err(unavailable)?,
            events: keyspace("events").map_err(unavailable)?,
            load_events: keyspace("load_events").map_err(unavailable)?,
            webhooks: keyspace("webhooks").map_err(unavailable)?,
            deliveries: keyspace("deliveries").map_err(unavailable)?,
            due: keyspace("due").map_err(unavailable)?,
            unfanned: keyspace("unfanned").map_err(unavailable)?,
            carrier_mc: keyspace("carrier_mc").map_err(unavailable)?,
            idempotency: keyspace("idempotency").map_err(unavailable)?,
            carrier_insert: std::sync::Mutex::new(()),
            db,
        };
        Ok(Self {
            inner: Arc::new(inner),
        })
    }

    /// Writes one record durably into the keyspace `pick` selects.
    async fn put_one(
        &self,
        pick: fn(&Inner) -> &Keyspace,
        key: Vec<u8>,
        value: Vec<u8>,
    ) -> StorageResult<()> {
        self.run(move |s| {
            let mut batch = s.durable_batch();
            batch.insert(pick(s), key, value);
            s.commit_durably(batch)
        })
        .await
    }

    /// Every record of the keyspace `pick` selects (small keyspaces only).
    async fn all_of<T: DeserializeOwned + Send + 'static>(
        &self,
        pick: fn(&Inner) -> &Keyspace,
    ) -> StorageResult<Vec<T>> {
        self.run(move |s| {
            pick(s)
                .iter()
                .map(|guard| {
                    let (_, value) = guard.into_inner().map_err(unavailable)?;
                    decode(&value)
                })
                .collect()
        })
        .await
    }

    /// Runs blocking store work off the async threads.
    async fn run<T, F>(&self, work: F) -> StorageResult<T>
    where
        T: Send + 'static,
        F: FnOnce(&Inner) -> StorageResult<T> + Send + 'static,
    {
        let inner = self.inner.clone();
        tokio::task::spawn_blocking(move || work(&inner))
            .await
            .map_err(unavailable)?
    }
}

impl Inner {
    /// A batch that is on disk (fdatasync'd journal) when `commit` returns.
    fn durable_batch(&self) -> fjall::OwnedWriteBatch {
        self.db.batch().durability(Some(PersistMode::Buffer))
    }

    /// Commits a batch and returns once it is on disk. The batch is written to the
    /// journal (OS buffers), then covered by an fdatasync that may be shared: while
    /// one writer syncs, others append behind it, and the next sync covers them all.
    /// One fdatasync per batch would cap every writer at the disk's sync rate.
    fn commit_durably(&self, batch: fjall::OwnedWriteBatch) -> StorageResult<()> {
        batch.commit().map_err(unavailable)?;
        let mine = {
            let mut state = self.sync.lock().unwrap_or_else(|p| p.into_inner());
            state.written += 1;
            state.written
        };
        let mut state = self.sync.lock().unwrap_or_else(|p| p.into_inner());
        loop {
            if state.synced >= mine {
                return Ok(());
            }
            if state.syncing {
                state = self.synced.wait(state).unwrap_or_else(|p| p.into_inner());
                continue;
            }
            // Everything counted as written so far is in the journal: one sync covers it.
            let target = state.written;
            state.syncing = true;
            drop(state);
            let result = self.db.persist(PersistMode::SyncData);
            state = self.sync.lock().unwrap_or_else(|p| p.into_inner());
            state.syncing = false;
            if result.is_ok() {
                state.synced = state.synced.max(target);
            }
            self.synced.notify_all();
            result.map_err(unavailable)?;
        }
    }

    fn get_decoded<T>(
        &self,
        keyspace: &Keyspace,
        key: &[u8],
        decode: fn(&[u8]) -> StorageResult<T>,
    ) -> StorageResult<Option<T>> {
        match keyspace.get(key).map_err(unavailable)? {
            Some(bytes) => decode(&bytes).map(Some),
            None => Ok(None),
        }
    }

    fn get_json<T: DeserializeOwned>(
        &self,
        keyspace: &Keyspace,
        key: &[u8],
    ) -> StorageResult<Option<T>> {
        match keyspace.get(key).map_err(unavailable)? {
            Some(bytes) => decode(&bytes).map(Some),
            None => Ok(None),
        }
    }

    /// Adds encoded events to a batch: the outbox entry and the load's sequence index.
    fn add_events(&self, batch: &mut fjall::OwnedWriteBatch, events: Vec<EncodedEvent>) {
        for event in events {
            batch.insert(&self.load_events, event.sequence_key, event.id.clone());
            batch.insert(&self.unfanned, event.id.clone(), Vec::<u8>::new());
            batch.insert(&self.events, event.id, event.value);
        }
    }

    /// The counter under `key`, as read in `snapshot`.
    fn count(&self, snapshot: &fjall::Snapshot, key: &[u8]) -> StorageResult<u64> {
        match snapshot.get(&self.counts, key).map_err(unavailable)? {
            Some(bytes) => {
                let raw: [u8; 8] = bytes
                    .as_ref()
                    .try_into()
                    .map_err(|_| StorageError::Corrupt("counter is not 8 bytes".into()))?;
                Ok(u64::from_be_bytes(raw))
            }
            None => Ok(0),
        }
    }

    /// Adds `delta` to each counter in `changes` within `batch`. The caller holds
    /// the account's count lock, so no other writer moves these counters meanwhile.
    fn adjust_counts(
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
    fn page_newest_first<T: DeserializeOwned>(
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
impl AccountStore for EmbeddedStore {
    async fn put_account(&self, account: &Account) -> StorageResult<()> {
        let value = encode(account)?;
        let key = account.id.as_str().as_bytes().to_vec();
        self.put_one(|s| &s.accounts, key, value).await
    }

    async fn get_account(&self, id: &AccountId) -> StorageResult<Option<Account>> {
        let key = id.as_str().as_bytes().to_vec();
        self.run(move |s| s.get_json(&s.accounts, &key)).await
    }

    async fn list_accounts(&self) -> StorageResult<Vec<Account>> {
        self.all_of(|s| &s.accounts).await
    }

    async fn put_api_key(&self, key: &ApiKey) -> StorageResult<()> {
        let value = encode(key)?;
        let id = key.id.as_str().as_bytes().to_vec();
        let listing = keys::owned(&key.account_id, key.id.as_str());
        self.run(move |s| {
            let mut batch = s.durable_batch();
            batch.insert(&s.api_keys, id, value);
            batch.insert(&s.account_keys, listing, Vec::<u8>::new());
            s.commit_durably(batch)
        })
        .await
    }

    async fn get_api_key(&self, id: &KeyId) -> StorageResult<Option<ApiKey>> {
        let key = id.as_str().as_bytes().to_vec();
        self.run(move |s| s.get_json(&s.api_keys, &key)).await
    }

    async fn list_api_keys(&self, account: &AccountId) -> StorageResult<Vec<ApiKey>> {
        let prefix = account.as_str().as_bytes().to_vec();
        let prefix_len = prefix.len();
        self.run(move |s| {
            let mut out = Vec::new();
            for guard in s.account_keys.prefix(&prefix) {
                let listing = guard.key().map_err(unavailable)?;
                if let Some(key) = s.get_json(&s.api_keys, &listing[prefix_len..])? {
                    out.push(key);
                }
            }
            Ok(out)
        })
        .await
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
        .await
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
                    .ok_or_else(|| StorageError::Corrupt("load index key without id".into()))?;
                match snap.get(&s.loads, keys::load(&id)).map_err(unavailable)? {
                    Some(bytes) => decode(&bytes).map(Some),
                    None => Err(StorageError::Corrupt(format!(
                        "index names missing load {id}"
                    ))),
                }
            })
        })
        .await
    }
}

#[async_trait]
impl CarrierStore for EmbeddedStore {
    async fn insert_carrier(&self, carrier: &Carrier) -> StorageResult<CarrierInsert> {
        let value = encode(carrier)?;
        let key = keys::carrier(&carrier.account_id, &carrier.id);
        let mc_key = keys::carrier_mc(&carrier.account_id, &carrier.mc_number);
        let id = carrier.id.as_str().as_bytes().to_vec();
        let count_key = keys::carrier_count(&carrier.account_id);
        self.run(move |s| {
            let _serialised = s.carrier_insert.lock().unwrap_or_else(|p| p.into_inner());
            if let Some(existing) = s.carrier_mc.get(&mc_key).map_err(unavailable)? {
                let existing = std::str::from_utf8(&existing)
                    .ok()
                    .and_then(CarrierId::parse)
                    .ok_or_else(|| StorageError::Corrupt("bad carrier id in MC index".into()))?;
                return Ok(CarrierInsert::DuplicateMcNumber(existing));
            }
            let mut batch = s.durable_batch();
            batch.insert(&s.carriers, key, value);
            batch.insert(&s.carrier_mc, mc_key, id);
            s.adjust_counts(&mut batch, &[(count_key, 1)])?;
            s.commit_durably(batch)?;
            Ok(CarrierInsert::Inserted)
        })
        .await
    }

    async fn get_carrier(
        &self,
        account: &AccountId,
        id: &CarrierId,
    ) -> StorageResult<Option<Carrier>> {
        let key = keys::carrier(account, id);
        self.run(move |s| s.get_json(&s.carriers, &key)).await
    }

    async fn list_carriers(
        &self,
        account: &AccountId,
        page: PageRequest,
    ) -> StorageResult<Page<Carrier>> {
        let prefix = account.as_str().as_bytes().to_vec();
        let count_key = keys::carrier_count(account);
        self.run(move |s| {
            s.page_newest_first(
                &s.carriers,
                &prefix,
                &count_key,
                page,
                |snap, key| match snap.get(&s.carriers, key).map_err(unavailable)? {
                    Some(bytes) => decode(&bytes).map(Some),
                    None => Ok(None),
                },
            )
        })
        .await
    }
}

#[async_trait]
impl TrackingStore for EmbeddedStore {
    async fn append_points(&self, points: Vec<TrackingPoint>) -> StorageResult<Vec<Appended>> {
        self.run(move |s| {
            let mut outcomes = Vec::with_capacity(points.len());
            let mut batch = fjall::OwnedWriteBatch::with_capacity(s.db.clone(), points.len())
                .durability(Some(PersistMode::Buffer));
            let mut in_batch = std::collections::HashSet::with_capacity(points.len());
            for point in &points {
                let key = keys::point(&point.load_id, &point.fix.timestamp);
                // Only the committer writes points, one batch at a time, so nothing
                // can store this key between the check and the commit.
                let duplicate =
                    in_batch.contains(&key) || s.points.contains_key(&key).map_err(unavailable)?;
                if duplicate {
                    outcomes.push(Appended::Duplicate);
                } else {
                    if let Some(event) = &point.event {
                        s.add_events(&mut batch, encode_events(std::slice::from_ref(event))?);
                    }
                    batch.insert(&s.points, key.clone(), keys::encode_point(&point.fix));
                    in_batch.insert(key);
                    outcomes.push(Appended::Stored);
                }
            }
            s.commit_durably(batch)?;
            Ok(outcomes)
        })
        .await
    }

    async fn load_points(&self, load: &LoadId, range: PointRange) -> StorageResult<Vec<GpsFix>> {
        let start = keys::point(load, &range.from);
        let mut end = keys::point(load, &range.to);
        if let Some(before) = range.before {
            end = end.min(keys::point(load, &before));
        }
        let exclusive_end = range.before.is_some_and(|b| b <= range.to);
        self.run(move |s| {
            let mut out = Vec::with_capacity(range.limit.min(1024));
            if start > end {
                return Ok(out);
            }
            let scan = if exclusive_end {
                s.points.range(start..end)
            } else {
                s.points.range(start..=end)
            };
            for guard in scan.rev().take(range.limit) {
                let (key, value) = guard.into_inner().map_err(unavailable)?;
                let fix = keys::decode_point(&key, &value)
                    .ok_or_else(|| StorageError::Corrupt("unreadable GPS point".into()))?;
                out.push(fix);
            }
            Ok(out)
        })
        .await
    }

    async fn count_points(
        &self,
        load: &LoadId,
        from: DateTime<Utc>,
        to: DateTime<Utc>,
    ) -> StorageResult<u64> {
        let start = keys::point(load, &from);
        let end = keys::point(load, &to);
        self.run(move |s| {
            if start > end {
                return Ok(0);
            }
            let mut count = 0u64;
            for guard in s.points.range(start..=end) {
                guard.key().map_err(unavailable)?;
                count += 1;
            }
            Ok(count)
        })
        .await
    }
}

#[async_trait]
impl WebhookStore for EmbeddedStore {
    async fn last_event_sequence(&self, load: &LoadId) -> StorageResult<u64> {
        let prefix = load.as_str().as_bytes().to_vec();
        self.run(move |s| match s.load_events.prefix(&prefix).next_back() {
            Some(guard) => {
                let key = guard.key().map_err(unavailable)?;
                keys::sequence_of(&key)
                    .ok_or_else(|| StorageError::Corrupt("bad load event key".into()))
            }
            None => Ok(0),
        })
        .await
    }

    async fn unfanned_events(
        &self,
        after: Option<&EventId>,
        limit: usize,
    ) -> StorageResult<Vec<Event>> {
        use std::ops::Bound;
        let start = match after {
            Some(id) => Bound::Excluded(id.as_str().as_bytes().to_vec()),
            None => Bound::Unbounded,
        };
        self.run(move |s| {
            let mut out = Vec::new();
            for guard in s.unfanned.range((start, Bound::Unbounded)).take(limit) {
                let id = guard.key().map_err(unavailable)?;
                match s.get_decoded(&s.events, &id, codec::decode_event)? {
                    Some(event) => out.push(event),
                    None => {
                        return Err(StorageError::Corrupt(
                            "an unfanned marker without its event".into(),
                        ));
                    }
                }
            }
            Ok(out)
        })
        .await
    }

    async fn get_event(&self, id: &EventId) -> StorageResult<Option<Event>> {
        let key = id.as_str().as_bytes().to_vec();
        self.run(move |s| s.get_decoded(&s.events, &key, codec::decode_event))
            .await
    }

    async fn put_webhook(&self, webhook: &Subscription) -> StorageResult<()> {
        let value = encode(webhook)?;
        let key = webhook.id.as_str().as_bytes().to_vec();
        self.put_one(|s| &s.webhooks, key, value).await
    }

    async fn delete_webhook(&self, webhook: &Subscription) -> StorageResult<()> {
        let key = webhook.id.as_str().as_bytes().to_vec();
        let prefix = key.clone();
        self.run(move |s| {
            let mut batch = s.durable_batch();
            batch.remove(&s.webhooks, key);
            // Its deliveries go with it, and so do their places in the schedule.
            for guard in s.deliveries.prefix(&prefix) {
                let (key, value) = guard.into_inner().map_err(unavailable)?;
                let delivery = codec::decode_delivery(&value)?;
                if let Some(due) = keys::due(&delivery) {
                    batch.remove(&s.due, due);
                }
                batch.remove(&s.deliveries, key.to_vec());
            }
            s.commit_durably(batch)
        })
        .await
    }

    async fn get_webhook(&self, id: &WebhookId) -> StorageResult<Option<Subscription>> {
        let key = id.as_str().as_bytes().to_vec();
        self.run(move |s| s.get_json(&s.webhooks, &key)).await
    }

    async fn all_webhooks(&self) -> StorageResult<Vec<Subscription>> {
        self.all_of(|s| &s.webhooks).await
    }

    async fn without_records(&self, deliveries: Vec<Delivery>) -> StorageResult<Vec<Delivery>> {
        self.run(move |s| {
            let mut out = Vec::with_capacity(deliveries.len());
            for delivery in deliveries {
                let key = keys::delivery(&delivery.webhook_id, &delivery.event_id);
                if !s.deliveries.contains_key(&key).map_err(unavailable)? {
                    out.push(delivery);
                }
            }
            Ok(out)
        })
        .await
    }

    async fn put_deliveries(
        &self,
        changes: Vec<(Option<Delivery>, Delivery)>,
        fanned_out: Vec<EventId>,
    ) -> StorageResult<()> {
        self.run(move |s| {
            let mut batch = s.durable_batch();
            let mut webhooks: HashMap<WebhookId, bool> = HashMap::new();
            for (previous, delivery) in changes {
                let exists = match webhooks.get(&delivery.webhook_id) {
                    Some(exists) => *exists,
                    None => {
                        let key = delivery.webhook_id.as_str().as_bytes();
                        let exists = s.webhooks.contains_key(key).map_err(unavailable)?;
                        webhooks.insert(delivery.webhook_id.clone(), exists);
                        exists
                    }
                };
                if !exists {
                    continue;
                }
                let (old_due, new_due) =
                    (previous.as_ref().and_then(keys::due), keys::due(&delivery));
                batch.insert(
                    &s.deliveries,
                    keys::delivery(&delivery.webhook_id, &delivery.event_id),
                    codec::encode_delivery(&delivery),
                );
                if old_due != new_due {
                    if let Some(old) = old_due {
                        batch.remove(&s.due, old);
                    }
                    if let Some(new) = new_due {
                        batch.insert(&s.due, new, Vec::<u8>::new());
                    }
                }
            }
            for id in fanned_out {
                batch.remove(&s.unfanned, id.as_str().as_bytes().to_vec());
            }
            s.commit_durably(batch)
        })
        .await
    }

    async fn count_due_deliveries(&self) -> StorageResult<u64> {
        self.run(|s| {
            let mut count = 0u64;
            for guard in s.due.iter() {
                guard.key().map_err(unavailable)?;
                count += 1;
            }
            Ok(count)
        })
        .await
    }

    async fn get_delivery(
        &self,
        webhook: &WebhookId,
        event: &EventId,
    ) -> StorageResult<Option<Delivery>> {
        let key = keys::delivery(webhook, event);
        self.run(move |s| s.get_decoded(&s.deliveries, &key, codec::decode_delivery))
            .await
    }

    async fn list_deliveries(
        &self,
        webhook: &WebhookId,
        page: PageRequest,
    ) -> StorageResult<Page<Delivery>> {
        let prefix = webhook.as_str().as_bytes().to_vec();
        self.run(move |s| {
            let snapshot = s.db.snapshot();
            let total = snapshot.prefix(&s.deliveries, &prefix).count() as u64;
            let mut items = Vec::with_capacity(page.limit as usize);
            for guard in snapshot
                .prefix(&s.deliveries, &prefix)
                .rev()
                .skip(page.offset as usize)
                .take(page.limit as usize)
            {
                let (_, value) = guard.into_inner().map_err(unavailable)?;
                items.push(codec::decode_delivery(&value)?);
            }
            Ok(Page { items, total })
        })
        .await
    }

    async fn due_deliveries(
        &self,
        until: DateTime<Utc>,
        limit: usize,
    ) -> StorageResult<Vec<Delivery>> {
        // Keys continue past the time, so the bound is the next microsecond,
        // exclusive; there is none past the end of time (no bound at all).
        let end = until
            .checked_add_signed(chrono::Duration::microseconds(1))
            .map(|end| keys::due_time(&end).to_vec());
        self.run(move |s| {
            let mut out = Vec::new();
            let range = match end {
                Some(end) => s.due.range(..end),
                None => s.due.range::<Vec<u8>, _>(..),
            };
            for guard in range.take(limit) {
                let due = guard.key().map_err(unavailable)?;
                let Some(key) = due.get(8..) else {
                    return Err(StorageError::Corrupt("short due key".into()));
                };
                if let Some(delivery) = s.get_decoded(&s.deliveries, key, codec::decode_delivery)? {
                    out.push(delivery);
                }
            }
            Ok(out)
        })
        .await
    }

    async fn prune_webhook_history(
        &self,
        before: DateTime<Utc>,
        limit: usize,
    ) -> StorageResult<u64> {
        // Ids sort by creation time, so "before" is a key bound.
        let floor = EventId::floor_at(before).as_str().as_bytes().to_vec();
        self.run(move |s| {
            let mut batch = s.durable_batch();
            let mut gone = 0u64;
            let mut still_pending = std::collections::HashSet::new();
            for webhook in s.webhooks.iter() {
                let webhook = webhook.key().map_err(unavailable)?.to_vec();
                let mut end = webhook.clone();
                end.extend_from_slice(&floor);
                for guard in s.deliveries.range(webhook..end) {
                    let (key, value) = guard.into_inner().map_err(unavailable)?;
                    let delivery = codec::decode_delivery(&value)?;
                    if delivery.status == DeliveryStatus::Pending {
                        still_pending.insert(delivery.event_id.as_str().as_bytes().to_vec());
                    } else if (gone as usize) < limit {
                        batch.remove(&s.deliveries, key.to_vec());
                        gone += 1;
                    }
                }
            }
            for guard in s.events.range(..floor) {
                if gone as usize >= limit {
                    break;
                }
                let id = guard.key().map_err(unavailable)?.to_vec();
                if still_pending.contains(&id)
                    || s.unfanned.contains_key(&id).map_err(unavailable)?
                {
                    continue;
                }
                batch.remove(&s.events, id);
                gone += 1;
            }
            if gone > 0 {
                s.commit_durably(batch)?;
            }
            Ok(gone)
        })
        .await
    }

    async fn parked_deliveries(&self, webhook: &WebhookId) -> StorageResult<Vec<Delivery>> {
        let prefix = webhook.as_str().as_bytes().to_vec();
        self.run(move |s| {
            let mut out = Vec::new();
            for guard in s.deliveries.prefix(&prefix) {
                let (_, value) = guard.into_inner().map_err(unavailable)?;
                let delivery = codec::decode_delivery(&value)?;
                if delivery.status == DeliveryStatus::Pending && delivery.next_attempt_at.is_none()
                {
                    out.push(delivery);
                }
            }
            Ok(out)
        })
        .await
    }
}

#[async_trait]
impl IdempotencyStore for EmbeddedStore {
    async fn get_idempotent(
        &self,
        account: &AccountId,
        key: &str,
    ) -> StorageResult<Option<StoredResponse>> {
        let key = keys::idempotency(account, key);
        self.run(move |s| s.get_json(&s.idempotency, &key)).await
    }

    async fn put_idempotent(&self, response: &StoredResponse) -> StorageResult<()> {
        let key = keys::idempotency(&response.account_id, &response.key);
        let value = encode(response)?;
        self.put_one(|s| &s.idempotency, key, value).await
    }

    async fn purge_idempotent(&self, before: DateTime<Utc>) -> StorageResult<u64> {
        self.run(move |s| {
            let mut batch = s.durable_batch();
            let mut purged = 0;
            for guard in s.idempotency.iter() {
                let (key, value) = guard.into_inner().map_err(unavailable)?;
                let stored: StoredResponse = decode(&value)?;
                if stored.created_at < before {
                    batch.remove(&s.idempotency, key.to_vec());
                    purged += 1;
                }
            }
            s.commit_durably(batch)?;
            Ok(purged)
        })
        .await
    }
}

#[async_trait]
impl Storage for EmbeddedStore {
    async fn ping(&self) -> StorageResult<()> {
        self.run(|s| match s.accounts.first_key_value() {
            Some(guard) => guard.key().map(|_| ()).map_err(unavailable),
            None => Ok(()),
        })
        .await
    }
}
