//! The HTTPS API suite on the CQL backend: the modules of `tests/api` that
//! test the service rather than the embedded store, compiled again with
//! `spawn_app` starting each server over a keyspace of its own on the cluster
//! named by `FREIGHT_SCYLLA_URI` (`.ci/run` starts one Cassandra node). The
//! test bodies are the same files; `BACKEND` is the one difference.
//! `store_refusal` is this binary's own: a cluster can be made to refuse
//! writes for real (too few replicas), which the embedded store cannot; it
//! takes the MQTT path over this backend too (`mqtt` itself runs on the
//! embedded store only, as `crash`).
//!
//! Left out, each for its reason: the modules that test the embedded store
//! itself (`at_rest`, `crash`), those that drive the dashboard in a browser or
//! start servers of their own (`dashboard`, `browser`, `user_roles`,
//! `operator`, `operations`, `loadgen`, `schemathesis`, `openapi`), and the
//! transport checks (`transport`, `security`, `device_limits`, `auth`), which
//! do not reach the store's code. The multi-instance and fault tests on a
//! three-node cluster are in `tests/api` (`cql_cluster`, `cql_instances`).

/// The store every `spawn_app` starts a server over.
const BACKEND: backend::Backend = backend::Backend::Cql;

// Shared with `tests/api`, which uses the parts this binary does not.
#[allow(dead_code)]
#[path = "../api/backend.rs"]
mod backend;
#[allow(dead_code)]
#[path = "../api/broker.rs"]
mod broker;
#[allow(dead_code)]
#[path = "../common/cql_keyspace.rs"]
mod cql_keyspace;
#[allow(dead_code)]
#[path = "../api/event_stream.rs"]
mod event_stream;
#[allow(dead_code)]
#[path = "../api/helpers.rs"]
mod helpers;
#[allow(dead_code)]
#[path = "../api/receiver.rs"]
mod receiver;

#[path = "../api/carriers.rs"]
mod carriers;
#[path = "../api/corrections.rs"]
mod corrections;
#[path = "../api/devices.rs"]
mod devices;
#[path = "../api/idempotency.rs"]
mod idempotency;
#[path = "../api/loads.rs"]
mod loads;
#[path = "../api/multi_stop.rs"]
mod multi_stop;
#[path = "../api/rate_limits.rs"]
mod rate_limits;
#[path = "../api/share_links.rs"]
mod share_links;
#[path = "../api/stop_settings.rs"]
mod stop_settings;
#[path = "../api/stops.rs"]
mod stops;
mod store_refusal;
#[path = "../api/streams.rs"]
mod streams;
#[path = "../api/tenancy.rs"]
mod tenancy;
#[path = "../api/trackers.rs"]
mod trackers;
#[path = "../api/tracking.rs"]
mod tracking;
#[path = "../api/tracking_history.rs"]
mod tracking_history;
#[path = "../api/transitions.rs"]
mod transitions;
#[path = "../api/validation.rs"]
mod validation;
#[path = "../api/webhooks.rs"]
mod webhooks;
