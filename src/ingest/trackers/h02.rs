//! H02 (Sinotrack and many cheap trackers), text form:
//! `*HQ,<id>,V1,<hhmmss>,<A|V>,<DDMM.MMMM>,<N|S>,<DDDMM.MMMM>,<E|W>,<speed>,
//! <course>,<ddmmyy>,<status>[,…]#`, times UTC. The id (10 digits on old
//! units, the IMEI on newer ones) is in every frame; there is no handshake.
//! A position is answered `*HQ,<id>,V4,V1,<yyyyMMddHHmmss>#` once stored, as
//! Traccar does; heartbeats (`HTBT`, `XT`, `V0`) are echoed up to their type.
//! The 32- and 45-byte binary (`$`) form is not taken: its connection is closed.
//!
//! Speed: the documents found do not give its unit; Traccar treats it as
//! knots, and so does this (× 1.852 to km/h).

use bytes::BytesMut;
use chrono::{NaiveDate, NaiveTime, Utc};

use super::text::{self, Identified};
use super::{Decoder, FrameError, Message, Record, RecordTime};

/// Traccar's cap for an H02 frame.
pub const MAX_FRAME: usize = 1024;
const KMH_PER_KNOT: f64 = 1.852;

#[derive(Debug, Default)]
pub struct H02 {
    identified: Identified,
}

impl Decoder for H02 {
    fn decode(&mut self, buf: &mut BytesMut) -> Result<Option<Message>, FrameError> {
        if let Some(pending) = self.identified.take_pending() {
            return Ok(Some(pending));
        }
        if buf.first() == Some(&b'$') {
            return Err(FrameError::Malformed("binary H02 frames are not taken"));
        }
        let Some(frame) = text::frame(buf, b'*', b'#', MAX_FRAME)? else {
            return Ok(None);
        };
        let fields = text::fields(&frame)?;
        let (maker, id, kind) = match fields.as_slice() {
            [maker, id, kind, ..] => (*maker, text::identifier(id)?, *kind),
            _ => return Err(FrameError::Malformed("too few fields")),
        };
        let message = match kind {
            "V1" => {
                let record = position(&fields)?;
                let ack = format!("*{maker},{id},V4,V1,{}#", Utc::now().format("%Y%m%d%H%M%S"));
                Message::Positions {
                    records: vec![record],
                    ack: Some(ack.into_bytes()),
                }
            }
            "HTBT" | "XT" | "V0" => Message::Status {
                reply: Some(format!("*{maker},{id},{kind}#").into_bytes()),
            },
            _ => Message::Skip { reply: None },
        };
        Ok(Some(self.identified.from(id, message)))
    }
}

fn position(fields: &[&str]) -> Result<Record, FrameError> {
    let [
        _,
        _,
        _,
        time,
        validity,
        lat,
        ns,
        lng,
        ew,
        speed,
        course,
        date,
        ..,
    ] = fields
    else {
        return Err(FrameError::Malformed("too few position fields"));
    };
    let bad = |what| FrameError::Malformed(what);
    let time = NaiveTime::parse_from_str(time, "%H%M%S").map_err(|_| bad("time"))?;
    let date = NaiveDate::parse_from_str(date, "%d%m%y").map_err(|_| bad("date"))?;
    let lat = degrees(lat, 2).ok_or(bad("latitude"))?;
    let lng = degrees(lng, 3).ok_or(bad("longitude"))?;
    let lat = match *ns {
        "N" => lat,
        "S" => -lat,
        _ => return Err(bad("hemisphere")),
    };
    let lng = match *ew {
        "E" => lng,
        "W" => -lng,
        _ => return Err(bad("hemisphere")),
    };
    if lat.abs() > 90.0 || lng.abs() > 180.0 {
        return Err(bad("coordinates out of range"));
    }
    Ok(Record {
        time: RecordTime::Utc(date.and_time(time).and_utc()),
        lat,
        lng,
        speed_kmh: speed.parse::<f64>().ok().map(|knots| knots * KMH_PER_KNOT),
        heading_deg: course
            .parse::<f64>()
            .ok()
            .filter(|c| (0.0..360.0).contains(c)),
        altitude_m: None,
        valid: *validity == "A",
    })
}

/// `DDMM.MMMM` (`degree_digits` 2) or `DDDMM.MMMM` (3) as degrees; also the
/// `-DD-MM.MMMM` form some units send (its sign is the hemisphere's).
fn degrees(raw: &str, degree_digits: usize) -> Option<f64> {
    if let Some(rest) = raw.strip_prefix('-') {
        let (d, m) = rest.split_once('-')?;
        return Some(d.parse::<f64>().ok()? + m.parse::<f64>().ok()? / 60.0);
    }
    let point = raw.find('.').unwrap_or(raw.len());
    if point < degree_digits + 2 || !raw.bytes().all(|b| b.is_ascii_digit() || b == b'.') {
        return None;
    }
    let (d, m) = raw.split_at(point - 2);
    Some(d.parse::<f64>().ok()? + m.parse::<f64>().ok()? / 60.0)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn decode_all(frame: &str) -> Vec<Message> {
        let mut decoder = H02::default();
        let mut buf = BytesMut::from(frame.as_bytes());
        let mut out = Vec::new();
        while let Some(message) = decoder.decode(&mut buf).unwrap() {
            out.push(message);
        }
        out
    }

    fn record(frame: &str) -> Record {
        match decode_all(frame).as_slice() {
            [Message::Login { .. }, Message::Positions { records, ack }] => {
                assert!(
                    String::from_utf8(ack.clone().unwrap())
                        .unwrap()
                        .contains(",V4,V1,")
                );
                records[0]
            }
            other => panic!("{other:?}"),
        }
    }

    fn utc(r: &Record) -> String {
        match r.time {
            RecordTime::Utc(t) => t.format("%Y-%m-%d %H:%M:%S").to_string(),
            RecordTime::Local(_) => panic!("H02 times are UTC"),
        }
    }

    // Traccar's H02ProtocolDecoderTest, with its asserted values.
    #[test]
    fn positions_decode_as_traccar_asserts() {
        let r = record(
            "*HQ,4210051415,V1,164549,A,0956.3869,N,08406.7068,W,000.00,000,221215,FFFFFBFF,712,01,0,0,6#",
        );
        assert_eq!(utc(&r), "2015-12-22 16:45:49");
        assert!(r.valid && (r.lat - 9.93978).abs() < 1e-5 && (r.lng + 84.11178).abs() < 1e-5);
        let r = record(
            "*HQ,355488020119695,V1,050418,,2827.61232,N,07703.84822,E,0.00,0,031015,FFFEFBFF#",
        );
        assert_eq!(utc(&r), "2015-10-03 05:04:18");
        assert!(!r.valid, "an empty validity field is no fix");
        assert!((r.lat - 28.46021).abs() < 1e-5 && (r.lng - 77.06414).abs() < 1e-5);
        let r = record(
            "*HQ,1451316409,V1,030149,A,-23-29.0095,S,-46-51.5852,W,2.4,065,070315,FFFFFFFF#",
        );
        assert!((r.lat + 23.48349).abs() < 1e-5 && (r.lng + 46.85975).abs() < 1e-5);
        assert!((r.speed_kmh.unwrap() - 2.4 * 1.852).abs() < 1e-9);
    }

    #[test]
    fn heartbeats_are_echoed_up_to_their_type_and_the_login_comes_first() {
        match decode_all("*HQ,135790246811220,HTBT,100#\r\n").as_slice() {
            [
                Message::Login {
                    identifier,
                    accept: None,
                    ..
                },
                Message::Status { reply },
            ] => {
                assert_eq!(identifier, "135790246811220");
                assert_eq!(reply.as_deref(), Some(&b"*HQ,135790246811220,HTBT#"[..]));
            }
            other => panic!("{other:?}"),
        }
        let two = decode_all("*HQ,356327080425330,XT,1,100# *HQ,356327080425330,XT,1,100#");
        assert_eq!(two.len(), 3, "one login, two heartbeats: {two:?}");
    }

    #[test]
    fn binary_frames_and_garbage_are_refused() {
        let mut decoder = H02::default();
        assert!(
            decoder
                .decode(&mut BytesMut::from(&b"$\x41\x06"[..]))
                .is_err()
        );
        assert!(
            H02::default()
                .decode(&mut BytesMut::from(&b"*HQ,12#"[..]))
                .is_err()
        );
        assert!(
            H02::default()
                .decode(&mut BytesMut::from(
                    &b"*HQ,4210051415,V1,99,A,x,N,y,W,0,0,221215,F#"[..]
                ))
                .is_err()
        );
    }
}
