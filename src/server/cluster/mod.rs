//! Several instances over one shared store (ScyllaDB) serving as one: any
//! instance takes any request. A load's actor runs on the instance that holds
//! the load's lease; another instance that gets a request for the load
//! forwards it there and relays the answer (`forward`), over the holder's
//! internal listener (`internal`), which takes only requests signed with the
//! cluster secret (`signing`). Instances find each other through registry
//! rows with a TTL (`peers`), and each account-wide event stream also carries
//! the fixes stored on the other instances (`live_taps`).
//!
//! With the embedded store (one process owns it) none of this runs: every
//! lease is this process's.

pub mod forward;
pub mod internal;
pub mod live_taps;
pub mod peers;
pub mod signing;
#[cfg(test)]
mod tests;

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use self::peers::Peers;
use self::signing::ClusterSecret;
use crate::storage::Storage;

/// A forwarded request that takes longer than this is answered 503.
const FORWARD_TIMEOUT: Duration = Duration::from_secs(30);
/// Connecting to another instance's internal listener.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(2);

/// How this instance joins the others (`freight serve --internal-listen …`).
#[derive(Debug, Clone)]
pub struct ClusterSettings {
    /// Where the internal listener binds (plain HTTP; a private network only).
    pub internal_listen: SocketAddr,
    /// Where the other instances reach it, `host:port`.
    pub internal_address: String,
    pub secret: ClusterSecret,
}

/// This instance among the others: who they are and how to reach them.
pub struct Cluster {
    peers: Arc<Peers>,
    secret: ClusterSecret,
    client: reqwest::Client,
    /// For taps, which last: no overall timeout.
    tap_client: reqwest::Client,
    storage: Arc<dyn Storage>,
}

impl Cluster {
    pub fn new(instance: Arc<str>, settings: &ClusterSettings, storage: Arc<dyn Storage>) -> Self {
        let builder = || {
            reqwest::Client::builder()
                .no_proxy()
                .connect_timeout(CONNECT_TIMEOUT)
                .redirect(reqwest::redirect::Policy::none())
                .user_agent(concat!("freight-cluster/", env!("CARGO_PKG_VERSION")))
        };
        let client = builder()
            .timeout(FORWARD_TIMEOUT)
            .build()
            .expect("the cluster client's settings are valid");
        let tap_client = builder()
            .build()
            .expect("the cluster client's settings are valid");
        Cluster {
            peers: Arc::new(Peers::new(instance, settings.internal_address.clone())),
            secret: settings.secret.clone(),
            client,
            tap_client,
            storage,
        }
    }

    pub fn peers(&self) -> &Arc<Peers> {
        &self.peers
    }

    /// Registers this instance now (before the listeners open, so the
    /// others can forward to it as soon as it holds a lease), then every few
    /// seconds until the cluster is dropped.
    pub async fn join(self: &Arc<Self>) -> anyhow::Result<()> {
        use anyhow::Context;
        self.peers
            .register(self.storage.as_ref())
            .await
            .context("registering this instance in the instance registry")?;
        actix_rt::spawn(peers::keep_registered(
            Arc::downgrade(&self.peers),
            self.storage.clone(),
        ));
        Ok(())
    }

    /// The unix time the signatures carry (the wall clock: both ends read
    /// their own, and [`signing::MAX_AGE_SECS`] allows for the difference).
    fn now() -> i64 {
        chrono::Utc::now().timestamp()
    }
}
