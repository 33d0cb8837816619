//! Integration tests: one binary, the real server over HTTPS per test.

mod auth;
mod carriers;
mod crash;
mod helpers;
mod idempotency;
mod loads;
mod openapi;
mod operations;
mod operator;
mod rate_limits;
mod receiver;
mod streams;
mod tracking;
mod transitions;
mod transport;
mod validation;
mod webhooks;
