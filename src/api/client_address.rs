//! Who a request came from, for throttling and the logs.

use actix_web::{HttpRequest, web};

use super::auth::TransportPolicy;

/// The client's address, for throttling: the peer, or behind a TLS proxy the
/// address the proxy reports, or on the internal listener the address the
/// instance that forwarded the request saw.
pub fn client_address(req: &HttpRequest) -> String {
    // Forwarded by another instance: the address it saw, signed.
    if let Some(client) = super::forward::forwarded_value(req, super::forward::CLIENT_HEADER) {
        return client.to_owned();
    }
    let behind_proxy = req
        .app_data::<web::Data<TransportPolicy>>()
        .is_some_and(|p| matches!(***p, TransportPolicy::TrustForwardedProto));
    // Behind a proxy: the last X-Forwarded-For entry, the one the proxy itself
    // appended (the ones before it are whatever the client chose to send).
    let forwarded = behind_proxy
        .then(|| {
            req.headers()
                .get_all("x-forwarded-for")
                .filter_map(|v| v.to_str().ok())
                .flat_map(|v| v.split(','))
                .map(str::trim)
                .filter(|a| !a.is_empty())
                .last()
                .map(str::to_owned)
        })
        .flatten();
    // The port changes per connection; the address is what an attacker has.
    forwarded
        .or_else(|| req.peer_addr().map(|a| a.ip().to_string()))
        .unwrap_or_else(|| "unknown".to_owned())
}
