//! Application services: the operations handlers call, independent of HTTP.

pub mod accounts;
pub mod auth;
pub mod carriers;
pub mod detention;
pub mod device_feed;
pub mod device_ingest;
pub mod device_meter;
pub mod device_sightings;
pub mod devices;
pub mod eta_speeds;
pub mod idempotency;
pub mod ignored_positions;
pub mod live;
pub mod load_search;
pub mod loads;
pub mod rate_limits;
pub mod share_links;
pub mod stream_guard;
pub mod throttle;
pub mod tracking;
pub mod users;
pub mod webhooks;

use std::sync::Arc;

use actix_rt::Arbiter;

use crate::actors::registry::LoadRegistry;
use crate::clock::Clock;
use crate::storage::Storage;
use crate::telemetry::error_chain;

/// Everything a request handler may use; cheap to clone (all `Arc`s inside).
/// Wired together by `server::startup`.
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
    pub users: Arc<users::UserService>,
    pub devices: Arc<devices::DeviceService>,
    pub share_links: Arc<share_links::ShareLinkService>,
    /// The tracker listeners and the MQTT broker, once bound (for the
    /// dashboard's device settings).
    pub device_listeners: Arc<std::sync::OnceLock<device_feed::DeviceListeners>>,
    /// The load actors (for their count in `/metrics`).
    pub actors: Arc<LoadRegistry>,
    /// Keeps the webhook dispatcher's threads for as long as the services live.
    pub background: Arc<DispatchThread>,
}

/// The arbiter the webhook dispatcher runs on and the runtime its requests run
/// on, stopped with the services.
pub struct DispatchThread {
    pub arbiter: Arbiter,
    pub send_runtime: Option<tokio::runtime::Runtime>,
}

impl Drop for DispatchThread {
    fn drop(&mut self) {
        self.arbiter.stop();
        if let Some(runtime) = self.send_runtime.take() {
            // Dropped from async code too: do not wait for its threads.
            runtime.shutdown_background();
        }
    }
}

/// Every ten minutes: forget idle quota windows and full device buckets, expired idempotency answers,
/// webhook history past its retention and expired dashboard sessions. Holds the services weakly, so it ends once
/// they are dropped (and never keeps the store open past them).
pub async fn housekeeping(
    rate_limits: std::sync::Weak<rate_limits::RateLimiter>,
    idempotency: std::sync::Weak<idempotency::Idempotency>,
    webhooks: std::sync::Weak<webhooks::WebhookService>,
    users: std::sync::Weak<users::UserService>,
    devices: std::sync::Weak<devices::DeviceService>,
) {
    let mut every = tokio::time::interval(std::time::Duration::from_secs(600));
    every.tick().await;
    loop {
        every.tick().await;
        let (Some(rate_limits), Some(idempotency), Some(webhooks), Some(users), Some(devices)) = (
            rate_limits.upgrade(),
            idempotency.upgrade(),
            webhooks.upgrade(),
            users.upgrade(),
            devices.upgrade(),
        ) else {
            return;
        };
        rate_limits.forget_idle();
        devices.meter.forget_full();
        match idempotency.purge().await {
            Ok(0) => {}
            Ok(purged) => tracing::info!(purged, "expired idempotency keys forgotten"),
            Err(error) => {
                tracing::warn!(error = %error_chain(&error), "purging idempotency keys failed")
            }
        }
        match users.purge().await {
            Ok(0) => {}
            Ok(purged) => tracing::info!(purged, "expired dashboard sessions forgotten"),
            Err(error) => {
                tracing::warn!(error = %error_chain(&error), "purging dashboard sessions failed")
            }
        }
        match webhooks.prune_history().await {
            Ok(0) => {}
            Ok(pruned) => tracing::info!(pruned, "webhook history past retention forgotten"),
            Err(error) => {
                tracing::warn!(error = %error_chain(&error), "pruning webhook history failed")
            }
        }
    }
}
