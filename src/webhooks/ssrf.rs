//! Which addresses a webhook may reach. A subscriber chooses the URL, so without
//! these rules it could make the service call its own admin listener, the cloud
//! metadata endpoint, or hosts on the private network.
//!
//! The rule: an address in the IANA special-purpose address registries (IPv4
//! and IPv6) is refused unless the registry marks it globally reachable, and so
//! are multicast and everything reserved. Two blocks are refused whole although
//! a few of their addresses are global anycast services (192.0.0.0/24 and
//! 2001::/23): none of those is a webhook receiver. An IPv6 address that carries an IPv4
//! address (IPv4-mapped, IPv4-compatible, NAT64 well-known prefix, 6to4) is
//! also judged by that IPv4 address; the forms whose whole prefix is refused
//! anyway (local-use NAT64, Teredo inside 2001::/23) need not be. The check runs
//! when a subscription is created or changed and again on every connection (on
//! each address the host name resolves to), so a DNS answer cannot slip past it.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

/// True for addresses a webhook must not reach unless the operator allows it.
pub fn is_forbidden(ip: IpAddr) -> bool {
    match ip {
        IpAddr::V4(v4) => forbidden_v4(v4),
        IpAddr::V6(v6) => forbidden_v6(v6),
    }
}

/// `ip` is in `prefix/len` (IPv4).
fn in_v4(ip: Ipv4Addr, prefix: [u8; 4], len: u32) -> bool {
    let mask = u32::MAX.checked_shl(32 - len).unwrap_or(0);
    u32::from(ip) & mask == u32::from(Ipv4Addr::from(prefix)) & mask
}

/// `ip` is in `prefix/len` (IPv6).
fn in_v6(ip: Ipv6Addr, prefix: [u16; 8], len: u32) -> bool {
    let mask = u128::MAX.checked_shl(128 - len).unwrap_or(0);
    u128::from(ip) & mask == u128::from(Ipv6Addr::from(prefix)) & mask
}

/// IPv4 special-purpose blocks that are not globally reachable, plus
/// multicast and the limited broadcast address.
const FORBIDDEN_V4: &[([u8; 4], u32)] = &[
    ([0, 0, 0, 0], 8),       // "this network"
    ([10, 0, 0, 0], 8),      // private
    ([100, 64, 0, 0], 10),   // shared address space (carrier-grade NAT)
    ([127, 0, 0, 0], 8),     // loopback
    ([169, 254, 0, 0], 16),  // link-local (the 169.254.169.254 metadata service)
    ([172, 16, 0, 0], 12),   // private
    ([192, 0, 0, 0], 24),    // IETF protocol assignments (DS-Lite, NAT64 discovery, ...)
    ([192, 0, 2, 0], 24),    // documentation (TEST-NET-1)
    ([192, 88, 99, 0], 24),  // deprecated 6to4 relay anycast
    ([192, 168, 0, 0], 16),  // private
    ([198, 18, 0, 0], 15),   // benchmarking
    ([198, 51, 100, 0], 24), // documentation (TEST-NET-2)
    ([203, 0, 113, 0], 24),  // documentation (TEST-NET-3)
    ([224, 0, 0, 0], 4),     // multicast
    ([240, 0, 0, 0], 4),     // reserved, and 255.255.255.255 broadcast
];

/// IPv6 special-purpose blocks that are not globally reachable (those that
/// embed an IPv4 address are judged by it instead: see `embedded_v4`), plus
/// multicast and the deprecated site-local block.
const FORBIDDEN_V6: &[([u16; 8], u32)] = &[
    ([0, 0, 0, 0, 0, 0, 0, 0], 96), // ::/96: unspecified, loopback, IPv4-compatible (deprecated)
    ([0x64, 0xff9b, 1, 0, 0, 0, 0, 0], 48), // local-use NAT64
    ([0x100, 0, 0, 0, 0, 0, 0, 0], 64), // discard-only
    ([0x100, 0, 0, 1, 0, 0, 0, 0], 64), // dummy prefix
    ([0x2001, 0, 0, 0, 0, 0, 0, 0], 23), // IETF protocol assignments (incl. Teredo 2001::/32)
    ([0x2001, 0xdb8, 0, 0, 0, 0, 0, 0], 32), // documentation
    ([0x3fff, 0, 0, 0, 0, 0, 0, 0], 20), // documentation
    ([0x5f00, 0, 0, 0, 0, 0, 0, 0], 16), // segment routing (SRv6) SIDs
    ([0xfc00, 0, 0, 0, 0, 0, 0, 0], 7), // unique local (incl. fd00:ec2::254 metadata)
    ([0xfe80, 0, 0, 0, 0, 0, 0, 0], 10), // link-local
    ([0xfec0, 0, 0, 0, 0, 0, 0, 0], 10), // site-local (deprecated)
    ([0xff00, 0, 0, 0, 0, 0, 0, 0], 8), // multicast
];

fn forbidden_v4(ip: Ipv4Addr) -> bool {
    FORBIDDEN_V4
        .iter()
        .any(|&(prefix, len)| in_v4(ip, prefix, len))
}

fn forbidden_v6(ip: Ipv6Addr) -> bool {
    if let Some(v4) = embedded_v4(ip) {
        return forbidden_v4(v4);
    }
    FORBIDDEN_V6
        .iter()
        .any(|&(prefix, len)| in_v6(ip, prefix, len))
}

/// The IPv4 address an IPv6 address stands for, in the forms that are routed
/// to it: IPv4-mapped `::ffff:a.b.c.d`, the NAT64 well-known prefix
/// `64:ff9b::a.b.c.d`, and 6to4 `2002:aabb:ccdd::/48`. (IPv4-compatible
/// `::a.b.c.d`, local-use NAT64 and Teredo are refused whole.)
fn embedded_v4(ip: Ipv6Addr) -> Option<Ipv4Addr> {
    let bits = u128::from(ip);
    if in_v6(ip, [0, 0, 0, 0, 0, 0xffff, 0, 0], 96)
        || in_v6(ip, [0x64, 0xff9b, 0, 0, 0, 0, 0, 0], 96)
    {
        return Some(Ipv4Addr::from(bits as u32));
    }
    if in_v6(ip, [0x2002, 0, 0, 0, 0, 0, 0, 0], 16) {
        return Some(Ipv4Addr::from((bits >> 80) as u32));
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn special_purpose_addresses_are_forbidden() {
        for ip in [
            "127.0.0.1",
            "10.1.2.3",
            "172.16.0.1",
            "192.168.1.1",
            "169.254.169.254",
            "0.0.0.0",
            "0.1.2.3",
            "100.64.0.1",
            "192.0.0.1",
            "192.0.0.170",
            "192.0.2.7",
            "192.88.99.1",
            "198.18.0.1",
            "198.51.100.1",
            "203.0.113.9",
            "224.0.0.1",
            "240.0.0.1",
            "255.255.255.255",
            "::",
            "::1",
            "fd00:ec2::254",
            "fe80::1",
            "fec0::1",
            "ff02::1",
            "100::1",
            "2001:db8::1",
            "3fff::1",
            "5f00::1",
            // IPv4-compatible (deprecated): refused whole, whatever it embeds.
            "::127.0.0.1",
            "::8.8.8.8",
            // IPv4-mapped, NAT64 well-known and 6to4 of forbidden IPv4 addresses.
            "::ffff:127.0.0.1",
            "::ffff:10.0.0.1",
            "64:ff9b::a9fe:a9fe",
            "64:ff9b::7f00:1",
            "2002:7f00:1::",
            "2002:a9fe:a9fe::1",
            "2002:c0a8:101::",
            // Local-use NAT64 and Teredo: refused whole.
            "64:ff9b:1::7f00:1",
            "64:ff9b:1::808:808",
            "2001:0:4136:e378:8000:63bf:3fff:fdd2",
        ] {
            assert!(is_forbidden(ip.parse().unwrap()), "{ip}");
        }
    }

    #[test]
    fn public_addresses_are_allowed_in_every_form() {
        for ip in [
            "93.184.216.34",
            "8.8.8.8",
            "1.1.1.1",
            "192.0.3.1",
            "192.31.196.1", // AS112, globally reachable
            "198.20.0.1",   // just past benchmarking
            "223.255.255.254",
            "2606:4700::1111",
            "2620:4f:8000::1", // AS112-v6, globally reachable
            "::ffff:8.8.8.8",
            "64:ff9b::808:808",
            "2002:808:808::1",
        ] {
            assert!(!is_forbidden(ip.parse().unwrap()), "{ip}");
        }
    }
}
