//! Attempt limits for the dashboard's sign-in and sign-up: a sliding log of
//! recent attempts per key (a client address, a client network, an email
//! address at an address), in memory; per process, like the API quotas.

use std::collections::VecDeque;
use std::net::IpAddr;

use chrono::{DateTime, Duration, Utc};
use dashmap::DashMap;

pub struct Throttle {
    limit: usize,
    window: Duration,
    attempts: DashMap<String, VecDeque<DateTime<Utc>>>,
}

impl Throttle {
    pub fn new(limit: usize, window: Duration) -> Self {
        Throttle {
            limit,
            window,
            attempts: DashMap::new(),
        }
    }

    /// Whether `key` may try now; when it may not, how many seconds until it may.
    pub fn check(&self, key: &str, now: DateTime<Utc>) -> Result<(), u64> {
        let Some(mut recent) = self.attempts.get_mut(key) else {
            return Ok(());
        };
        while recent.front().is_some_and(|at| *at <= now - self.window) {
            recent.pop_front();
        }
        match recent.len() < self.limit {
            true => Ok(()),
            false => {
                let oldest = *recent.front().expect("full, so not empty");
                let wait = (oldest + self.window - now).num_seconds().max(1);
                Err(wait as u64)
            }
        }
    }

    /// Checks and counts an attempt of `key` in one step, so attempts made at
    /// the same moment cannot all pass the check before any is counted.
    pub fn take(&self, key: &str, now: DateTime<Utc>) -> Result<(), u64> {
        let mut recent = self.attempts.entry(key.to_owned()).or_default();
        while recent.front().is_some_and(|at| *at <= now - self.window) {
            recent.pop_front();
        }
        if recent.len() >= self.limit {
            let oldest = *recent.front().expect("full, so not empty");
            return Err((oldest + self.window - now).num_seconds().max(1) as u64);
        }
        recent.push_back(now);
        Ok(())
    }

    /// Counts an attempt of `key` now; refuses it (counting nothing) only when
    /// `enforce` and the key is at its limit.
    pub fn take_if(&self, key: &str, now: DateTime<Utc>, enforce: bool) -> Result<(), u64> {
        if enforce {
            return self.take(key, now);
        }
        let mut recent = self.attempts.entry(key.to_owned()).or_default();
        recent.push_back(now);
        while recent.len() > self.limit {
            recent.pop_front();
        }
        Ok(())
    }

    /// Attempts of `key` inside the window.
    pub fn recent(&self, key: &str, now: DateTime<Utc>) -> usize {
        self.attempts.get(key).map_or(0, |recent| {
            recent.iter().filter(|at| **at > now - self.window).count()
        })
    }

    /// Returns an attempt taken with [`take`](Self::take) that turned out not
    /// to count (a sign-in that succeeded).
    pub fn give_back(&self, key: &str) {
        if let Some(mut recent) = self.attempts.get_mut(key) {
            recent.pop_back();
        }
    }

    /// Counts an attempt of `key` (a failed one, for sign-in).
    pub fn count(&self, key: &str, now: DateTime<Utc>) {
        let mut recent = self.attempts.entry(key.to_owned()).or_default();
        recent.push_back(now);
        while recent.len() > self.limit {
            recent.pop_front();
        }
    }

    /// Forgets `key`'s attempts (a successful sign-in clears its failures).
    pub fn clear(&self, key: &str) {
        self.attempts.remove(key);
    }

    /// Drops keys with no attempt inside the window (housekeeping).
    pub fn forget_idle(&self, now: DateTime<Utc>) {
        self.attempts
            .retain(|_, recent| recent.back().is_some_and(|at| *at > now - self.window));
    }
}

/// Where a request came from, as throttles count it. An IPv6 client usually
/// holds a whole /64 (and picks addresses in it at will), so there the /64 is
/// the address; an IPv4 address is itself, and its network is its /24.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ClientKeys {
    pub address: String,
    pub network: String,
}

impl ClientKeys {
    /// From the client's address as `dashboard::session::client_address`
    /// gives it (an IP address, or `unknown`).
    pub fn of(client: &str) -> ClientKeys {
        let parsed = client.parse::<IpAddr>().ok().map(|ip| ip.to_canonical());
        match parsed {
            Some(IpAddr::V4(v4)) => {
                let [a, b, c, _] = v4.octets();
                ClientKeys {
                    address: v4.to_string(),
                    network: format!("{a}.{b}.{c}.0/24"),
                }
            }
            Some(IpAddr::V6(v6)) => {
                let s = v6.segments();
                let prefix = format!("{:x}:{:x}:{:x}:{:x}::/64", s[0], s[1], s[2], s[3]);
                ClientKeys {
                    address: prefix.clone(),
                    network: prefix,
                }
            }
            None => ClientKeys {
                address: client.to_owned(),
                network: client.to_owned(),
            },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn addresses_and_networks_of_clients() {
        let v4 = ClientKeys::of("203.0.113.77");
        assert_eq!(v4.address, "203.0.113.77");
        assert_eq!(v4.network, "203.0.113.0/24");
        assert_eq!(ClientKeys::of("::ffff:203.0.113.77"), v4, "v4-mapped is v4");
        let a = ClientKeys::of("2001:db8:1:2:aaaa::1");
        let b = ClientKeys::of("2001:db8:1:2:ffff:1:2:3");
        assert_eq!(a, b, "one /64 is one address");
        assert_eq!(a.address, "2001:db8:1:2::/64");
        assert_ne!(a, ClientKeys::of("2001:db8:1:3::1"));
        assert_eq!(ClientKeys::of("unknown").network, "unknown");
    }

    #[test]
    fn take_if_counts_without_refusing_unless_enforced() {
        let throttle = Throttle::new(2, Duration::minutes(10));
        let now = Utc::now();
        for _ in 0..3 {
            assert!(throttle.take_if("net", now, false).is_ok());
        }
        assert_eq!(throttle.recent("net", now), 2, "kept at the limit");
        assert!(throttle.take_if("net", now, true).is_err());
        assert_eq!(throttle.recent("net", now + Duration::minutes(11)), 0);
    }

    #[test]
    fn refuses_past_the_limit_until_the_oldest_attempt_leaves_the_window() {
        let throttle = Throttle::new(3, Duration::minutes(10));
        let start = Utc::now();
        for n in 0..3 {
            assert!(throttle.check("ip", start).is_ok());
            throttle.count("ip", start + Duration::minutes(n));
        }
        assert_eq!(
            throttle.check("ip", start + Duration::minutes(3)),
            Err(7 * 60)
        );
        assert!(throttle.check("other", start).is_ok());
        assert!(throttle.check("ip", start + Duration::minutes(10)).is_ok());
        throttle.clear("ip");
        assert!(throttle.check("ip", start + Duration::minutes(3)).is_ok());
    }

    #[test]
    fn take_counts_at_once_and_gives_back() {
        let throttle = Throttle::new(2, Duration::minutes(10));
        let now = Utc::now();
        assert!(throttle.take("mail", now).is_ok());
        assert!(throttle.take("mail", now).is_ok());
        assert!(
            throttle.take("mail", now).is_err(),
            "the third attempt, however soon"
        );
        throttle.give_back("mail");
        assert!(throttle.take("mail", now).is_ok());
    }
}
