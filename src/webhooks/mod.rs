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
