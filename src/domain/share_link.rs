//! Share links: a load's tracking page for someone without an account (the
//! consignee), behind an unguessable token. The URL carries the token; only
//! its SHA-256 is stored, as for API keys and password links.

use chrono::{DateTime, Duration, Utc};
use serde::{Deserialize, Serialize};

use super::api_key::{new_secret, sha256_hex};
use super::ids::{AccountId, LoadId, ShareLinkId};
use super::timestamp::serde_utc;

/// How long a link lives when the request does not say.
pub const DEFAULT_LIFETIME: Duration = Duration::hours(72);
/// The longest a link may live.
pub const MAX_LIFETIME: Duration = Duration::days(30);
/// A link ends this long after its load's delivery, whatever it asked for.
pub const AFTER_DELIVERY: Duration = Duration::days(7);
/// Links per load (revoked and expired ones count until they are a month old).
pub const MAX_PER_LOAD: usize = 50;

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ShareLink {
    pub id: ShareLinkId,
    pub account_id: AccountId,
    pub load_id: LoadId,
    /// Hex SHA-256 of the token in the link's URL.
    pub token_sha256: String,
    #[serde(with = "serde_utc")]
    pub created_at: DateTime<Utc>,
    #[serde(with = "serde_utc")]
    pub expires_at: DateTime<Utc>,
    #[serde(default, with = "serde_utc::option")]
    pub revoked_at: Option<DateTime<Utc>>,
}

/// Why a link does not open a page.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Closed {
    Revoked,
    Expired,
}

impl ShareLink {
    /// A new link and its token (shown once, in the URL).
    pub fn issue(
        account_id: AccountId,
        load_id: LoadId,
        expires_at: DateTime<Utc>,
        now: DateTime<Utc>,
    ) -> (ShareLink, String) {
        let (token, token_sha256) = new_secret();
        let link = ShareLink {
            id: ShareLinkId::generate(),
            account_id,
            load_id,
            token_sha256,
            created_at: now,
            expires_at,
            revoked_at: None,
        };
        (link, token)
    }

    /// What a URL's token is stored as.
    pub fn token_hash(token: &str) -> String {
        sha256_hex(token)
    }

    /// When the link ends: its own expiry, or 7 days after the load's
    /// delivery if that comes first.
    pub fn ends_at(&self, delivered_at: Option<DateTime<Utc>>) -> DateTime<Utc> {
        delivered_at.map_or(self.expires_at, |d| self.expires_at.min(d + AFTER_DELIVERY))
    }

    /// Whether the link opens its page at `now`.
    pub fn check(
        &self,
        delivered_at: Option<DateTime<Utc>>,
        now: DateTime<Utc>,
    ) -> Result<(), Closed> {
        if self.revoked_at.is_some() {
            return Err(Closed::Revoked);
        }
        if now >= self.ends_at(delivered_at) {
            return Err(Closed::Expired);
        }
        Ok(())
    }
}

/// The expiry a create request asks for, checked: in the future, at most 30
/// days away, and at most 7 days after the load's delivery.
pub fn expiry(
    requested: Option<DateTime<Utc>>,
    delivered_at: Option<DateTime<Utc>>,
    now: DateTime<Utc>,
) -> Result<DateTime<Utc>, String> {
    let latest = delivered_at.map_or(now + MAX_LIFETIME, |d| {
        (now + MAX_LIFETIME).min(d + AFTER_DELIVERY)
    });
    if latest <= now {
        return Err(
            "the load was delivered more than 7 days ago: it can no longer be shared".into(),
        );
    }
    match requested {
        None => Ok((now + DEFAULT_LIFETIME).min(latest)),
        Some(at) if at <= now => Err("must be in the future".into()),
        Some(at) if at > latest => Err(match delivered_at {
            Some(_) => "must be at most 30 days from now and 7 days after the delivery".into(),
            None => "must be at most 30 days from now".into(),
        }),
        Some(at) => Ok(at),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn t(hours: i64) -> DateTime<Utc> {
        DateTime::from_timestamp(1_790_000_000 + hours * 3600, 0).unwrap()
    }

    #[test]
    fn expiry_defaults_to_72_hours_within_30_days_and_7_after_delivery() {
        assert_eq!(expiry(None, None, t(0)), Ok(t(72)));
        assert_eq!(expiry(Some(t(5)), None, t(0)), Ok(t(5)));
        assert!(expiry(Some(t(0)), None, t(0)).is_err());
        assert!(expiry(Some(t(30 * 24 + 1)), None, t(0)).is_err());
        // Delivered a day ago: at most 6 more days; the default fits.
        assert_eq!(expiry(None, Some(t(-24)), t(0)), Ok(t(72)));
        assert!(expiry(Some(t(7 * 24)), Some(t(-24)), t(0)).is_err());
        // Delivered 2 days ago: the default is cut to what is left.
        assert_eq!(expiry(None, Some(t(-5 * 24 - 1)), t(0)), Ok(t(47)));
        assert!(expiry(None, Some(t(-8 * 24)), t(0)).is_err());
    }

    #[test]
    fn a_link_ends_when_revoked_expired_or_a_week_after_delivery() {
        let (link, token) =
            ShareLink::issue(AccountId::generate(), LoadId::generate(), t(100), t(0));
        assert_eq!(ShareLink::token_hash(&token), link.token_sha256);
        assert_ne!(token, link.token_sha256, "only the hash is kept");
        assert_eq!(link.check(None, t(99)), Ok(()));
        assert_eq!(link.check(None, t(100)), Err(Closed::Expired));
        assert_eq!(link.check(Some(t(1)), t(50)), Ok(()));
        assert_eq!(link.check(Some(t(-200)), t(50)), Err(Closed::Expired));
        let revoked = ShareLink {
            revoked_at: Some(t(2)),
            ..link
        };
        assert_eq!(revoked.check(None, t(3)), Err(Closed::Revoked));
    }
}
