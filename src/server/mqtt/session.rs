//! The connection to the broker. The client's event loop runs on a task of
//! its own and hands each message over; messages are stored several at a
//! time and acknowledged in the order received, each once its fix is
//! durable. A message that cannot be stored ends the connection with it and
//! what came after unacknowledged; the broker delivers them again on the
//! next connection (the session is persistent: clean session off, a client
//! id kept across restarts). Acknowledgements never outlive their
//! connection: a packet id is reused by the broker once acknowledged, so an
//! acknowledgement sent on a later connection could acknowledge another
//! message.

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use anyhow::Context;
use futures_util::StreamExt;
use futures_util::stream::FuturesOrdered;
use rumqttc::{
    AsyncClient, ConnectionError, Event, MqttOptions, Packet, Publish, QoS, SubscribeReasonCode,
    TlsConfiguration, Transport,
};
use tokio::sync::{mpsc, watch};

use super::message::{self, KnownDevices, MAX_PAYLOAD, NotStored};
use super::{BrokerUrl, CONNECTED_METRIC, MESSAGES_METRIC, MqttSettings};
use crate::services::device_feed::DeviceFeed;

/// The longest wait between connection attempts.
const MAX_RECONNECT: Duration = Duration::from_secs(30);
const KEEP_ALIVE: Duration = Duration::from_secs(30);

pub(super) struct Session {
    pub broker: BrokerUrl,
    pub client_id: String,
    pub settings: MqttSettings,
    pub tls: Option<Arc<rustls::ClientConfig>>,
    pub feed: DeviceFeed,
    /// The first wait after a lost connection, doubled up to
    /// [`MAX_RECONNECT`] while attempts fail.
    pub reconnect: Duration,
}

/// Why a connection ended.
enum End {
    Stopped,
    /// Lost or refused; try again. `connected`: it had been up.
    Lost {
        why: String,
        connected: bool,
    },
}

impl Session {
    pub(super) async fn run(self, mut stopped: watch::Receiver<bool>) {
        let known = KnownDevices::default();
        let mut wait = self.reconnect;
        loop {
            let end = self.connection(&known, &mut stopped).await;
            metrics::gauge!(CONNECTED_METRIC).set(0.0);
            match end {
                End::Stopped => return,
                End::Lost { why, connected } => {
                    if connected {
                        wait = self.reconnect;
                    }
                    tracing::warn!(broker = %self.broker.host, port = self.broker.port, %why, retry_in = ?wait, "MQTT connection ended");
                }
            }
            tokio::select! {
                _ = tokio::time::sleep(wait) => {}
                _ = stopped.changed() => return,
            }
            wait = (wait * 2).min(MAX_RECONNECT);
        }
    }

    fn options(&self) -> MqttOptions {
        let mut options = MqttOptions::new(&self.client_id, &self.broker.host, self.broker.port);
        options
            .set_clean_session(false)
            .set_manual_acks(true)
            .set_keep_alive(KEEP_ALIVE)
            // A packet past the cap would end every connection it is
            // delivered on; under it, one past MAX_PAYLOAD is dropped, acked.
            .set_max_packet_size(MAX_PAYLOAD * 4, MAX_PAYLOAD * 4);
        if let (Some(user), Some(password)) = (&self.settings.user, &self.settings.password) {
            options.set_credentials(user, password);
        }
        if let Some(tls) = &self.tls {
            options.set_transport(Transport::tls_with_config(TlsConfiguration::Rustls(
                tls.clone(),
            )));
        }
        options
    }

    /// One connection, from connecting until it ends.
    async fn connection(&self, known: &KnownDevices, stopped: &mut watch::Receiver<bool>) -> End {
        let in_flight = usize::from(self.settings.in_flight.max(1));
        // Room for every acknowledgement in flight and the subscription.
        let (client, mut events) = AsyncClient::new(self.options(), in_flight * 2 + 8);
        // Unbounded, so the event loop never waits for this side and always
        // gets to send the acknowledgements queued for it; what it hands over
        // is bounded by the broker's in-flight window for this client.
        let (incoming, mut received) = mpsc::unbounded_channel();
        // Dropped with this function: the event loop, and the connection with it.
        let _driver = AbortOnDrop(actix_rt::spawn(async move {
            loop {
                let event = events.poll().await;
                let failed = event.is_err();
                if incoming.send(event).is_err() || failed {
                    return;
                }
            }
        }));
        let mut connected = false;
        let mut storing = FuturesOrdered::new();
        loop {
            tokio::select! {
                _ = stopped.changed() => return End::Stopped,
                Some((publish, taken)) = storing.next(), if !storing.is_empty() => {
                    let publish: Publish = publish;
                    match taken {
                        Ok(outcome) => {
                            metrics::counter!(MESSAGES_METRIC, "outcome" => outcome).increment(1);
                            if client.ack(&publish).await.is_err() {
                                // The event loop ended; it said why.
                                return lost(ended(&mut received), connected);
                            }
                        }
                        Err(NotStored(why)) => {
                            metrics::counter!(MESSAGES_METRIC, "outcome" => "unacknowledged").increment(1);
                            return lost(format!("a message could not be stored, so it and those after it are left to the broker: {why}"), connected);
                        }
                    }
                }
                event = received.recv(), if storing.len() < in_flight => {
                    let Some(event) = event else {
                        return lost("the event loop ended", connected);
                    };
                    match event {
                        Ok(Event::Incoming(Packet::ConnAck(ack))) => {
                            tracing::info!(broker = %self.broker.host, port = self.broker.port, client_id = %self.client_id, session_present = ack.session_present, "MQTT connected");
                            let filter = self.settings.filter();
                            if client.try_subscribe(filter, QoS::AtLeastOnce).is_err() {
                                return lost(ended(&mut received), connected);
                            }
                        }
                        Ok(Event::Incoming(Packet::SubAck(ack))) => {
                            if ack.return_codes.iter().any(|c| matches!(c, SubscribeReasonCode::Failure)) {
                                return lost(format!("the broker refused the subscription to {}", self.settings.filter()), connected);
                            }
                            connected = true;
                            metrics::gauge!(CONNECTED_METRIC).set(1.0);
                            tracing::info!(filter = %self.settings.filter(), "MQTT subscribed");
                        }
                        Ok(Event::Incoming(Packet::Publish(publish))) => {
                            let (feed, known) = (self.feed.clone(), known.clone());
                            storing.push_back(async move {
                                let taken = message::take(&feed, &known, &publish.topic, &publish.payload).await;
                                (publish, taken)
                            });
                        }
                        Ok(_) => {}
                        Err(error) => return lost(describe(&error), connected),
                    }
                }
            }
        }
    }
}

fn lost(why: impl Into<String>, connected: bool) -> End {
    End::Lost {
        why: why.into(),
        connected,
    }
}

/// Why the event loop ended, from the error it handed over last.
fn ended(received: &mut mpsc::UnboundedReceiver<Result<Event, ConnectionError>>) -> String {
    while let Ok(event) = received.try_recv() {
        if let Err(error) = event {
            return describe(&error);
        }
    }
    "the MQTT client's event loop ended".to_owned()
}

fn describe(error: &ConnectionError) -> String {
    match error {
        ConnectionError::ConnectionRefused(code) => {
            format!("the broker refused the connection: {code:?}")
        }
        other => other.to_string(),
    }
}

struct AbortOnDrop(tokio::task::JoinHandle<()>);

impl Drop for AbortOnDrop {
    fn drop(&mut self) {
        self.0.abort();
    }
}

/// TLS to the broker: its certificate checked against `ca_file`'s (PEM), or
/// the system's trust store.
pub(super) fn tls_config(ca_file: Option<&Path>) -> anyhow::Result<Arc<rustls::ClientConfig>> {
    use rustls_pki_types::CertificateDer;
    use rustls_pki_types::pem::PemObject;
    let config = match ca_file {
        Some(path) => {
            let mut roots = rustls::RootCertStore::empty();
            for cert in CertificateDer::pem_file_iter(path)
                .with_context(|| format!("reading --mqtt-ca-file {}", path.display()))?
            {
                let cert = cert.with_context(|| format!("a certificate in {}", path.display()))?;
                roots
                    .add(cert)
                    .with_context(|| format!("a certificate in {}", path.display()))?;
            }
            rustls::ClientConfig::builder()
                .with_root_certificates(roots)
                .with_no_client_auth()
        }
        None => {
            use rustls_platform_verifier::ConfigVerifierExt;
            rustls::ClientConfig::with_platform_verifier()
                .context("loading the system's trusted certificates for mqtts://")?
        }
    };
    Ok(Arc::new(config))
}
