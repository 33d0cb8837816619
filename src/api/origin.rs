//! Where the links the service hands out point (share links, a device's
//! ingest URLs, invitations and password links): `--public-url` when the
//! operator set it; otherwise the address the client reached.
//!
//! Forwarding headers (`Forwarded`, `X-Forwarded-Host`) are believed only
//! behind a TLS-terminating proxy (`--behind-tls-proxy`), which sets them, as
//! `X-Forwarded-Proto` is. On the direct TLS listener anyone may send them, and
//! a link built from them would point wherever the sender liked; there only
//! the `Host` header counts, and only when it is a well-formed host name.

use std::net::SocketAddr;

use actix_web::http::header;
use actix_web::{HttpRequest, web};

/// How this instance's public origin is found (app data of the API listener).
#[derive(Debug, Clone)]
pub struct PublicOrigin {
    /// `--public-url`, without a trailing slash.
    configured: Option<String>,
    /// Behind a TLS-terminating proxy: its forwarding headers are believed.
    behind_proxy: bool,
    /// The listener's own address, when the request names no usable host.
    listener: SocketAddr,
    /// Clients see a certificate they can trust (`--tls-cert`, or a TLS
    /// proxy's), not the generated self-signed one.
    trusted_certificate: bool,
}

impl PublicOrigin {
    pub fn new(configured: Option<&str>, behind_proxy: bool, listener: SocketAddr) -> Self {
        PublicOrigin {
            configured: configured.map(|url| url.trim_end_matches('/').to_owned()),
            behind_proxy,
            listener,
            trusted_certificate: behind_proxy,
        }
    }

    /// Says that clients are shown a certificate of the operator's (`--tls-cert`).
    pub fn with_trusted_certificate(mut self, trusted: bool) -> Self {
        self.trusted_certificate |= trusted;
        self
    }

    /// What a phone lacks to post here, for the Devices page: a host name it
    /// can reach (`--public-url`) and a certificate it trusts. Empty: nothing.
    pub fn what_phones_lack(&self) -> Vec<&'static str> {
        let mut lacking = Vec::new();
        if self.configured.is_none() {
            lacking.push(
                "no --public-url is set, so the settings name the address this page was \
                 opened on, which a phone may not reach",
            );
        }
        if !self.trusted_certificate {
            lacking.push(
                "the certificate is the generated self-signed one, which phone apps refuse: \
                 give --tls-cert and --tls-key, or serve behind a TLS-terminating proxy",
            );
        }
        lacking
    }

    /// The origin links start with when no request names one (the operator's
    /// commands, on the admin listener): `--public-url`, else the API
    /// listener's address (`localhost` for an unspecified one: the operator
    /// runs where the server runs). Behind a TLS proxy without `--public-url`
    /// nothing here knows the address clients reach: none.
    pub fn without_request(&self) -> Option<String> {
        if let Some(url) = &self.configured {
            return Some(url.clone());
        }
        if self.behind_proxy {
            return None;
        }
        Some(match self.listener.ip() {
            ip if ip.is_unspecified() => format!("https://localhost:{}", self.listener.port()),
            _ => format!("https://{}", self.listener),
        })
    }

    /// The origin (`https://host[:port]`) links for this request start with.
    pub fn of(&self, req: &HttpRequest) -> String {
        if let Some(url) = &self.configured {
            return url.clone();
        }
        let host = if self.behind_proxy {
            Some(req.connection_info().host().to_owned())
        } else {
            req.headers()
                .get(header::HOST)
                .and_then(|v| v.to_str().ok())
                .map(str::to_owned)
        };
        match host.filter(|h| is_authority(h)) {
            Some(host) => format!("https://{host}"),
            None => format!("https://{}", self.listener),
        }
    }
}

/// The origin links for `req` start with (see [`PublicOrigin`]); a server
/// built without one answers with the request's `Host`.
pub fn public_origin(req: &HttpRequest) -> String {
    // Forwarded by another instance: the origin its client reached, signed.
    if let Some(origin) = super::forward::forwarded_value(req, super::forward::ORIGIN_HEADER)
        .filter(|o| o.strip_prefix("https://").is_some_and(is_authority))
    {
        return origin.to_owned();
    }
    match req.app_data::<web::Data<PublicOrigin>>() {
        Some(origin) => origin.of(req),
        None => {
            let fallback = PublicOrigin::new(None, false, ([127, 0, 0, 1], 8443).into());
            fallback.of(req)
        }
    }
}

/// `--public-url` as given: an `https://` URL of a host (and port), nothing more.
pub fn check_public_url(url: &str) -> Result<(), String> {
    let rest = url
        .strip_prefix("https://")
        .ok_or_else(|| format!("--public-url must start with https:// ({url})"))?;
    let authority = rest.trim_end_matches('/');
    if authority.is_empty() || !is_authority(authority) {
        return Err(format!(
            "--public-url must be https:// and a host name, with a port if not 443, and no path ({url})"
        ));
    }
    Ok(())
}

/// A host name or IP literal, with an optional port: nothing that would
/// change where a URL built on it points (no `/`, `@`, `?`, `#` or spaces).
fn is_authority(host: &str) -> bool {
    !host.is_empty()
        && host.len() <= 255
        && host
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'-' | b':' | b'[' | b']'))
}

#[cfg(test)]
mod tests {
    use actix_web::test::TestRequest;

    use super::*;

    fn listener() -> SocketAddr {
        "127.0.0.1:8443".parse().unwrap()
    }

    #[test]
    fn forwarding_headers_count_only_behind_a_proxy() {
        let req = TestRequest::default()
            .insert_header(("host", "freight.example.com"))
            .insert_header(("x-forwarded-host", "attacker.example"))
            .insert_header(("forwarded", "host=attacker.example"))
            .to_http_request();
        let direct = PublicOrigin::new(None, false, listener());
        assert_eq!(direct.of(&req), "https://freight.example.com");
        let proxied = PublicOrigin::new(None, true, listener());
        assert_eq!(proxied.of(&req), "https://attacker.example");
        let configured = PublicOrigin::new(Some("https://track.example.com/"), true, listener());
        assert_eq!(configured.of(&req), "https://track.example.com");
    }

    #[test]
    fn a_host_header_that_is_no_host_falls_back_to_the_listener() {
        let req = TestRequest::default()
            .insert_header(("host", "evil.example/path?"))
            .to_http_request();
        let direct = PublicOrigin::new(None, false, listener());
        assert_eq!(direct.of(&req), "https://127.0.0.1:8443");
    }

    #[test]
    fn links_without_a_request_start_with_the_public_url_or_the_listener() {
        let listener: SocketAddr = ([0, 0, 0, 0], 8443).into();
        let configured = PublicOrigin::new(Some("https://f.example.com/"), false, listener);
        assert_eq!(
            configured.without_request().as_deref(),
            Some("https://f.example.com")
        );
        let direct = PublicOrigin::new(None, false, listener);
        assert_eq!(
            direct.without_request().as_deref(),
            Some("https://localhost:8443")
        );
        let bound = PublicOrigin::new(None, false, ([127, 0, 0, 2], 9443).into());
        assert_eq!(
            bound.without_request().as_deref(),
            Some("https://127.0.0.2:9443")
        );
        assert_eq!(
            PublicOrigin::new(None, true, listener).without_request(),
            None
        );
    }

    #[test]
    fn public_urls_are_checked() {
        assert!(check_public_url("https://freight.example.com").is_ok());
        assert!(check_public_url("https://freight.example.com:8443/").is_ok());
        assert!(check_public_url("http://freight.example.com").is_err());
        assert!(check_public_url("https://freight.example.com/app").is_err());
        assert!(check_public_url("https://").is_err());
    }
}
