//! Outbound webhooks: who may be called (SSRF rules), how a delivery is signed,
//! when it is retried, the HTTP client that sends it, the payload of each event
//! (built from `views`), and the dispatcher actor that fans events out and
//! records every attempt. Below the services; above storage.

pub mod attempt;
pub mod client;
pub mod directory;
pub mod dispatcher;
pub mod notifier;
pub mod payloads;
pub mod retry;
pub mod schedule;
pub mod signing;
pub mod ssrf;

/// Maps and sets keyed by the service's own ids, on the dispatcher's hot path:
/// a fast (randomly seeded) hasher rather than SipHash.
pub(crate) type FastMap<K, V> = std::collections::HashMap<K, V, foldhash::fast::RandomState>;
pub(crate) type FastSet<K> = std::collections::HashSet<K, foldhash::fast::RandomState>;
