//! Share links of loads' tracking pages.

use async_trait::async_trait;

use super::StorageResult;
use crate::domain::ids::LoadId;
use crate::domain::share_link::ShareLink;

#[async_trait]
pub trait ShareLinkStore: Send + Sync {
    /// Creates or replaces a link (a new one, a revocation).
    async fn put_share_link(&self, link: &ShareLink) -> StorageResult<()>;
    /// The link whose token has this SHA-256, whatever its state.
    async fn share_link_by_token(&self, token_sha256: &str) -> StorageResult<Option<ShareLink>>;
    /// A load's links, oldest first.
    async fn share_links_of_load(&self, load: &LoadId) -> StorageResult<Vec<ShareLink>>;
}
