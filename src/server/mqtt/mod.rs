//! OwnTracks over MQTT (`--mqtt-broker mqtt://host:1883`): freight subscribes
//! to the devices' topics (`owntracks/+/+`) with QoS 1 on a persistent
//! session and acknowledges each message (PUBACK) only once its fix is
//! durable, so what devices publish while freight is down, or what it had
//! not acknowledged when it crashed, is delivered again when it is back.
//! [`session`] holds the connection to the broker; [`message`] what becomes
//! of one message.

mod message;
mod session;

use std::path::Path;
use std::str::FromStr;
use std::sync::Arc;
use std::time::Duration;

use anyhow::Context;

use crate::services::device_feed::DeviceFeed;

/// Messages taken from the broker, by outcome (`stored`, `no_position`,
/// `unknown_device`, `malformed`, `unacknowledged`).
pub const MESSAGES_METRIC: &str = "freight_mqtt_messages_total";
/// 1 while connected to the broker (subscribed), else 0.
pub const CONNECTED_METRIC: &str = "freight_mqtt_connected";

/// Every message outcome, registered at zero when a broker is configured.
pub const MESSAGE_OUTCOMES: [&str; 5] = [
    "stored",
    "no_position",
    "unknown_device",
    "malformed",
    "unacknowledged",
];

/// `mqtt://host:port` or `mqtts://host:port` (TLS; port 8883 if omitted,
/// 1883 for `mqtt://`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BrokerUrl {
    pub host: String,
    pub port: u16,
    pub tls: bool,
}

impl FromStr for BrokerUrl {
    type Err = String;

    fn from_str(raw: &str) -> Result<Self, String> {
        let (tls, rest) = if let Some(rest) = raw.strip_prefix("mqtts://") {
            (true, rest)
        } else if let Some(rest) = raw.strip_prefix("mqtt://") {
            (false, rest)
        } else {
            return Err(format!(
                "expected mqtt://host:port or mqtts://host:port, not {raw:?}"
            ));
        };
        let rest = rest.trim_end_matches('/');
        if rest.contains(['/', '@', '?']) {
            return Err(format!(
                "{raw:?}: only a host and a port (credentials go in --mqtt-user and --mqtt-password)"
            ));
        }
        let default_port = if tls { 8883 } else { 1883 };
        let (host, port) = match rest.rsplit_once(':') {
            // An IPv6 address without a port ends in `]`.
            Some((host, port)) if !port.ends_with(']') => (
                host,
                port.parse()
                    .map_err(|_| format!("{raw:?}: {port:?} is not a port"))?,
            ),
            _ => (rest, default_port),
        };
        let host = host.trim_start_matches('[').trim_end_matches(']');
        if host.is_empty() {
            return Err(format!("{raw:?} names no host"));
        }
        Ok(BrokerUrl {
            host: host.to_owned(),
            port,
            tls,
        })
    }
}

/// How freight takes OwnTracks messages from a broker (`--mqtt-*`).
#[derive(Debug, Clone)]
pub struct MqttSettings {
    /// None: no broker, nothing subscribed.
    pub broker: Option<BrokerUrl>,
    pub user: Option<String>,
    pub password: Option<String>,
    /// The topic filter the devices publish under; each topic's last two
    /// levels name the device (its identifier, `user/device`).
    pub topic: String,
    /// Subscribe as `$share/<group>/<topic>`: with several instances in the
    /// group, the broker gives each message to one of them.
    pub share_group: Option<String>,
    /// The session's client id; a broker keeps one session per id, so each
    /// instance needs its own, the same across its restarts. Unset: one
    /// made at the first start and kept in the data directory.
    pub client_id: Option<String>,
    /// For `mqtts://`: the CA certificates (PEM) the broker's certificate is
    /// checked against; unset, the system's.
    pub ca_file: Option<std::path::PathBuf>,
    /// Messages stored at once, each acknowledged in the order received.
    pub in_flight: u16,
}

impl Default for MqttSettings {
    fn default() -> Self {
        MqttSettings {
            broker: None,
            user: None,
            password: None,
            topic: "owntracks/+/+".to_owned(),
            share_group: None,
            client_id: None,
            ca_file: None,
            in_flight: 64,
        }
    }
}

impl MqttSettings {
    /// The filter subscribed to.
    fn filter(&self) -> String {
        match &self.share_group {
            Some(group) => format!("$share/{group}/{}", self.topic),
            None => self.topic.clone(),
        }
    }
}

/// The subscription, once started: stops when asked.
#[derive(Clone, Default)]
pub struct Mqtt {
    stop: Option<Arc<tokio::sync::watch::Sender<bool>>>,
}

impl Mqtt {
    /// Disconnects (the broker keeps the session and queues for it).
    pub fn stop(&self) {
        if let Some(stop) = &self.stop {
            let _ = stop.send(true);
        }
    }
}

/// File in the data directory holding the client id made at the first start.
const CLIENT_ID_FILE: &str = "mqtt-client-id";

/// Starts the subscription if a broker is configured: it connects in the
/// background and keeps reconnecting, so a broker that is down delays
/// nothing else.
pub(crate) fn start(
    settings: &MqttSettings,
    feed: DeviceFeed,
    data_dir: &Path,
) -> anyhow::Result<Mqtt> {
    let Some(broker) = settings.broker.clone() else {
        return Ok(Mqtt::default());
    };
    for outcome in MESSAGE_OUTCOMES {
        metrics::counter!(MESSAGES_METRIC, "outcome" => outcome).increment(0);
    }
    metrics::gauge!(CONNECTED_METRIC).set(0.0);
    let client_id = match &settings.client_id {
        Some(id) => id.clone(),
        None => kept_client_id(data_dir)?,
    };
    let tls = match broker.tls {
        true => Some(session::tls_config(settings.ca_file.as_deref())?),
        false => None,
    };
    let (stop, stopped) = tokio::sync::watch::channel(false);
    let session = session::Session {
        broker,
        client_id,
        settings: settings.clone(),
        tls,
        feed,
        reconnect: Duration::from_secs(1),
    };
    actix_rt::spawn(session.run(stopped));
    Ok(Mqtt {
        stop: Some(Arc::new(stop)),
    })
}

/// `freight-<random>`, made once and kept in the data directory.
fn kept_client_id(data_dir: &Path) -> anyhow::Result<String> {
    let path = data_dir.join(CLIENT_ID_FILE);
    match std::fs::read_to_string(&path) {
        Ok(id) if !id.trim().is_empty() => return Ok(id.trim().to_owned()),
        Ok(_) => {}
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => {}
        Err(error) => {
            return Err(error).with_context(|| format!("reading {}", path.display()));
        }
    }
    let id = format!("freight-{:016x}", rand::random::<u64>());
    std::fs::write(&path, &id).with_context(|| format!("writing {}", path.display()))?;
    Ok(id)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn broker_urls_name_a_scheme_a_host_and_maybe_a_port() {
        let url: BrokerUrl = "mqtt://broker.example:1884".parse().unwrap();
        assert_eq!(
            (url.host.as_str(), url.port, url.tls),
            ("broker.example", 1884, false)
        );
        let url: BrokerUrl = "mqtts://broker.example".parse().unwrap();
        assert_eq!((url.port, url.tls), (8883, true));
        let url: BrokerUrl = "mqtt://[::1]:1883".parse().unwrap();
        assert_eq!((url.host.as_str(), url.port), ("::1", 1883));
        let url: BrokerUrl = "mqtt://127.0.0.1".parse().unwrap();
        assert_eq!(url.port, 1883);
        for bad in [
            "broker:1883",
            "http://broker",
            "mqtt://",
            "mqtt://u:p@broker",
            "mqtt://broker:x",
            "mqtt://broker/owntracks",
        ] {
            assert!(bad.parse::<BrokerUrl>().is_err(), "{bad}");
        }
    }

    #[test]
    fn a_share_group_prefixes_the_filter() {
        let mut settings = MqttSettings::default();
        assert_eq!(settings.filter(), "owntracks/+/+");
        settings.share_group = Some("freight".into());
        assert_eq!(settings.filter(), "$share/freight/owntracks/+/+");
    }

    #[test]
    fn the_client_id_is_kept_across_starts() {
        let dir = tempfile::tempdir().unwrap();
        let first = kept_client_id(dir.path()).unwrap();
        assert!(first.starts_with("freight-"), "{first}");
        assert_eq!(kept_client_id(dir.path()).unwrap(), first);
    }
}
