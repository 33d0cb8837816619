//! Freight load and GPS tracking service.
//!
//! `main.rs` only parses the command line; everything that runs lives here so
//! that integration tests start the very same server.

// Lets unit tests include fixtures written for the test crates, which name the
// crate `freight` (`domain::fixtures`).
#[cfg(test)]
extern crate self as freight;

pub mod actors;
pub mod api;
pub mod cli;
pub mod clock;
pub mod cpu_placement;
pub mod dashboard;
pub mod domain;
pub mod geo;
pub mod ingest;
pub mod loadgen;
pub mod openapi;
pub mod routes;
pub mod server;
pub mod services;
pub mod shared_map;
pub mod storage;
pub mod telemetry;
pub mod unavailable;
pub mod views;
pub mod webhooks;
