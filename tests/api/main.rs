//! Integration tests: one binary, the real server over HTTPS per test.

mod at_rest;
mod auth;
mod browser;
mod carriers;
mod crash;
mod dashboard;
mod devices;
mod helpers;
mod idempotency;
mod layering;
mod loadgen;
mod loads;
mod openapi;
mod operations;
mod operator;
mod rate_limits;
mod receiver;
mod schemathesis;
mod security;
mod streams;
mod tenancy;
mod tracking;
mod transitions;
mod transport;
mod validation;
mod webhooks;
