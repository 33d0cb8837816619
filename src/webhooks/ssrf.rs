//! Which addresses a webhook may reach. A subscriber chooses the URL, so without
//! these rules it could make the service call its own admin listener, the cloud
//! metadata endpoint, or hosts on the private network.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

/// True for addresses a webhook must not reach unless the operator allows it:
/// loopback, private, link-local (which includes the 169.254.169.254 metadata
/// service), carrier-grade NAT, unspecified, broadcast, multicast and reserved.
pub fn is_forbidden(ip: IpAddr) -> bool {
    match ip {
        IpAddr::V4(v4) => forbidden_v4(v4),
        IpAddr::V6(v6) => {
            if let Some(v4) = v6.to_ipv4_mapped() {
                return forbidden_v4(v4);
            }
            let first = v6.segments()[0];
            v6.is_loopback()
                || v6.is_unspecified()
                || v6.is_multicast()
                || (first & 0xfe00) == 0xfc00 // unique local fc00::/7 (incl. fd00:ec2::254 metadata)
                || (first & 0xffc0) == 0xfe80 // link-local fe80::/10
                || (first & 0xffc0) == 0xfec0 // site-local (deprecated) fec0::/10
                || v6.segments()[..6] == [0x64, 0xff9b, 0, 0, 0, 0] && forbidden_v4(embedded_v4(v6))
        }
    }
}

fn embedded_v4(v6: Ipv6Addr) -> Ipv4Addr {
    let s = v6.segments();
    Ipv4Addr::new((s[6] >> 8) as u8, s[6] as u8, (s[7] >> 8) as u8, s[7] as u8)
}

fn forbidden_v4(ip: Ipv4Addr) -> bool {
    let [a, b, ..] = ip.octets();
    ip.is_loopback()
        || ip.is_private()
        || ip.is_link_local()
        || ip.is_unspecified()
        || ip.is_broadcast()
        || ip.is_multicast()
        || ip.is_documentation()
        || a == 0
        || (a == 100 && (64..=127).contains(&b)) // carrier-grade NAT 100.64/10
        || (a == 198 && (b == 18 || b == 19)) // benchmarking 198.18/15
        || a >= 240 // reserved
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_usual_suspects_are_forbidden() {
        for ip in [
            "127.0.0.1",
            "10.1.2.3",
            "172.16.0.1",
            "192.168.1.1",
            "169.254.169.254",
            "0.0.0.0",
            "100.64.0.1",
            "255.255.255.255",
            "::1",
            "fd00:ec2::254",
            "fe80::1",
            "::ffff:127.0.0.1",
            "::ffff:10.0.0.1",
            "64:ff9b::a9fe:a9fe",
        ] {
            assert!(is_forbidden(ip.parse().unwrap()), "{ip}");
        }
        for ip in [
            "93.184.216.34",
            "8.8.8.8",
            "2606:4700::1111",
            "::ffff:8.8.8.8",
        ] {
            assert!(!is_forbidden(ip.parse().unwrap()), "{ip}");
        }
    }
}
