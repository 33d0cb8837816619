//! `freight serve`'s settings for devices that do not post over HTTPS:
//! hardware trackers on TCP listeners (`--tcp-*`) and OwnTracks through an
//! MQTT broker (`--mqtt-*`).

use std::path::PathBuf;
use std::time::Duration;

use clap::Args;

use crate::server::mqtt::{BrokerUrl, MqttSettings};
use crate::server::trackers::{TrackerListen, TrackerSettings};

#[derive(Debug, Args)]
pub struct DeviceListenerArgs {
    /// A TCP listener for hardware trackers, protocol=address (repeatable;
    /// none unless asked): teltonika=0.0.0.0:5027, gt06=0.0.0.0:5023,
    /// queclink=0.0.0.0:5004, h02=0.0.0.0:5013 (the ports Traccar uses).
    /// `teltonika+tls=…` serves TLS with the API's certificate.
    #[arg(long = "tcp-ingest", env = "FREIGHT_TCP_INGEST", value_delimiter = ',')]
    pub tcp_ingest: Vec<TrackerListen>,
    /// Seconds a tracker connection may go without a complete frame before
    /// it is closed.
    #[arg(long, env = "FREIGHT_TCP_IDLE_TIMEOUT", default_value_t = 600,
          value_parser = clap::value_parser!(u64).range(5..=86_400))]
    pub tcp_idle_timeout: u64,
    /// Tracker connections held at once over every listener; past it a new
    /// one is closed at once.
    #[arg(long, env = "FREIGHT_TCP_MAX_CONNECTIONS", default_value_t = 20_000,
          value_parser = clap::value_parser!(u32).range(1..=1_000_000))]
    pub tcp_max_connections: u32,
    /// Tracker connections held at once from one address (units behind one
    /// carrier NAT share it).
    #[arg(long, env = "FREIGHT_TCP_MAX_CONNECTIONS_PER_ADDRESS", default_value_t = 1_000,
          value_parser = clap::value_parser!(u32).range(1..=1_000_000))]
    pub tcp_max_connections_per_address: u32,
    /// The MQTT broker OwnTracks devices publish to, mqtt://host:1883 or
    /// mqtts://host:8883; none unless asked.
    #[arg(long, env = "FREIGHT_MQTT_BROKER")]
    pub mqtt_broker: Option<BrokerUrl>,
    /// The broker's user name.
    #[arg(long, env = "FREIGHT_MQTT_USER", requires = "mqtt_password")]
    pub mqtt_user: Option<String>,
    #[arg(
        long,
        env = "FREIGHT_MQTT_PASSWORD",
        requires = "mqtt_user",
        hide_env_values = true
    )]
    pub mqtt_password: Option<String>,
    /// The topic filter subscribed to (QoS 1); a topic's last two levels
    /// are the device's identifier (user/device).
    #[arg(long, env = "FREIGHT_MQTT_TOPIC", default_value = "owntracks/+/+",
          value_parser = topic_filter)]
    pub mqtt_topic: String,
    /// Subscribe as $share/<group>/<topic>, so that instances in one group
    /// share the messages (each to one of them). Give every instance the same.
    #[arg(long, env = "FREIGHT_MQTT_SHARE_GROUP", value_parser = share_group)]
    pub mqtt_share_group: Option<String>,
    /// The MQTT client id: the broker keeps the session (what is queued
    /// while freight is down) under it, so each instance needs its own, the
    /// same across restarts. Default: one made at the first start and kept
    /// in the data directory.
    #[arg(long, env = "FREIGHT_MQTT_CLIENT_ID")]
    pub mqtt_client_id: Option<String>,
    /// CA certificates (PEM) that an mqtts:// broker's certificate is
    /// checked against; default: the system's.
    #[arg(long, env = "FREIGHT_MQTT_CA_FILE")]
    pub mqtt_ca_file: Option<PathBuf>,
}

impl DeviceListenerArgs {
    pub fn trackers(&self) -> TrackerSettings {
        TrackerSettings {
            listeners: self.tcp_ingest.clone(),
            idle_timeout: Duration::from_secs(self.tcp_idle_timeout),
            max_connections: self.tcp_max_connections as usize,
            max_per_address: self.tcp_max_connections_per_address as usize,
        }
    }

    pub fn mqtt(&self) -> MqttSettings {
        MqttSettings {
            broker: self.mqtt_broker.clone(),
            user: self.mqtt_user.clone(),
            password: self.mqtt_password.clone(),
            topic: self.mqtt_topic.clone(),
            share_group: self.mqtt_share_group.clone(),
            client_id: self.mqtt_client_id.clone(),
            ca_file: self.mqtt_ca_file.clone(),
            ..MqttSettings::default()
        }
    }
}

/// A filter whose matching topics have a device in their last two levels.
fn topic_filter(raw: &str) -> Result<String, String> {
    if !rumqttc::valid_filter(raw) || raw.starts_with('$') {
        return Err(format!("{raw:?} is not an MQTT topic filter"));
    }
    if raw.ends_with('#') || raw.split('/').count() < 3 {
        return Err(format!(
            "{raw:?}: each topic must end in <user>/<device> (e.g. owntracks/+/+), so \
             the filter needs three levels or more and no #"
        ));
    }
    Ok(raw.to_owned())
}

fn share_group(raw: &str) -> Result<String, String> {
    if raw.is_empty() || raw.contains(['/', '+', '#']) {
        return Err(format!(
            "{raw:?}: a share group is a name without /, + or #"
        ));
    }
    Ok(raw.to_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn topic_filters_end_in_a_user_and_a_device() {
        assert!(topic_filter("owntracks/+/+").is_ok());
        assert!(topic_filter("fleet/owntracks/+/+").is_ok());
        for bad in [
            "owntracks/#",
            "owntracks/+",
            "owntracks/+/+#",
            "$SYS/+/+",
            "",
        ] {
            assert!(topic_filter(bad).is_err(), "{bad}");
        }
        assert!(share_group("freight").is_ok());
        assert!(share_group("a/b").is_err());
    }
}
