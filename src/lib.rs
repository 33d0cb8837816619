//! Freight load and GPS tracking service.
//!
//! `main.rs` only parses the command line; everything that runs lives here so
//! that integration tests start the very same server.
//!
//! # Layout
//!
//! Floors, bottom first (each imports only those below it; docs/design.md,
//! checked by `tests/api/layering.rs`): `domain`, `ingest`, `views`,
//! `storage`, `webhooks`, `actors`, `services`, `api`, `openapi`/`routes`,
//! `dashboard`, `server`, `cli`; leaf utilities (`clock`, `geo`, `telemetry`,
//! …) from anywhere.
//!
//! Where to add…
//! - **a device protocol**: a parser in `ingest/` into `DevicePosition`, a
//!   route in `routes/ingest.rs`, a `FixSource` in `domain/tracking.rs`; the
//!   write path (`services/device_ingest.rs`) is shared.
//! - **a rule on a load's fixes** (a milestone, an alert): pure logic in
//!   `domain/` (as `domain/stops.rs`), run at admission in
//!   `actors/load_state.rs` (`Tracked::watch_stops`); what it must store rides
//!   on the fix (`TrackingPoint::stops`) into the same durable batch.
//! - **a table**: the aggregate's trait in `storage/<aggregate>.rs`, one file
//!   per backend (`storage/embedded/`, `storage/scylla/` with a new
//!   `cql/NNN_*.cql`, never an edit of an applied one), and a conformance
//!   check in `tests/storage/conformance/`.
//! - **an event type**: `domain/event.rs`, its payload in
//!   `webhooks/payloads.rs`, and the docs' event list.

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
