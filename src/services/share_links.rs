//! Share links: made, listed and revoked by the load's account; opened by
//! anyone holding the URL, for as long as the link lives.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use chrono::{DateTime, Utc};

use crate::actors::LoadError;
use crate::clock::Clock;
use crate::domain::ids::{AccountId, LoadId, ShareLinkId};
use crate::domain::load::{Load, LoadStatus};
use crate::domain::share_link::{self, Closed, MAX_PER_LOAD, ShareLink};
use crate::services::throttle::Throttle;
use crate::storage::{Storage, StorageError};

#[derive(Debug, thiserror::Error)]
pub enum ShareLinkError {
    #[error("load not found")]
    LoadNotFound,
    #[error("share link not found")]
    NotFound,
    #[error("{0}")]
    BadExpiry(String),
    #[error("a load has at most {MAX_PER_LOAD} share links")]
    TooMany,
    /// A public page: the link was revoked or has expired.
    #[error("the link is no longer valid")]
    Gone(Closed),
    #[error(transparent)]
    Storage(#[from] StorageError),
}

impl From<LoadError> for ShareLinkError {
    fn from(error: LoadError) -> Self {
        match error {
            LoadError::Storage(error) => ShareLinkError::Storage(error),
            _ => ShareLinkError::LoadNotFound,
        }
    }
}

pub struct ShareLinkService {
    storage: Arc<dyn Storage>,
    clock: Clock,
    /// Views of public pages per client address.
    viewers: Throttle,
    /// Views counted, to forget idle addresses now and then.
    views: AtomicU64,
}

/// Public page views per client address per minute: a page polls twice a
/// minute, so this is dozens of viewers behind one address.
const VIEWS_PER_MINUTE: usize = 120;

/// When the load was delivered, if it was.
pub fn delivered_at(load: &Load) -> Option<DateTime<Utc>> {
    (load.status == LoadStatus::Delivered).then(|| {
        load.status_history
            .iter()
            .rev()
            .find(|entry| entry.status == LoadStatus::Delivered)
            .map_or(load.updated_at, |entry| entry.at)
    })
}

impl ShareLinkService {
    pub fn new(storage: Arc<dyn Storage>, clock: Clock) -> Self {
        ShareLinkService {
            storage,
            clock,
            viewers: Throttle::new(VIEWS_PER_MINUTE, chrono::Duration::minutes(1)),
            views: AtomicU64::new(0),
        }
    }

    /// Counts a public page view of `client`; refused (seconds to wait) past
    /// the limit.
    pub fn admit_viewer(&self, client: &str) -> Result<(), u64> {
        let now = self.clock.now();
        // Every address seen is kept a minute: forgotten in passing, so that
        // many addresses cannot grow the table for ever.
        if self.views.fetch_add(1, Ordering::Relaxed) % 1024 == 1023 {
            self.viewers.forget_idle(now);
        }
        self.viewers.take(client, now)
    }

    async fn load_of(&self, account: &AccountId, id: &LoadId) -> Result<Load, ShareLinkError> {
        self.storage
            .get_load(id)
            .await?
            .filter(|load| &load.account_id == account)
            .ok_or(ShareLinkError::LoadNotFound)
    }

    /// A new link of the account's load, and its token (shown once).
    pub async fn create(
        &self,
        account: &AccountId,
        load: &LoadId,
        requested: Option<DateTime<Utc>>,
    ) -> Result<(ShareLink, String), ShareLinkError> {
        let load = self.load_of(account, load).await?;
        let now = self.clock.now();
        let expires_at = share_link::expiry(requested, delivered_at(&load), now)
            .map_err(ShareLinkError::BadExpiry)?;
        if self.storage.share_links_of_load(&load.id).await?.len() >= MAX_PER_LOAD {
            return Err(ShareLinkError::TooMany);
        }
        let (link, token) = ShareLink::issue(account.clone(), load.id.clone(), expires_at, now);
        self.storage.put_share_link(&link).await?;
        Ok((link, token))
    }

    /// The load's links, oldest first, with the load (for their end times).
    pub async fn list(
        &self,
        account: &AccountId,
        load: &LoadId,
    ) -> Result<(Load, Vec<ShareLink>), ShareLinkError> {
        let load = self.load_of(account, load).await?;
        let links = self.storage.share_links_of_load(&load.id).await?;
        Ok((load, links))
    }

    /// Revokes a link at once; revoking it again changes nothing.
    pub async fn revoke(
        &self,
        account: &AccountId,
        load: &LoadId,
        id: &ShareLinkId,
    ) -> Result<ShareLink, ShareLinkError> {
        let (_, links) = self.list(account, load).await?;
        let link = links
            .into_iter()
            .find(|link| &link.id == id)
            .ok_or(ShareLinkError::NotFound)?;
        if link.revoked_at.is_some() {
            return Ok(link);
        }
        let revoked = ShareLink {
            revoked_at: Some(self.clock.now()),
            ..link
        };
        self.storage.put_share_link(&revoked).await?;
        Ok(revoked)
    }

    /// The load a URL's token opens, while its link lives.
    pub async fn open(&self, token: &str) -> Result<(ShareLink, Load), ShareLinkError> {
        let link = self
            .storage
            .share_link_by_token(&ShareLink::token_hash(token))
            .await?
            .ok_or(ShareLinkError::NotFound)?;
        let load = self
            .storage
            .get_load(&link.load_id)
            .await?
            .filter(|load| load.account_id == link.account_id)
            .ok_or(ShareLinkError::NotFound)?;
        link.check(delivered_at(&load), self.clock.now())
            .map_err(ShareLinkError::Gone)?;
        Ok((link, load))
    }
}
