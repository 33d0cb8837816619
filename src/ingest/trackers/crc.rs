//! The two CRC-16s the trackers use, bit by bit (frames are short; a table
//! would buy nothing measurable).

/// CRC-16/ARC (Teltonika's "CRC-16/IBM"): poly 0x8005 reflected, init 0.
pub fn arc(bytes: &[u8]) -> u16 {
    reflected(bytes, 0xA001, 0x0000, 0x0000)
}

/// CRC-16/X-25 (GT06's "CRC-ITU"): poly 0x1021 reflected, init and xorout 0xFFFF.
pub fn x25(bytes: &[u8]) -> u16 {
    reflected(bytes, 0x8408, 0xFFFF, 0xFFFF)
}

fn reflected(bytes: &[u8], poly: u16, init: u16, xorout: u16) -> u16 {
    let mut crc = init;
    for &byte in bytes {
        crc ^= u16::from(byte);
        for _ in 0..8 {
            crc = if crc & 1 == 1 {
                (crc >> 1) ^ poly
            } else {
                crc >> 1
            };
        }
    }
    crc ^ xorout
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_catalogue_check_values() {
        assert_eq!(super::arc(b"123456789"), 0xBB3D);
        assert_eq!(super::x25(b"123456789"), 0x906E);
    }
}
