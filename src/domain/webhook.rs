//! Webhook subscriptions and the record of each delivery.

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

use super::event::EventType;
use super::ids::{AccountId, EventId, WebhookId};
use super::timestamp::serde_utc;
use super::validation::ValidationErrors;

pub const MIN_SECRET_CHARS: usize = 16;
pub const MAX_SECRET_CHARS: usize = 256;
pub const MAX_URL_CHARS: usize = 2_048;
/// Delivered and failed deliveries, and events nobody waits for, are kept this long.
pub const HISTORY_RETENTION_DAYS: i64 = 30;

/// What the operator lets subscription URLs point at.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct UrlPolicy {
    /// Plain `http://` URLs (tests on loopback); otherwise https only.
    pub allow_http: bool,
    /// Loopback, private, link-local and metadata addresses; otherwise refused (SSRF).
    pub allow_private: bool,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Subscription {
    pub id: WebhookId,
    pub account_id: AccountId,
    pub url: String,
    pub events: Vec<EventType>,
    /// Never returned by the API after creation.
    pub secret: String,
    pub enabled: bool,
    /// Why the service disabled it (410, or failing for too long); `None` when the
    /// client disabled it or it is enabled.
    pub disabled_reason: Option<String>,
    #[serde(with = "serde_utc")]
    pub created_at: DateTime<Utc>,
    #[serde(with = "serde_utc")]
    pub updated_at: DateTime<Utc>,
}

impl Subscription {
    pub fn wants(&self, kind: EventType) -> bool {
        self.enabled && self.events.contains(&kind)
    }
}

/// A subscription to make, checked.
#[derive(Debug, Clone, PartialEq)]
pub struct NewSubscription {
    pub url: String,
    pub events: Vec<EventType>,
    pub secret: String,
}

/// Changes to a subscription, checked; `None` keeps what it has.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct SubscriptionPatch {
    pub url: Option<String>,
    pub events: Option<Vec<EventType>>,
    pub secret: Option<String>,
    pub enabled: Option<bool>,
}

/// A validated URL: its text and the host to check for SSRF.
#[derive(Debug, Clone, PartialEq)]
pub struct WebhookUrl {
    pub url: String,
    pub host: String,
}

pub fn parse_url(raw: &str, policy: UrlPolicy) -> Result<WebhookUrl, String> {
    let raw = raw.trim();
    if raw.len() > MAX_URL_CHARS {
        return Err(format!("must be at most {MAX_URL_CHARS} characters"));
    }
    let url =
        reqwest::Url::parse(raw).map_err(|_| "must be an absolute https:// URL".to_string())?;
    match url.scheme() {
        "https" => {}
        "http" if policy.allow_http => {}
        // A local receiver needs both flags: name both at once, not one per restart.
        "http" if !policy.allow_private && url.host_str().is_some_and(looks_local) => {
            return Err(
                "must use https:// and a public address (for a local receiver, the \
                 operator can allow both with `freight serve --webhooks-allow-http \
                 --webhooks-allow-private`)"
                    .into(),
            );
        }
        "http" => {
            return Err(
                "must use https:// (for local testing, the operator can allow plain \
                 http with `freight serve --webhooks-allow-http`)"
                    .into(),
            );
        }
        _ => return Err("must be an https:// URL".into()),
    }
    if !url.username().is_empty() || url.password().is_some() {
        return Err("must not carry credentials; authenticate with the signature instead".into());
    }
    if url.fragment().is_some() {
        return Err("must not have a #fragment".into());
    }
    let host = url
        .host_str()
        .filter(|h| !h.is_empty())
        .ok_or_else(|| "must name a host".to_string())?
        .trim_start_matches('[')
        .trim_end_matches(']')
        .to_owned();
    Ok(WebhookUrl {
        url: url.to_string(),
        host,
    })
}

/// A host a local receiver would have: `localhost`, or a loopback, private or
/// link-local address. Only for the hint above; what is refused is decided
/// by the full check when the subscription is made.
fn looks_local(host: &str) -> bool {
    let host = host.trim_start_matches('[').trim_end_matches(']');
    if host.eq_ignore_ascii_case("localhost") {
        return true;
    }
    match host.parse::<std::net::IpAddr>() {
        Ok(std::net::IpAddr::V4(ip)) => ip.is_loopback() || ip.is_private() || ip.is_link_local(),
        Ok(std::net::IpAddr::V6(ip)) => ip.is_loopback() || ip.is_unique_local(),
        Err(_) => false,
    }
}

pub fn parse_events(raw: Vec<String>, errors: &mut ValidationErrors) -> Vec<EventType> {
    if raw.is_empty() {
        errors.add("events", "must name at least one event");
    }
    if raw.len() > 20 {
        errors.add("events", "must name at most 20 events");
        return Vec::new();
    }
    let mut events = Vec::new();
    for (i, name) in raw.iter().enumerate() {
        match EventType::parse(name) {
            Ok(kind) if !events.contains(&kind) => events.push(kind),
            Ok(_) => {}
            Err(message) => errors.add(format!("events[{i}]"), message),
        }
    }
    events
}

pub fn parse_secret(raw: &str) -> Result<String, String> {
    let chars = raw.chars().count();
    if chars < MIN_SECRET_CHARS {
        return Err(format!("must be at least {MIN_SECRET_CHARS} characters"));
    }
    if chars > MAX_SECRET_CHARS {
        return Err(format!("must be at most {MAX_SECRET_CHARS} characters"));
    }
    if raw.chars().any(char::is_control) {
        return Err("must not contain control characters".into());
    }
    if let Some(encoded) = raw.strip_prefix("whsec_") {
        use base64::Engine;
        let key = base64::engine::general_purpose::STANDARD
            .decode(encoded)
            .map_err(|_| "starts with whsec_ but the rest is not base64".to_string())?;
        if key.len() < 16 {
            return Err("a whsec_ secret must decode to at least 16 bytes".into());
        }
    }
    Ok(raw.to_owned())
}

/// Where one event stands with one subscription.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum DeliveryStatus {
    /// Waiting for its next attempt (or for the subscription to be enabled again).
    Pending,
    Delivered,
    /// Every scheduled attempt failed; only a redelivery sends it again.
    Failed,
}

/// One event's delivery to one subscription. Its id is the event id: within a
/// subscription an event is delivered under one id only.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Delivery {
    pub webhook_id: WebhookId,
    pub event_id: EventId,
    pub event_type: EventType,
    pub status: DeliveryStatus,
    pub attempts: u32,
    pub last_status_code: Option<u16>,
    pub last_error: Option<String>,
    #[serde(with = "serde_utc::option")]
    pub next_attempt_at: Option<DateTime<Utc>>,
    #[serde(with = "serde_utc::option")]
    pub delivered_at: Option<DateTime<Utc>>,
    #[serde(with = "serde_utc")]
    pub created_at: DateTime<Utc>,
}

impl Delivery {
    /// A new delivery of an event to a subscription: pending, never attempted,
    /// first due at `at`.
    pub fn new(
        webhook_id: WebhookId,
        event_id: EventId,
        event_type: EventType,
        at: DateTime<Utc>,
    ) -> Self {
        Delivery {
            webhook_id,
            event_id,
            event_type,
            status: DeliveryStatus::Pending,
            attempts: 0,
            last_status_code: None,
            last_error: None,
            next_attempt_at: Some(at),
            delivered_at: None,
            created_at: at,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls() {
        let strict = UrlPolicy::default();
        assert_eq!(
            parse_url("https://hooks.example.com/x?y=1", strict)
                .unwrap()
                .host,
            "hooks.example.com"
        );
        let public_http = parse_url("http://hooks.example.com/x", strict).unwrap_err();
        assert!(
            public_http.contains("--webhooks-allow-http`"),
            "{public_http}"
        );
        // A local receiver: both flags named at once.
        for local in [
            "http://127.0.0.1:9/x",
            "http://localhost:9/x",
            "http://192.168.1.20/x",
            "http://[::1]:9/x",
        ] {
            let refused = parse_url(local, strict).unwrap_err();
            assert!(
                refused.contains("--webhooks-allow-http --webhooks-allow-private"),
                "{local}: {refused}"
            );
        }
        let only_private_allowed = UrlPolicy {
            allow_http: false,
            allow_private: true,
        };
        let refused = parse_url("http://127.0.0.1:9/x", only_private_allowed).unwrap_err();
        assert!(!refused.contains("--webhooks-allow-private"), "{refused}");
        assert!(
            parse_url(
                "http://127.0.0.1:9/x",
                UrlPolicy {
                    allow_http: true,
                    allow_private: true
                }
            )
            .is_ok()
        );
        for bad in [
            "ftp://x.com",
            "not a url",
            "https://user:pw@x.com/",
            "/relative",
            "https://x.com/#f",
        ] {
            assert!(parse_url(bad, strict).is_err(), "{bad}");
        }
        assert_eq!(
            parse_url("https://[::1]:8443/", strict).unwrap().host,
            "::1"
        );
    }

    #[test]
    fn secrets() {
        assert!(parse_secret("0123456789abcdef").is_ok());
        assert!(parse_secret("short").is_err());
        assert!(parse_secret("whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw").is_ok());
        assert!(parse_secret("whsec_!!!!not-base64!!!!").is_err());
    }
}
