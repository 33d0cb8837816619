//! Queclink @Track units (GV, GL, GMT series) in text mode:
//! `+RESP:GTFRI,<version>,<IMEI>,<name>,<id>,<type>,<N>,` then N position
//! blocks of 12 fields (accuracy, speed km/h, azimuth, altitude, longitude,
//! latitude, UTC time, MCC, MNC, LAC, cell, reserved), then model-specific
//! fields, the send time and a 4-hex-digit count, ended by `$`. `+BUFF:` is
//! the same, sent late from the unit's buffer. The IMEI is in every frame.
//!
//! A report of positions is answered `+SACK:<count>$` once stored (what units
//! in SACK mode wait for before deleting a buffered report); the heartbeat
//! `+ACK:GTHBD,<version>,<IMEI>,<name>,<time>,<count>$` is answered
//! `+SACK:GTHBD,<version>,<count>$` at once. Binary ("HEX") mode is not taken.

use bytes::BytesMut;
use chrono::NaiveDateTime;

use super::text::{self, Identified};
use super::{Decoder, FrameError, Message, Record, RecordTime};

/// Traccar's cap for a Queclink frame.
pub const MAX_FRAME: usize = 1024;
/// The fields of one position block.
const BLOCK: usize = 12;
/// Reports whose positions Traccar reads with the GTFRI layout.
const FRI_LIKE: [&str; 6] = ["GTFRI", "GTGEO", "GTRTL", "GTDOG", "GTSTR", "GTCTN"];
/// Positions one report may carry at most (new firmware sends up to 15).
const MAX_POSITIONS: usize = 32;

#[derive(Debug, Default)]
pub struct Queclink {
    identified: Identified,
}

impl Decoder for Queclink {
    fn decode(&mut self, buf: &mut BytesMut) -> Result<Option<Message>, FrameError> {
        if let Some(pending) = self.identified.take_pending() {
            return Ok(Some(pending));
        }
        let Some(frame) = text::frame(buf, b'+', b'$', MAX_FRAME)? else {
            return Ok(None);
        };
        // `fields` drops the first and last bytes: the `+` and the `$`.
        let fields = text::fields(&frame)?;
        let (kind, report) = fields[0].split_once(':').ok_or(FrameError::Malformed(
            "binary Queclink frames are not taken",
        ))?;
        let [_, version, id, ..] = fields.as_slice() else {
            return Err(FrameError::Malformed("too few fields"));
        };
        let id = text::identifier(id)?;
        let count = *fields.last().expect("fields are never empty");
        let message = match (kind, report) {
            ("RESP" | "BUFF", report) if FRI_LIKE.contains(&report) => Message::Positions {
                records: positions(&fields)?,
                ack: Some(format!("+SACK:{count}$").into_bytes()),
            },
            ("ACK", "GTHBD") => Message::Status {
                reply: Some(format!("+SACK:GTHBD,{version},{count}$").into_bytes()),
            },
            ("RESP" | "BUFF" | "ACK", _) => Message::Skip { reply: None },
            _ => return Err(FrameError::Malformed("unknown header")),
        };
        Ok(Some(self.identified.from(id, message)))
    }
}

fn positions(fields: &[&str]) -> Result<Vec<Record>, FrameError> {
    let n: usize = fields
        .get(6)
        .and_then(|n| n.parse().ok())
        .filter(|&n| (1..=MAX_POSITIONS).contains(&n))
        .ok_or(FrameError::Malformed("number of positions"))?;
    let blocks = fields
        .get(7..7 + n * BLOCK)
        .ok_or(FrameError::Malformed("fewer position blocks than said"))?;
    blocks.chunks(BLOCK).map(block).collect()
}

fn block(f: &[&str]) -> Result<Record, FrameError> {
    let bad = FrameError::Malformed;
    let number = |raw: &str| raw.parse::<f64>().ok();
    let time = NaiveDateTime::parse_from_str(f[6], "%Y%m%d%H%M%S").map_err(|_| bad("time"))?;
    let (lng, lat) = (number(f[4]), number(f[5]));
    // Accuracy (HDOP) 0 is "no current fix"; so are empty coordinates.
    let valid = f[0] != "0" && lat.is_some() && lng.is_some();
    let (lat, lng) = (lat.unwrap_or(0.0), lng.unwrap_or(0.0));
    if lat.abs() > 90.0 || lng.abs() > 180.0 {
        return Err(bad("coordinates out of range"));
    }
    Ok(Record {
        time: RecordTime::Utc(time.and_utc()),
        lat,
        lng,
        speed_kmh: number(f[1]),
        heading_deg: number(f[2]).filter(|a| (0.0..360.0).contains(a)),
        altitude_m: number(f[3]),
        valid,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn decode_all(text: &str) -> Vec<Message> {
        let mut decoder = Queclink::default();
        let mut buf = BytesMut::from(text.as_bytes());
        let mut out = Vec::new();
        while let Some(message) = decoder.decode(&mut buf).unwrap() {
            out.push(message);
        }
        assert!(buf.is_empty());
        out
    }

    fn records(text: &str) -> (Vec<Record>, String) {
        match decode_all(text).as_slice() {
            [Message::Login { .. }, Message::Positions { records, ack }] => (
                records.clone(),
                String::from_utf8(ack.clone().unwrap()).unwrap(),
            ),
            other => panic!("{other:?}"),
        }
    }

    fn utc(r: &Record) -> String {
        match r.time {
            RecordTime::Utc(t) => t.format("%Y-%m-%d %H:%M:%S").to_string(),
            RecordTime::Local(_) => panic!("Queclink times are UTC"),
        }
    }

    // Frames from Traccar's Gl200TextProtocolDecoderTest (a `$` added where
    // the test strips it, as the frame decoder does).
    #[test]
    fn a_gl200_fix_reads_longitude_first_and_is_acknowledged_by_its_count() {
        let (records, ack) = records(
            "+RESP:GTFRI,020102,135790246811220,,0,0,1,1,4.3,92,70.0,121.354335,31.222073,20090214013254,0460,0000,18d8,6141,00,,20090214093254,11F0$",
        );
        let r = &records[0];
        assert_eq!(
            utc(r),
            "2009-02-14 01:32:54",
            "the GPS time, not the send time"
        );
        assert_eq!(
            (r.lat, r.lng, r.speed_kmh, r.heading_deg, r.altitude_m),
            (31.222073, 121.354335, Some(4.3), Some(92.0), Some(70.0))
        );
        assert!(r.valid);
        assert_eq!(ack, "+SACK:11F0$");
    }

    #[test]
    fn a_report_of_two_positions_marks_the_one_without_a_fix() {
        let (records, _) = records(
            "+RESP:GTFRI,020102,135790246811220,,0,0,2,1,4.3,92,70.0,121.354335,31.222073,20090214013254,0460,0000,18d8,6141,00,0,4.3,92,70.0,121.354335,31.222073,20090101000000,0460,0000,18d8,6141,00,,20090214093254,11F0$",
        );
        assert_eq!(records.len(), 2);
        assert!(
            records[0].valid && !records[1].valid,
            "accuracy 0: no current fix"
        );
    }

    #[test]
    fn buffered_and_american_reports_decode() {
        let (buffered, _) = records(
            "+BUFF:GTFRI,8020040200,866314060249032,,12194,10,1,3,0.0,0,20.1,-71.596533,-33.524718,20230926200338,0730,0001,772A,052B253E,02,0,0.0,,,,,0,420000,,,,20230926200340,1549$",
        );
        assert_eq!((buffered[0].lat, buffered[0].lng), (-33.524718, -71.596533));
        assert_eq!(utc(&buffered[0]), "2023-09-26 20:03:38");
        let (records, ack) = records(
            "+RESP:GTFRI,DE0114,865284042140479,,0,0,1,1,0.0,0,28.0,-118.268093,33.975430,20200901105954,0311,0480,3500,00D07F02,18,0,,93,0,,,20200901110000,0355$",
        );
        assert_eq!((records[0].lat, records[0].lng), (33.975430, -118.268093));
        assert_eq!(ack, "+SACK:0355$");
    }

    #[test]
    fn the_heartbeat_is_answered_with_its_version_and_count() {
        match decode_all("+ACK:GTHBD,1A0401,135790246811220,,20100214093254,11F0$\r\n").as_slice() {
            [Message::Login { identifier, .. }, Message::Status { reply }] => {
                assert_eq!(identifier, "135790246811220");
                assert_eq!(reply.as_deref(), Some(&b"+SACK:GTHBD,1A0401,11F0$"[..]));
            }
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn short_reports_and_binary_frames_are_refused() {
        let mut decoder = Queclink::default();
        assert!(
            decoder
                .decode(&mut BytesMut::from(
                    &b"+RESP:GTFRI,020102,135790246811220,,0,0,3,1,4.3$"[..]
                ))
                .is_err()
        );
        assert!(
            Queclink::default()
                .decode(&mut BytesMut::from(&b"+RSP\x00\x10$"[..]))
                .is_err()
        );
    }
}
