//! The concurrent map of the request paths (resident actors, cached keys, quota
//! windows, live feeds): dashmap with foldhash instead of SipHash. Every request
//! looks up several of them by an id; SipHash made those lookups a visible share
//! of a request's cost. Each map draws its own random seed, and the keys are
//! ids this service validated, so collisions cannot be planned from outside.

pub type SharedMap<K, V> = dashmap::DashMap<K, V, foldhash::fast::RandomState>;

/// A map of one thread or one lock's holder, hashed like [`SharedMap`].
pub type FastHashMap<K, V> = std::collections::HashMap<K, V, foldhash::fast::RandomState>;
