//! Query parameters as the handlers parse them (`api::extract::QueryParams`).
//! Every endpoint refuses a parameter it does not name here, a repeated one, and
//! more than 16 in all, with `400 INVALID_QUERY_PARAMETER`.
//!
//! These structs exist for the document only; numeric bounds are the handlers'
//! constants, written as literals because attributes take no paths.

use utoipa::IntoParams;

use crate::api::input::fields::StateCodeInput;
use crate::domain::load::LoadStatus;

/// `page` and `limit` of a list (`QueryParams::pagination`).
#[derive(IntoParams)]
#[into_params(parameter_in = Query)]
pub struct Paging {
    /// Page number, from 1. A page past the end is empty, with the real `total`.
    #[param(minimum = 1, maximum = 1_000_000, default = 1)]
    pub page: Option<u64>,
    /// Items per page.
    #[param(minimum = 1, maximum = 100, default = 50)]
    pub limit: Option<u32>,
}

/// Filters of `GET /v1/loads`; they combine (AND).
#[derive(IntoParams)]
#[into_params(parameter_in = Query)]
pub struct LoadFilters {
    pub status: Option<LoadStatus>,
    #[param(value_type = Option<StateCodeInput>)]
    pub origin_state: Option<String>,
    #[param(value_type = Option<StateCodeInput>)]
    pub destination_state: Option<String>,
    /// The load with this `reference` (exactly as stored).
    #[param(value_type = Option<String>, min_length = 1, max_length = 64)]
    pub reference: Option<String>,
    /// Loads assigned (now or when delivered or cancelled) to this carrier.
    #[param(value_type = Option<crate::domain::ids::CarrierId>)]
    pub carrier_id: Option<String>,
    pub equipment_type: Option<crate::domain::equipment::EquipmentType>,
    /// Loads whose `pickup_date` is at or after this time (UTC); loads
    /// without a pickup date are left out.
    #[param(schema_with = crate::api::input::fields::utc_timestamp)]
    pub pickup_from: Option<String>,
    /// Loads whose `pickup_date` is at or before this time (UTC).
    #[param(schema_with = crate::api::input::fields::utc_timestamp)]
    pub pickup_to: Option<String>,
    /// A prefix of the load's reference, origin city or destination city,
    /// in any case (1-64 characters).
    #[param(value_type = Option<String>, min_length = 1, max_length = 64)]
    pub q: Option<String>,
    /// Only tracked loads (`assigned`, `in_transit`) whose delivery ETA is
    /// (`true`) or is not (`false`) more than 15 minutes past the delivery
    /// appointment, as `tracking.late_risk` says.
    pub late_risk: Option<bool>,
    /// Only tracked loads whose truck is at a stop of this type now
    /// (arrived, not yet departed).
    pub at_stop: Option<crate::domain::stops::StopKind>,
    /// Loads with any stop in this state (not indexed: every stop of each
    /// load of the indexed range is looked at).
    #[param(value_type = Option<StateCodeInput>)]
    pub stop_state: Option<String>,
    /// Loads with any stop at this ZIP (its 5-digit part is compared; not
    /// indexed, as `stop_state`).
    #[param(value_type = Option<String>, pattern = "^[0-9]{5}(?:-[0-9]{4})?$")]
    pub stop_zip: Option<String>,
}

/// `GET /v1/loads/{load_id}/tracking` (`routes::tracking::live`).
#[derive(IntoParams)]
#[into_params(parameter_in = Query)]
pub struct LivePoints {
    /// Recent fixes to include, newest first (`RECENT_FIXES`); use the history
    /// for more.
    #[param(minimum = 0, maximum = 10, default = 10)]
    pub points: Option<u32>,
}

/// `GET /v1/loads/{load_id}/tracking/history` (`routes::tracking::history`).
#[derive(IntoParams)]
#[into_params(parameter_in = Query)]
pub struct HistoryQuery {
    /// Oldest fix time to include (inclusive), UTC.
    #[param(schema_with = crate::api::input::fields::utc_timestamp)]
    pub from: Option<String>,
    /// Newest fix time to include (inclusive), UTC; not before `from`.
    #[param(schema_with = crate::api::input::fields::utc_timestamp)]
    pub to: Option<String>,
    /// Fixes per page (`MAX_HISTORY_LIMIT`).
    #[param(minimum = 1, maximum = 1000, default = 100)]
    pub limit: Option<u32>,
    /// `pagination.next_cursor` of the previous page.
    #[param(value_type = Option<String>, pattern = r"^c[0-9]{1,9}\.-?[0-9]{1,18}$")]
    pub cursor: Option<String>,
}

/// Where a tracking stream resumes (`routes::streams`): the header, which
/// EventSource sends by itself when it reconnects, wins over the parameter.
#[derive(IntoParams)]
#[into_params(parameter_in = Header)]
pub struct LastEventId {
    /// The id of the last event received: the events since are sent first, or
    /// `event: reset` if they are not all held (an id not of this server's
    /// making included).
    #[param(rename = "Last-Event-ID", value_type = Option<String>, nullable = false)]
    pub last_event_id: Option<String>,
}

/// See [`LastEventId`].
#[derive(IntoParams)]
#[into_params(parameter_in = Query)]
pub struct StreamResume {
    /// For clients that cannot set `Last-Event-ID`: the id of the last event
    /// received. The events since are sent first, or `event: reset` if they
    /// are not all held.
    #[param(value_type = Option<String>, pattern = r"^[0-9a-f]{16}-[0-9]{1,20}$")]
    pub last_event_id: Option<String>,
}
