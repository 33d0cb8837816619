//! The HTTP boundary: envelopes, errors, extractors, authentication and views.

pub mod auth;
pub mod envelope;
pub mod error;
pub mod extract;
pub mod idempotency;
pub mod tracking_views;
pub mod views;
pub mod webhook_views;
