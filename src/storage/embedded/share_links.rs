//! Share links: JSON records under their token's SHA-256, and `load ‖ link
//! id` → token SHA-256 listing a load's links.

use async_trait::async_trait;

use super::{EmbeddedStore, encode, unavailable};
use crate::domain::ids::LoadId;
use crate::domain::share_link::ShareLink;
use crate::storage::{ShareLinkStore, StorageResult};

#[async_trait]
impl ShareLinkStore for EmbeddedStore {
    async fn put_share_link(&self, link: &ShareLink) -> StorageResult<()> {
        let value = encode(link)?;
        let token = link.token_sha256.as_bytes().to_vec();
        let listing = [link.load_id.as_str(), link.id.as_str()]
            .concat()
            .into_bytes();
        self.run(move |s| {
            let mut batch = s.durable_batch();
            batch.insert(&s.share_links, token.clone(), value);
            batch.insert(&s.load_share_links, listing, token);
            s.commit_durably(batch)
        })
        .await
    }

    async fn share_link_by_token(&self, token_sha256: &str) -> StorageResult<Option<ShareLink>> {
        let key = token_sha256.as_bytes().to_vec();
        self.run(move |s| s.get_json(&s.share_links, &key)).await
    }

    async fn share_links_of_load(&self, load: &LoadId) -> StorageResult<Vec<ShareLink>> {
        let prefix = load.as_str().as_bytes().to_vec();
        self.run(move |s| {
            let mut out = Vec::new();
            for guard in s.load_share_links.prefix(&prefix) {
                let (_, token) = guard.into_inner().map_err(unavailable)?;
                if let Some(link) = s.get_json(&s.share_links, &token)? {
                    out.push(link);
                }
            }
            Ok(out)
        })
        .await
    }
}
