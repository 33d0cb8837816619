//! The embedded backend: fjall, an LSM store in the data directory.
//!
//! Records are JSON, but for outbox events and delivery records, which have a
//! compact binary layout (`codec`). Every write is one atomic cross-keyspace
//! batch synced to the journal
//! (`PersistMode::SyncData`) before it returns, so an acknowledged write survives
//! a crash or power loss; the syncs are shared between writers (`group_sync`).
//! fjall calls block, so they run on tokio's blocking pool, never on an HTTP
//! worker thread.
//!
//! This file opens the store and holds what every aggregate shares; each
//! aggregate's trait is implemented in the file named for it.

mod accounts;
mod as_if_shared;
mod carriers;
mod claims;
mod codec;
#[cfg(test)]
mod compaction_stall;
mod coordination;
mod dashboard;
mod devices;
mod group_sync;
mod idempotency;
mod journal_pacer;
mod keys;
mod loads;
mod memtable_reaper;
mod recent_points;
mod share_links;
pub mod store_metrics;
mod tracking;
mod watcher_thread;
mod webhooks;

use std::path::{Path, PathBuf};
use std::sync::Arc;

use async_trait::async_trait;
use fjall::{Database, Keyspace, KeyspaceCreateOptions};
use serde::Serialize;
use serde::de::DeserializeOwned;

use super::secret_box::{SecretBox, SecretSealing};
use super::{Storage, StorageError, StorageResult};
use group_sync::GroupSync;
pub use tracking::LOOKUPS_METRIC;

/// Stripes of the locks that serialise updates of one account's counters.
const COUNT_LOCK_STRIPES: usize = 64;

struct Inner {
    /// Declared first, so dropped first: its thread holds keyspace handles,
    /// which keep the data directory locked.
    #[expect(dead_code, reason = "held for its thread, which its drop stops")]
    memtable_reaper: memtable_reaper::MemtableReaper,
    /// Likewise.
    #[expect(dead_code, reason = "held for its thread, which its drop stops")]
    journal_pacer: journal_pacer::JournalPacer,
    db: Database,
    group_sync: GroupSync,

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
    /// Serialise the read-modify-write of one account's counters. Striped by
    /// account: loads of different accounts rarely wait for each other.
    count_locks: Vec<std::sync::Mutex<()>>,

    carriers: Keyspace,
    /// `account ‖ mc number` → carrier id: uniqueness of MC numbers.
    carrier_mc: Keyspace,
    /// Serialises the read-check-write of carrier creation (rare; loads never take it).
    carrier_insert: std::sync::Mutex<()>,

    /// GPS time series, see [`keys::point`].
    points: Keyspace,
    /// The GPS time series of a data directory written in an older key layout
    /// (see [`keys::OlderPointLayout`]), those that hold any points: read
    /// alongside `points`, never written. Converting them at start would read
    /// the whole series, which start-up must not do.
    older_points: Vec<(Keyspace, keys::OlderPointLayout)>,

    /// The outbox: event id (time-ordered) → event.
    events: Keyspace,
    /// `load id ‖ sequence` → event id: a load's last sequence number.
    load_events: Keyspace,
    /// Event id → (): events committed and not yet fanned out to subscriptions.
    unfanned: Keyspace,
    webhooks: Keyspace,
    /// `webhook id ‖ event id` → delivery.
    deliveries: Keyspace,
    /// `next attempt (µs) ‖ webhook id ‖ event id` → (): the retry schedule.
    due: Keyspace,

    /// `account ‖ 0 ‖ idempotency key` → the first answer.
    idempotency: Keyspace,

    /// Dashboard users by id.
    users: Keyspace,
    /// Lower-case email → user id: one user per address.
    user_emails: Keyspace,
    /// `account ‖ user id` → (): an account's users.
    account_users: Keyspace,
    /// Token SHA-256 → session.
    sessions: Keyspace,
    /// `user id ‖ token SHA-256` → (): a user's sessions.
    user_sessions: Keyspace,
    /// Token SHA-256 → password link (an invitation, a reset).
    password_links: Keyspace,
    /// `account ‖ token SHA-256` → (): an account's pending invitations.
    account_invitations: Keyspace,
    /// Devices by id.
    devices: Keyspace,
    /// `account ‖ device id` → (): an account's devices.
    account_devices: Keyspace,
    /// Load id → its attachment (the load's one device).
    load_devices: Keyspace,
    /// Load id → its stop progress (JSON), written with the point that changed it.
    load_stops: Keyspace,
    /// Load id → its set detention clock: stop code ‖ due (µs, big-endian).
    stop_timers: Keyspace,
    /// Token SHA-256 → share link (JSON).
    share_links: Keyspace,
    /// `load ‖ link id` → token SHA-256: a load's share links.
    load_share_links: Keyspace,
    /// `device id ‖ load id` → (): a device's loads.
    device_loads: Keyspace,
    /// Claims on names (`claims.rs`): `account ‖ 0 ‖ reference` (a load's)
    /// and `0 ‖ identifier` (a device's) → holder id ‖ claimed at (µs, big-endian).
    load_references: Keyspace,
    /// Serialises the check-then-swap of a claim.
    reference_claims: std::sync::Mutex<()>,
    /// Serialises the read-then-move of a load's attachment (rare).
    attachments: std::sync::Mutex<()>,
    /// Serialises the check-then-insert of a user's email, a user's removal,
    /// and the take of a password link (all rare).
    user_insert: std::sync::Mutex<()>,
    /// Per load, the stored point times this process knows of, so that most
    /// fixes are told new or duplicate without a lookup. Also orders the
    /// checks and writes of point batches.
    recent_points: std::sync::Mutex<recent_points::RecentPoints>,
}

#[derive(Clone)]
pub struct EmbeddedStore {
    shared: Arc<Shared>,
    /// How subscription secrets are kept (see `secret_box`).
    secrets: SecretSealing,
    /// Set by tests only: role leases, as a store shared by several instances
    /// keeps them (see `as_if_shared`); `None`, a store one process owns.
    as_if_shared: Option<Arc<as_if_shared::SharedForTests>>,
}

/// The open store, and what it takes to open it again. After a write fails
/// (a full disk, an I/O error), fjall refuses every later write ("poisoned")
/// until it is opened again, which replays its journal. That is done here, in
/// the background, so that the service recovers by itself once the cause is
/// gone, without a restart: reads go on from the poisoned store (writes answer
/// "unavailable") until a probe write of `SPACE_PROBE_BYTES` succeeds, then the
/// store is closed and opened again (a moment in which everything answers
/// "unavailable").
struct Shared {
    path: PathBuf,
    /// `None` while the store is being opened again.
    current: std::sync::RwLock<Option<Arc<Inner>>>,
    /// A reopening is under way (started once per failure).
    recovering: std::sync::atomic::AtomicBool,
    /// What the store did, counted across reopenings.
    totals: store_metrics::Totals,
}

/// Free space that must be writable again before the store is reopened.
const SPACE_PROBE_BYTES: usize = 4 << 20;

/// The store is being opened again after a write failure.
#[derive(Debug, thiserror::Error)]
#[error("the store is being reopened after a write failure (a full disk?); retry shortly")]
struct Reopening;

/// The journal could not be replayed: it is damaged in a way fjall does not
/// repair by itself (a torn last write it does; a bad checksum inside, not).
#[derive(Debug, thiserror::Error)]
#[error(
    "the store's journal in {dir} is damaged ({detail}) and the store cannot be opened as it \
     is; restore the data directory from a backup (docs/operations.md, Guarantees), keeping this one \
     aside for analysis"
)]
pub struct JournalDamaged {
    dir: String,
    detail: String,
}

/// Another process has the data directory open.
#[derive(Debug, thiserror::Error)]
#[error(
    "another freight process is using the data directory {0} (only one process can); \
     stop it, or give this one another --data-dir"
)]
pub struct DirectoryInUse(String);

fn unavailable(e: impl std::error::Error + Send + Sync + 'static) -> StorageError {
    StorageError::unavailable(e)
}

fn encode<T: Serialize>(value: &T) -> StorageResult<Vec<u8>> {
    serde_json::to_vec(value).map_err(|e| StorageError::undecodable("a record to write", e))
}

fn decode<T: DeserializeOwned>(bytes: &[u8]) -> StorageResult<T> {
    serde_json::from_slice(bytes).map_err(|e| StorageError::undecodable("a JSON record", e))
}

impl EmbeddedStore {
    pub async fn open(path: &Path) -> StorageResult<Self> {
        let path = path.to_owned();
        crate::cpu_placement::spawn_blocking(move || Self::open_blocking(&path))
            .await
            .map_err(unavailable)?
    }

    /// The store, sealing webhook secrets with `secrets` from now on (and
    /// opening those it reads with it).
    pub fn sealing_secrets_with(mut self, secrets: Arc<SecretBox>) -> Self {
        self.secrets = SecretSealing::with(secrets);
        self
    }

    fn open_blocking(path: &Path) -> StorageResult<Self> {
        let inner = open_inner(path)?;
        Ok(Self {
            shared: Arc::new(Shared {
                path: path.to_owned(),
                current: std::sync::RwLock::new(Some(Arc::new(inner))),
                recovering: std::sync::atomic::AtomicBool::new(false),
                totals: Default::default(),
            }),
            secrets: SecretSealing::default(),
            as_if_shared: None,
        })
    }
}

/// Opens the fjall database at `path` and its keyspaces (replaying the journal).
fn open_inner(path: &Path) -> StorageResult<Inner> {
    std::fs::create_dir_all(path).map_err(unavailable)?;
    let dir = || path.parent().unwrap_or(path).display().to_string();
    let db = Database::builder(path)
        .max_journaling_size(journal_pacer::JOURNAL_LIMIT)
        .open()
        .map_err(|error| match error {
            fjall::Error::Locked => unavailable(DirectoryInUse(dir())),
            fjall::Error::JournalRecovery(detail) => unavailable(JournalDamaged {
                dir: dir(),
                detail: format!("{detail:?}"),
            }),
            other => unavailable(other),
        })?;
    let keyspace = |name: &str| db.keyspace(name, KeyspaceCreateOptions::default);
    let inner = Inner {
        accounts: keyspace("accounts").map_err(unavailable)?,
        api_keys: keyspace("api_keys").map_err(unavailable)?,
        account_keys: keyspace("account_keys").map_err(unavailable)?,
        loads: keyspace("loads").map_err(unavailable)?,
        load_index: keyspace("load_index").map_err(unavailable)?,
        counts: keyspace("counts").map_err(unavailable)?,
        group_sync: GroupSync::default(),
        count_locks: (0..COUNT_LOCK_STRIPES)
            .map(|_| std::sync::Mutex::new(()))
            .collect(),
        carriers: keyspace("carriers").map_err(unavailable)?,
        points: keyspace(POINTS).map_err(unavailable)?,
        older_points: older_points(&db)?,
        events: keyspace("events").map_err(unavailable)?,
        load_events: keyspace("load_events").map_err(unavailable)?,
        webhooks: keyspace("webhooks").map_err(unavailable)?,
        deliveries: keyspace("deliveries").map_err(unavailable)?,
        due: keyspace("due").map_err(unavailable)?,
        unfanned: keyspace("unfanned").map_err(unavailable)?,
        carrier_mc: keyspace("carrier_mc").map_err(unavailable)?,
        idempotency: keyspace("idempotency").map_err(unavailable)?,
        users: keyspace("users").map_err(unavailable)?,
        user_emails: keyspace("user_emails").map_err(unavailable)?,
        account_users: keyspace("account_users").map_err(unavailable)?,
        sessions: keyspace("sessions").map_err(unavailable)?,
        user_sessions: keyspace("user_sessions").map_err(unavailable)?,
        password_links: keyspace("password_links").map_err(unavailable)?,
        account_invitations: keyspace("account_invitations").map_err(unavailable)?,
        devices: keyspace("devices").map_err(unavailable)?,
        account_devices: keyspace("account_devices").map_err(unavailable)?,
        load_devices: keyspace("load_devices").map_err(unavailable)?,
        load_stops: keyspace("load_stops").map_err(unavailable)?,
        stop_timers: keyspace("stop_timers").map_err(unavailable)?,
        share_links: keyspace("share_links").map_err(unavailable)?,
        load_share_links: keyspace("load_share_links").map_err(unavailable)?,
        device_loads: keyspace("device_loads").map_err(unavailable)?,
        load_references: keyspace("load_references").map_err(unavailable)?,
        reference_claims: std::sync::Mutex::new(()),
        attachments: std::sync::Mutex::new(()),
        user_insert: std::sync::Mutex::new(()),
        recent_points: std::sync::Mutex::default(),
        carrier_insert: std::sync::Mutex::new(()),
        // Every keyspace is open by now: the reaper watches them all.
        memtable_reaper: memtable_reaper::MemtableReaper::start(&db).map_err(unavailable)?,
        journal_pacer: journal_pacer::JournalPacer::start(&db, POINTS).map_err(unavailable)?,
        db,
    };
    Ok(inner)
}

/// The keyspaces of older point layouts this data directory has points in.
fn older_points(db: &Database) -> StorageResult<Vec<(Keyspace, keys::OlderPointLayout)>> {
    let mut found = Vec::new();
    for layout in keys::OlderPointLayout::ALL {
        if !db.keyspace_exists(layout.keyspace()) {
            continue;
        }
        let points = db
            .keyspace(layout.keyspace(), KeyspaceCreateOptions::default)
            .map_err(unavailable)?;
        if points.first_key_value().is_some() {
            found.push((points, layout));
        }
    }
    Ok(found)
}

/// The keyspace name of the GPS time series (see [`keys::point`]).
const POINTS: &str = "gps_track";

impl EmbeddedStore {
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

    /// Runs blocking store work off the async threads (inline on a thread
    /// marked as one that may block: see `storage::mark_thread_may_block`).
    async fn run<T, F>(&self, work: F) -> StorageResult<T>
    where
        T: Send + 'static,
        F: FnOnce(&Inner) -> StorageResult<T> + Send + 'static,
    {
        let inner = self.shared.current()?;
        if crate::storage::thread_may_block() {
            let done = work(&inner);
            return self.shared.release(inner, done);
        }
        let shared = self.shared.clone();
        crate::cpu_placement::spawn_blocking(move || {
            let done = work(&inner);
            shared.release(inner, done)
        })
        .await
        .map_err(unavailable)?
    }
}

impl Shared {
    /// The open store, or why there is none right now.
    fn current(&self) -> StorageResult<Arc<Inner>> {
        self.current
            .read()
            .unwrap_or_else(|p| p.into_inner())
            .clone()
            .ok_or_else(|| unavailable(Reopening))
    }

    /// Ends work done on `inner`: lets go of the store first (a reopening
    /// waits for every holder), then checks what the work found.
    fn release<T>(self: &Arc<Self>, inner: Arc<Inner>, done: StorageResult<T>) -> StorageResult<T> {
        drop(inner);
        self.check(&done);
        done
    }

    /// After work: if it found the store poisoned, starts reopening it.
    fn check<T>(self: &Arc<Self>, done: &StorageResult<T>) {
        let Err(StorageError::Unavailable(source)) = done else {
            return;
        };
        if !matches!(
            source.downcast_ref::<fjall::Error>(),
            Some(fjall::Error::Poisoned)
        ) {
            return;
        }
        if self
            .recovering
            .swap(true, std::sync::atomic::Ordering::SeqCst)
        {
            return;
        }
        tracing::error!(path = %self.path.display(), "a write failed and the store refuses writes until it is reopened; reads go on, and it is reopened once the disk takes writes again");
        let shared = self.clone();
        let spawned = std::thread::Builder::new()
            .name("freight-store-reopen".into())
            .spawn(move || shared.reopen());
        if let Err(error) = spawned {
            tracing::error!(error = %error, "could not start reopening the store; restart the service");
        }
    }

    /// Waits until the disk takes a probe write, then closes the store (once
    /// the work running on it is done) and opens it again, retrying every
    /// second until that succeeds.
    fn reopen(&self) {
        // Next to the store (the data directory), on the same filesystem.
        let probe = self
            .path
            .parent()
            .unwrap_or(&self.path)
            .join(".freight-space-probe");
        loop {
            std::thread::sleep(std::time::Duration::from_secs(1));
            let written = std::fs::File::create(&probe).and_then(|mut file| {
                use std::io::Write;
                file.write_all(&vec![0u8; SPACE_PROBE_BYTES])?;
                file.sync_all()
            });
            let _ = std::fs::remove_file(&probe);
            if written.is_ok() {
                break;
            }
        }
        let poisoned = self
            .current
            .write()
            .unwrap_or_else(|p| p.into_inner())
            .take();
        if let Some(poisoned) = poisoned {
            // Work already running on it holds it; nothing new can take it.
            while Arc::strong_count(&poisoned) > 1 {
                std::thread::sleep(std::time::Duration::from_millis(5));
            }
        }
        loop {
            match open_inner(&self.path) {
                Ok(inner) => {
                    *self.current.write().unwrap_or_else(|p| p.into_inner()) =
                        Some(Arc::new(inner));
                    self.recovering
                        .store(false, std::sync::atomic::Ordering::SeqCst);
                    tracing::info!(path = %self.path.display(), "the store is open again and takes writes");
                    return;
                }
                Err(error) => {
                    tracing::warn!(error = %crate::telemetry::error_chain(&error), "reopening the store failed; retrying in 1 s");
                    std::thread::sleep(std::time::Duration::from_secs(1));
                }
            }
        }
    }
}

impl Inner {
    /// The record under `key`, if any, read with `decode`.
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

    /// The JSON record under `key`, if any.
    fn get_json<T: DeserializeOwned>(
        &self,
        keyspace: &Keyspace,
        key: &[u8],
    ) -> StorageResult<Option<T>> {
        self.get_decoded(keyspace, key, decode)
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

    fn report_metrics(&self) {
        if let Ok(inner) = self.shared.current() {
            self.shared.totals.report(&inner.db);
        }
    }
}

impl EmbeddedStore {
    /// The leases a test's shared store keeps; `None` outside tests.
    fn shared_for_tests(&self) -> Option<&as_if_shared::SharedForTests> {
        self.as_if_shared.as_deref()
    }
}
