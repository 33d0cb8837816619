//! The services' errors as answers: loads and their transitions, streams,
//! share links, devices, carriers, webhooks and accounts.

use actix_web::http::StatusCode;
use serde_json::json;

use super::ApiError;
use crate::domain::load::{DateMoved, EditError, TransitionError};
use crate::services::accounts::AccountError;
use crate::services::carriers::CarrierError;
use crate::services::devices::DeviceError;
use crate::services::live::TooManyStreams;
use crate::services::loads::LoadError;
use crate::services::share_links::ShareLinkError;
use crate::services::tracking::StreamError;
use crate::services::webhooks::{MAX_SUBSCRIPTIONS, WebhookError};

fn status_names(statuses: &[crate::domain::load::LoadStatus]) -> Vec<&'static str> {
    statuses.iter().map(|s| s.as_str()).collect()
}

impl From<TransitionError> for ApiError {
    fn from(error: TransitionError) -> Self {
        let message = error.to_string();
        match error {
            TransitionError::NotAllowed { from, to } => ApiError::new(
                StatusCode::CONFLICT,
                "INVALID_STATUS_TRANSITION",
                format!(
                    "{message}; from {from} the allowed next statuses are: {}",
                    match status_names(from.allowed_next()).join(", ") {
                        s if s.is_empty() => format!("none ({from} is final)"),
                        s => s,
                    }
                ),
            )
            .with_details(json!({
                "field": "status",
                "current_status": from.as_str(),
                "requested_status": to.as_str(),
                "allowed_next": status_names(from.allowed_next()),
            })),
            TransitionError::CarrierRequired => ApiError::field(
                StatusCode::BAD_REQUEST,
                "VALIDATION_FAILED",
                "carrier_id",
                "is required to assign a load",
            ),
            TransitionError::CarrierOnlyWhenAssigning { to } => ApiError::field(
                StatusCode::BAD_REQUEST,
                "VALIDATION_FAILED",
                "carrier_id",
                format!("is only accepted with status assigned, not {to}"),
            ),
            TransitionError::AlreadyAssigned { carrier_id } => {
                ApiError::new(StatusCode::CONFLICT, "LOAD_ALREADY_ASSIGNED", message).with_details(
                    json!({
                        "field": "carrier_id",
                        "current_status": "assigned",
                        "current_carrier_id": carrier_id,
                    }),
                )
            }
        }
    }
}

/// Streams end on their own and the client may try again any time; this is
/// how long to wait before the first try.
pub const STREAMS_RETRY_AFTER_SECONDS: u64 = 10;

impl From<StreamError> for ApiError {
    fn from(error: StreamError) -> Self {
        match error {
            StreamError::Load(e) => e.into(),
            StreamError::TooMany(TooManyStreams { limit }) => ApiError::new(
                StatusCode::TOO_MANY_REQUESTS,
                "TOO_MANY_STREAMS",
                format!(
                    "this account already has {limit} live streams open, the most its plan \
                     allows; close one (or wait for one to end) and try again"
                ),
            )
            .with_details(json!({
                "limit": limit,
                "retry_after_seconds": STREAMS_RETRY_AFTER_SECONDS,
            }))
            .with_header("retry-after", STREAMS_RETRY_AFTER_SECONDS.to_string()),
        }
    }
}

impl From<LoadError> for ApiError {
    fn from(error: LoadError) -> Self {
        match error {
            LoadError::NotFound => {
                ApiError::new(StatusCode::NOT_FOUND, "INVALID_LOAD", "load not found")
            }
            LoadError::UnknownCarrier(id) => ApiError::field(
                StatusCode::BAD_REQUEST,
                "UNKNOWN_CARRIER",
                "carrier_id",
                format!("names no carrier of this account ({id})"),
            ),
            LoadError::Transition(e) => e.into(),
            LoadError::NotTrackable(status) => ApiError::new(
                StatusCode::CONFLICT,
                "LOAD_NOT_TRACKABLE",
                format!(
                    "GPS fixes are accepted only for loads that are assigned or in_transit; this load is {status}"
                ),
            )
            .with_details(json!({
                "current_status": status.as_str(),
                "trackable_statuses": ["assigned", "in_transit"],
            })),
            LoadError::ReferenceTaken(holder) => {
                let message = format!("is already the reference of load {holder}");
                ApiError::new(
                    StatusCode::CONFLICT,
                    "REFERENCE_TAKEN",
                    format!("reference {message}"),
                )
                .with_details(json!({
                    "field": "reference",
                    "errors": [{"field": "reference", "message": message}],
                    "load_id": holder.as_str(),
                }))
            }
            LoadError::Edit(EditError::NotEditable { status, fields }) => ApiError::new(
                StatusCode::CONFLICT,
                "LOAD_NOT_EDITABLE",
                format!(
                    "a load that is {status} cannot change {}: {}",
                    fields.join(", "),
                    match status {
                        s if s.is_final() => "it is final",
                        _ => "origin and destination change only while the load is posted",
                    }
                ),
            )
            .with_details(json!({"current_status": status.as_str(), "fields": fields})),
            LoadError::Edit(EditError::DatesOutOfOrder { moved }) => {
                let (field, message) = match moved {
                    DateMoved::Pickup => ("pickup_date", "must not be after delivery_date"),
                    DateMoved::Delivery => ("delivery_date", "must not be before pickup_date"),
                };
                ApiError::field(StatusCode::BAD_REQUEST, "VALIDATION_FAILED", field, message)
            }
            LoadError::Edit(EditError::UnknownStop(stop_id)) => ApiError::new(
                StatusCode::NOT_FOUND,
                "INVALID_STOP",
                format!("the load has no stop {stop_id}"),
            ),
            LoadError::Edit(EditError::StopFrozen { stop_id }) => ApiError::new(
                StatusCode::CONFLICT,
                "STOP_FROZEN",
                format!(
                    "the truck has arrived at stop {stop_id}: it cannot change, be removed, \
                     or have a stop put before it"
                ),
            )
            .with_details(json!({"stop_id": stop_id.as_str()})),
            LoadError::Edit(EditError::BadStops { field, message }) => {
                ApiError::field(StatusCode::BAD_REQUEST, "VALIDATION_FAILED", &field, message)
            }
            LoadError::Storage(e) => e.into(),
            LoadError::Unavailable(e) => e.into(),
        }
    }
}

impl From<ShareLinkError> for ApiError {
    fn from(error: ShareLinkError) -> Self {
        match error {
            ShareLinkError::LoadNotFound => LoadError::NotFound.into(),
            ShareLinkError::NotFound => ApiError::new(
                StatusCode::NOT_FOUND,
                "SHARE_LINK_NOT_FOUND",
                "share link not found",
            ),
            ShareLinkError::BadExpiry(message) => ApiError::field(
                StatusCode::BAD_REQUEST,
                "VALIDATION_FAILED",
                "expires_at",
                message,
            ),
            ShareLinkError::TooMany => ApiError::new(
                StatusCode::CONFLICT,
                "TOO_MANY_SHARE_LINKS",
                error.to_string(),
            ),
            ShareLinkError::Gone(_) => ApiError::new(
                StatusCode::GONE,
                "SHARE_LINK_GONE",
                "the link was revoked or has expired",
            ),
            ShareLinkError::Storage(error) => error.into(),
        }
    }
}

impl From<DeviceError> for ApiError {
    fn from(error: DeviceError) -> Self {
        match error {
            DeviceError::NotFound => ApiError::new(
                StatusCode::NOT_FOUND,
                "DEVICE_NOT_FOUND",
                "device not found",
            ),
            DeviceError::LoadNotFound => LoadError::NotFound.into(),
            DeviceError::UnknownCarrier(id) => ApiError::field(
                StatusCode::BAD_REQUEST,
                "UNKNOWN_CARRIER",
                "carrier_id",
                format!("names no carrier of this account ({id})"),
            ),
            DeviceError::UnknownDevice(id) => ApiError::field(
                StatusCode::BAD_REQUEST,
                "UNKNOWN_DEVICE",
                "device_id",
                format!("names no device of this account ({id})"),
            ),
            DeviceError::IdentifierTaken => ApiError::field(
                StatusCode::CONFLICT,
                "IDENTIFIER_TAKEN",
                "identifier",
                "another device has this identifier (a tracker names itself by it, so it is \
                 unique across the service)",
            ),
            DeviceError::TooManyLoads { limit, loads } => ApiError::new(
                StatusCode::CONFLICT,
                "DEVICE_LOAD_LIMIT",
                format!(
                    "this device already feeds {limit} loads that are not delivered or cancelled, \
                     the most one device may feed at once; detach it from one of them first"
                ),
            )
            .with_details(json!({"limit": limit, "load_ids": loads})),
            DeviceError::Storage(e) => e.into(),
        }
    }
}

impl From<CarrierError> for ApiError {
    fn from(error: CarrierError) -> Self {
        match error {
            CarrierError::NotFound => ApiError::new(
                StatusCode::NOT_FOUND,
                "INVALID_CARRIER",
                "carrier not found",
            ),
            CarrierError::DuplicateMcNumber {
                mc_number,
                existing,
            } => ApiError::new(
                StatusCode::CONFLICT,
                "DUPLICATE_CARRIER",
                format!("a carrier with MC number {mc_number} already exists: {existing}"),
            )
            .with_details(json!({"field": "mc_number", "existing_carrier_id": existing})),
            CarrierError::HasActiveLoads { loads } => ApiError::new(
                StatusCode::CONFLICT,
                "CARRIER_HAS_ACTIVE_LOADS",
                "the carrier has loads assigned or in transit; deliver, unassign or cancel them first",
            )
            .with_details(json!({"load_ids": loads.iter().map(|l| l.as_str()).collect::<Vec<_>>()})),
            CarrierError::Storage(e) => e.into(),
        }
    }
}

impl From<WebhookError> for ApiError {
    fn from(error: WebhookError) -> Self {
        match error {
            WebhookError::NotFound => ApiError::new(
                StatusCode::NOT_FOUND,
                "WEBHOOK_NOT_FOUND",
                "webhook not found",
            ),
            WebhookError::DeliveryNotFound => ApiError::new(
                StatusCode::NOT_FOUND,
                "DELIVERY_NOT_FOUND",
                "no delivery of that event to this webhook",
            ),
            WebhookError::TooMany => ApiError::new(
                StatusCode::CONFLICT,
                "TOO_MANY_WEBHOOKS",
                format!(
                    "an account may have at most {MAX_SUBSCRIPTIONS} webhooks; delete one first"
                ),
            ),
            WebhookError::Storage(e) => e.into(),
            WebhookError::Unavailable(e) => e.into(),
        }
    }
}

impl From<AccountError> for ApiError {
    fn from(error: AccountError) -> Self {
        match error {
            AccountError::Invalid(errors) => errors.into(),
            AccountError::AccountNotFound(id) => ApiError::new(
                StatusCode::NOT_FOUND,
                "ACCOUNT_NOT_FOUND",
                format!("no account {id}"),
            ),
            AccountError::KeyNotFound(id) => ApiError::new(
                StatusCode::NOT_FOUND,
                "API_KEY_NOT_FOUND",
                format!("no API key {id}"),
            ),
            AccountError::Storage(e) => e.into(),
        }
    }
}
