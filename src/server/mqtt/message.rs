//! What becomes of one OwnTracks message taken from the broker. Whatever is
//! wrong with the message itself (an unknown device, bad JSON) is
//! acknowledged and dropped, counted: not acknowledged, the broker would
//! deliver it again forever. Only a store that cannot take it leaves it
//! unacknowledged, to be delivered again.

use std::sync::Arc;

use dashmap::DashMap;

use crate::domain::ids::DeviceId;
use crate::ingest::Protocol;
use crate::ingest::owntracks::{parse_owntracks, topic_identifier};
use crate::services::device_feed::DeviceFeed;
use crate::services::device_ingest::refused;
use crate::services::devices::{DeviceContext, DeviceRefusal};

/// A payload past this is not an OwnTracks location (a few hundred bytes);
/// dropped unread.
pub(super) const MAX_PAYLOAD: usize = 64 * 1024;

const PROTOCOL: Protocol = Protocol::OwnTracksMqtt;

/// The message could not be stored now: leave it unacknowledged.
#[derive(Debug)]
pub(super) struct NotStored(pub String);

/// Devices found by identifier, kept for the session's life: the lookup is a
/// store read, and a device's messages come one after another. Checked
/// against the device as it is now before each use.
pub(super) type KnownDevices = Arc<DashMap<String, DeviceId>>;

/// Takes one message: the outcome to count (a label of
/// `MESSAGES_METRIC`), once it may be acknowledged.
pub(super) async fn take(
    feed: &DeviceFeed,
    known: &KnownDevices,
    topic: &str,
    payload: &[u8],
) -> Result<&'static str, NotStored> {
    let Some(identifier) = topic_identifier(topic) else {
        refused(PROTOCOL, "unknown_identifier");
        return Ok("unknown_device");
    };
    let device = match device(feed, known, identifier).await? {
        Some(device) => device,
        None => return Ok("unknown_device"),
    };
    if payload.len() > MAX_PAYLOAD {
        refused(PROTOCOL, "too_large");
        return Ok("malformed");
    }
    let position = match parse_owntracks(payload) {
        Ok(Some(position)) => position,
        Ok(None) => {
            feed.seen(&device, PROTOCOL).await;
            return Ok("no_position");
        }
        Err(refusal) => {
            refused(PROTOCOL, "malformed");
            tracing::debug!(topic, %refusal, "an OwnTracks message was dropped");
            return Ok("malformed");
        }
    };
    // Charged, never waited for: the broker's in-flight window bounds the
    // rate, and one device waiting would hold up every message behind it.
    feed.devices.meter.charge(&device.device.id, 1);
    match feed.store(&device, &[position], Vec::new(), PROTOCOL).await {
        Ok(()) => Ok("stored"),
        Err(error) => Err(NotStored(error.to_string())),
    }
}

/// The device named `identifier`, or `None` (counted) when none is.
async fn device(
    feed: &DeviceFeed,
    known: &KnownDevices,
    identifier: &str,
) -> Result<Option<DeviceContext>, NotStored> {
    let cached = known.get(identifier).map(|id| id.clone());
    let found = match cached {
        Some(id) => match feed.devices.identified(&id, identifier).await {
            Err(DeviceRefusal::UnknownIdentifier) => {
                // Removed, or its identifier changed: look again.
                known.remove(identifier);
                feed.devices.identify(identifier).await
            }
            other => other,
        },
        None => feed.devices.identify(identifier).await,
    };
    match found {
        Ok(device) => {
            known.insert(identifier.to_owned(), device.device.id.clone());
            Ok(Some(device))
        }
        Err(DeviceRefusal::Storage(error)) => {
            Err(NotStored(crate::telemetry::error_chain(&error).to_string()))
        }
        Err(refusal) => {
            refused(PROTOCOL, refusal.reason());
            tracing::debug!(
                identifier,
                reason = refusal.reason(),
                "an OwnTracks message from no device was dropped"
            );
            Ok(None)
        }
    }
}
