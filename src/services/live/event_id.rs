//! Event ids (`<epoch>-<n>`) and where a new stream starts from them.

use std::fmt;

/// The id of an event: the feed's epoch and the event's number in it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct EventId {
    pub(super) epoch: u64,
    pub(super) seq: u64,
}

impl EventId {
    /// An id as this service writes it (`<16 hex digits>-<number>`), else `None`.
    pub fn parse(raw: &str) -> Option<EventId> {
        let (epoch, seq) = raw.trim().split_once('-')?;
        let digits = |s: &str, radix: u32| !s.is_empty() && s.chars().all(|c| c.is_digit(radix));
        if epoch.len() != 16 || !digits(epoch, 16) || seq.len() > 20 || !digits(seq, 10) {
            return None;
        }
        Some(EventId {
            epoch: u64::from_str_radix(epoch, 16).ok()?,
            seq: seq.parse().ok()?,
        })
    }
}

impl fmt::Display for EventId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:016x}-{}", self.epoch, self.seq)
    }
}

/// Where a new stream starts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Resume {
    /// From now on.
    Start,
    /// After this event (`Last-Event-ID`): the events since are replayed.
    After(EventId),
    /// After an id that is not one of ours: the client is told to reset.
    Unknown,
}

impl Resume {
    /// Where a `Last-Event-ID` header (as sent, bytes) says to resume; `None`
    /// when it is absent or blank. An id that is not one of ours, text or not,
    /// is `Unknown`: the client is told to reset rather than refused, since a
    /// refusal would stop EventSource from reconnecting.
    pub fn from_last_event_id(raw: Option<&[u8]>) -> Option<Resume> {
        let raw = raw?;
        let text = std::str::from_utf8(raw).map(str::trim);
        match text {
            Ok("") => None,
            Ok(text) => Some(EventId::parse(text).map_or(Resume::Unknown, Resume::After)),
            Err(_) => Some(Resume::Unknown),
        }
    }
}
