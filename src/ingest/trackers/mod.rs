//! Hardware trackers' own protocols over TCP (Teltonika, GT06, Queclink,
//! H02): each a file
//! holding its frame decoder, its records and its replies, pure and tested
//! without sockets. The listener (`server::trackers`) feeds a connection's
//! bytes to a [`Decoder`], stores what comes out through the device ingest
//! path, and sends each reply the decoder prepared: an acknowledgement only
//! once what it acknowledges is durable.

pub mod crc;
#[cfg(test)]
mod fuzz;
pub mod gt06;
pub mod h02;
pub mod queclink;
pub mod teltonika;
mod text;

use bytes::BytesMut;
use chrono::{DateTime, FixedOffset, NaiveDateTime, Utc};

/// When a record was taken: UTC, or a device's local time with no zone on the
/// wire (GT06), which the listener places by the device's zone.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum RecordTime {
    Utc(DateTime<Utc>),
    Local(NaiveDateTime),
}

/// One position record as the tracker sent it, in its units normalised:
/// degrees, km/h.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Record {
    pub time: RecordTime,
    pub lat: f64,
    pub lng: f64,
    pub speed_kmh: Option<f64>,
    pub heading_deg: Option<f64>,
    pub altitude_m: Option<f64>,
    /// Whether the receiver had a fix (satellites in view, a "positioned"
    /// bit): a record without one repeats an old place and is not stored.
    pub valid: bool,
}

/// What a decoder took from the stream.
#[derive(Debug, Clone, PartialEq)]
pub enum Message {
    /// The device says who it is. `accept` is sent if it is known; `reject`
    /// (if the protocol has one) before the connection is closed otherwise.
    Login {
        identifier: String,
        accept: Option<Vec<u8>>,
        reject: Option<Vec<u8>>,
        /// The zone the device says its local times are in (GT06's login).
        time_zone: Option<FixedOffset>,
    },
    /// Position records, and the acknowledgement to send once they are
    /// durable (the device deletes what it acknowledges).
    Positions {
        records: Vec<Record>,
        ack: Option<Vec<u8>>,
    },
    /// The device is alive (a heartbeat, a status packet): no position; the
    /// reply is sent at once.
    Status { reply: Option<Vec<u8>> },
    /// Nothing to store (a keep-alive byte, a packet type not taken), and its
    /// reply if the device waits for one.
    Skip { reply: Option<Vec<u8>> },
}

/// Why a decoder stopped. [`FrameError::BadChecksum`] consumed its frame and
/// the stream goes on (the frame is not acknowledged, so the device resends
/// it); every other error closes the connection.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum FrameError {
    #[error("the frame's checksum does not match its contents")]
    BadChecksum,
    #[error("a frame longer than the protocol allows")]
    TooLong,
    #[error("a malformed frame: {0}")]
    Malformed(&'static str),
}

impl FrameError {
    /// The metric label (`freight_tcp_frames_total{outcome}`).
    pub fn outcome(self) -> &'static str {
        match self {
            FrameError::BadChecksum => "bad_checksum",
            FrameError::TooLong => "too_long",
            FrameError::Malformed(_) => "malformed",
        }
    }
}

/// A protocol's stream decoder, one per connection.
pub trait Decoder: Send {
    /// The next message in `buf`, its bytes consumed; `Ok(None)`: the next
    /// frame is not complete yet (read more). Never buffers past the
    /// protocol's cap: a frame that would is [`FrameError::TooLong`].
    fn decode(&mut self, buf: &mut BytesMut) -> Result<Option<Message>, FrameError>;
}

/// Reads big-endian fields off a frame, failing (not panicking) past its end.
pub(crate) struct Cursor<'a> {
    bytes: &'a [u8],
    at: usize,
}

impl<'a> Cursor<'a> {
    pub fn new(bytes: &'a [u8]) -> Self {
        Cursor { bytes, at: 0 }
    }

    pub fn take(&mut self, n: usize) -> Result<&'a [u8], FrameError> {
        let end = self
            .at
            .checked_add(n)
            .filter(|&end| end <= self.bytes.len());
        let end = end.ok_or(FrameError::Malformed("truncated record"))?;
        let taken = &self.bytes[self.at..end];
        self.at = end;
        Ok(taken)
    }

    pub fn u8(&mut self) -> Result<u8, FrameError> {
        Ok(self.take(1)?[0])
    }

    pub fn u16(&mut self) -> Result<u16, FrameError> {
        let b = self.take(2)?;
        Ok(u16::from_be_bytes([b[0], b[1]]))
    }

    pub fn u32(&mut self) -> Result<u32, FrameError> {
        let b = self.take(4)?;
        Ok(u32::from_be_bytes([b[0], b[1], b[2], b[3]]))
    }

    pub fn u64(&mut self) -> Result<u64, FrameError> {
        let b = self.take(8)?;
        Ok(u64::from_be_bytes(b.try_into().expect("eight bytes")))
    }

    pub fn remaining(&self) -> usize {
        self.bytes.len() - self.at
    }
}

#[cfg(test)]
pub(crate) fn hex(text: &str) -> Vec<u8> {
    (0..text.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&text[i..i + 2], 16).expect("hex"))
        .collect()
}
