//! The instances sharing the store, found through their registry rows
//! (`Coordination::register_instance`): each instance writes its own every
//! [`REGISTER_EVERY`] with a TTL of [`REGISTRATION_TTL`], and reads everyone's
//! at the same time. A load's lease names its holder's instance; this says
//! where that instance's internal listener is.

use std::collections::HashMap;
use std::sync::{Arc, RwLock, Weak};
use std::time::Duration;

use crate::storage::{Storage, StorageResult};
use crate::telemetry::error_chain;

/// How often an instance says it is up, and re-reads who else is.
pub const REGISTER_EVERY: Duration = Duration::from_secs(5);
/// How long a registration lasts: two can fail before an instance drops out.
pub const REGISTRATION_TTL: Duration = Duration::from_secs(15);

pub struct Peers {
    me: Arc<str>,
    address: String,
    /// Instance name to internal address, this one included.
    known: RwLock<HashMap<String, String>>,
}

impl Peers {
    pub fn new(me: Arc<str>, address: String) -> Self {
        Peers {
            me,
            address,
            known: RwLock::default(),
        }
    }

    pub fn me(&self) -> &Arc<str> {
        &self.me
    }

    /// The other instances as last read, `(instance, address)`.
    pub fn others(&self) -> Vec<(String, String)> {
        self.known
            .read()
            .unwrap_or_else(|p| p.into_inner())
            .iter()
            .filter(|(instance, _)| **instance != *self.me)
            .map(|(i, a)| (i.clone(), a.clone()))
            .collect()
    }

    /// Where `instance` takes forwarded requests: as last read, or read now
    /// for an instance not seen yet (it may have started since).
    pub async fn address_of(&self, storage: &dyn Storage, instance: &str) -> Option<String> {
        if let Some(address) = self.cached(instance) {
            return Some(address);
        }
        if let Err(error) = self.read(storage).await {
            tracing::warn!(error = %error_chain(&error), "could not read the instance registry");
        }
        self.cached(instance)
    }

    fn cached(&self, instance: &str) -> Option<String> {
        self.known
            .read()
            .unwrap_or_else(|p| p.into_inner())
            .get(instance)
            .cloned()
    }

    /// Writes this instance's row, then reads every row.
    pub async fn register(&self, storage: &dyn Storage) -> StorageResult<()> {
        storage
            .register_instance(&self.me, &self.address, REGISTRATION_TTL)
            .await?;
        self.read(storage).await
    }

    async fn read(&self, storage: &dyn Storage) -> StorageResult<()> {
        let rows: HashMap<String, String> = storage
            .instances()
            .await?
            .into_iter()
            .filter(|(instance, address)| {
                let usable = is_host_and_port(address);
                if !usable {
                    tracing::warn!(%instance, address = %address.escape_debug(), "an instance registered an address that is not host:port; it is not used");
                }
                usable
            })
            .collect();
        *self.known.write().unwrap_or_else(|p| p.into_inner()) = rows;
        Ok(())
    }
}

/// Whether `address` is `host:port` and nothing more: a URL is built on it
/// (`http://{address}/…`), so a row with a path, user or query in it would
/// send forwarded requests, signed, somewhere else.
pub fn is_host_and_port(address: &str) -> bool {
    let Some((host, port)) = address.rsplit_once(':') else {
        return false;
    };
    let host_ok = match host.strip_prefix('[').and_then(|h| h.strip_suffix(']')) {
        Some(v6) => v6.parse::<std::net::Ipv6Addr>().is_ok(),
        None => {
            !host.is_empty()
                && host.len() <= 253
                && host
                    .bytes()
                    .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'-' | b'_'))
        }
    };
    host_ok && port.parse::<u16>().is_ok_and(|p| p > 0)
}

/// Registers every [`REGISTER_EVERY`] until the peers are dropped.
pub async fn keep_registered(peers: Weak<Peers>, storage: Arc<dyn Storage>) {
    let mut tick = tokio::time::interval(REGISTER_EVERY);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        tick.tick().await;
        let Some(peers) = peers.upgrade() else {
            return;
        };
        if let Err(error) = peers.register(storage.as_ref()).await {
            tracing::warn!(error = %error_chain(&error), "could not renew this instance's registration; retrying");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::is_host_and_port;

    #[test]
    fn only_host_and_port_is_an_address() {
        for good in ["10.0.0.7:9445", "freight-2.internal:9445", "[fd00::7]:9445"] {
            assert!(is_host_and_port(good), "{good}");
        }
        for bad in [
            "10.0.0.7",
            "10.0.0.7:0",
            "10.0.0.7:99999",
            "evil.example/x?:9445",
            "user@host:9445",
            "host:9445/path",
            "[not-v6]:9445",
            ":9445",
        ] {
            assert!(!is_host_and_port(bad), "{bad}");
        }
    }
}
