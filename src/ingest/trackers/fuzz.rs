//! Whatever a peer sends, a decoder answers without panicking, consumes or
//! waits, and never asks to buffer past its protocol's cap: arbitrary bytes,
//! and real frames cut short, corrupted or run together.

use bytes::BytesMut;
use proptest::prelude::*;

use super::{
    Decoder, FrameError, gt06::Gt06, h02::H02, hex, queclink::Queclink, teltonika::Teltonika,
};

fn decoders() -> Vec<(Box<dyn Decoder>, usize)> {
    vec![
        (Box::new(Teltonika::default()), super::teltonika::MAX_FRAME),
        (Box::new(Gt06), super::gt06::MAX_FRAME),
        (Box::new(H02::default()), super::h02::MAX_FRAME),
        (Box::new(Queclink::default()), super::queclink::MAX_FRAME),
    ]
}

/// Real frames of each protocol (a Teltonika IMEI first, then a packet).
fn frames() -> Vec<Vec<u8>> {
    vec![
        [hex("000f333536333037303432343431303133"), hex("000000000000002b080100000140d4e3ec6e000cc661d01674a5e0fffc00000900000004020100f0000242322318000000000100007a04")].concat(),
        hex("787811010864717003664467100f190a0002c6d20d0a787822220e0914160f07c9021a362805090a7800d8b802d402c30e00a98a0105010213f4bb0d0a"),
        b"*HQ,4210051415,V1,164549,A,0956.3869,N,08406.7068,W,000.00,000,221215,FFFFFBFF,712,01,0,0,6#".to_vec(),
        b"+RESP:GTFRI,020102,135790246811220,,0,0,1,1,4.3,92,70.0,121.354335,31.222073,20090214013254,0460,0000,18d8,6141,00,,20090214093254,11F0$".to_vec(),
    ]
}

/// Feeds `bytes` in `chunk`-sized reads until the decoder waits or stops.
fn feed(decoder: &mut dyn Decoder, cap: usize, bytes: &[u8], chunk: usize) {
    let mut buf = BytesMut::new();
    for piece in bytes.chunks(chunk.max(1)) {
        buf.extend_from_slice(piece);
        // A message may come with nothing consumed once (the frame held back
        // behind a login), never twice in a row.
        let mut idle_messages = 0;
        loop {
            let before = buf.len();
            match decoder.decode(&mut buf) {
                Ok(Some(_)) | Err(FrameError::BadChecksum) => {
                    idle_messages = if buf.len() == before {
                        idle_messages + 1
                    } else {
                        0
                    };
                    assert!(idle_messages < 2, "a decoder yields without consuming");
                }
                Ok(None) => {
                    assert!(
                        buf.len() <= cap,
                        "waiting with {} bytes, over the cap {cap}",
                        buf.len()
                    );
                    break;
                }
                Err(_) => return,
            }
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

    #[test]
    fn arbitrary_bytes_never_panic(bytes in proptest::collection::vec(any::<u8>(), 0..4096), chunk in 1usize..512) {
        for (mut decoder, cap) in decoders() {
            feed(decoder.as_mut(), cap, &bytes, chunk);
        }
    }

    #[test]
    fn real_frames_cut_corrupted_and_repeated_never_panic(
        which in 0usize..4,
        cut in any::<prop::sample::Index>(),
        flips in proptest::collection::vec((any::<prop::sample::Index>(), any::<u8>()), 0..4),
        repeat in 1usize..4,
        chunk in 1usize..64,
    ) {
        let mut frame = frames()[which].clone();
        for (at, byte) in flips {
            let i = at.index(frame.len());
            frame[i] = byte;
        }
        let mut bytes = frame.repeat(repeat);
        bytes.truncate(cut.index(bytes.len() + 1));
        let (mut decoder, cap) = decoders().remove(which);
        feed(decoder.as_mut(), cap, &bytes, chunk);
    }
}
