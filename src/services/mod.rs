//! Application services: the operations handlers call, independent of HTTP.

pub mod accounts;
pub mod auth;
pub mod carriers;
pub mod idempotency;
pub mod loads;
pub mod rate_limits;
pub mod tracking;
pub mod webhooks;

use std::sync::Arc;

use actix::Actor;
use actix_rt::Arbiter;
use dashmap::DashMap;

use crate::actors::group_commit::GroupCommitter;
use crate::actors::load_actor::{ActorDeps, ActorSettings};
use crate::actors::registry::LoadRegistry;
use crate::clock::Clock;
use crate::storage::{Storage, StorageResult};
use crate::webhooks::client;
use crate::webhooks::directory::Directory;
use crate::webhooks::dispatcher::{DispatchSettings, Dispatcher};
use crate::webhooks::notifier::Notifier;

/// Everything a request handler may use; cheap to clone (all `Arc`s inside).
#[derive(Clone)]
pub struct Services {
    pub storage: Arc<dyn Storage>,
    pub clock: Clock,
    pub auth: Arc<auth::Authenticator>,
    pub rate_limits: Arc<rate_limits::RateLimiter>,
    pub idempotency: Arc<idempotency::Idempotency>,
    pub accounts: Arc<accounts::AccountService>,
    pub loads: Arc<loads::LoadService>,
    pub carriers: Arc<carriers::CarrierService>,
    pub tracking: Arc<tracking::TrackingService>,
    pub webhooks: Arc<webhooks::WebhookService>,
    /// The load actors (for their count in `/metrics`).
    pub actors: Arc<LoadRegistry>,
    _dispatch_thread: Arc<DispatchThread>,
}

/// The arbiter the webhook dispatcher runs on and the runtime its requests run
/// on, stopped with the services.
struct DispatchThread(Arbiter, Option<tokio::runtime::Runtime>);

impl Drop for DispatchThread {
    fn drop(&mut self) {
        self.0.stop();
        if let Some(runtime) = self.1.take() {
            // Dropped from async code too: do not wait for its threads.
            runtime.shutdown_background();
        }
    }
}

impl Services {
    /// Starts the GPS group committer, the load actors' arbiters and the webhook
    /// dispatcher; must run inside an actix System.
    pub async fn start(
        storage: Arc<dyn Storage>,
        clock: Clock,
        actors: ActorSettings,
        dispatch: DispatchSettings,
    ) -> StorageResult<Self> {
        let directory = Arc::new(Directory::new(storage.all_webhooks().await?));
        let notifier = Arc::new(Notifier::default());
        let http = client::build(dispatch.url_policy);
        let url_policy = dispatch.url_policy;
        let dispatch_thread = Arbiter::new();
        // Sending is most of a delivery's work: it may run on threads of its own,
        // so the dispatcher's one thread only keeps the books.
        let send_runtime = match dispatch.send_threads {
            0 => None,
            threads => Some(
                tokio::runtime::Builder::new_multi_thread()
                    .worker_threads(threads)
                    .thread_name("webhook-send")
                    .enable_all()
                    .build()
                    .map_err(|e| {
                        crate::storage::StorageError::Unavailable(format!(
                            "webhook sender threads: {e}"
                        ))
                    })?,
            ),
        };
        let sender = send_runtime.as_ref().map(|r| r.handle().clone());
        let dispatcher = {
            let (storage, directory, http, clock) = (
                storage.clone(),
                directory.clone(),
                http.clone(),
                clock.clone(),
            );
            let missed = notifier.missed_flag();
            Dispatcher::start_in_arbiter(&dispatch_thread.handle(), move |_| {
                Dispatcher::new(storage, directory, http, clock, dispatch, missed, sender)
            })
        };
        notifier.attach(dispatcher);

        let (committer, _task) = GroupCommitter::start(storage.clone());
        let registry = Arc::new(LoadRegistry::new(ActorDeps {
            storage: storage.clone(),
            notifier: notifier.clone(),
            clock: clock.clone(),
            settings: actors,
            residents: Arc::new(DashMap::new()),
        }));
        let auth = Arc::new(auth::Authenticator::new(storage.clone(), clock.clone()));
        let rate_limits = Arc::new(rate_limits::RateLimiter::new(clock.clone()));
        let idempotency = Arc::new(idempotency::Idempotency::new(
            storage.clone(),
            clock.clone(),
        ));
        let webhooks = Arc::new(webhooks::WebhookService::new(
            storage.clone(),
            directory.clone(),
            notifier.clone(),
            http.clone(),
            clock.clone(),
            url_policy,
        ));
        actix_rt::spawn(housekeeping(
            Arc::downgrade(&rate_limits),
            Arc::downgrade(&idempotency),
            Arc::downgrade(&webhooks),
        ));
        Ok(Services {
            accounts: Arc::new(accounts::AccountService::new(
                storage.clone(),
                clock.clone(),
                auth.clone(),
            )),
            loads: Arc::new(loads::LoadService::new(
                storage.clone(),
                clock.clone(),
                registry.clone(),
                notifier.clone(),
            )),
            carriers: Arc::new(carriers::CarrierService::new(
                storage.clone(),
                clock.clone(),
            )),
            tracking: Arc::new(tracking::TrackingService::new(
                storage.clone(),
                registry.clone(),
                committer,
                directory.clone(),
                notifier.clone(),
                clock.clone(),
            )),
            webhooks,
            auth,
            rate_limits,
            idempotency,
            actors: registry,
            storage,
            clock,
            _dispatch_thread: Arc::new(DispatchThread(dispatch_thread, send_runtime)),
        })
    }
}

/// Every ten minutes: forget idle quota windows, expired idempotency answers and
/// webhook history past its retention. Holds the services weakly, so it ends once
/// they are dropped (and never keeps the store open past them).
async fn housekeeping(
    rate_limits: std::sync::Weak<rate_limits::RateLimiter>,
    idempotency: std::sync::Weak<idempotency::Idempotency>,
    webhooks: std::sync::Weak<webhooks::WebhookService>,
) {
    let mut every = tokio::time::interval(std::time::Duration::from_secs(600));
    every.tick().await;
    loop {
        every.tick().await;
        let (Some(rate_limits), Some(idempotency), Some(webhooks)) = (
            rate_limits.upgrade(),
            idempotency.upgrade(),
            webhooks.upgrade(),
        ) else {
            return;
        };
        rate_limits.forget_idle();
        match idempotency.purge().await {
            Ok(0) => {}
            Ok(purged) => tracing::info!(purged, "expired idempotency keys forgotten"),
            Err(error) => tracing::warn!(%error, "purging idempotency keys failed"),
        }
        match webhooks.prune_history().await {
            Ok(0) => {}
            Ok(pruned) => tracing::info!(pruned, "webhook history past retention forgotten"),
            Err(error) => tracing::warn!(%error, "pruning webhook history failed"),
        }
    }
}
