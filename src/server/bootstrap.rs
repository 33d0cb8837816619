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

/// Creates the first account and a read+write key if the store has no account yet.
pub async fn ensure_first_account(services: &Services) -> anyhow::Result<Option<BootstrapKey>> {
    if !services.accounts.list_accounts().await?.is_empty() {
        return Ok(None);
    }
    let account = services
        .accounts
        .create_account(NewAccount {
            name: "default".into(),
            plan: PlanKind::Standard,
            requests_per_hour: None,
        })
        .await?;
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
