//! Persistence, as one trait per aggregate: [`AccountStore`], [`LoadStore`],
//! [`CarrierStore`], [`TrackingStore`], [`WebhookStore`], [`IdempotencyStore`],
//! [`DashboardStore`] and [`DeviceStore`].
//! [`Storage`] is all of them together and is the handle everyone holds
//! (`Arc<dyn Storage>`): their methods are callable on `dyn Storage` with only
//! `Storage` in scope. Code holding a concrete backend (`EmbeddedStore`) brings
//! into scope the sub-traits whose methods it calls.
//!
//! Two backends implement them, a file per aggregate: the embedded one
//! ([`embedded`], fjall in the data directory, the default) and ScyllaDB
//! ([`scylla`], for deployments that outgrow one machine). What every backend must do is written
//! once, as the conformance suite in `tests/storage/conformance` (a file per
//! aggregate), which `tests/storage` runs against each backend; it is not part
//! of the library.
//!
//! Every method is a complete, atomic unit of durability: when it returns `Ok`, the
//! change survives a crash. Handlers answer 2xx only after that.

use std::path::PathBuf;
use std::sync::Arc;

use async_trait::async_trait;

mod accounts;
mod carriers;
pub mod claims;
mod coordination;
mod dashboard;
mod devices;
pub mod embedded;
mod idempotency;
pub mod identifiers;
mod loads;
pub mod references;
pub mod scylla;
pub mod secret_box;
mod share_links;
mod tracking;
mod webhooks;

pub use accounts::AccountStore;
pub use carriers::{CarrierInsert, CarrierStore, DeletingMark};
pub use coordination::Coordination;
pub use dashboard::{DashboardStore, UserInsert};
pub use devices::DeviceStore;
pub use idempotency::IdempotencyStore;
pub use identifiers::{IdentifierClaim, IdentifierStore};
pub use loads::{LoadFilter, LoadStore, Page, PageRequest};
pub use references::{ReferenceClaim, ReferenceStore};
pub use share_links::ShareLinkStore;
pub use tracking::{PointRange, StopTimerEntry, TrackingStore};
pub use webhooks::WebhookStore;

thread_local! {
    static MAY_BLOCK: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

/// Marks the calling thread as one that exists to wait on storage (the GPS
/// committer's): a backend whose calls block may do their work inline there
/// instead of handing it to a blocking pool, which costs two thread hops per call.
pub fn mark_thread_may_block() {
    MAY_BLOCK.set(true);
}

/// Whether the calling thread was marked by [`mark_thread_may_block`].
pub(crate) fn thread_may_block() -> bool {
    MAY_BLOCK.get()
}

/// The error under a storage failure, shared so that the failure stays `Clone`:
/// one failed group commit answers every request that was in it.
pub type Source = std::sync::Arc<dyn std::error::Error + Send + Sync>;

/// A request refused before it was sent (see [`StorageError::refused_before_sending`]).
#[derive(Debug, thiserror::Error)]
#[error(transparent)]
pub struct NotSent(Box<dyn std::error::Error + Send + Sync>);

/// Storage failures keep what caused them as their `source()`, so a log line
/// (`telemetry::error_chain`) shows the whole chain down to the I/O error.
#[derive(Debug, Clone, thiserror::Error)]
pub enum StorageError {
    /// The store could not read or write (disk full, I/O error, node down).
    #[error("storage is unavailable")]
    Unavailable(#[source] Source),
    /// A stored record could not be decoded: a bug or on-disk damage, never client input.
    #[error("stored record is unreadable: {what}")]
    Corrupt {
        what: String,
        #[source]
        source: Option<Source>,
    },
}

impl StorageError {
    pub fn unavailable(error: impl std::error::Error + Send + Sync + 'static) -> Self {
        StorageError::Unavailable(std::sync::Arc::new(error))
    }

    /// Unavailable, and refused before anything was sent to the store (a
    /// clock too far off the cluster's): the write certainly did not apply,
    /// so even a write that is not idempotent may be sent again.
    pub fn refused_before_sending(error: impl std::error::Error + Send + Sync + 'static) -> Self {
        StorageError::Unavailable(std::sync::Arc::new(NotSent(Box::new(error))))
    }

    /// Whether the store never saw the request ([`Self::refused_before_sending`]).
    pub fn was_not_sent(&self) -> bool {
        matches!(self, StorageError::Unavailable(source) if source.is::<NotSent>())
    }

    /// A record that is not what it should be; `what` says which and how.
    pub fn corrupt(what: impl Into<String>) -> Self {
        StorageError::Corrupt {
            what: what.into(),
            source: None,
        }
    }

    /// A record that could not be decoded, and the decoder's error.
    pub fn undecodable(
        what: impl Into<String>,
        error: impl std::error::Error + Send + Sync + 'static,
    ) -> Self {
        StorageError::Corrupt {
            what: what.into(),
            source: Some(std::sync::Arc::new(error)),
        }
    }
}

pub type StorageResult<T> = Result<T, StorageError>;

/// A whole backend: every aggregate's store, and a health check.
/// The lease owner name of a load actor incarnation: `<instance>#<n>`. Per
/// incarnation, so that a stopping actor's release cannot remove the lease of
/// the actor that replaced it on the same instance.
pub fn lease_owner(instance: &str, incarnation: u64) -> String {
    format!("{instance}#{incarnation}")
}

/// The instance and incarnation of a lease owner named by [`lease_owner`].
pub fn lease_owner_parts(owner: &str) -> Option<(&str, u64)> {
    let (instance, n) = owner.rsplit_once('#')?;
    Some((instance, n.parse().ok()?))
}

/// Whether `owner` is a later incarnation on the instance that `holder` is on:
/// it may take the lease over at once.
pub fn lease_supersedes(owner: &str, holder: &str) -> bool {
    match (lease_owner_parts(owner), lease_owner_parts(holder)) {
        (Some((mine, n)), Some((theirs, m))) => mine == theirs && n > m,
        _ => false,
    }
}

#[async_trait]
pub trait Storage:
    AccountStore
    + LoadStore
    + CarrierStore
    + TrackingStore
    + WebhookStore
    + IdempotencyStore
    + DashboardStore
    + DeviceStore
    + ShareLinkStore
    + ReferenceStore
    + IdentifierStore
    + Coordination
    + Send
    + Sync
    + 'static
{
    /// A cheap round trip that proves the store answers (for `/ready`).
    async fn ping(&self) -> StorageResult<()>;

    /// Sets the backend's own metrics (flushes, compactions, stalls), read
    /// when `/metrics` is scraped; a backend with none leaves it empty.
    fn report_metrics(&self) {}
}

/// Which backend to open, from configuration.
#[derive(Debug, Clone)]
pub enum StorageConfig {
    Embedded { data_dir: PathBuf },
    Scylla(scylla::ScyllaConfig),
}

/// The one place that turns configuration into a backend, which seals
/// webhook secrets with `secrets` (see [`secret_box`]).
pub async fn open(
    config: &StorageConfig,
    secrets: Arc<secret_box::SecretBox>,
) -> anyhow::Result<Arc<dyn Storage>> {
    match config {
        StorageConfig::Embedded { data_dir } => {
            let store = embedded::EmbeddedStore::open(&data_dir.join("store")).await?;
            Ok(Arc::new(store.sealing_secrets_with(secrets)))
        }
        StorageConfig::Scylla(config) => {
            // Boxed: opening a cluster is a large future, and inline it would
            // make every caller's future (the server's start) that large,
            // whichever backend it opens: debug builds overflowed a test
            // thread's stack starting a server.
            let store = Box::pin(scylla::ScyllaStore::open(config)).await?;
            Ok(Arc::new(store.sealing_secrets_with(secrets)))
        }
    }
}
