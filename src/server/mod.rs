//! Starting and running the service: its settings, the wiring of its parts
//! (`startup`), listeners, TLS and the admin endpoint.

pub mod admin;
pub mod admin_token;
pub mod admin_users;
pub mod bootstrap;
pub mod cluster;
pub mod data_dir;
pub mod idle_poll;
pub mod metrics_catalog;
pub mod mqtt;
pub mod observe;
pub mod plain_http;
pub mod secrets_key;
pub mod settings;
pub mod startup;
pub mod tls;
pub mod trackers;
pub mod unread_body;
mod wiring;
