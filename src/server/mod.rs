//! Starting and running the service: listeners, TLS, the admin endpoint.

pub mod admin;
pub mod admin_token;
pub mod bootstrap;
pub mod observe;
pub mod plain_http;
pub mod startup;
pub mod tls;
