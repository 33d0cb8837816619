//! One tracker connection: the bytes read go through the protocol's decoder,
//! and each message it yields is handled in order: a login looks the device
//! up by its identifier, positions go through the device ingest path and are
//! acknowledged only once durable, replies go out as the protocol wants them.
//! Whatever a peer sends, the worst it can do is have its connection closed.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use bytes::BytesMut;
use chrono::{FixedOffset, TimeZone, Utc};
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::net::TcpListener;
use tokio::sync::watch;
use tokio::time::Instant;

use super::guard::Guard;
use super::{CLOSED_METRIC, CONNECTIONS_METRIC, FRAMES_METRIC, TrackerProtocol};
use crate::domain::device::time_zone_offset;
use crate::domain::ids::DeviceId;
use crate::ingest::DevicePosition;
use crate::ingest::trackers::{FrameError, Message, Record, RecordTime};
use crate::ingest::units::MPH_PER_KMH;
use crate::services::device_feed::DeviceFeed;
use crate::services::device_ingest::refused;
use crate::services::devices::{DeviceContext, DeviceRefusal};

/// Bytes buffered at most while a frame is incomplete: past every decoder's
/// cap, a guard against one that lets a partial frame grow.
const MAX_BUFFERED: usize = 64 * 1024;
/// A TLS handshake must finish within this.
const HANDSHAKE: Duration = Duration::from_secs(10);

fn frame(protocol: TrackerProtocol, outcome: &'static str) {
    metrics::counter!(FRAMES_METRIC, "protocol" => protocol.name(), "outcome" => outcome)
        .increment(1);
}

fn closed(protocol: TrackerProtocol, reason: &'static str) {
    metrics::counter!(CLOSED_METRIC, "protocol" => protocol.name(), "reason" => reason)
        .increment(1);
}

/// Accepts connections until `stopped`, each served on a task of its own.
pub(super) async fn accept(
    listener: TcpListener,
    protocol: TrackerProtocol,
    tls: Option<tokio_rustls::TlsAcceptor>,
    ingest: DeviceFeed,
    guard: Arc<Guard>,
    idle: Duration,
    mut stopped: watch::Receiver<bool>,
) {
    loop {
        let accepted = tokio::select! {
            accepted = listener.accept() => accepted,
            _ = stopped.changed() => return,
        };
        let (stream, peer) = match accepted {
            Ok(accepted) => accepted,
            Err(error) => {
                // Out of descriptors, mostly: wait a little rather than spin.
                tracing::warn!(protocol = protocol.name(), %error, "accepting a tracker connection failed");
                tokio::time::sleep(Duration::from_millis(100)).await;
                continue;
            }
        };
        let admitted = match guard.admit(peer.ip()) {
            Ok(admitted) => admitted,
            Err(cap) => {
                closed(protocol, cap);
                continue;
            }
        };
        let _ = stream.set_nodelay(true);
        let (ingest, guard, tls, stopped) =
            (ingest.clone(), guard.clone(), tls.clone(), stopped.clone());
        actix_rt::spawn(async move {
            let _admitted = admitted;
            let connection = Connection {
                peer,
                protocol,
                ingest,
                guard,
                idle,
                stopped,
                session: None,
            };
            let open = metrics::gauge!(CONNECTIONS_METRIC, "protocol" => protocol.name());
            open.increment(1.0);
            match tls {
                None => connection.serve(stream).await,
                Some(tls) => match tokio::time::timeout(HANDSHAKE, tls.accept(stream)).await {
                    Ok(Ok(stream)) => connection.serve(stream).await,
                    _ => closed(protocol, "error"),
                },
            }
            open.decrement(1.0);
        });
    }
}

/// Who the connection's device is, once it said.
struct Session {
    device: DeviceId,
    identifier: String,
    /// The zone its local times are in (GT06's login word), if it said.
    zone: Option<FixedOffset>,
}

struct Connection {
    peer: SocketAddr,
    protocol: TrackerProtocol,
    ingest: DeviceFeed,
    guard: Arc<Guard>,
    idle: Duration,
    stopped: watch::Receiver<bool>,
    session: Option<Session>,
}

/// The connection ends (the reason was counted where it was found).
struct Close;

impl Connection {
    async fn serve<S: AsyncRead + AsyncWrite + Unpin>(mut self, mut stream: S) {
        let mut decoder = self.protocol.decoder();
        let mut buf = BytesMut::new();
        // Reset by each complete frame, not by each read: a peer trickling
        // bytes does not keep a connection open.
        let mut deadline = Instant::now() + self.idle;
        loop {
            loop {
                let message = match decoder.decode(&mut buf) {
                    Ok(Some(message)) => message,
                    Ok(None) => break,
                    Err(FrameError::BadChecksum) => {
                        frame(self.protocol, "bad_checksum");
                        continue;
                    }
                    Err(error) => {
                        frame(self.protocol, error.outcome());
                        tracing::debug!(protocol = self.protocol.name(), peer = %self.peer, %error, "closing a tracker connection");
                        return;
                    }
                };
                deadline = Instant::now() + self.idle;
                if self.handle(message, &mut stream).await.is_err() {
                    return;
                }
            }
            if buf.len() > MAX_BUFFERED {
                frame(self.protocol, "too_long");
                return;
            }
            let read = tokio::select! {
                read = tokio::time::timeout_at(deadline, stream.read_buf(&mut buf)) => read,
                _ = self.stopped.changed() => return,
            };
            match read {
                Err(_) => return closed(self.protocol, "idle"),
                Ok(Ok(0)) | Ok(Err(_)) => return,
                Ok(Ok(_)) => {}
            }
        }
    }

    async fn handle<S: AsyncWrite + Unpin>(
        &mut self,
        message: Message,
        stream: &mut S,
    ) -> Result<(), Close> {
        match message {
            Message::Login {
                identifier,
                accept,
                reject,
                time_zone,
            } => {
                self.login(identifier, time_zone, stream, accept, reject)
                    .await
            }
            Message::Positions { records, ack } => {
                let device = self.device().await?;
                self.store(&device, &records).await?;
                frame(self.protocol, "positions");
                reply(stream, ack).await
            }
            Message::Status { reply: answer } => {
                let device = self.device().await?;
                self.seen(&device).await;
                frame(self.protocol, "status");
                reply(stream, answer).await
            }
            Message::Skip { reply: answer } => {
                frame(self.protocol, "skipped");
                reply(stream, answer).await
            }
        }
    }

    async fn login<S: AsyncWrite + Unpin>(
        &mut self,
        identifier: String,
        zone: Option<FixedOffset>,
        stream: &mut S,
        accept: Option<Vec<u8>>,
        reject: Option<Vec<u8>>,
    ) -> Result<(), Close> {
        if let Some(session) = &self.session
            && session.identifier != identifier
        {
            frame(self.protocol, "malformed");
            return Err(Close);
        }
        let ip = self.peer.ip();
        if self.guard.refused_lately(ip, &identifier) {
            frame(self.protocol, "login_refused");
            closed(self.protocol, "throttled");
            let _ = reply(stream, reject).await;
            return Err(Close);
        }
        match self.ingest.devices.identify(&identifier).await {
            Ok(device) => {
                self.seen(&device).await;
                self.session = Some(Session {
                    device: device.device.id.clone(),
                    identifier,
                    zone,
                });
                frame(self.protocol, "login");
                reply(stream, accept).await
            }
            // No answer: the unit tries again, as it would with no network.
            Err(DeviceRefusal::Storage(error)) => {
                tracing::warn!(protocol = self.protocol.name(), error = %crate::telemetry::error_chain(&error), "could not look a tracker up");
                closed(self.protocol, "error");
                Err(Close)
            }
            Err(refusal) => {
                self.guard.note_refused(ip, &identifier);
                refused(self.protocol.ingest(), refusal.reason());
                frame(self.protocol, "login_refused");
                closed(self.protocol, "refused");
                tracing::info!(protocol = self.protocol.name(), peer = %self.peer, identifier, reason = refusal.reason(), "tracker refused");
                let _ = reply(stream, reject).await;
                Err(Close)
            }
        }
    }

    /// The identified device as it is now; none (not logged in, removed,
    /// its identifier changed) ends the connection.
    async fn device(&self) -> Result<DeviceContext, Close> {
        let Some(session) = &self.session else {
            frame(self.protocol, "not_identified");
            closed(self.protocol, "refused");
            return Err(Close);
        };
        match self
            .ingest
            .devices
            .identified(&session.device, &session.identifier)
            .await
        {
            Ok(device) => Ok(device),
            Err(refusal) => {
                refused(self.protocol.ingest(), refusal.reason());
                closed(self.protocol, "refused");
                Err(Close)
            }
        }
    }

    /// Stores the records with a fix as the device's positions; durable
    /// when it returns.
    async fn store(&self, device: &DeviceContext, records: &[Record]) -> Result<(), Close> {
        // The device's own setting first, then what the unit said at login.
        let zone = device
            .device
            .time_zone
            .as_deref()
            .and_then(time_zone_offset)
            .or(self.session.as_ref().and_then(|s| s.zone));
        let positions: Vec<DevicePosition> = records
            .iter()
            .filter(|r| r.valid)
            .filter_map(|r| position(r, zone))
            .collect();
        let no_fix = vec!["no_fix"; records.len() - positions.len()];
        self.ingest
            .pace(device, positions.len(), self.protocol.ingest())
            .await;
        let stored = self
            .ingest
            .store(device, &positions, no_fix, self.protocol.ingest())
            .await;
        if let Err(error) = stored {
            // No acknowledgement: the unit keeps its records.
            frame(self.protocol, "unacknowledged");
            tracing::warn!(protocol = self.protocol.name(), device = %device.device.id, %error, "tracker positions not stored; not acknowledged");
            return Err(Close);
        }
        Ok(())
    }

    async fn seen(&self, device: &DeviceContext) {
        self.ingest.seen(device, self.protocol.ingest()).await;
    }
}

/// A record as the ingest path takes positions: UTC, mph. A local time that
/// does not exist in its zone is dropped.
fn position(record: &Record, zone: Option<FixedOffset>) -> Option<DevicePosition> {
    let timestamp = match record.time {
        RecordTime::Utc(at) => at,
        RecordTime::Local(local) => zone
            .unwrap_or(FixedOffset::east_opt(0).expect("UTC"))
            .from_local_datetime(&local)
            .single()?
            .with_timezone(&Utc),
    };
    Some(DevicePosition {
        timestamp,
        lat: record.lat,
        lng: record.lng,
        speed_mph: record.speed_kmh.map(|kmh| kmh * MPH_PER_KMH),
        heading_deg: record.heading_deg,
        accuracy_m: None,
        altitude_m: record.altitude_m,
        battery_percent: None,
        charging: None,
    })
}

async fn reply<S: AsyncWrite + Unpin>(stream: &mut S, bytes: Option<Vec<u8>>) -> Result<(), Close> {
    let Some(bytes) = bytes else {
        return Ok(());
    };
    match stream.write_all(&bytes).await {
        Ok(()) => stream.flush().await.map_err(|_| Close),
        Err(_) => Err(Close),
    }
}
