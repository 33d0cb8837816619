//! Positions from devices that stay connected (hardware trackers over TCP,
//! OwnTracks through an MQTT broker) and are acknowledged only once stored,
//! through the device ingest path like every device's positions. Such a
//! device keeps what is not acknowledged and would only send it again, so
//! its allowance may pace it ([`DeviceFeed::pace`]) but never refuses it.

use std::sync::Arc;
use std::time::Duration;

use super::device_ingest::{self, refused};
use super::devices::{DeviceContext, DeviceService};
use super::tracking::TrackingService;
use crate::actors::LoadError;
use crate::clock::Clock;
use crate::ingest::{DevicePosition, Protocol};

/// What a connected device's positions are stored through.
#[derive(Clone)]
pub struct DeviceFeed {
    pub devices: Arc<DeviceService>,
    pub tracking: Arc<TrackingService>,
    pub clock: Clock,
}

impl DeviceFeed {
    /// Waits until the device's allowance takes `positions` more (a tracker
    /// waits for its acknowledgement meanwhile, as it would on a slow link).
    pub async fn pace(&self, device: &DeviceContext, positions: usize, protocol: Protocol) {
        let meter = &self.devices.meter;
        while let Err(exhausted) = meter.take(&device.device.id, positions) {
            refused(protocol, "rate_limited");
            tokio::time::sleep(Duration::from_secs(exhausted.retry_after)).await;
        }
    }

    /// Stores `positions` as the device's fixes; durable when it returns
    /// `Ok` (then, and only then, may the device be acknowledged).
    /// `ignored`: why the positions the caller already dropped were dropped,
    /// noted with those the ingest path skips.
    pub async fn store(
        &self,
        device: &DeviceContext,
        positions: &[DevicePosition],
        mut ignored: Vec<&'static str>,
        protocol: Protocol,
    ) -> Result<(), LoadError> {
        let id = &device.device.id;
        self.seen(device, protocol).await;
        let now = self.clock.now();
        if !positions.is_empty() {
            let outcome =
                device_ingest::record(&self.tracking, device, positions, protocol, now).await?;
            let further = outcome.further_fixes(positions.len());
            self.devices.meter.charge(id, further);
            ignored.extend(outcome.ignored);
        }
        self.devices.ignored.note(id, &ignored, now);
        Ok(())
    }

    /// Moves the device's `last_seen_at` (a heartbeat, a login); a failure is
    /// logged, not fatal: it stores nothing a device would resend.
    pub async fn seen(&self, device: &DeviceContext, protocol: Protocol) {
        if let Err(error) = self.devices.seen(&device.device, protocol).await {
            tracing::warn!(device = %device.device.id, error = %crate::telemetry::error_chain(&error), "could not note when a device was last seen");
        }
    }
}

/// Where devices that do not post over HTTPS reach this service, for the
/// pages that say what to set on them. Known once the listeners are bound.
#[derive(Debug, Clone, Default)]
pub struct DeviceListeners {
    pub tcp: Vec<TcpListenerPort>,
    /// The broker OwnTracks devices publish to, when one is configured.
    pub mqtt: Option<MqttBroker>,
}

/// One tracker listener.
#[derive(Debug, Clone)]
pub struct TcpListenerPort {
    /// The protocol's name (`teltonika`, `gt06`, `queclink`, `h02`).
    pub protocol: &'static str,
    pub port: u16,
    pub tls: bool,
}

/// The MQTT broker as devices are told of it.
#[derive(Debug, Clone)]
pub struct MqttBroker {
    pub host: String,
    pub port: u16,
    pub tls: bool,
    /// The topic filter subscribed to (`owntracks/+/+`).
    pub topic: String,
}
