//! Concox/Jimi GT06 and its clones: binary frames
//! `7878 | LEN (1) | PROTO | INFO | SERIAL (2) | CRC (2) | 0D0A`, or `7979`
//! with a 2-byte LEN, CRC-16/X-25 over LEN..SERIAL.
//!
//! The login (0x01) carries the IMEI in BCD and, from protocol 1.8, a
//! time-zone word; it is answered only if the device is known (no reply
//! otherwise: the unit retries). Positions (0x10, 0x11, 0x12, 0x16, 0x22,
//! 0x26) are echoed back (type and serial) once durable; status and heartbeat
//! packets (0x13, 0x23) at once. Times are the device's local time, with no
//! zone on the wire.

use bytes::BytesMut;
use chrono::{FixedOffset, NaiveDate};

use super::{Cursor, Decoder, FrameError, Message, Record, RecordTime, crc};

/// The longest frame buffered (Traccar's cap; a short frame is at most 260).
pub const MAX_FRAME: usize = 32 * 1024;
const SHORT: [u8; 2] = [0x78, 0x78];
const LONG: [u8; 2] = [0x79, 0x79];
const END: [u8; 2] = [0x0D, 0x0A];

const LOGIN: u8 = 0x01;
const STATUS: u8 = 0x13;
const HEARTBEAT: u8 = 0x23;
/// Packet types that carry a GPS block first.
const POSITIONS: [u8; 6] = [0x10, 0x11, 0x12, 0x16, 0x22, 0x26];

#[derive(Debug, Default)]
pub struct Gt06;

impl Decoder for Gt06 {
    fn decode(&mut self, buf: &mut BytesMut) -> Result<Option<Message>, FrameError> {
        if buf.len() < 2 {
            return Ok(None);
        }
        let long = match [buf[0], buf[1]] {
            SHORT => false,
            LONG => true,
            _ => return Err(FrameError::Malformed("no 7878 or 7979 start")),
        };
        let header = if long { 4 } else { 3 };
        if buf.len() < header {
            return Ok(None);
        }
        let length = if long {
            usize::from(u16::from_be_bytes([buf[2], buf[3]]))
        } else {
            usize::from(buf[2])
        };
        if length < 5 {
            return Err(FrameError::Malformed("length"));
        }
        let total = header + length + 2;
        if total > MAX_FRAME {
            return Err(FrameError::TooLong);
        }
        if buf.len() < total {
            return Ok(None);
        }
        if buf[total - 2..total] != END {
            return Err(FrameError::Malformed("no 0D0A where the length says"));
        }
        let frame = buf.split_to(total);
        let checked = &frame[2..total - 4];
        let sent = u16::from_be_bytes([frame[total - 4], frame[total - 3]]);
        if sent != crc::x25(checked) {
            return Err(FrameError::BadChecksum);
        }
        let protocol = frame[header];
        let info = &frame[header + 1..total - 6];
        let serial = [frame[total - 6], frame[total - 5]];
        message(protocol, info, serial, long).map(Some)
    }
}

/// The reply GT06 units expect: the packet's type and serial echoed, in a
/// short frame whatever the request's form.
pub fn echo(protocol: u8, serial: [u8; 2]) -> Vec<u8> {
    let body = [0x05, protocol, serial[0], serial[1]];
    let crc = crc::x25(&body).to_be_bytes();
    [&SHORT[..], &body, &crc, &END].concat()
}

fn message(protocol: u8, info: &[u8], serial: [u8; 2], long: bool) -> Result<Message, FrameError> {
    Ok(match protocol {
        LOGIN => login(info, serial)?,
        p if POSITIONS.contains(&p) => Message::Positions {
            records: vec![gps_block(&mut Cursor::new(info))?],
            ack: Some(echo(p, serial)),
        },
        STATUS | HEARTBEAT => Message::Status {
            reply: Some(echo(protocol, serial)),
        },
        // Traccar echoes unknown short-form types, but not command replies
        // (0x80-0x82) nor long-form types (0x94 information).
        0x80..=0x82 => Message::Skip { reply: None },
        _ if long => Message::Skip { reply: None },
        _ => Message::Skip {
            reply: Some(echo(protocol, serial)),
        },
    })
}

fn login(info: &[u8], serial: [u8; 2]) -> Result<Message, FrameError> {
    let mut cursor = Cursor::new(info);
    let terminal = cursor.take(8)?;
    let digits: String = terminal.iter().map(|b| format!("{b:02x}")).collect();
    if !digits.bytes().all(|d| d.is_ascii_digit()) {
        return Err(FrameError::Malformed("terminal id is not BCD"));
    }
    // Sixteen digits: the IMEI's fifteen after a padding zero.
    let identifier = digits.strip_prefix('0').unwrap_or(&digits).to_owned();
    let time_zone = match cursor.remaining() {
        n if n >= 4 => {
            let _model = cursor.u16()?;
            zone(cursor.u16()?)
        }
        _ => None,
    };
    Ok(Message::Login {
        identifier,
        accept: Some(echo(LOGIN, serial)),
        reject: None,
        time_zone,
    })
}

/// The login's time-zone word: bits 15..4 a decimal HHMM, bit 3 set west.
fn zone(word: u16) -> Option<FixedOffset> {
    let hhmm = i32::from(word >> 4);
    let seconds = (hhmm / 100 * 60 + hhmm % 100) * 60;
    let west = word & 0x08 != 0;
    FixedOffset::east_opt(if west { -seconds } else { seconds })
}

/// A GPS block: date-time (binary YY MM DD hh mm ss), length and satellites,
/// latitude and longitude (minutes × 30,000), speed (km/h), course and status.
fn gps_block(cursor: &mut Cursor<'_>) -> Result<Record, FrameError> {
    let t = cursor.take(6)?;
    let time = NaiveDate::from_ymd_opt(2000 + i32::from(t[0]), t[1].into(), t[2].into())
        .and_then(|date| date.and_hms_opt(t[3].into(), t[4].into(), t[5].into()))
        .ok_or(FrameError::Malformed("position time"))?;
    let _length_and_satellites = cursor.u8()?;
    let lat = f64::from(cursor.u32()?) / 1_800_000.0;
    let lng = f64::from(cursor.u32()?) / 1_800_000.0;
    let speed = cursor.u8()?;
    let flags = cursor.u16()?;
    let north = flags & 0x0400 != 0;
    let west = flags & 0x0800 != 0;
    let positioned = flags & 0x1000 != 0;
    let course = flags & 0x03FF;
    if lat > 90.0 || lng > 180.0 {
        return Err(FrameError::Malformed("coordinates out of range"));
    }
    Ok(Record {
        time: RecordTime::Local(time),
        lat: if north { lat } else { -lat },
        lng: if west { -lng } else { lng },
        speed_kmh: Some(f64::from(speed)),
        heading_deg: (course < 360).then_some(f64::from(course)),
        altitude_m: None,
        valid: positioned,
    })
}

#[cfg(test)]
mod tests {
    use super::super::hex;
    use super::*;

    fn decode(frame: &str) -> Result<Option<Message>, FrameError> {
        Gt06.decode(&mut BytesMut::from(&hex(frame)[..]))
    }

    fn position(frame: &str) -> (Record, Vec<u8>) {
        match decode(frame) {
            Ok(Some(Message::Positions { records, ack })) => (records[0], ack.unwrap()),
            other => panic!("not a position: {other:?}"),
        }
    }

    fn local(record: &Record) -> String {
        match record.time {
            RecordTime::Local(t) => t.format("%Y-%m-%d %H:%M:%S").to_string(),
            RecordTime::Utc(_) => panic!("GT06 times are local"),
        }
    }

    #[test]
    fn a_login_gives_the_imei_and_its_reply_byte_for_byte() {
        assert_eq!(
            decode("78780D01012345678901234500018CDD0D0A"),
            Ok(Some(Message::Login {
                identifier: "123456789012345".into(),
                accept: Some(hex("787805010001D9DC0D0A")),
                reject: None,
                time_zone: None,
            }))
        );
    }

    #[test]
    fn a_v18_login_carries_its_time_zone() {
        let Ok(Some(Message::Login {
            identifier,
            time_zone,
            ..
        })) = decode("787811010864717003664467100f190a0002c6d20d0a")
        else {
            panic!("a login");
        };
        assert_eq!(identifier, "864717003664467");
        assert_eq!(time_zone, FixedOffset::west_opt(4 * 3600));
        assert_eq!(zone(0x2121), FixedOffset::east_opt(5 * 3600 + 30 * 60));
        // Traccar#5919's login and its logged reply.
        let Ok(Some(Message::Login { accept, .. })) =
            decode("78781101086992507237961180662121012c4a350d0a")
        else {
            panic!("a login");
        };
        assert_eq!(accept, Some(hex("78780501012c3ae30d0a")));
    }

    #[test]
    fn positions_decode_with_hemispheres_and_validity() {
        let (r, ack) =
            position("78781f120f0a140e150bc505e51e780293a9e800540000f601006e0055da00035f240d0a");
        assert_eq!(local(&r), "2015-10-20 14:21:11");
        assert!((r.lat - 54.94535).abs() < 1e-5 && (r.lng - 24.01762).abs() < 1e-5);
        assert!(r.valid);
        assert_eq!(ack, echo(0x12, [0x00, 0x03]));
        let (r, _) = position(
            "787822220e0914160f07c9021a362805090a7800d8b802d402c30e00a98a0105010213f4bb0d0a",
        );
        assert_eq!(local(&r), "2014-09-20 22:15:07");
        assert!((r.lat + 19.595684).abs() < 1e-6 && (r.lng + 46.932547).abs() < 1e-6);
        assert_eq!(r.heading_deg, Some(184.0));
        let (r, ack) = position(
            "78782526160913063918c002780fab0c44750f00040008027f14084c0038420600030c020007398e0d0a",
        );
        assert_eq!(local(&r), "2022-09-19 06:57:24");
        assert_eq!(ack[3], 0x26);
    }

    #[test]
    fn status_is_echoed_at_once_and_long_information_gets_no_reply() {
        assert_eq!(
            decode("78780a13440604000201baaf540d0a"),
            Ok(Some(Message::Status {
                reply: Some(hex("7878051301bafb710d0a"))
            }))
        );
        assert_eq!(
            decode("78780a134606040002012d78d90d0a"),
            Ok(Some(Message::Status {
                reply: Some(hex("78780513012d1b470d0a"))
            }))
        );
        assert_eq!(
            decode("79790008940b02e3048614200d0a"),
            Ok(Some(Message::Skip { reply: None }))
        );
    }

    #[test]
    fn a_wrong_crc_is_refused_but_the_frame_consumed() {
        // The Concox document's own 0x12 example carries a wrong CRC.
        let mut buf = BytesMut::from(
            &hex("78781F120B081D112E10CC027AC7EB0C46584900148F01CC00287D001FB8000380810D0A")[..],
        );
        assert_eq!(Gt06.decode(&mut buf), Err(FrameError::BadChecksum));
        assert!(buf.is_empty());
    }

    #[test]
    fn frames_split_and_joined_come_out_whole() {
        let frames = [
            hex("78780D01012345678901234500018CDD0D0A"),
            hex("78780a13440604000201baaf540d0a"),
        ];
        let bytes = frames.concat();
        for split in 0..bytes.len() {
            let mut decoder = Gt06;
            let mut buf = BytesMut::from(&bytes[..split]);
            let mut out = Vec::new();
            while let Some(m) = decoder.decode(&mut buf).unwrap() {
                out.push(m);
            }
            buf.extend_from_slice(&bytes[split..]);
            while let Some(m) = decoder.decode(&mut buf).unwrap() {
                out.push(m);
            }
            assert_eq!(out.len(), 2, "split at {split}");
            assert!(buf.is_empty());
        }
    }

    #[test]
    fn garbage_is_refused() {
        assert_eq!(
            decode("474554202f"),
            Err(FrameError::Malformed("no 7878 or 7979 start"))
        );
        assert_eq!(decode("7878ff0102030405"), Ok(None));
        assert_eq!(decode("79790fff01"), Ok(None));
        assert_eq!(decode("7979ffff01"), Err(FrameError::TooLong));
    }
}
