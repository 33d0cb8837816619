//! Accounts (tenants) and the plans that set their request quotas.

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

use super::ids::AccountId;
use super::timestamp::serde_utc;

pub const MAX_ACCOUNT_NAME_CHARS: usize = 200;
/// Enterprise accounts get this quota until the operator sets another.
pub const DEFAULT_ENTERPRISE_REQUESTS_PER_HOUR: u32 = 100_000;
/// Enterprise accounts may hold this many streams open until the operator
/// sets another number.
pub const DEFAULT_ENTERPRISE_MAX_STREAMS: u32 = 200;

/// An account's plan, which sets its request quota.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, clap::ValueEnum, utoipa::ToSchema,
)]
#[serde(rename_all = "snake_case")]
pub enum PlanKind {
    Standard,
    Pro,
    Enterprise,
}

impl PlanKind {
    pub fn as_str(self) -> &'static str {
        match self {
            PlanKind::Standard => "standard",
            PlanKind::Pro => "pro",
            PlanKind::Enterprise => "enterprise",
        }
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Account {
    pub id: AccountId,
    pub name: String,
    pub plan: PlanKind,
    /// Only meaningful for Enterprise; Standard and Pro quotas are fixed by the spec.
    pub custom_requests_per_hour: Option<u32>,
    /// Only meaningful for Enterprise, as the quota.
    #[serde(default)]
    pub custom_max_streams: Option<u32>,
    #[serde(with = "serde_utc")]
    pub created_at: DateTime<Utc>,
    /// Disabled by the operator: its keys and dashboard sign-ins are refused,
    /// its data is kept (and served again once it is enabled).
    #[serde(default)]
    pub disabled: bool,
}

impl Account {
    /// Requests per hour this account may make (spec section 8).
    pub fn requests_per_hour(&self) -> u32 {
        match self.plan {
            PlanKind::Standard => 1_000,
            PlanKind::Pro => 10_000,
            PlanKind::Enterprise => self
                .custom_requests_per_hour
                .unwrap_or(DEFAULT_ENTERPRISE_REQUESTS_PER_HOUR),
        }
    }

    /// Live tracking streams (API and dashboard together) this account may
    /// hold open at once, on each instance.
    pub fn max_streams(&self) -> u32 {
        match self.plan {
            PlanKind::Standard => 10,
            PlanKind::Pro => 50,
            PlanKind::Enterprise => self
                .custom_max_streams
                .unwrap_or(DEFAULT_ENTERPRISE_MAX_STREAMS),
        }
    }
}
