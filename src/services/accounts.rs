//! Operator actions: accounts and their API keys.

use std::sync::Arc;

use chrono::{DateTime, Utc};

use super::auth::Authenticator;
use super::devices::DeviceService;
use crate::clock::Clock;
use crate::domain::account::{Account, MAX_ACCOUNT_NAME_CHARS, PlanKind, StopSettings};
use crate::domain::api_key::{ApiKey, IssuedKey, MAX_DESCRIPTION_CHARS, NewKey, Permission};
use crate::domain::ids::{AccountId, KeyId};
use crate::domain::validation::{ValidationErrors, text};
use crate::storage::{Storage, StorageError};

#[derive(Debug, thiserror::Error)]
pub enum AccountError {
    #[error("invalid request: {0}")]
    Invalid(ValidationErrors),
    #[error("no account {0}")]
    AccountNotFound(String),
    #[error("no API key {0}")]
    KeyNotFound(String),
    #[error(transparent)]
    Storage(#[from] StorageError),
}

pub struct NewAccount {
    pub name: String,
    pub plan: PlanKind,
    pub requests_per_hour: Option<u32>,
    /// Streams an Enterprise account may hold open (`Account::max_streams`).
    pub max_streams: Option<u32>,
}

/// What an Enterprise plan's operator chose (nothing for the fixed plans).
#[derive(Debug, Clone, Copy, Default)]
pub struct CustomLimits {
    pub requests_per_hour: Option<u32>,
    pub max_streams: Option<u32>,
}

pub struct KeyRequest {
    pub account_id: String,
    pub permissions: Vec<String>,
    pub expires_at: Option<DateTime<Utc>>,
    pub description: Option<String>,
}

pub struct AccountService {
    storage: Arc<dyn Storage>,
    clock: Clock,
    auth: Arc<Authenticator>,
    devices: Arc<DeviceService>,
}

impl AccountService {
    pub fn new(
        storage: Arc<dyn Storage>,
        clock: Clock,
        auth: Arc<Authenticator>,
        devices: Arc<DeviceService>,
    ) -> Self {
        Self {
            storage,
            clock,
            auth,
            devices,
        }
    }

    pub async fn create_account(&self, new: NewAccount) -> Result<Account, AccountError> {
        let mut errors = ValidationErrors::new();
        let name = errors.check("name", text(new.name, MAX_ACCOUNT_NAME_CHARS, false));
        let limits = CustomLimits {
            requests_per_hour: new.requests_per_hour,
            max_streams: new.max_streams,
        };
        check_limits(new.plan, limits, &mut errors);
        let name = errors
            .finish(|| name.expect("checked"))
            .map_err(AccountError::Invalid)?;
        let account = Account {
            id: AccountId::generate(),
            name,
            plan: new.plan,
            custom_requests_per_hour: new.requests_per_hour,
            custom_max_streams: new.max_streams,
            created_at: self.clock.now(),
            disabled: false,
            stop_settings: StopSettings::default(),
        };
        self.storage.put_account(&account).await?;
        tracing::info!(account = %account.id, plan = account.plan.as_str(), "account created");
        Ok(account)
    }

    /// Moves an account to another plan; the next request of any of its keys is
    /// counted against the new quota.
    pub async fn change_plan(
        &self,
        id: &AccountId,
        plan: PlanKind,
        limits: CustomLimits,
    ) -> Result<Account, AccountError> {
        let current = self.get_account(id).await?;
        let current_plan = current.plan;
        let mut errors = ValidationErrors::new();
        check_limits(plan, limits, &mut errors);
        errors.finish(|| ()).map_err(AccountError::Invalid)?;
        let account = Account {
            plan,
            custom_requests_per_hour: limits.requests_per_hour,
            custom_max_streams: limits.max_streams,
            ..current
        };
        self.storage.put_account(&account).await?;
        self.auth.account_changed(&account);
        self.devices.account_changed(&account.id);
        tracing::info!(
            account = %account.id,
            from = current_plan.as_str(),
            to = account.plan.as_str(),
            requests_per_hour = account.requests_per_hour(),
            "plan changed"
        );
        Ok(account)
    }

    /// Disables an account (its keys and dashboard sign-ins are refused at
    /// once on this instance, within the key cache's lifetime on others; its
    /// data stays), or enables it again. Repeating either changes nothing.
    pub async fn set_disabled(
        &self,
        id: &AccountId,
        disabled: bool,
    ) -> Result<Account, AccountError> {
        let current = self.get_account(id).await?;
        if current.disabled == disabled {
            return Ok(current);
        }
        let account = Account {
            disabled,
            ..current
        };
        self.storage.put_account(&account).await?;
        self.auth.account_changed(&account);
        self.devices.account_changed(&account.id);
        match disabled {
            true => tracing::info!(account = %account.id, "account disabled"),
            false => tracing::info!(account = %account.id, "account enabled"),
        }
        Ok(account)
    }

    /// Changes how the account's stops are judged: `change` gets the stored
    /// settings and gives the new ones (or what is wrong with the request).
    /// Requests of the account's keys see them at once on this instance.
    pub async fn change_stop_settings(
        &self,
        id: &AccountId,
        change: impl FnOnce(StopSettings) -> Result<StopSettings, ValidationErrors>,
    ) -> Result<Account, AccountError> {
        let current = self.get_account(id).await?;
        let stop_settings = change(current.stop_settings).map_err(AccountError::Invalid)?;
        if stop_settings == current.stop_settings {
            return Ok(current);
        }
        let account = Account {
            stop_settings,
            ..current
        };
        self.storage.put_account(&account).await?;
        self.auth.account_changed(&account);
        self.devices.account_changed(&account.id);
        tracing::info!(account = %account.id, settings = ?account.stop_settings, "stop settings changed");
        Ok(account)
    }

    pub async fn get_account(&self, id: &AccountId) -> Result<Account, AccountError> {
        self.storage
            .get_account(id)
            .await?
            .ok_or_else(|| AccountError::AccountNotFound(id.to_string()))
    }

    pub async fn list_accounts(&self) -> Result<Vec<Account>, AccountError> {
        Ok(self.storage.list_accounts().await?)
    }

    pub async fn create_key(&self, request: KeyRequest) -> Result<IssuedKey, AccountError> {
        // The account is named in the body; a malformed id names no account.
        let account = match AccountId::parse(&request.account_id) {
            Some(id) => self.get_account(&id).await?,
            None => return Err(AccountError::AccountNotFound(request.account_id)),
        };
        let mut errors = ValidationErrors::new();
        let mut permissions = Vec::new();
        for (i, raw) in request.permissions.iter().enumerate() {
            if let Some(p) = errors.check(format_args!("permissions[{i}]"), Permission::parse(raw))
            {
                permissions.push(p);
            }
        }
        if request.permissions.is_empty() {
            errors.add("permissions", "must name at least one of read, write");
        }
        let now = self.clock.now();
        if request.expires_at.is_some_and(|at| at <= now) {
            errors.add("expires_at", "must be in the future");
        }
        let description = errors
            .optional("description", request.description, |d| {
                text(d, MAX_DESCRIPTION_CHARS, true)
            })
            .filter(|d| !d.is_empty());
        errors.finish(|| ()).map_err(AccountError::Invalid)?;
        let issued = ApiKey::issue(
            NewKey {
                account_id: account.id,
                permissions,
                description,
                expires_at: request.expires_at,
            },
            now,
        );
        self.storage.put_api_key(&issued.record).await?;
        self.auth.key_changed(&issued.record);
        let permissions: Vec<&str> = issued
            .record
            .permissions
            .iter()
            .map(|p| p.as_str())
            .collect();
        tracing::info!(
            account = %issued.record.account_id,
            key = %issued.record.id,
            permissions = %permissions.join(","),
            "API key created"
        );
        Ok(issued)
    }

    pub async fn list_keys(&self, account_id: &AccountId) -> Result<Vec<ApiKey>, AccountError> {
        let account = self.get_account(account_id).await?;
        Ok(self.storage.list_api_keys(&account.id).await?)
    }

    /// Revokes a key; revoking a revoked key is a no-op that returns it unchanged.
    pub async fn revoke_key(&self, id: &KeyId) -> Result<ApiKey, AccountError> {
        let mut key = self
            .storage
            .get_api_key(id)
            .await?
            .ok_or_else(|| AccountError::KeyNotFound(id.to_string()))?;
        if key.revoked_at.is_none() {
            key.revoked_at = Some(self.clock.now());
            self.storage.put_api_key(&key).await?;
            tracing::info!(account = %key.account_id, key = %key.id, "API key revoked");
        }
        self.auth.key_changed(&key);
        Ok(key)
    }
}

/// Only Enterprise accounts have a quota of their own, and it is at least 1.
fn check_limits(plan: PlanKind, limits: CustomLimits, errors: &mut ValidationErrors) {
    for (field, value) in [
        ("requests_per_hour", limits.requests_per_hour),
        ("max_streams", limits.max_streams),
    ] {
        if value.is_some() && plan != PlanKind::Enterprise {
            errors.add(
                field,
                "can only be set for the enterprise plan; standard and pro limits are fixed",
            );
        }
        if value == Some(0) {
            errors.add(field, "must be at least 1");
        }
    }
}
