//! First start: an account and a key, so a newcomer can call the API at once.

use crate::domain::account::{Account, PlanKind};
use crate::services::Services;
use crate::services::accounts::{KeyRequest, NewAccount};

/// What the first start created; the token exists nowhere else.
#[derive(Debug, Clone)]
pub struct BootstrapKey {
    pub account: Account,
    pub token: String,
}

/// The file in the data directory that `freight serve` writes the first
/// start's key to when its standard output is not a terminal.
pub const FIRST_KEY_FILE: &str = "first-api-key";

const FIRST_ACCOUNT_NAME: &str = "default";

/// Creates the first account and a read+write key if the store has no account yet.
/// If an earlier first start died between creating the account and its key, the
/// key is created now, so the newcomer is never left without one.
pub async fn ensure_first_account(services: &Services) -> anyhow::Result<Option<BootstrapKey>> {
    let accounts = services.accounts.list_accounts().await?;
    let account = match accounts.as_slice() {
        [] => {
            services
                .accounts
                .create_account(NewAccount {
                    name: FIRST_ACCOUNT_NAME.into(),
                    plan: PlanKind::Standard,
                    requests_per_hour: None,
                    max_streams: None,
                })
                .await?
        }
        [only]
            if only.name == FIRST_ACCOUNT_NAME
                && services.accounts.list_keys(&only.id).await?.is_empty() =>
        {
            only.clone()
        }
        _ => return Ok(None),
    };
    let issued = services
        .accounts
        .create_key(KeyRequest {
            account_id: account.id.to_string(),
            permissions: vec!["read".into(), "write".into()],
            expires_at: None,
            description: Some("created on first start".into()),
        })
        .await?;
    Ok(Some(BootstrapKey {
        account,
        token: issued.token,
    }))
}
