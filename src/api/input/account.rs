//! The body of `PATCH /v1/account/settings`.

use serde::Deserialize;

use crate::domain::account::{MAX_SETTING_MINUTES, StopSettings};
use crate::domain::validation::{ValidationErrors, number_in, whole_minutes};

/// The settings to change; those left out keep their values.
#[derive(Debug, Default, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
#[schema(description = "The settings to change; those left out keep their values.")]
pub struct SettingsChangeInput {
    /// An arrival more than this many minutes after its appointment is
    /// `late` (0-1,440).
    #[schema(value_type = Option<u32>, minimum = 0, maximum = 1440)]
    pub late_after_minutes: Option<f64>,
    /// An arrival more than this many minutes before its appointment is
    /// `early` (0-1,440).
    #[schema(value_type = Option<u32>, minimum = 0, maximum = 1440)]
    pub early_before_minutes: Option<f64>,
    /// Free time at a stop for loads created from now on without their own
    /// `detention_free_minutes` (0-1,440).
    #[schema(value_type = Option<u32>, minimum = 0, maximum = 1440)]
    pub detention_free_minutes: Option<f64>,
    /// Whether a departure from the pickup moves an `assigned` load to
    /// `in_transit`.
    pub auto_in_transit: Option<bool>,
    /// Whether a departure from the last stop (a delivery) moves an
    /// `in_transit` load to `delivered` (default false).
    pub auto_delivered: Option<bool>,
    /// The driving speed the ETA plans with, 20-80 mph (default 50).
    #[schema(minimum = 20.0, maximum = 80.0)]
    pub driving_mph: Option<f64>,
    /// Road miles per great-circle mile in the ETA, 1.0-2.0 (default 1.2).
    #[schema(minimum = 1.0, maximum = 2.0)]
    pub road_circuity: Option<f64>,
}

impl SettingsChangeInput {
    /// `current` with the change applied.
    pub fn apply(self, current: StopSettings) -> Result<StopSettings, ValidationErrors> {
        let mut errors = ValidationErrors::new();
        let mut minutes = |field: &str, raw: Option<f64>, into: &mut u32| {
            if let Some(m) = errors.optional(field, raw, |m| whole_minutes(m, MAX_SETTING_MINUTES))
            {
                *into = m;
            }
        };
        let mut next = current;
        minutes(
            "late_after_minutes",
            self.late_after_minutes,
            &mut next.late_after_minutes,
        );
        minutes(
            "early_before_minutes",
            self.early_before_minutes,
            &mut next.early_before_minutes,
        );
        minutes(
            "detention_free_minutes",
            self.detention_free_minutes,
            &mut next.detention_free_minutes,
        );
        if let Some(on) = self.auto_in_transit {
            next.auto_in_transit = on;
        }
        if let Some(on) = self.auto_delivered {
            next.auto_delivered = on;
        }
        if let Some(mph) = errors.optional("driving_mph", self.driving_mph, |v| {
            number_in(v, 20.0, 80.0)
        }) {
            next.driving_mph = mph;
        }
        if let Some(circuity) = errors.optional("road_circuity", self.road_circuity, |v| {
            number_in(v, 1.0, 2.0)
        }) {
            next.road_circuity = circuity;
        }
        let named_none = self.late_after_minutes.is_none()
            && self.early_before_minutes.is_none()
            && self.detention_free_minutes.is_none()
            && self.auto_in_transit.is_none()
            && self.auto_delivered.is_none()
            && self.driving_mph.is_none()
            && self.road_circuity.is_none();
        if named_none {
            errors.add(
                "body",
                "must name at least one of late_after_minutes, early_before_minutes, \
                 detention_free_minutes, auto_in_transit, auto_delivered, driving_mph, \
                 road_circuity",
            );
        }
        errors.finish(|| next)
    }
}

impl crate::api::extract::BodyInput for SettingsChangeInput {
    fn problems(self) -> ValidationErrors {
        self.apply(StopSettings::default())
            .err()
            .unwrap_or_default()
    }
}
