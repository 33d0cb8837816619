//! Teltonika FMB/FMC/FMM units over TCP: Codec 8, 8 Extended and 16.
//!
//! A connection opens with the IMEI (a 2-byte length and ASCII digits),
//! answered `01` (known) or `00` (refused; the device closes and retries).
//! Then AVL packets: `00000000 | length (4) | codec | N1 | records | N2 |
//! CRC (4: CRC-16/ARC of codec..N2)`, each answered with the number of
//! records taken as 4 bytes, which the device takes as leave to delete them:
//! sent only once they are durable. A lone `FF` is a keep-alive. Codec 12 and
//! 13 (commands, serial data) get no count (devices fault on one).

use bytes::{Buf, BytesMut};
use chrono::DateTime;

use super::{Cursor, Decoder, FrameError, Message, Record, RecordTime, crc};

/// Traccar's cap for a buffered frame (camera data can be large; a GPS
/// packet is at most 1,280 bytes on most units).
pub const MAX_FRAME: usize = 32 * 1024;
const KEEP_ALIVE: u8 = 0xFF;
const CODEC_8: u8 = 0x08;
const CODEC_8_EXTENDED: u8 = 0x8E;
const CODEC_16: u8 = 0x10;
const CODEC_12: u8 = 0x0C;
const CODEC_13: u8 = 0x0D;

/// One connection's decoder: the IMEI first, AVL packets after.
#[derive(Debug, Default)]
pub struct Teltonika {
    identified: bool,
}

impl Decoder for Teltonika {
    fn decode(&mut self, buf: &mut BytesMut) -> Result<Option<Message>, FrameError> {
        if buf.first() == Some(&KEEP_ALIVE) {
            buf.advance(1);
            return Ok(Some(Message::Skip { reply: None }));
        }
        if !self.identified {
            return self.imei(buf);
        }
        if buf.len() < 8 {
            return Ok(None);
        }
        if buf[..4] != [0, 0, 0, 0] {
            return Err(FrameError::Malformed("no preamble"));
        }
        let length = u32::from_be_bytes([buf[4], buf[5], buf[6], buf[7]]) as usize;
        if length > MAX_FRAME - 12 {
            return Err(FrameError::TooLong);
        }
        if length < 3 {
            return Err(FrameError::Malformed("data length"));
        }
        if buf.len() < length + 12 {
            return Ok(None);
        }
        let frame = buf.split_to(length + 12);
        let data = &frame[8..8 + length];
        let sent = u32::from_be_bytes(frame[8 + length..].try_into().expect("four bytes"));
        if sent != u32::from(crc::arc(data)) {
            return Err(FrameError::BadChecksum);
        }
        packet(data).map(Some)
    }
}

impl Teltonika {
    fn imei(&mut self, buf: &mut BytesMut) -> Result<Option<Message>, FrameError> {
        if buf.len() < 2 {
            return Ok(None);
        }
        let length = usize::from(u16::from_be_bytes([buf[0], buf[1]]));
        if !(1..=20).contains(&length) {
            return Err(FrameError::Malformed("IMEI length"));
        }
        if buf.len() < 2 + length {
            return Ok(None);
        }
        let imei = &buf[2..2 + length];
        if !imei.iter().all(u8::is_ascii_digit) {
            return Err(FrameError::Malformed("IMEI is not digits"));
        }
        let identifier = String::from_utf8(imei.to_vec()).expect("digits");
        buf.advance(2 + length);
        self.identified = true;
        Ok(Some(Message::Login {
            identifier,
            accept: Some(vec![0x01]),
            reject: Some(vec![0x00]),
            time_zone: None,
        }))
    }
}

/// An AVL packet's records (`data`: codec through N2, its CRC checked).
fn packet(data: &[u8]) -> Result<Message, FrameError> {
    let mut cursor = Cursor::new(data);
    let codec = cursor.u8()?;
    let count = cursor.u8()?;
    match codec {
        CODEC_8 | CODEC_8_EXTENDED | CODEC_16 => {}
        CODEC_12 | CODEC_13 => return Ok(Message::Skip { reply: None }),
        _ => return Err(FrameError::Malformed("unknown codec")),
    }
    let mut records = Vec::with_capacity(usize::from(count));
    for _ in 0..count {
        records.push(record(&mut cursor, codec)?);
    }
    if cursor.remaining() != 1 || cursor.u8()? != count {
        return Err(FrameError::Malformed("record counts differ"));
    }
    Ok(Message::Positions {
        records,
        ack: Some(u32::from(count).to_be_bytes().to_vec()),
    })
}

fn record(cursor: &mut Cursor<'_>, codec: u8) -> Result<Record, FrameError> {
    let millis = cursor.u64()?;
    let _priority = cursor.u8()?;
    let lng = f64::from(cursor.u32()? as i32) / 1e7;
    let lat = f64::from(cursor.u32()? as i32) / 1e7;
    let altitude = cursor.u16()? as i16;
    let angle = cursor.u16()?;
    let satellites = cursor.u8()?;
    let speed = cursor.u16()?;
    io_elements(cursor, codec)?;
    let time = i64::try_from(millis)
        .ok()
        .and_then(DateTime::from_timestamp_millis)
        .ok_or(FrameError::Malformed("record time"))?;
    if !(-90.0..=90.0).contains(&lat) || !(-180.0..=180.0).contains(&lng) {
        return Err(FrameError::Malformed("coordinates out of range"));
    }
    Ok(Record {
        time: RecordTime::Utc(time),
        lat,
        lng,
        speed_kmh: Some(f64::from(speed)),
        heading_deg: (angle < 360).then_some(f64::from(angle)),
        altitude_m: Some(f64::from(altitude)),
        valid: satellites > 0,
    })
}

/// Skips a record's IO elements (nothing of them is stored): counts and ids
/// are 1 byte in Codec 8, 2 in 8 Extended; Codec 16 has 2-byte ids, 1-byte
/// counts and a generation-type byte.
fn io_elements(cursor: &mut Cursor<'_>, codec: u8) -> Result<(), FrameError> {
    let wide = codec == CODEC_8_EXTENDED;
    let count = |cursor: &mut Cursor<'_>| -> Result<usize, FrameError> {
        Ok(if wide {
            usize::from(cursor.u16()?)
        } else {
            usize::from(cursor.u8()?)
        })
    };
    let id_len = if codec == CODEC_8 { 1 } else { 2 };
    cursor.take(id_len)?; // the event IO id
    if codec == CODEC_16 {
        cursor.u8()?; // generation type
    }
    count(cursor)?; // the total, which the per-size counts repeat
    for size in [1, 2, 4, 8] {
        for _ in 0..count(cursor)? {
            cursor.take(id_len + size)?;
        }
    }
    if wide {
        for _ in 0..cursor.u16()? {
            cursor.take(2)?;
            let length = usize::from(cursor.u16()?);
            cursor.take(length)?;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::super::hex;
    use super::*;

    fn identified() -> Teltonika {
        Teltonika { identified: true }
    }

    fn records(message: Option<Message>) -> (Vec<Record>, Vec<u8>) {
        match message {
            Some(Message::Positions { records, ack }) => (records, ack.expect("an ack")),
            other => panic!("not positions: {other:?}"),
        }
    }

    fn at(record: &Record) -> String {
        match record.time {
            RecordTime::Utc(t) => t.format("%Y-%m-%dT%H:%M:%S%.3fZ").to_string(),
            RecordTime::Local(_) => panic!("Teltonika times are UTC"),
        }
    }

    // Frames from Traccar's TeltonikaProtocolDecoderTest (see
    // docs/hardware-trackers.md for their decoded values).
    const S2: &str = "000000000000002b080100000140d4e3ec6e000cc661d01674a5e0fffc00000900000004020100f0000242322318000000000100007a04";
    const S3: &str = "000000000000009f080400000159738f76b8012e13b796110ab27600d700000b00004e01000000014e000000000000000000000159738f6ee8012e13b796110ab27600d700000a00004e01000000014e01000b00791c179300000159738f6b00012e13b796110ab27600d700000a00004e01000000014e000000000000000000000159738f5f48012e13b796110ab27600d700000b00004e01000000014e01000b00791c17930400009671";
    const S4: &str = "00000000000000858e0200000174431aadc100061d888f21000e8a0032002e0c000001810001000000000000000000010181001711210102030405060708090a0b0c0d0e0f10020b010ad000000174431a389100061d888f21000e8a0033002e0d000001810001000000000000000000010181001711210102030405060708090a0b0c0d0e0f10020b010ad2020000492b";

    #[test]
    fn the_imei_handshake_is_answered_01_or_00_and_a_keep_alive_first_is_skipped() {
        let mut decoder = Teltonika::default();
        let mut buf = BytesMut::from(&hex("ff000f313233343536373839303132333435")[..]);
        assert_eq!(
            decoder.decode(&mut buf),
            Ok(Some(Message::Skip { reply: None }))
        );
        assert_eq!(
            decoder.decode(&mut buf),
            Ok(Some(Message::Login {
                identifier: "123456789012345".into(),
                accept: Some(vec![1]),
                reject: Some(vec![0]),
                time_zone: None,
            }))
        );
        assert!(buf.is_empty());
    }

    #[test]
    fn codec_8_one_record_decodes_to_its_values_and_is_acknowledged_with_its_count() {
        let mut buf = BytesMut::from(&hex(S2)[..]);
        let (records, ack) = records(identified().decode(&mut buf).unwrap());
        assert_eq!(ack, vec![0, 0, 0, 1]);
        let r = &records[0];
        assert_eq!(at(r), "2013-08-31T15:00:41.710Z");
        assert!((r.lat - 37.6743392).abs() < 1e-9 && (r.lng - 21.4327760).abs() < 1e-9);
        assert_eq!(
            (r.altitude_m, r.speed_kmh, r.heading_deg, r.valid),
            (Some(-4.0), Some(0.0), Some(0.0), true)
        );
        assert!(buf.is_empty());
    }

    #[test]
    fn a_multi_record_packet_newest_first_keeps_every_record() {
        let (records, ack) = records(
            identified()
                .decode(&mut BytesMut::from(&hex(S3)[..]))
                .unwrap(),
        );
        assert_eq!(ack, vec![0, 0, 0, 4]);
        let times: Vec<String> = records.iter().map(at).collect();
        assert_eq!(
            times,
            [
                "2017-01-06T11:34:59.000Z",
                "2017-01-06T11:34:57.000Z",
                "2017-01-06T11:34:56.000Z",
                "2017-01-06T11:34:53.000Z"
            ]
        );
        assert!(
            (records[0].lat - 28.5913718).abs() < 1e-9
                && (records[0].lng - 77.3044118).abs() < 1e-9
        );
        assert_eq!(records[0].altitude_m, Some(215.0));
    }

    #[test]
    fn codec_8_extended_with_a_variable_length_element_decodes() {
        let (records, ack) = records(
            identified()
                .decode(&mut BytesMut::from(&hex(S4)[..]))
                .unwrap(),
        );
        assert_eq!(ack, vec![0, 0, 0, 2]);
        assert_eq!(at(&records[0]), "2020-08-31T06:00:56.001Z");
        assert_eq!(at(&records[1]), "2020-08-31T06:00:26.001Z");
        assert!(
            (records[0].lat - 55.365185).abs() < 1e-9 && (records[0].lng - 10.2598799).abs() < 1e-9
        );
        assert_eq!(
            (records[0].altitude_m, records[1].altitude_m),
            (Some(50.0), Some(51.0))
        );
    }

    #[test]
    fn a_frame_split_anywhere_waits_for_the_rest_and_two_in_one_read_both_come_out() {
        let bytes = hex(S2);
        for split in 0..bytes.len() {
            let mut decoder = identified();
            let mut buf = BytesMut::from(&bytes[..split]);
            assert_eq!(decoder.decode(&mut buf), Ok(None), "split at {split}");
            buf.extend_from_slice(&bytes[split..]);
            assert!(matches!(
                decoder.decode(&mut buf),
                Ok(Some(Message::Positions { .. }))
            ));
        }
        let mut decoder = identified();
        let mut buf = BytesMut::from(&[bytes.clone(), hex(S3)].concat()[..]);
        assert_eq!(records(decoder.decode(&mut buf).unwrap()).0.len(), 1);
        assert_eq!(records(decoder.decode(&mut buf).unwrap()).0.len(), 4);
        assert!(buf.is_empty());
    }

    #[test]
    fn a_wrong_checksum_consumes_the_frame_without_an_ack_and_the_stream_goes_on() {
        let mut bad = hex(S2);
        *bad.last_mut().unwrap() ^= 1;
        let mut decoder = identified();
        let mut buf = BytesMut::from(&[bad, hex(S2)].concat()[..]);
        assert_eq!(decoder.decode(&mut buf), Err(FrameError::BadChecksum));
        assert!(matches!(
            decoder.decode(&mut buf),
            Ok(Some(Message::Positions { .. }))
        ));
    }

    #[test]
    fn garbage_and_oversized_lengths_are_refused_before_anything_is_buffered() {
        assert_eq!(
            Teltonika::default().decode(&mut BytesMut::from(&b"GET / HTTP/1.1"[..])),
            Err(FrameError::Malformed("IMEI length"))
        );
        assert_eq!(
            Teltonika::default().decode(&mut BytesMut::from(&hex("000f41424344")[..])),
            Ok(None)
        );
        assert_eq!(
            Teltonika::default().decode(&mut BytesMut::from(
                &hex("000f414243444546474849505152535455")[..]
            )),
            Err(FrameError::Malformed("IMEI is not digits"))
        );
        assert_eq!(
            identified().decode(&mut BytesMut::from(&hex("00000000ffffffff")[..])),
            Err(FrameError::TooLong)
        );
        assert_eq!(
            identified().decode(&mut BytesMut::from(&hex("0100000000000010")[..])),
            Err(FrameError::Malformed("no preamble"))
        );
    }

    #[test]
    fn commands_replies_get_no_count() {
        // Codec 12, one response, CRC computed over codec..N2.
        let data = hex("0c0106000000044f4b0d0a01");
        let crc = crc::arc(&data);
        let frame = [
            hex("00000000"),
            (data.len() as u32).to_be_bytes().to_vec(),
            data,
            u32::from(crc).to_be_bytes().to_vec(),
        ]
        .concat();
        assert_eq!(
            identified().decode(&mut BytesMut::from(&frame[..])),
            Ok(Some(Message::Skip { reply: None }))
        );
    }
}
