//! Accounts (tenants) and the plans that set their request quotas.

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

use super::ids::AccountId;
use super::stop_etas::{EtaBasis, Speed};
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
    /// The plan above this one and its hourly quota (`None`: custom, agreed
    /// with the operator), for a refusal that says where to go next.
    pub fn next(self) -> Option<(PlanKind, Option<u32>)> {
        match self {
            PlanKind::Standard => Some((PlanKind::Pro, Some(10_000))),
            PlanKind::Pro => Some((PlanKind::Enterprise, None)),
            PlanKind::Enterprise => None,
        }
    }

    /// As the plan page names it.
    pub fn title(self) -> &'static str {
        match self {
            PlanKind::Standard => "Standard",
            PlanKind::Pro => "Pro",
            PlanKind::Enterprise => "Enterprise",
        }
    }

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
    /// How the account's loads' stops are judged (`GET /v1/account/settings`).
    #[serde(default)]
    pub stop_settings: StopSettings,
}

/// The account's rules for its loads' stops: when an arrival is late or
/// early, the free time at a stop for loads created without their own, and
/// whether a departure from the pickup starts the trip.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(default)]
pub struct StopSettings {
    /// An arrival more than this many minutes after its appointment is `late`.
    pub late_after_minutes: u32,
    /// An arrival more than this many minutes before its appointment is `early`.
    pub early_before_minutes: u32,
    /// Free time at a stop for loads created without `detention_free_minutes`.
    pub detention_free_minutes: u32,
    /// A departure from the pickup moves an `assigned` load to `in_transit`.
    pub auto_in_transit: bool,
    /// A departure from the last delivery moves an `in_transit` load to
    /// `delivered`.
    pub auto_delivered: bool,
    /// The driving speed ETAs plan with, in mph (20-80).
    #[schema(minimum = 20.0, maximum = 80.0)]
    pub driving_mph: f64,
    /// Road miles per great-circle mile in ETAs (1.0-2.0).
    #[schema(minimum = 1.0, maximum = 2.0)]
    pub road_circuity: f64,
}

impl StopSettings {
    /// The speed the account's ETAs plan with.
    pub fn speed(&self) -> Speed {
        Speed {
            mph: self.driving_mph,
            circuity: self.road_circuity,
            basis: EtaBasis::AccountSetting,
        }
    }
}

/// The largest value each of the settings' minutes takes: a day.
pub const MAX_SETTING_MINUTES: u32 = 1_440;

impl Default for StopSettings {
    fn default() -> Self {
        StopSettings {
            late_after_minutes: 15,
            early_before_minutes: 60,
            detention_free_minutes: super::load::DEFAULT_DETENTION_FREE_MINUTES,
            auto_in_transit: true,
            auto_delivered: false,
            driving_mph: super::route_eta::DEFAULT_MPH,
            road_circuity: super::eta::ROAD_CIRCUITY,
        }
    }
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
