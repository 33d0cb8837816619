//! Accounts and API keys as the operator's admin API shows them.

use serde::Serialize;

use crate::domain::account::Account;
use crate::domain::api_key::ApiKey;
use crate::domain::timestamp::format;

#[derive(Serialize)]
pub struct AccountView<'a> {
    pub id: &'a str,
    pub name: &'a str,
    pub plan: &'static str,
    pub requests_per_hour: u32,
    pub max_streams: u32,
    pub disabled: bool,
    pub created_at: String,
}

impl<'a> AccountView<'a> {
    pub fn new(account: &'a Account) -> Self {
        AccountView {
            id: account.id.as_str(),
            name: &account.name,
            plan: account.plan.as_str(),
            requests_per_hour: account.requests_per_hour(),
            max_streams: account.max_streams(),
            disabled: account.disabled,
            created_at: format(&account.created_at),
        }
    }
}

/// An API key without its secret (which is never stored).
#[derive(Serialize)]
pub struct KeyView<'a> {
    pub id: &'a str,
    pub account_id: &'a str,
    pub permissions: Vec<&'static str>,
    pub description: Option<&'a str>,
    pub created_at: String,
    pub expires_at: Option<String>,
    pub revoked_at: Option<String>,
}

impl<'a> KeyView<'a> {
    pub fn new(key: &'a ApiKey) -> Self {
        KeyView {
            id: key.id.as_str(),
            account_id: key.account_id.as_str(),
            permissions: key.permissions.iter().map(|p| p.as_str()).collect(),
            description: key.description.as_deref(),
            created_at: format(&key.created_at),
            expires_at: key.expires_at.as_ref().map(format),
            revoked_at: key.revoked_at.as_ref().map(format),
        }
    }
}
