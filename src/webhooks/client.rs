//! The one HTTP client every delivery uses: shared connection pool, timeouts, no
//! redirects (a redirect could lead anywhere), and a resolver that refuses
//! forbidden addresses at connect time, so a hostname that passed the check at
//! subscription time cannot later be re-pointed at the private network.
//!
//! No proxy unless the operator names one: reqwest would otherwise follow
//! `HTTP(S)_PROXY` from the environment, and through a proxy it connects to the
//! proxy, never resolving the receiver's name itself, so the address check
//! above would be skipped without anyone having decided so. A proxy the
//! operator names (`--webhooks-proxy`) must enforce the same address rules.

use std::net::{IpAddr, SocketAddr};
use std::time::Duration;

use reqwest::dns::{Addrs, Name, Resolve, Resolving};

use super::ssrf::is_forbidden;
use crate::domain::webhook::UrlPolicy;

pub const CONNECT_TIMEOUT: Duration = Duration::from_secs(5);
/// A receiver must answer within this; a slower one counts as a failure.
pub const REQUEST_TIMEOUT: Duration = Duration::from_secs(10);

/// Resolves with the system resolver and drops forbidden addresses.
struct GuardedResolver;

impl Resolve for GuardedResolver {
    fn resolve(&self, name: Name) -> Resolving {
        let host = name.as_str().to_owned();
        Box::pin(async move {
            let allowed: Vec<SocketAddr> = tokio::net::lookup_host((host.as_str(), 0))
                .await?
                .filter(|addr| !is_forbidden(addr.ip()))
                .collect();
            if allowed.is_empty() {
                return Err(
                    format!("{host} resolves only to addresses webhooks may not reach").into(),
                );
            }
            Ok(Box::new(allowed.into_iter()) as Addrs)
        })
    }
}

pub fn build(policy: UrlPolicy, proxy: Option<&reqwest::Url>) -> reqwest::Client {
    crate::telemetry::install_crypto_provider();
    let mut builder = reqwest::Client::builder()
        .no_proxy()
        .connect_timeout(CONNECT_TIMEOUT)
        .timeout(REQUEST_TIMEOUT)
        .redirect(reqwest::redirect::Policy::none())
        .pool_max_idle_per_host(32)
        .user_agent(concat!("freight-webhooks/", env!("CARGO_PKG_VERSION")));
    if !policy.allow_private {
        builder = builder.dns_resolver(GuardedResolver);
    }
    if let Some(proxy) = proxy {
        let proxy = reqwest::Proxy::all(proxy.clone()).expect("a parsed URL is a valid proxy");
        builder = builder.proxy(proxy);
    }
    builder
        .build()
        .expect("the webhook client's settings are valid")
}

/// Checks a host at subscription time: an IP literal directly, a name by resolving
/// it now. Refuses forbidden addresses unless the operator allows them.
pub async fn check_host(host: &str, policy: UrlPolicy) -> Result<(), String> {
    if policy.allow_private {
        return Ok(());
    }
    if let Ok(ip) = host.parse::<IpAddr>() {
        return if is_forbidden(ip) {
            Err("points at a loopback, private, link-local or reserved address (for local \
                 testing, the operator can allow them with `freight serve --webhooks-allow-private`)"
                .into())
        } else {
            Ok(())
        };
    }
    let addresses: Vec<IpAddr> = tokio::net::lookup_host((host, 443))
        .await
        .map_err(|_| format!("names a host that does not resolve ({host})"))?
        .map(|a| a.ip())
        .collect();
    if addresses.iter().any(|ip| is_forbidden(*ip)) {
        return Err(
            "resolves to a loopback, private, link-local or reserved address (for \
                    local testing, the operator can allow them with `freight serve \
                    --webhooks-allow-private`)"
                .into(),
        );
    }
    Ok(())
}

/// An IP-literal URL bypasses the resolver, so it is checked before each send too.
pub fn literal_forbidden(host: &str, policy: UrlPolicy) -> bool {
    !policy.allow_private && host.parse::<IpAddr>().is_ok_and(is_forbidden)
}
