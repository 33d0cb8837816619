//! Runtime settings of `freight serve`, independent of where they came from.

use std::net::SocketAddr;
use std::path::PathBuf;

use super::tls::TlsSource;
use crate::actors::load_actor::ActorSettings;
use crate::api::extract::DEFAULT_BODY_LIMIT;
use crate::clock::Clock;
use crate::cpu_placement::CpuPinning;
use crate::services::live::LiveSettings;
use crate::webhooks::dispatcher::DispatchSettings;

/// How the API listener gets its HTTPS.
#[derive(Debug, Clone)]
pub enum ApiTransport {
    /// The service terminates TLS itself; plain HTTP is refused at the socket.
    Tls(TlsSource),
    /// A TLS-terminating proxy in front speaks plain HTTP to the service; a request
    /// is served only when `X-Forwarded-Proto: https` says the client used TLS.
    BehindTlsProxy,
}

#[derive(Debug, Clone)]
pub struct Settings {
    pub data_dir: PathBuf,
    pub listen: SocketAddr,
    /// A loopback address unless `admin_allow_remote`: the admin API trusts
    /// whoever holds the token file.
    pub admin_listen: SocketAddr,
    pub admin_allow_remote: bool,
    /// The ScyllaDB cluster to keep data in; `None`: the embedded store in `data_dir`.
    pub scylla: Option<crate::storage::scylla::ScyllaConfig>,
    pub transport: ApiTransport,
    pub workers: usize,
    /// Whether workers and the GPS committer get CPUs of their own (see
    /// `cpu_placement`).
    pub cpu_pinning: CpuPinning,
    /// How long an HTTP worker polls for work after a request begins or ends
    /// before it sleeps (see `idle_poll`); zero: it sleeps at once.
    pub idle_poll: std::time::Duration,
    /// Create an account and key on first start and hand back the key.
    pub bootstrap_key: bool,
    pub body_limit: usize,
    /// GPS submissions waiting for the group commit at most (see `--gps-queue`).
    pub gps_queue: usize,
    pub clock: Clock,
    pub actors: ActorSettings,
    pub webhooks: DispatchSettings,
    /// The live tracking streams (heartbeat, buffers, resume ring).
    pub live: LiveSettings,
    /// The dashboard's maps: the operator's tile source, or the outline.
    pub map: crate::dashboard::MapSource,
    /// With a store several instances share: how this one joins the others
    /// (its internal listener and the cluster secret).
    pub cluster: Option<crate::server::cluster::ClusterSettings>,
    /// `--public-url`: where the links the service hands out point (see
    /// `api::origin`).
    pub public_url: Option<String>,
    /// What each device may send and feed (`--device-*`).
    pub devices: crate::services::device_meter::DeviceLimits,
    /// The hardware trackers' TCP listeners (`--tcp-*`); none by default.
    pub trackers: super::trackers::TrackerSettings,
    /// OwnTracks through an MQTT broker (`--mqtt-*`); off by default.
    pub mqtt: super::mqtt::MqttSettings,
}

impl Settings {
    /// Settings for a server on random loopback ports in `data_dir`, as tests want it.
    pub fn ephemeral(data_dir: PathBuf) -> Self {
        Settings {
            data_dir,
            listen: "127.0.0.1:0".parse().expect("valid address"),
            admin_listen: "127.0.0.1:0".parse().expect("valid address"),
            admin_allow_remote: false,
            scylla: None,
            transport: ApiTransport::Tls(TlsSource::SelfSigned),
            workers: 2,
            // Tests start many servers in one process; they pin nothing unless
            // a test asks for it.
            cpu_pinning: CpuPinning::Off,
            idle_poll: super::idle_poll::DEFAULT_WINDOW,
            bootstrap_key: true,
            body_limit: DEFAULT_BODY_LIMIT,
            gps_queue: crate::services::tracking::group_commit::QUEUE_CAPACITY,
            clock: Clock::system(),
            actors: ActorSettings {
                threads: 2,
                ..ActorSettings::default()
            },
            webhooks: DispatchSettings::default(),
            live: LiveSettings::default(),
            map: crate::dashboard::MapSource::default(),
            cluster: None,
            public_url: None,
            devices: crate::services::device_meter::DeviceLimits::default(),
            trackers: super::trackers::TrackerSettings::default(),
            mqtt: super::mqtt::MqttSettings::default(),
        }
    }
}
