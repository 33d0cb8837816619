//! Share links (`cql/011_share_links.cql`).

use async_trait::async_trait;

use super::statements::LoggedBatch;
use super::{ScyllaStore, decode, encode};
use crate::domain::ids::LoadId;
use crate::domain::share_link::ShareLink;
use crate::storage::{ShareLinkStore, StorageResult};

#[async_trait]
impl ShareLinkStore for ScyllaStore {
    async fn put_share_link(&self, link: &ShareLink) -> StorageResult<()> {
        let record = encode(link)?;
        let mut batch = LoggedBatch::new();
        batch.add(&self.st.put_share_link, (link.token_sha256.clone(), record));
        batch.add(
            &self.st.put_share_link_of_load,
            (
                link.load_id.as_str().to_owned(),
                link.id.as_str().to_owned(),
                link.token_sha256.clone(),
            ),
        );
        self.logged(batch).await
    }

    async fn share_link_by_token(&self, token_sha256: &str) -> StorageResult<Option<ShareLink>> {
        match self
            .first::<(String,)>(&self.st.get_share_link, (token_sha256,))
            .await?
        {
            Some((record,)) => decode(&record).map(Some),
            None => Ok(None),
        }
    }

    async fn share_links_of_load(&self, load: &LoadId) -> StorageResult<Vec<ShareLink>> {
        let tokens = self
            .rows(
                &self.st.share_links_of_load,
                (load.as_str(),),
                |(token,): (String,)| Ok(token),
            )
            .await?;
        let mut links = Vec::with_capacity(tokens.len());
        for token in tokens {
            if let Some(link) = self.share_link_by_token(&token).await? {
                links.push(link);
            }
        }
        Ok(links)
    }
}
