//! Outbound webhooks: who may be called (SSRF rules), how a delivery is signed,
//! when it is retried, and the HTTP client that sends it.

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
