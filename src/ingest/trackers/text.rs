//! What the text protocols (H02, Queclink) share: frames cut from a byte
//! stream between a start and an end byte, and the identifier each frame
//! carries turned into a login the first time it is seen.

use bytes::{Buf, BytesMut};

use super::{FrameError, Message};

/// The next frame that starts with `start` and ends with `end` (both kept),
/// skipping the CR, LF and spaces units put between frames; `Ok(None)` while
/// it is incomplete. Anything else before `start`, or no end within `max`
/// bytes, is refused.
pub fn frame(
    buf: &mut BytesMut,
    start: u8,
    end: u8,
    max: usize,
) -> Result<Option<BytesMut>, FrameError> {
    let blank = buf
        .iter()
        .take_while(|b| matches!(b, b'\r' | b'\n' | b' ' | 0))
        .count();
    buf.advance(blank);
    let Some(&first) = buf.first() else {
        return Ok(None);
    };
    if first != start {
        return Err(FrameError::Malformed("not a text frame"));
    }
    match buf.iter().take(max).position(|&b| b == end) {
        Some(at) => Ok(Some(buf.split_to(at + 1))),
        None if buf.len() >= max => Err(FrameError::TooLong),
        None => Ok(None),
    }
}

/// Turns the identifier each frame names into the connection's login: the
/// first frame's is a login (no reply of its own), the frame's own message
/// follows at the next call.
#[derive(Debug, Default)]
pub struct Identified {
    seen: Option<String>,
    pending: Option<Message>,
}

impl Identified {
    /// The message held back behind a login, if any.
    pub fn take_pending(&mut self) -> Option<Message> {
        self.pending.take()
    }

    /// `message`, from a frame naming `identifier`: a login first when the
    /// connection has not named it yet (a different one is a login too, which
    /// the listener refuses: one connection is one unit).
    pub fn from(&mut self, identifier: &str, message: Message) -> Message {
        if self.seen.as_deref() == Some(identifier) {
            return message;
        }
        self.seen = Some(identifier.to_owned());
        self.pending = Some(message);
        Message::Login {
            identifier: identifier.to_owned(),
            accept: None,
            reject: None,
            time_zone: None,
        }
    }
}

/// A text frame's fields, split on commas (the frame's first and last bytes
/// left out).
pub fn fields(frame: &[u8]) -> Result<Vec<&str>, FrameError> {
    let inner = &frame[1..frame.len() - 1];
    let text = std::str::from_utf8(inner).map_err(|_| FrameError::Malformed("not text"))?;
    Ok(text.split(',').collect())
}

/// An identifier as these units send it: digits or hex, 6 to 20 of them.
pub fn identifier(raw: &str) -> Result<&str, FrameError> {
    if (6..=20).contains(&raw.len()) && raw.bytes().all(|b| b.is_ascii_alphanumeric()) {
        Ok(raw)
    } else {
        Err(FrameError::Malformed("identifier"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn frames_are_cut_between_their_bytes_and_the_blanks_between_them_skipped() {
        let mut buf = BytesMut::from(&b"*HQ,1,V1#\x20\r\n*HQ,1,XT"[..]);
        assert_eq!(
            frame(&mut buf, b'*', b'#', 64).unwrap().as_deref(),
            Some(&b"*HQ,1,V1#"[..])
        );
        assert_eq!(frame(&mut buf, b'*', b'#', 64).unwrap(), None);
        assert_eq!(&buf[..], b"*HQ,1,XT");
        assert_eq!(
            frame(&mut BytesMut::from(&b"GET /"[..]), b'*', b'#', 64),
            Err(FrameError::Malformed("not a text frame"))
        );
        assert_eq!(
            frame(&mut BytesMut::from(&[b'*'; 64][..]), b'*', b'#', 64),
            Err(FrameError::TooLong)
        );
    }
}
