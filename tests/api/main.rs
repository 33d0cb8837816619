//! Integration tests: the real server over HTTPS per test, over the embedded
//! store (`tests/api_cql` runs the modules that do not test the embedded
//! store itself again over a CQL cluster).

/// The store every `spawn_app` starts a server over.
const BACKEND: backend::Backend = backend::Backend::Embedded;

mod at_rest;
mod auth;
// The CQL variant is this binary's sibling's.
#[allow(dead_code)]
mod backend;
mod broker;
mod browser;
mod carriers;
mod corrections;
mod cql_as_one;
mod cql_carrier_race;
mod cql_cluster;
mod cql_instances;
#[allow(dead_code)]
#[path = "../common/cql_keyspace.rs"]
mod cql_keyspace;
mod crash;
mod dashboard;
mod device_limits;
mod devices;
mod event_stream;
mod helpers;
mod idempotency;
mod layering;
mod loadgen;
mod loads;
mod mqtt;
mod multi_stop;
mod openapi;
mod operations;
mod operator;
mod rate_limits;
mod receiver;
mod schemathesis;
mod security;
mod share_links;
mod stop_settings;
mod stops;
mod streams;
mod tenancy;
mod text_trackers;
mod tracker_tls;
mod trackers;
mod tracking;
mod tracking_history;
mod transitions;
mod transport;
mod user_roles;
mod validation;
mod webhooks;
