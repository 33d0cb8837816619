//! TCP listeners for hardware trackers (`--tcp-ingest teltonika=0.0.0.0:5027`,
//! `gt06=…:5023`, `queclink=…:5004`, `h02=…:5013`),
//! on the ports Traccar uses, so a fleet configured for Traccar points at
//! freight unchanged. Each accepted connection runs [`connection::serve`]
//! over the protocol's decoder (`ingest::trackers`); [`guard::Guard`] caps
//! connections in total and per address and remembers identifiers it refused.

mod connection;
mod guard;

use std::net::SocketAddr;
use std::str::FromStr;
use std::sync::Arc;
use std::time::Duration;

use anyhow::Context;

use crate::ingest::Protocol;
use crate::ingest::trackers::{
    Decoder, gt06::Gt06, h02::H02, queclink::Queclink, teltonika::Teltonika,
};
use crate::services::device_feed::DeviceFeed;

/// Open tracker connections, by protocol (a gauge).
pub const CONNECTIONS_METRIC: &str = "freight_tcp_connections";
/// Frames read, by protocol and outcome (`positions`, `status`, `login`,
/// `skipped`, and the refusals: `login_refused`, `bad_checksum`, `malformed`,
/// `too_long`, `not_identified`, `unacknowledged`).
pub const FRAMES_METRIC: &str = "freight_tcp_frames_total";
/// Connections closed by the service, by protocol and reason (`idle`,
/// `refused`, `capacity`, `address_capacity`, `throttled`, `error`).
pub const CLOSED_METRIC: &str = "freight_tcp_closed_total";

/// Every frame outcome, registered at zero per configured protocol.
pub const FRAME_OUTCOMES: [&str; 10] = [
    "positions",
    "status",
    "login",
    "skipped",
    "login_refused",
    "bad_checksum",
    "malformed",
    "too_long",
    "not_identified",
    "unacknowledged",
];
/// Every reason a connection is closed by the service.
pub const CLOSE_REASONS: [&str; 6] = [
    "idle",
    "refused",
    "capacity",
    "address_capacity",
    "throttled",
    "error",
];

/// A tracker protocol freight listens for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum TrackerProtocol {
    Teltonika,
    Gt06,
    Queclink,
    H02,
}

impl TrackerProtocol {
    pub const ALL: [Self; 4] = [Self::Teltonika, Self::Gt06, Self::Queclink, Self::H02];

    pub const fn name(self) -> &'static str {
        self.ingest().as_str()
    }

    /// The port Traccar listens on for it.
    pub const fn traccar_port(self) -> u16 {
        match self {
            Self::Teltonika => 5027,
            Self::Gt06 => 5023,
            Self::Queclink => 5004,
            Self::H02 => 5013,
        }
    }

    /// The device ingest path's name for it (metrics, the fix's source).
    pub const fn ingest(self) -> Protocol {
        match self {
            Self::Teltonika => Protocol::Teltonika,
            Self::Gt06 => Protocol::Gt06,
            Self::Queclink => Protocol::Queclink,
            Self::H02 => Protocol::H02,
        }
    }

    fn decoder(self) -> Box<dyn Decoder> {
        match self {
            Self::Teltonika => Box::new(Teltonika::default()),
            Self::Gt06 => Box::new(Gt06),
            Self::Queclink => Box::new(Queclink::default()),
            Self::H02 => Box::new(H02::default()),
        }
    }
}

/// One `--tcp-ingest` value: `teltonika=0.0.0.0:5027`, or `teltonika+tls=…`
/// for TLS with the service's certificate.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TrackerListen {
    pub protocol: TrackerProtocol,
    pub addr: SocketAddr,
    pub tls: bool,
}

impl FromStr for TrackerListen {
    type Err = String;

    fn from_str(raw: &str) -> Result<Self, String> {
        let known = || {
            TrackerProtocol::ALL
                .iter()
                .map(|p| format!("{}={}", p.name(), p.traccar_port()))
                .collect::<Vec<_>>()
                .join(", ")
        };
        let (name, addr) = raw
            .split_once('=')
            .ok_or_else(|| format!("expected protocol=address (e.g. {}), not {raw:?}", known()))?;
        let (name, tls) = match name.strip_suffix("+tls") {
            Some(name) => (name, true),
            None => (name, false),
        };
        let protocol = TrackerProtocol::ALL
            .into_iter()
            .find(|p| p.name() == name)
            .ok_or_else(|| format!("unknown tracker protocol {name:?}; known: {}", known()))?;
        let addr = addr
            .parse()
            .map_err(|_| format!("{addr:?} is not an address (host:port, e.g. 0.0.0.0:5027)"))?;
        Ok(TrackerListen {
            protocol,
            addr,
            tls,
        })
    }
}

/// How the tracker listeners run (`--tcp-*`).
#[derive(Debug, Clone)]
pub struct TrackerSettings {
    pub listeners: Vec<TrackerListen>,
    /// A connection with no complete frame for this long is closed (cellular
    /// units often vanish without closing).
    pub idle_timeout: Duration,
    /// Connections held at once, over every listener.
    pub max_connections: usize,
    /// Connections held at once from one address (units behind one carrier
    /// NAT share one).
    pub max_per_address: usize,
}

impl Default for TrackerSettings {
    fn default() -> Self {
        TrackerSettings {
            listeners: Vec::new(),
            idle_timeout: Duration::from_secs(600),
            max_connections: 20_000,
            max_per_address: 1_000,
        }
    }
}

/// The listeners started, with the addresses they bound.
#[derive(Clone)]
pub struct Trackers {
    bound: Vec<(TrackerProtocol, SocketAddr, bool)>,
    stop: Arc<tokio::sync::watch::Sender<bool>>,
}

impl Trackers {
    /// Where the listener for `protocol` listens, if one was asked for.
    pub fn addr(&self, protocol: TrackerProtocol) -> Option<SocketAddr> {
        self.bound
            .iter()
            .find(|(p, _, _)| *p == protocol)
            .map(|(_, a, _)| *a)
    }

    /// Each listener: its protocol, where it listens, and whether on TLS.
    pub fn bound(&self) -> impl Iterator<Item = (TrackerProtocol, SocketAddr, bool)> + '_ {
        self.bound.iter().copied()
    }

    /// Stops accepting; connections open end at their next frame.
    pub fn stop(&self) {
        let _ = self.stop.send(true);
    }
}

/// Binds every listener (failing if one cannot bind) and serves them on the
/// current arbiter. `tls`: the service's certificate, for `+tls` listeners.
pub(crate) fn start(
    settings: &TrackerSettings,
    ingest: DeviceFeed,
    tls: Option<Arc<rustls::ServerConfig>>,
) -> anyhow::Result<Trackers> {
    let (stop, stopped) = tokio::sync::watch::channel(false);
    for listen in &settings.listeners {
        let protocol = listen.protocol.name();
        for outcome in FRAME_OUTCOMES {
            metrics::counter!(FRAMES_METRIC, "protocol" => protocol, "outcome" => outcome)
                .increment(0);
        }
        for reason in CLOSE_REASONS {
            metrics::counter!(CLOSED_METRIC, "protocol" => protocol, "reason" => reason)
                .increment(0);
        }
        metrics::gauge!(CONNECTIONS_METRIC, "protocol" => protocol).increment(0.0);
    }
    let guard = Arc::new(guard::Guard::new(settings));
    let mut bound = Vec::new();
    for listen in &settings.listeners {
        let listener = std::net::TcpListener::bind(listen.addr).with_context(|| {
            format!(
                "binding the {} listener to {}",
                listen.protocol.name(),
                listen.addr
            )
        })?;
        listener.set_nonblocking(true)?;
        bound.push((listen.protocol, listener.local_addr()?, listen.tls));
        let listener = tokio::net::TcpListener::from_std(listener)?;
        let acceptor = match (listen.tls, &tls) {
            (false, _) => None,
            (true, Some(config)) => Some(tokio_rustls::TlsAcceptor::from(config.clone())),
            (true, None) => anyhow::bail!(
                "{}+tls needs the service's own certificate (not --behind-tls-proxy)",
                listen.protocol.name()
            ),
        };
        tracing::info!(protocol = listen.protocol.name(), addr = %listener.local_addr()?, tls = listen.tls, "tracker listener started");
        let accept = connection::accept(
            listener,
            listen.protocol,
            acceptor,
            ingest.clone(),
            guard.clone(),
            settings.idle_timeout,
            stopped.clone(),
        );
        actix_rt::spawn(accept);
    }
    Ok(Trackers {
        bound,
        stop: Arc::new(stop),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn listen_values_name_a_protocol_and_an_address() {
        let parsed: TrackerListen = "teltonika=0.0.0.0:5027".parse().unwrap();
        assert_eq!(
            (parsed.protocol, parsed.addr.port(), parsed.tls),
            (TrackerProtocol::Teltonika, 5027, false)
        );
        let parsed: TrackerListen = "gt06+tls=127.0.0.1:5023".parse().unwrap();
        assert_eq!((parsed.protocol, parsed.tls), (TrackerProtocol::Gt06, true));
        for bad in ["teltonika", "nmea=0.0.0.0:1", "gt06=localhost"] {
            assert!(bad.parse::<TrackerListen>().is_err(), "{bad}");
        }
    }
}
