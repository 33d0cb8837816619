//! The HTTP boundary: request inputs, envelopes, errors, extractors,
//! authentication, idempotency and the views only the API shows.

pub mod account_views;
pub mod auth;
pub mod body;
pub mod client_address;
pub mod envelope;
pub mod error;
pub mod extract;
pub mod forward;
pub mod idempotency;
pub mod input;
pub mod origin;
pub mod path;
pub mod webhook_views;
